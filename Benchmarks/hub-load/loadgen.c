// hub-loadgen: a compiled load generator for modem-hub's groups (fan-out latency at 10,000 sockets).
//
// N WebSocket members join G groups (member i joins group i mod G); one more socket per group listens
// to it and posts once a second for S seconds, the posts of all groups spread evenly over each second
// (N deliveries per second in all). Each post carries the poster's clock (CLOCK_REALTIME, same machine);
// latency = arrival - that clock. Members and posters alternate between --url and --url2 (two nodes on
// one PostgreSQL database). One thread, epoll, non-blocking sockets: the generator needs a few percent
// of a core at 10,000 deliveries per second, so the hub has the machine.
//
// The protocol is the hub's groups socket (docs/hub.md): GET /v1/socket upgraded to a WebSocket with
// `Authorization: Bearer TOKEN`, then {"op":"hello"}, {"op":"join"|"listen","group":G},
// {"op":"post","group":G,"pid":P,"pidload":{...}}; events come back as text frames
// {"type":"post",...,"pidload":{"sent":T}}. Client frames are masked (RFC 6455 5.3), pings answered.
//
// usage: hub-loadgen --url http://HOST:PORT [--url2 http://HOST:PORT] --token TOKEN
//                    [--clients N] [--groups G] [--seconds S] [--run NAME] [--hub-pid PID] [--hub-pid2 PID]
//                    [--sources K] [--dump FILE]
// Prints one JSON line (the fields of Benchmarks/hub_load.py's, and the hub's resident memory before
// the sockets, with them idle, and at the end, when --hub-pid names it). Exit 1 when a socket could not
// be opened or was closed by the hub, or a delivery was lost. --dump FILE writes "seconds-into-the-run
// latency-ms" per delivery, to find when the tail happens.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { CONNECTING, UPGRADING, OPEN, CLOSED };
enum { IN_CAP_MAX = 1 << 20 };  // a frame over 1 MiB is a protocol error here (posts are ~100 bytes)

typedef struct {
    int fd, state, node, group, poster, joined;
    char *in; size_t in_len, in_cap;     // bytes read, not yet parsed
    char *out; size_t out_len, out_off, out_cap;  // bytes to write
    char *msg; size_t msg_len;           // a fragmented message being assembled
} Conn;

static Conn *conns;
static int nconns, epfd;
static struct sockaddr_in node_addr[2];
static char node_host[2][128];
static const char *token, *run_name;
static int clients = 1000, groups = 100, seconds = 20, sources = 1;
static double *lat, *lat_sent; static size_t nlat, lat_cap;
static const char *dump_path;
static int recording, opened, upgraded, failed, closed_by_hub, joined;
static double last_rx;  // when a frame last arrived (monotonic)

