/* idle_conns.c - opens N idle connections to heraldd and holds them, so compare.sh can read what an idle
 * connection costs the daemon (its RSS before and after). With hello=1 each connection also completes
 * HELLO/WELCOME (Protocols/wire.md) and then says nothing more; with hello=0 it only connects.
 *
 *   idle_conns SOCKET N HELLO     prints "ready N" on stdout once all are open, then waits for SIGTERM
 *
 * Needs `ulimit -n` above N. A measuring tool, not part of the product. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void die(const char *what, int i) {
    fprintf(stderr, "idle_conns: %s (connection %d): %s\n", what, i, strerror(errno));
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: idle_conns SOCKET N HELLO(0|1)\n");
        return 64;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", argv[1]);
    int n = atoi(argv[2]), hello = atoi(argv[3]);
    int *fds = calloc((size_t)n, sizeof *fds);
    /* HELLO: length 12 (type, flags, two u16 versions 1..1, str8 "bench"), as wire.md lays it out. */
    static const unsigned char frame[] = {12, 0, 0, 0, 0x01, 0, 1, 0, 1, 0, 5, 'b', 'e', 'n', 'c', 'h'};
    for (int i = 0; i < n; i++) {
        if ((fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) die("socket", i);
        if (connect(fds[i], (struct sockaddr *)&sa, sizeof sa) < 0) die("connect", i);
        if (hello && write(fds[i], frame, sizeof frame) != (ssize_t)sizeof frame) die("write HELLO", i);
    }
    /* Every WELCOME read whole, so each connection is past its handshake before the RSS is read. */
    for (int i = 0; hello && i < n; i++) {
        unsigned char w[512];
        size_t have = 0, want = 4;
        while (have < want) {
            ssize_t r = read(fds[i], w + have, want - have);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) die("read WELCOME", i);
            have += (size_t)r;
            if (have == 4) {
                want = 4 + (size_t)(w[0] | w[1] << 8 | w[2] << 16 | (unsigned)w[3] << 24);
                if (want > sizeof w) die("WELCOME too long", i);
            }
        }
        if (w[4] != 0x81) die("not WELCOME", i);
    }
    printf("ready %d\n", n);
    fflush(stdout);
    for (;;) pause(); /* until SIGTERM; the kernel closes every connection */
}
