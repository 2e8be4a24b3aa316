// Nothing to compile: the declaration in include/CFuzzerDriver.h is defined by libFuzzer, which
// -sanitize=fuzzer links in. A C target needs one source file.
#include "CFuzzerDriver.h"
