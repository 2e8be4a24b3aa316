#ifndef SWIFTMODEM_CFFTW_SHIM_H
#define SWIFTMODEM_CFFTW_SHIM_H
#include <fftw3.h>
#endif
