// libFuzzer's driver, for an executable whose `main` is its own (SwiftPM renames an executable
// target's entry point on Linux, so libFuzzer's `main` is not the one that runs).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
