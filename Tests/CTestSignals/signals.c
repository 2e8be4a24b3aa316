// The test process ignores SIGPIPE from the moment it loads: tests write into pipes and sockets whose
// readers may have gone (children that exit early, peers that close), and such a write must fail with
// EPIPE, not kill the whole run. `swift test` starts the test bundle with every signal at its default
// (a shell's `trap '' PIPE` does not reach it), so the bundle does it itself, before any test runs.
#include <signal.h>
#include "CTestSignals.h"

static volatile int ignored = 0;

__attribute__((constructor)) static void swiftmodem_tests_ignore_sigpipe(void) {
    signal(SIGPIPE, SIG_IGN);
    ignored = 1;
}

int swiftmodem_tests_sigpipe_ignored(void) { return ignored; }
