/* peer_herald.c - heraldd under the pub/sub harness of shared/bench/peers: an adapter_t (bench.h) that
 * speaks Protocols/wire.md version 1 directly, so heraldd is measured by the same C publisher and
 * subscriber code as Redis and ZeroMQ. addr = the daemon's socket path.
 *
 * Built into the harness without changing it:
 *   make -C shared/bench/peers OUT=Benchmarks/build EXTRA_ADAPTER=$PWD/Benchmarks/peer_herald.c
 *
 * Every frame is `u32 length | u8 type | u8 flags | body`, little-endian, length = 2 + body. The
 * subscriber parses NOTIFY frames in place (no allocation per message), like the Redis adapter does
 * with its pushes, so the harness stays light and the broker is what is measured. */
#include "bench.h"
#include "herald_wire.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define INBUF (256 * 1024)
#define OUTBUF (64 * 1024)

static int write_all(int fd, const void *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p = (const char *)p + w, n -= (size_t)w;
    }
    return 0;
}

/* Connects to the daemon and completes HELLO/WELCOME. Returns the blocking socket, or -1. */
static int herald_connect(const char *addr) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(addr) >= sizeof sa.sun_path) return -1;
    strcpy(sa.sun_path, addr);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) goto fail;
    /* HELLO: minVersion 1, maxVersion 1, client "bench". */
    unsigned char hello[HEADER + 4 + 1 + 5];
    put_u32(hello, sizeof hello - 4);
    hello[4] = HELLO, hello[5] = 0;
    put_u16(hello + 6, 1), put_u16(hello + 8, 1);
    hello[10] = 5;
    memcpy(hello + 11, "bench", 5);
    if (write_all(fd, hello, sizeof hello) < 0) goto fail;
    /* WELCOME is the daemon's first frame and nothing else can follow it before we send a request, so
     * reading exactly its length leaves no bytes behind. */
    unsigned char w[512];
    size_t have = 0, want = 4;
    while (have < want) {
        ssize_t r = read(fd, w + have, want - have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) goto fail;
        have += (size_t)r;
        if (have == 4) {
            want = 4 + (size_t)get_u32(w);
            if (want > sizeof w || want < HEADER) goto fail;
        }
    }
    if (w[4] != WELCOME) goto fail; /* ERROR: wrong uid, unsupported version */
    return fd;
fail:
    close(fd);
    return -1;
}

/* ---- subscriber: all M connections of the subscriber process, read through one epoll ---- */

typedef struct {
    int fd;
    unsigned char *in; /* bytes read and not yet parsed, from in[0] */
    size_t used;
    int acks_wanted; /* ACKs still owed for this connection's SUBSCRIBE frames */
} hconn_t;
typedef struct { int n, ep; hconn_t *c; } hsub_t;

static void *sub_open(const char *addr, int nconn, int npub) {
    (void)npub;
    hsub_t *s = calloc(1, sizeof *s);
    s->n = nconn;
    s->c = calloc((size_t)nconn, sizeof *s->c);
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    for (int j = 0; j < nconn; j++) {
        hconn_t *c = &s->c[j];
        if ((c->fd = herald_connect(addr)) < 0 || !(c->in = malloc(INBUF))) return NULL;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)j};
        if (epoll_ctl(s->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) return NULL;
    }
    return s;
}

/* Parses every whole frame in connection j's buffer: NOTIFY goes to bench_deliver, ACK pays off a
 * SUBSCRIBE. Returns -1 on an ERROR frame, a frame the daemon must not send, or a malformed one. */
static int parse(hsub_t *s, int j) {
    hconn_t *c = &s->c[j];
    const unsigned char *p = c->in, *end = c->in + c->used;
    while (end - p >= 4) {
        size_t frame = 4 + (size_t)get_u32(p);
        if (frame < HEADER || frame > INBUF) return -1;
        if ((size_t)(end - p) < frame) break;
        switch (p[4]) {
        case NOTIFY: {
            if (frame < HEADER + NOTIFY_FIXED + 1) return -1;
            size_t name = p[HEADER + NOTIFY_FIXED], at = HEADER + NOTIFY_FIXED + 1 + name;
            if (at > frame) return -1;
            bench_deliver(j, p + at, frame - at);
            break;
        }
        case ACK: c->acks_wanted--; break;
        case DROPPED: break; /* the harness counts the loss itself: `lost` > 0 */
        default: return -1;  /* ERROR (final in version 1) or a frame out of place */
        }
        p += frame;
    }
    c->used = (size_t)(end - p);
    memmove(c->in, p, c->used);
    return 0;
}

