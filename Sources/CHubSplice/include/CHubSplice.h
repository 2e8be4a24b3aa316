#ifndef CHUBSPLICE_H
#define CHUBSPLICE_H

// The few Linux calls the hub's transit relay needs to pass bytes between two sockets inside the kernel
// (splice(2) through a pipe, epoll, an eventfd), which Swift's Glibc module does not import (they need
// _GNU_SOURCE or are not in its headers). Elsewhere every call fails with ENOSYS and the relay copies
// through SwiftNIO instead.

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// What `chub_epoll_wait` reports for a descriptor (several at once).
enum {
    /// Bytes to read, or the peer's FIN (EPOLLIN, EPOLLRDHUP).
    CHUB_READABLE = 1,
    /// Room to write (EPOLLOUT).
    CHUB_WRITABLE = 2,
    /// Both directions shut (EPOLLHUP).
    CHUB_HANGUP = 4,
    /// An error is pending on the socket (EPOLLERR).
    CHUB_ERROR = 8,
};

/// splice(2) of up to `length` bytes from `from` to `to` (one of them a pipe), SPLICE_F_MOVE |
/// SPLICE_F_NONBLOCK: the count moved, 0 at the end of `from`, or -1 with errno (EAGAIN: nothing moves
/// without waiting).
ssize_t chub_splice(int from, int to, size_t length);

/// A non-blocking, close-on-exec pipe (fds[0] to read, fds[1] to write) whose buffer is made `size`
/// bytes when the kernel allows (F_SETPIPE_SZ; else it keeps its default). 0 with the buffer's size in
/// *capacity, or -1 with errno (nothing is left open then).
int chub_pipe(int fds[2], int size, int *capacity);

/// Makes the pipe whose write end is `fd` hold `size` bytes (F_SETPIPE_SZ) when the kernel allows: the
/// pipe's size afterwards (unchanged when refused), or -1 with errno.
int chub_pipe_resize(int fd, int size);

/// A close-on-exec duplicate of `fd` (F_DUPFD_CLOEXEC), or -1 with errno.
int chub_dup(int fd);

/// A close-on-exec epoll instance, or -1 with errno.
int chub_epoll_create(void);

/// Watches `fd` edge-triggered for reading, writing, the peer's FIN, hang-ups and errors; `token` comes
/// back with its events. 0, or -1 with errno.
int chub_epoll_add(int epfd, int fd, uint64_t token);

/// Watches `fd` (an eventfd) level-triggered for reading. 0, or -1 with errno.
int chub_epoll_add_wakeup(int epfd, int fd, uint64_t token);

/// Stops watching `fd`. 0, or -1 with errno.
int chub_epoll_remove(int epfd, int fd);

/// Waits up to `timeout_ms` (-1: for ever) for events: fills up to `max` tokens and their CHUB_* bits;
/// the count, or -1 with errno (EINTR included).
int chub_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms);

/// A non-blocking, close-on-exec eventfd, or -1 with errno.
int chub_eventfd(void);

/// Makes `fd` (an eventfd) readable. 0, or -1 with errno.
int chub_eventfd_signal(int fd);

/// Reads `fd` (an eventfd) back to not readable.
void chub_eventfd_drain(int fd);

#endif
