// splice(2), pipe2(2) and F_SETPIPE_SZ need _GNU_SOURCE, before the first system header.
#ifdef __linux__
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#endif

#include "CHubSplice.h"
#include <errno.h>

#ifdef __linux__
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

ssize_t chub_splice(int from, int to, size_t length) {
    return splice(from, NULL, to, NULL, length, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

int chub_pipe(int fds[2], int size, int *capacity) {
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
    // Refused over /proc/sys/fs/pipe-max-size or the user's pipe pages: the default then.
    if (size > 0) (void)fcntl(fds[1], F_SETPIPE_SZ, size);
    int got = fcntl(fds[1], F_GETPIPE_SZ);
    *capacity = got > 0 ? got : 65536;
    return 0;
}

int chub_pipe_resize(int fd, int size) {
    (void)fcntl(fd, F_SETPIPE_SZ, size);
    return fcntl(fd, F_GETPIPE_SZ);
}

int chub_dup(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }

int chub_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int chub_epoll_add(int epfd, int fd, uint64_t token) {
    struct epoll_event e = {0};
    e.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    e.data.u64 = token;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e);
}

int chub_epoll_add_wakeup(int epfd, int fd, uint64_t token) {
    struct epoll_event e = {0};
    e.events = EPOLLIN;
    e.data.u64 = token;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e);
}

int chub_epoll_remove(int epfd, int fd) {
    struct epoll_event e = {0};
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &e);
}

int chub_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event got[64];
    if (max > 64) max = 64;
    int n = epoll_wait(epfd, got, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        uint32_t e = got[i].events, bits = 0;
        if (e & (EPOLLIN | EPOLLRDHUP)) bits |= CHUB_READABLE;
        if (e & EPOLLOUT) bits |= CHUB_WRITABLE;
        if (e & EPOLLHUP) bits |= CHUB_HANGUP;
        if (e & EPOLLERR) bits |= CHUB_ERROR;
        tokens[i] = got[i].data.u64;
        events[i] = bits;
    }
    return n;
}

int chub_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int chub_eventfd_signal(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof one) == sizeof one ? 0 : -1;
}

void chub_eventfd_drain(int fd) {
    uint64_t n;
    (void)read(fd, &n, sizeof n);
}

#else

ssize_t chub_splice(int from, int to, size_t length) { (void)from; (void)to; (void)length; errno = ENOSYS; return -1; }
int chub_pipe(int fds[2], int size, int *capacity) { (void)fds; (void)size; (void)capacity; errno = ENOSYS; return -1; }
int chub_pipe_resize(int fd, int size) { (void)fd; (void)size; errno = ENOSYS; return -1; }
int chub_dup(int fd) { (void)fd; errno = ENOSYS; return -1; }
int chub_epoll_create(void) { errno = ENOSYS; return -1; }
int chub_epoll_add(int epfd, int fd, uint64_t token) { (void)epfd; (void)fd; (void)token; errno = ENOSYS; return -1; }
int chub_epoll_add_wakeup(int epfd, int fd, uint64_t token) { (void)epfd; (void)fd; (void)token; errno = ENOSYS; return -1; }
int chub_epoll_remove(int epfd, int fd) { (void)epfd; (void)fd; errno = ENOSYS; return -1; }
int chub_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms) {
    (void)epfd; (void)tokens; (void)events; (void)max; (void)timeout_ms; errno = ENOSYS; return -1;
}
int chub_eventfd(void) { errno = ENOSYS; return -1; }
int chub_eventfd_signal(int fd) { (void)fd; errno = ENOSYS; return -1; }
void chub_eventfd_drain(int fd) { (void)fd; }

#endif