static double now_real(void) { struct timespec t; clock_gettime(CLOCK_REALTIME, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static double now_mono(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

static void die(const char *what) { fprintf(stderr, "hub-loadgen: %s: %s\n", what, strerror(errno)); exit(2); }

static void grow(char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap : 512;
    while (c < need) c *= 2;
    char *b = realloc(*buf, c);
    if (!b) die("out of memory");
    *buf = b; *cap = c;
}

static void watch(Conn *c, int mod) {
    struct epoll_event ev = { .events = EPOLLIN | (c->out_len > c->out_off ? EPOLLOUT : 0), .data.u32 = (uint32_t)(c - conns) };
    if (epoll_ctl(epfd, mod ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl");
}

static void flush(Conn *c) {
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) { if (errno == EAGAIN || errno == EINTR) break; c->state = CLOSED; return; }
        c->out_off += (size_t)n;
    }
    if (c->out_off == c->out_len) c->out_off = c->out_len = 0;
    watch(c, 1);
}

static void queue_raw(Conn *c, const void *p, size_t n) {
    if (c->out_off && c->out_off == c->out_len) c->out_off = c->out_len = 0;
    grow(&c->out, &c->out_cap, c->out_len + n);
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

// A masked client frame (RFC 6455 5.2): FIN, the opcode, the length, a mask key, the masked payload.
static void queue_frame(Conn *c, int opcode, const char *p, size_t n) {
    unsigned char h[14]; size_t hl = 0;
    h[hl++] = 0x80 | (unsigned char)opcode;
    if (n < 126) h[hl++] = 0x80 | (unsigned char)n;
    else if (n < 65536) { h[hl++] = 0x80 | 126; h[hl++] = (unsigned char)(n >> 8); h[hl++] = (unsigned char)n; }
    else { h[hl++] = 0x80 | 127; for (int i = 7; i >= 0; i--) h[hl++] = (unsigned char)((uint64_t)n >> (8 * i)); }
    uint32_t key = (uint32_t)random();
    unsigned char m[4] = { key >> 24, key >> 16, key >> 8, key };
    memcpy(h + hl, m, 4); hl += 4;
    queue_raw(c, h, hl);
    grow(&c->out, &c->out_cap, c->out_len + n);
    for (size_t i = 0; i < n; i++) c->out[c->out_len + i] = (char)(p[i] ^ m[i & 3]);
    c->out_len += n;
}

static void queue_text(Conn *c, const char *s) { queue_frame(c, 1, s, strlen(s)); }

static void on_message(Conn *c, const char *p, size_t n) {
    // {"type":"post",...,"pidload":{"sent":T}}: other events (hello, user, presence) are not timed, nor
    // the posters' copies of their own posts (they listen to their group).
    if (!c->joined && !c->poster && memmem(p, n, "\"type\":\"user\"", 13)) { c->joined = 1; joined++; }  // the group's snapshot
    if (c->poster) return;
    if (!memmem(p, n, "\"type\":\"post\"", 13)) return;
    const char *s = memmem(p, n, "\"sent\":", 7);
    if (!s || !recording) return;
    double sent = strtod(s + 7, NULL);
    if (nlat == lat_cap) {
        lat_cap = lat_cap ? lat_cap * 2 : 1 << 16;
        lat = realloc(lat, lat_cap * sizeof *lat);
        lat_sent = realloc(lat_sent, lat_cap * sizeof *lat_sent);
        if (!lat || !lat_sent) die("out of memory");
    }
    lat_sent[nlat] = sent;
    lat[nlat++] = (now_real() - sent) * 1000.0;
}

// Parses whole frames out of c->in; returns 0 when the connection should close.
static int parse_frames(Conn *c) {
    size_t off = 0;
    for (;;) {
        size_t avail = c->in_len - off;
        const unsigned char *b = (const unsigned char *)c->in + off;
        if (avail < 2) break;
        int fin = b[0] & 0x80, opcode = b[0] & 0x0f, masked = b[1] & 0x80;
        uint64_t len = b[1] & 0x7f; size_t hl = 2;
        if (len == 126) { if (avail < 4) break; len = (uint64_t)b[2] << 8 | b[3]; hl = 4; }
        else if (len == 127) { if (avail < 10) break; len = 0; for (int i = 0; i < 8; i++) len = len << 8 | b[2 + i]; hl = 10; }
        if (masked || len > IN_CAP_MAX) { fprintf(stderr, "hub-loadgen: a frame the hub may not send (masked or %llu bytes)\n", (unsigned long long)len); return 0; }
        if (avail < hl + len) break;
        const char *payload = (const char *)b + hl;
        switch (opcode) {
        case 0: case 1: case 2:
            if (fin && opcode != 0) on_message(c, payload, len);
            else {
                if (c->msg_len + len > IN_CAP_MAX) return 0;
                char *m = realloc(c->msg, c->msg_len + len + 1);
                if (!m) die("out of memory");
                c->msg = m; memcpy(c->msg + c->msg_len, payload, len); c->msg_len += len;
                if (fin) { on_message(c, c->msg, c->msg_len); c->msg_len = 0; }
            }
            break;
        case 8: closed_by_hub++; return 0;
        case 9: queue_frame(c, 10, payload, len); flush(c); break;
        default: break;
        }
        off += hl + len;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    return 1;
}

static void close_conn(Conn *c) {
    if (c->state == CLOSED && c->fd < 0) return;
    if (c->fd >= 0) { epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL); close(c->fd); c->fd = -1; }
    c->state = CLOSED;
}

static void on_readable(Conn *c) {
    for (;;) {
        grow(&c->in, &c->in_cap, c->in_len + 65536);
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n == 0) { if (c->state == OPEN) closed_by_hub++; else failed++; close_conn(c); return; }
        if (n < 0) { if (errno == EAGAIN || errno == EINTR) return; if (c->state == OPEN) closed_by_hub++; else failed++; close_conn(c); return; }
        c->in_len += (size_t)n;
        last_rx = now_mono();
        if (c->state == UPGRADING) {
            char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
            if (!end) { if (c->in_len > 16384) { failed++; close_conn(c); return; } continue; }
            if (c->in_len < 12 || memcmp(c->in + 9, "101", 3) != 0) {
                fprintf(stderr, "hub-loadgen: upgrade refused: %.*s\n", (int)(strchr(c->in, '\r') ? strchr(c->in, '\r') - c->in : 40), c->in);
                failed++; close_conn(c); return;
            }
            size_t head = (size_t)(end + 4 - c->in);
            memmove(c->in, c->in + head, c->in_len - head); c->in_len -= head;
            c->state = OPEN; upgraded++;
            char msg[256];
            queue_text(c, "{\"op\":\"hello\"}");
            snprintf(msg, sizeof msg, "{\"op\":\"%s\",\"group\":\"%sg%d\"}", c->poster ? "listen" : "join", run_name, c->group);
            queue_text(c, msg);
            flush(c);
        }
        if (c->state == OPEN && !parse_frames(c)) { close_conn(c); return; }
    }
}

static void start_upgrade(Conn *c) {
    char req[2048];
    // The key's value does not matter to the test (RFC 6455 4.1: 16 random bytes, base64).
    int n = snprintf(req, sizeof req,
        "GET /v1/socket HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: %08lxAAAAAAAAAAAAAA==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n",
        node_host[c->node], (unsigned long)(random() & 0x7fffffff), token);
    // The key must be 24 base64 characters: 8 hex digits + 14 'A' + "==".
    queue_raw(c, req, (size_t)n);
    c->state = UPGRADING;
    flush(c);
}

static void open_conn(Conn *c, int index) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0) die("socket (raise the descriptor limit: ulimit -n)");
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (sources > 1) {  // spread the client addresses over 127.0.0.2 ... (per-address caps)
        struct sockaddr_in src = { .sin_family = AF_INET };
        src.sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)(index % sources));
        if (bind(c->fd, (struct sockaddr *)&src, sizeof src) < 0) die("bind a source address");
    }
    if (connect(c->fd, (struct sockaddr *)&node_addr[c->node], sizeof node_addr[0]) < 0 && errno != EINPROGRESS) die("connect");
    c->state = CONNECTING;
    opened++;
    struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = (uint32_t)index };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl");
}

