#ifndef SWIFTMODEM_CALSA_SHIM_H
#define SWIFTMODEM_CALSA_SHIM_H
#include <alsa/asoundlib.h>

/// alsa-lib's error handler is variadic, which Swift cannot implement: this one stays silent,
/// because every ALSA error is reported by SwiftModem through the return code instead.
static void swiftmodem_alsa_silent_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
static inline void swiftmodem_alsa_silence_errors(void) {
    snd_lib_error_set_handler(swiftmodem_alsa_silent_error);
}
#endif
