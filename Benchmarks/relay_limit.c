/* relay_limit.c - the one-hop reference: the least a broker can do per post, in C, speaking just enough of
 * Protocols/wire.md for Benchmarks/peer_herald.c. compare.sh runs it under the same C client as heraldd and
 * Redis, so every run shows what a broker in the middle costs this harness's publisher and subscriber, apart
 * from anything heraldd does.
 *
 *   relay_limit SOCKET [--coalesce-us N]     serves until SIGTERM; N = 20 by default, 0 turns it off
 *
 * What it does, per turn: one epoll_wait; one read per readable connection; each HELLO answered with WELCOME,
 * each SUBSCRIBE recorded and answered with ACK, each POST encoded once as a NOTIFY (sequence, time, the
 * sender's SO_PEERCRED, name, payload) and appended to the output buffer of every subscriber of its name; then
 * one send per connection with output. Under load it moderates its wake-ups by heraldd's own rule (a turn of 8
 * frames or more that ended within 100 µs of the last wake-up: sleep N µs before waiting again), because a
 * relay without it falls into a mode with a wake-up per post at half the rate.
 *
 * What it leaves out, as a reference should: names are only the harness's `ev0000` ... `ev9999`, one subscriber
 * list per name in an array; no patterns, retained values, limits, flow control or error frames. A frame it does
 * not handle, a bad name or a subscriber more than 8 MiB behind ends it with a message: it measures, it does not
 * serve. A measuring tool, not part of the product. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "herald_wire.h"

#define MAX_FD 4096        /* connections are indexed by descriptor */
#define NAMES 10000        /* ev0000 ... ev9999 */
#define IN_CAP (256 * 1024)
#define OUT_LIMIT (8u << 20) /* a subscriber this far behind ends the run: the harness's window was not kept */
#define LISTENER MAX_FD    /* epoll tag of the listening socket */

typedef struct {
    int fd, pid;
    uint32_t uid, gid;
    unsigned char in[IN_CAP];
    size_t used;
    unsigned char *out;
    size_t out_len, out_cap;
    int queued;     /* in the turn's list of connections with output */
    int *names;     /* the names it subscribed to, so closing can take it off their lists */
    int nnames;
} conn_t;

static conn_t *conns[MAX_FD];
static int *subscribers[NAMES], nsubscribers[NAMES];
static int pending[MAX_FD], npending;
static uint64_t sequence;
static int ep;

