#ifndef CTESTSIGNALS_H
#define CTESTSIGNALS_H

/// 1 once the test process ignores SIGPIPE (done by a constructor when the test bundle loads).
int swiftmodem_tests_sigpipe_ignored(void);

#endif
