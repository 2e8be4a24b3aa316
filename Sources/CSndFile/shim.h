#ifndef SWIFTMODEM_CSNDFILE_SHIM_H
#define SWIFTMODEM_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