static void fail(const char *what) {
    fprintf(stderr, "relay_limit: %s\n", what);
    exit(1);
}
static void die(const char *what) { /* a failed call: what, and errno's reason */
    fprintf(stderr, "relay_limit: %s: %s\n", what, strerror(errno));
    exit(1);
}
static void *grow(void *p, size_t bytes) {
    if (!(p = realloc(p, bytes))) fail("out of memory");
    return p;
}
static uint64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* `ev` and four digits, as the harness names them; anything else is not this tool's job. */
static int name_index(const unsigned char *name, size_t len) {
    if (len != 6 || name[0] != 'e' || name[1] != 'v') fail("a name not of the form evNNNN");
    int v = 0;
    for (int i = 2; i < 6; i++) {
        if (name[i] < '0' || name[i] > '9') fail("a name not of the form evNNNN");
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

/* Room for n more bytes at the end of c's output; the connection joins the turn's send list. */
static unsigned char *reserve(conn_t *c, size_t n) {
    if (c->out_len + n > c->out_cap) {
        if (c->out_len + n > OUT_LIMIT) fail("a subscriber is more than 8 MiB behind");
        while (c->out_len + n > c->out_cap) c->out_cap = c->out_cap ? 2 * c->out_cap : 64 * 1024;
        c->out = grow(c->out, c->out_cap);
    }
    if (!c->queued) c->queued = 1, pending[npending++] = c->fd;
    unsigned char *p = c->out + c->out_len;
    c->out_len += n;
    return p;
}

static void handle(conn_t *c, const unsigned char *f, size_t len) {
    const unsigned char *body = f + HEADER;
    size_t blen = len - HEADER;
    switch (f[4]) {
    case HELLO: { /* version 1, 65535 subscriptions, 64 KiB payloads, our pid, "relay_limit" */
        unsigned char *o = reserve(c, HEADER + 12 + 1 + 11);
        put_u32(o, 2 + 12 + 1 + 11), o[4] = WELCOME, o[5] = 0;
        put_u16(o + 6, 1), put_u16(o + 8, 65535), put_u32(o + 10, 65536), put_u32(o + 14, (uint32_t)getpid());
        o[18] = 11, memcpy(o + 19, "relay_limit", 11);
        break;
    }
    case SUBSCRIBE: { /* subscription u32, name str8 */
        if (blen < 5 || blen != 5u + body[4]) fail("a malformed SUBSCRIBE");
        int t = name_index(body + 5, body[4]);
        for (int s = 0; s < nsubscribers[t]; s++) /* a connection gets each post once, as from heraldd */
            if (subscribers[t][s] == c->fd) goto ack;
        subscribers[t] = grow(subscribers[t], sizeof(int) * (size_t)(nsubscribers[t] + 1));
        subscribers[t][nsubscribers[t]++] = c->fd;
        c->names = grow(c->names, sizeof(int) * (size_t)(c->nnames + 1));
        c->names[c->nnames++] = t;
    ack:;
        unsigned char *o = reserve(c, HEADER + 12);
        put_u32(o, 2 + 12), o[4] = ACK, o[5] = 0;
        memcpy(o + 6, body, 4), put_u64(o + 10, sequence);
        break;
    }
    case POST: { /* request u32 (0 here: no reply), name str8, payload */
        if (blen < 5 || blen < 5u + body[4] || get_u32(body) != 0) fail("a malformed POST, or one wanting an ACK");
        size_t nlen = body[4], plen = blen - 5 - nlen;
        int t = name_index(body + 5, nlen);
        if (!nsubscribers[t]) { sequence++; break; }
        size_t n = HEADER + NOTIFY_FIXED + 1 + nlen + plen;
        unsigned char *first = reserve(conns[subscribers[t][0]], n); /* encoded once, copied to the rest */
        put_u32(first, (uint32_t)(n - 4)), first[4] = NOTIFY, first[5] = 0;
        put_u64(first + 6, ++sequence), put_u64(first + 14, now_ns(CLOCK_REALTIME));
        put_u32(first + 22, (uint32_t)c->pid), put_u32(first + 26, c->uid), put_u32(first + 30, c->gid), put_u32(first + 34, 0);
        first[38] = (unsigned char)nlen;
        memcpy(first + 39, body + 5, nlen + plen);
        for (int s = 1; s < nsubscribers[t]; s++) memcpy(reserve(conns[subscribers[t][s]], n), first, n);
        break;
    }
    default: fail("a frame this reference does not handle");
    }
}

static void close_conn(conn_t *c) {
    for (int k = 0; k < c->nnames; k++) {
        int t = c->names[k];
        for (int s = 0; s < nsubscribers[t]; s++)
            if (subscribers[t][s] == c->fd) subscribers[t][s--] = subscribers[t][--nsubscribers[t]];
    }
    for (int i = 0; i < npending; i++) /* output for a connection that is gone is dropped with it */
        if (pending[i] == c->fd) pending[i--] = pending[--npending];
    close(c->fd);
    free(c->out), free(c->names);
    conns[c->fd] = NULL;
    free(c);
}

/* One read, then every whole frame in the buffer. Returns the number of frames. */
static int read_from(conn_t *c) {
    ssize_t r = read(c->fd, c->in + c->used, IN_CAP - c->used);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (r <= 0) { close_conn(c); return 0; }
    c->used += (size_t)r;
    const unsigned char *p = c->in, *end = c->in + c->used;
    int frames = 0;
    while (end - p >= 4) {
        size_t len = 4 + (size_t)get_u32(p);
        if (len < HEADER || len > IN_CAP) fail("a frame too short or too long");
        if ((size_t)(end - p) < len) break;
        handle(c, p, len);
        p += len, frames++;
    }
    c->used = (size_t)(end - p);
    memmove(c->in, p, c->used);
    return frames;
}

/* One send per connection with output. A subscriber whose socket is full gets the rest when it drains: the
 * relay waits for it (bounded), as the harness's window keeps that rare. */
static void flush_all(void) {
    for (int i = 0; i < npending; i++) {
        conn_t *c = conns[pending[i]];
        size_t off = 0;
        while (off < c->out_len) {
            ssize_t w = send(c->fd, c->out + off, c->out_len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) { off += (size_t)w; continue; }
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && errno == EAGAIN) {
                struct pollfd pf = {.fd = c->fd, .events = POLLOUT};
                if (poll(&pf, 1, 2000) == 1) continue;
                fail("a subscriber did not read for 2 s");
            }
            break; /* the subscriber went away: its EOF closes it on the next read */
        }
        c->out_len = 0, c->queued = 0;
    }
    npending = 0;
}

static void accept_all(int listener) {
    int fd;
    while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        struct ucred cred;
        socklen_t cl = sizeof cred;
        if (fd >= MAX_FD || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) { close(fd); continue; }
        conn_t *c = calloc(1, sizeof *c);
        if (!c) fail("out of memory");
        c->fd = fd, c->pid = cred.pid, c->uid = cred.uid, c->gid = cred.gid;
        conns[fd] = c;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)fd};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
    }
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) die("accept4");
}

int main(int argc, char **argv) {
    long coalesce_us = 20;
    char *end = NULL;
    if (argc == 4 && strcmp(argv[2], "--coalesce-us") == 0) {
        coalesce_us = strtol(argv[3], &end, 10);
        if (end == argv[3] || *end) fail("--coalesce-us takes a whole number of microseconds");
    } else if (argc != 2) {
        fprintf(stderr, "usage: relay_limit SOCKET [--coalesce-us N]\n");
        return 64;
    }
    if (coalesce_us < 0 || coalesce_us > 1000) fail("--coalesce-us is 0...1000");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof sa.sun_path) fail("socket path too long");
    strcpy(sa.sun_path, argv[1]);
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(listener, 1024) < 0)
        die(argv[1]);
    if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) die("epoll_create1");
    struct epoll_event lev = {.events = EPOLLIN, .data.u32 = LISTENER};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, listener, &lev) < 0) die("epoll_ctl");

    struct epoll_event events[256];
    uint64_t woke = 0;
    int frames = 0;
    for (;;) {
        int n = 0;
        if (coalesce_us && frames >= 8 && now_ns(CLOCK_MONOTONIC) - woke < 100000) {
            n = epoll_wait(ep, events, 256, 0);
            if (n == 0) {
                struct timespec ts = {0, coalesce_us * 1000};
                nanosleep(&ts, NULL);
            }
        }
        if (n == 0) {
            n = epoll_wait(ep, events, 256, -1);
            woke = now_ns(CLOCK_MONOTONIC);
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        frames = 0;
        for (int i = 0; i < n; i++) {
            uint32_t tag = events[i].data.u32;
            if (tag == LISTENER) accept_all(listener);
            else if (conns[tag]) frames += read_from(conns[tag]);
        }
        flush_all();
    }
}