static void on_event(uint32_t index, uint32_t events) {
    Conn *c = &conns[index];
    if (c->fd < 0) return;
    if (c->state == CONNECTING) {
        int err = 0; socklen_t l = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err) { errno = err; fprintf(stderr, "hub-loadgen: connect: %s\n", strerror(err)); failed++; close_conn(c); return; }
        start_upgrade(c);
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
    if (c->fd >= 0 && (events & EPOLLOUT)) flush(c);
    if (c->state == CLOSED) close_conn(c);
}

static void poll_for(double wait_s) {
    struct epoll_event ev[512];
    int ms = wait_s <= 0 ? 0 : (int)(wait_s * 1000.0 + 0.999);
    int n = epoll_wait(epfd, ev, 512, ms);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    for (int i = 0; i < n; i++) on_event(ev[i].data.u32, ev[i].events);
}

static long rss_kib(int pid) {
    if (pid <= 0) return -1;
    char path[64], line[256]; long v = -1;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) if (!strncmp(line, "VmRSS:", 6)) { v = strtol(line + 6, NULL, 10); break; }
    fclose(f);
    return v;
}

static void parse_url(const char *url, int k) {
    unsigned a, b, c2, d, port;
    if (sscanf(url, "http://%u.%u.%u.%u:%u", &a, &b, &c2, &d, &port) != 5) {
        fprintf(stderr, "hub-loadgen: --url must be http://IPv4:PORT, not %s\n", url); exit(64);
    }
    node_addr[k].sin_family = AF_INET;
    node_addr[k].sin_port = htons((uint16_t)port);
    node_addr[k].sin_addr.s_addr = htonl(a << 24 | b << 16 | c2 << 8 | d);
    snprintf(node_host[k], sizeof node_host[k], "%u.%u.%u.%u:%u", a, b, c2, d, port);
}