/* Reads once from connection j into its buffer and parses what arrived. */
static int fill(hsub_t *s, int j) {
    hconn_t *c = &s->c[j];
    ssize_t r = read(c->fd, c->in + c->used, INBUF - c->used);
    if (r < 0 && errno == EINTR) return 0;
    if (r <= 0) return -1;
    c->used += (size_t)r;
    return parse(s, j);
}

/* One SUBSCRIBE per name (subscription ids 1..nt), written in one go, then waits for all nt ACKs:
 * once the last ACK is read, every name is live (wire.md, "Acknowledged"). */
static int sub_subscribe(void *sp, int conn, const int *topics, int nt) {
    hsub_t *s = sp;
    hconn_t *c = &s->c[conn];
    size_t one = HEADER + 4 + 1 + NAME_LEN;
    unsigned char *out = malloc(one * (size_t)nt);
    for (int k = 0; k < nt; k++) {
        unsigned char *f = out + one * (size_t)k;
        char name[NAME_LEN + 1];
        topic_name(name, topics[k]);
        put_u32(f, (uint32_t)(one - 4));
        f[4] = SUBSCRIBE, f[5] = 0;
        put_u32(f + 6, (uint32_t)k + 1);
        f[10] = NAME_LEN;
        memcpy(f + 11, name, NAME_LEN);
    }
    int rc = write_all(c->fd, out, one * (size_t)nt);
    free(out);
    if (rc < 0) return -1;
    c->acks_wanted += nt;
    while (c->acks_wanted > 0)
        if (fill(s, conn) < 0) return -1;
    return 0;
}

static int sub_poll(void *sp, int timeout_ms) {
    hsub_t *s = sp;
    struct epoll_event ev[256];
    int n = epoll_wait(s->ep, ev, 256, timeout_ms);
    if (n < 0) return errno == EINTR ? 0 : -1;
    for (int i = 0; i < n; i++)
        if (fill(s, (int)ev[i].data.u32) < 0) return -1;
    return 0;
}

static void sub_close(void *sp) {
    hsub_t *s = sp;
    for (int j = 0; j < s->n; j++) close(s->c[j].fd), free(s->c[j].in);
    close(s->ep);
}

/* ---- publisher: POST frames with request 0 (no reply), buffered until pub_flush ---- */

typedef struct { int fd; size_t used; unsigned char out[OUTBUF]; } hpub_t;

static void *pub_open(const char *addr, int pub_id) {
    (void)pub_id;
    hpub_t *p = calloc(1, sizeof *p);
    if ((p->fd = herald_connect(addr)) < 0) return free(p), NULL;
    return p;
}

static int pub_flush(void *pp) {
    hpub_t *p = pp;
    int rc = write_all(p->fd, p->out, p->used);
    p->used = 0;
    return rc;
}

static int pub_send(void *pp, int topic, const void *payload, size_t len) {
    hpub_t *p = pp;
    size_t frame = HEADER + 4 + 1 + NAME_LEN + len;
    if (frame > OUTBUF) return -1;
    if (p->used + frame > OUTBUF && pub_flush(p) < 0) return -1;
    unsigned char *f = p->out + p->used;
    char name[NAME_LEN + 1];
    topic_name(name, topic);
    put_u32(f, (uint32_t)(frame - 4));
    f[4] = POST, f[5] = 0;
    put_u32(f + 6, 0); /* request 0: no ACK, as PUBLISH replies are discarded for Redis */
    f[10] = NAME_LEN;
    memcpy(f + 11, name, NAME_LEN);
    memcpy(f + 11 + NAME_LEN, payload, len);
    p->used += frame;
    return 0;
}

static void pub_close(void *pp) {
    hpub_t *p = pp;
    close(p->fd);
    free(p);
}

const adapter_t extra_adapter = {.name = "herald", .async_subscribe = 0, .sub_open = sub_open,
                                 .sub_subscribe = sub_subscribe, .sub_poll = sub_poll, .sub_close = sub_close,
                                 .pub_open = pub_open, .pub_send = pub_send, .pub_flush = pub_flush,
                                 .pub_close = pub_close, .serve = NULL};