static int cmp_double(const void *x, const void *y) { double a = *(const double *)x, b = *(const double *)y; return (a > b) - (a < b); }

int main(int argc, char **argv) {
    const char *url = NULL, *url2 = NULL; int hub_pid = 0, hub_pid2 = 0;
    run_name = "r";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "hub-loadgen: %s needs a value\n", o); return 64; }
        if (!strcmp(o, "--url")) url = v; else if (!strcmp(o, "--url2")) url2 = v;
        else if (!strcmp(o, "--token")) token = v; else if (!strcmp(o, "--run")) run_name = v;
        else if (!strcmp(o, "--clients")) clients = atoi(v); else if (!strcmp(o, "--groups")) groups = atoi(v);
        else if (!strcmp(o, "--seconds")) seconds = atoi(v); else if (!strcmp(o, "--sources")) sources = atoi(v);
        else if (!strcmp(o, "--dump")) dump_path = v;
        else if (!strcmp(o, "--hub-pid")) hub_pid = atoi(v); else if (!strcmp(o, "--hub-pid2")) hub_pid2 = atoi(v);
        else { fprintf(stderr, "hub-loadgen: unknown option %s\n", o); return 64; }
        i++;
    }
    if (!url || !token || clients < 1 || groups < 1 || groups > clients || seconds < 1 || sources < 1 || sources > 250) {
        fprintf(stderr, "usage: hub-loadgen --url http://IPv4:PORT [--url2 ...] --token TOKEN [--clients N] [--groups G] "
                        "[--seconds S] [--run NAME] [--sources K] [--hub-pid PID] [--hub-pid2 PID]\n");
        return 64;
    }
    parse_url(url, 0); parse_url(url2 ? url2 : url, 1);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) { rl.rlim_cur = rl.rlim_max; setrlimit(RLIMIT_NOFILE, &rl); }
    srandom((unsigned)getpid());
    epfd = epoll_create1(0);
    if (epfd < 0) die("epoll_create1");
    nconns = clients + groups;
    conns = calloc((size_t)nconns, sizeof *conns);
    long rss_before = rss_kib(hub_pid), rss2_before = rss_kib(hub_pid2);

    // Members first (member i in group i mod G, on node i mod 2), a few hundred connections in flight at once.
    double t0 = now_mono();
    for (int i = 0; i < nconns; i++) {
        Conn *c = &conns[i];
        c->fd = -1;
        c->poster = i >= clients;
        c->group = c->poster ? i - clients : i % groups;
        // Two nodes: posters alternate by group, a group's members by their place in it (member i is
        // the (i / G)-th of group i mod G), so half of every group's deliveries cross between the nodes.
        c->node = url2 ? (c->poster ? c->group : i / groups) % 2 : 0;
        open_conn(c, i);
        while (opened - upgraded - failed > 256) poll_for(1);
    }
    double guard = now_mono() + 300;  // a hang guard for the connections to be up and the joins answered
    while ((upgraded + failed < nconns || joined < clients - failed) && now_mono() < guard) poll_for(0.1);
    double connect_s = now_mono() - t0;
    if (joined < clients) fprintf(stderr, "hub-loadgen: %d of %d members had their join answered\n", joined, clients);
    // Quiet before timing: a join is answered before its presence events have reached the group's other
    // members (across nodes through the database's notifications, seconds after a 10,000-socket join
    // storm), so wait for a second without any frame (a hang guard of 120 s), nothing timed yet.
    double settle_guard = now_mono() + 120;
    while (now_mono() - last_rx < 1.0 && now_mono() < settle_guard) poll_for(0.1);
    long rss_idle = rss_kib(hub_pid), rss2_idle = rss_kib(hub_pid2);

    // Paced posts: post k (of group k mod G, in round k / G) at start + k / G seconds.
    recording = 1;
    double start = now_mono(), start_real = now_real();
    long sent = 0, total = (long)groups * seconds;
    char msg[512];
    while (sent < total) {
        double due = start + (double)sent / groups;
        double t = now_mono();
        if (t < due) { poll_for(due - t); continue; }
        Conn *p = &conns[clients + (int)(sent % groups)];
        if (p->state == OPEN) {
            snprintf(msg, sizeof msg, "{\"op\":\"post\",\"group\":\"%sg%d\",\"pid\":\"p%ld\",\"pidload\":{\"sent\":%.6f}}",
                     run_name, p->group, sent / groups, now_real());
            queue_text(p, msg);
            flush(p);
        }
        sent++;
        poll_for(0);
    }
    double drain = now_mono() + 3;
    while (now_mono() < drain) poll_for(drain - now_mono());
    double elapsed = now_real() - start_real;
    long rss_end = rss_kib(hub_pid), rss2_end = rss_kib(hub_pid2);

    long expected = 0;
    for (int g = 0; g < groups; g++) expected += (long)seconds * (clients / groups + (g < clients % groups));
    if (dump_path) {  // "send-time latency-ms" per delivery, to find when the tail happens
        FILE *f = fopen(dump_path, "w");
        if (!f) die(dump_path);
        for (size_t i = 0; i < nlat; i++) fprintf(f, "%.3f %.1f\n", lat_sent[i] - start_real, lat[i]);
        fclose(f);
    }
    qsort(lat, nlat, sizeof *lat, cmp_double);
#define PICK(q) (nlat ? lat[(size_t)((q) * (double)nlat) < nlat ? (size_t)((q) * (double)nlat) : nlat - 1] : -1.0)
    printf("{\"server\":\"modem-hub\",\"generator\":\"hub-loadgen\",\"nodes\":%d,\"clients\":%d,\"groups\":%d,\"posts\":%ld,"
           "\"expected\":%ld,\"delivered\":%zu,\"p50ms\":%.1f,\"p99ms\":%.1f,\"p999ms\":%.1f,\"maxms\":%.1f,\"seconds\":%.1f,"
           "\"deliveries_per_s\":%.0f,\"connect_and_join_s\":%.1f,\"joined\":%d,\"failed\":%d,\"closed_by_hub\":%d,"
           "\"hub_rss_kib\":{\"before\":%ld,\"idle\":%ld,\"end\":%ld},\"hub2_rss_kib\":{\"before\":%ld,\"idle\":%ld,\"end\":%ld}}\n",
           url2 ? 2 : 1, clients, groups, total, expected, nlat, PICK(0.5), PICK(0.99), PICK(0.999),
           nlat ? lat[nlat - 1] : -1.0, elapsed, nlat / (double)seconds, connect_s, joined, failed, closed_by_hub,
           rss_before, rss_idle, rss_end, rss2_before, rss2_idle, rss2_end);
    return failed || closed_by_hub || (long)nlat < expected ? 1 : 0;
}
