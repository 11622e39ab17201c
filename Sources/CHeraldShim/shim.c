// See include/CHeraldShim.h for the contract of each function.
#include "CHeraldShim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef __linux__
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#endif

// MARK: - Sockets

#ifndef __linux__
// Darwin has neither SOCK_CLOEXEC nor SOCK_NONBLOCK: set them after the fact.
// The window before FD_CLOEXEC is set is acceptable there; Linux is the platform.
static int herald_set_flags(int fd, int nonblock) {
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) return -1;
    if (nonblock) {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return -1;
    }
    int one = 1;
    // Darwin has no MSG_NOSIGNAL; this is its per-socket equivalent.
    (void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
    return 0;
}

static int herald_close_preserving_errno(int fd) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}
#endif

int herald_socket_unix_stream(int nonblock) {
#ifdef __linux__
    return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
#else
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (herald_set_flags(fd, nonblock) < 0) return herald_close_preserving_errno(fd);
    return fd;
#endif
}

int herald_socketpair_unix_stream(int fds[2]) {
#ifdef __linux__
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
#else
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) < 0) return -1;
    if (herald_set_flags(fds[0], 0) < 0 || herald_set_flags(fds[1], 0) < 0) {
        int saved = errno;
        close(fds[0]);
        close(fds[1]);
        errno = saved;
        return -1;
    }
    return 0;
#endif
}

int herald_accept4(int fd) {
#ifdef __linux__
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
#else
    int client = accept(fd, NULL, NULL);
    if (client < 0) return -1;
    if (herald_set_flags(client, 1) < 0) return herald_close_preserving_errno(client);
    return client;
#endif
}

size_t herald_sun_path_capacity(void) {
    return sizeof(((struct sockaddr_un *)0)->sun_path);
}

static int herald_make_address(struct sockaddr_un *address, const char *path, size_t path_len) {
    memset(address, 0, sizeof *address);
    // The NUL must fit too: the kernel accepts an unterminated sun_path, but
    // every tool that prints the address (ss, lsof) would then read past it.
    if (path_len + 1 > sizeof address->sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    address->sun_family = AF_UNIX;
    memcpy(address->sun_path, path, path_len);
    return 0;
}

int herald_bind_unix(int fd, const char *path, size_t path_len) {
    struct sockaddr_un address;
    if (herald_make_address(&address, path, path_len) < 0) return -1;
    return bind(fd, (const struct sockaddr *)&address, sizeof address);
}

int herald_connect_unix(int fd, const char *path, size_t path_len) {
    struct sockaddr_un address;
    if (herald_make_address(&address, path, path_len) < 0) return -1;
    return connect(fd, (const struct sockaddr *)&address, sizeof address);
}

int herald_connect_unix_abstract(int fd, const char *name, size_t name_len) {
#ifdef __linux__
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    if (name_len + 1 > sizeof address.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    // The leading NUL of sun_path is what makes the address abstract; the name is not NUL-terminated.
    memcpy(address.sun_path + 1, name, name_len);
    socklen_t length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + name_len);
    return connect(fd, (const struct sockaddr *)&address, length);
#else
    (void)fd;
    (void)name;
    (void)name_len;
    errno = EAFNOSUPPORT;
    return -1;
#endif
}

int herald_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
#ifdef __linux__
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) < 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
#else
    uid_t peer_uid;
    gid_t peer_gid;
    if (getpeereid(fd, &peer_uid, &peer_gid) < 0) return -1;
    pid_t peer_pid = -1;
    socklen_t length = sizeof peer_pid;
    if (getsockopt(fd, SOL_LOCAL, LOCAL_PEERPID, &peer_pid, &length) < 0) return -1;
    *pid = peer_pid;
    *uid = peer_uid;
    *gid = peer_gid;
    return 0;
#endif
}

#ifdef MSG_NOSIGNAL
#define HERALD_SEND_FLAGS MSG_NOSIGNAL
#else
#define HERALD_SEND_FLAGS 0
#endif

ssize_t herald_send(int fd, const void *buffer, size_t length) {
    return send(fd, buffer, length, HERALD_SEND_FLAGS);
}

ssize_t herald_sendv(int fd, const struct iovec *iov, int iovcnt) {
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = (struct iovec *)iov;
    message.msg_iovlen = iovcnt;
    return sendmsg(fd, &message, HERALD_SEND_FLAGS);
}

ssize_t herald_send_with_descriptors(int fd, const void *buffer, size_t length, const int *descriptors, int count) {
    struct iovec iov = {.iov_base = (void *)buffer, .iov_len = length};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    // Room for up to 253 descriptors, the most Linux passes in one message (SCM_MAX_FD).
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 253)];
        struct cmsghdr align;
    } control;
    if (count > 0) {
        if (count > 253) {
            errno = EINVAL;
            return -1;
        }
        memset(&control, 0, sizeof control);
        message.msg_control = control.bytes;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * (size_t)count);
    }
    return sendmsg(fd, &message, HERALD_SEND_FLAGS);
}

ssize_t herald_receive_with_descriptors(int fd, void *buffer, size_t length, int *descriptors, int capacity,
                                        int *count) {
    struct iovec iov = {.iov_base = buffer, .iov_len = length};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 253)];
        struct cmsghdr align;
    } control;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    int flags = 0;
#ifdef MSG_CMSG_CLOEXEC
    flags |= MSG_CMSG_CLOEXEC;
#endif
    ssize_t received = recvmsg(fd, &message, flags);
    *count = 0;
    if (received < 0) return received;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t n = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *passed = (int *)CMSG_DATA(header);
        for (size_t i = 0; i < n; i++) {
            if (*count < capacity) {
                descriptors[(*count)++] = passed[i];
            } else {
                close(passed[i]);
            }
        }
    }
    return received;
}

// MARK: - Timers

#ifdef __linux__
#include <sys/prctl.h>
#endif

int herald_set_timer_slack(unsigned long nanoseconds) {
#ifdef __linux__
    return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0);
#else
    (void)nanoseconds;
    errno = ENOSYS;
    return -1;
#endif
}

// MARK: - Errors

const char *herald_strerror(int error, char *buffer, size_t size) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    // The GNU variant returns the text, possibly a static string.
    return strerror_r(error, buffer, size);
#else
    if (strerror_r(error, buffer, size) != 0) {
        snprintf(buffer, size, "Unknown error %d", error);
    }
    return buffer;
#endif
}

#ifdef __linux__

// MARK: - epoll

const uint32_t HERALD_EPOLLIN = EPOLLIN;
const uint32_t HERALD_EPOLLOUT = EPOLLOUT;
const uint32_t HERALD_EPOLLERR = EPOLLERR;
const uint32_t HERALD_EPOLLHUP = EPOLLHUP;
const uint32_t HERALD_EPOLLRDHUP = EPOLLRDHUP;
const uint32_t HERALD_EPOLLET = EPOLLET;
const int HERALD_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
const int HERALD_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
const int HERALD_EPOLL_CTL_DEL = EPOLL_CTL_DEL;

int herald_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int herald_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}

enum { HERALD_EPOLL_MAX_EVENTS = 1024 };

int herald_epoll_wait(int epfd, herald_epoll_event *events, int max, int timeout_ms) {
    if (max < 1 || max > HERALD_EPOLL_MAX_EVENTS) {
        errno = EINVAL;
        return -1;
    }
    // struct epoll_event is packed on x86_64; copy it into an aligned struct.
    struct epoll_event raw[HERALD_EPOLL_MAX_EVENTS];
    int count = epoll_wait(epfd, raw, max, timeout_ms);
    for (int i = 0; i < count; i++) {
        events[i].events = raw[i].events;
        events[i].data = raw[i].data.u64;
    }
    return count;
}

// MARK: - eventfd

const int HERALD_EFD_CLOEXEC = EFD_CLOEXEC;
const int HERALD_EFD_NONBLOCK = EFD_NONBLOCK;

int herald_eventfd(unsigned int initval, int flags) {
    return eventfd(initval, flags);
}

// MARK: - signalfd

static int herald_make_sigset(sigset_t *set, const int *signals, int count) {
    sigemptyset(set);
    for (int i = 0; i < count; i++) {
        if (sigaddset(set, signals[i]) < 0) return -1;
    }
    return 0;
}

int herald_signalfd(const int *signals, int count) {
    sigset_t set;
    if (herald_make_sigset(&set, signals, count) < 0) return -1;
    // pthread_sigmask returns the error instead of setting errno.
    int error = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (error != 0) {
        errno = error;
        return -1;
    }
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int herald_unblock_signals(const int *signals, int count) {
    sigset_t set;
    if (herald_make_sigset(&set, signals, count) < 0) return -1;
    int error = pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    if (error != 0) {
        errno = error;
        return -1;
    }
    return 0;
}

int herald_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    ssize_t count = read(fd, &info, sizeof info);
    if (count < 0) return -1;
    if (count != (ssize_t)sizeof info) {
        // The kernel only ever returns whole records; anything else is a bug.
        errno = EIO;
        return -1;
    }
    return (int)info.ssi_signo;
}

#endif  // __linux__

// MARK: - systemd

#include <stddef.h>

int herald_is_listening_unix_stream(int fd) {
    int value = 0;
    socklen_t length = sizeof value;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &length) < 0) {
        // A descriptor that is not a socket is an answer here, not a failure.
        if (errno == ENOTSOCK) return 0;
        return -1;
    }
    if (value != SOCK_STREAM) return 0;
    struct sockaddr_un address;
    socklen_t address_length = sizeof address;
    memset(&address, 0, sizeof address);
    if (getsockname(fd, (struct sockaddr *)&address, &address_length) < 0) return -1;
    if (address.sun_family != AF_UNIX) return 0;
#ifdef SO_ACCEPTCONN
    value = 0;
    length = sizeof value;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) < 0) return -1;
    if (!value) return 0;
#endif
    return 1;
}

int herald_unix_socket_path(int fd, char *buffer, size_t size) {
    struct sockaddr_un address;
    socklen_t length = sizeof address;
    memset(&address, 0, sizeof address);
    if (getsockname(fd, (struct sockaddr *)&address, &length) < 0) return -1;
    size_t offset = offsetof(struct sockaddr_un, sun_path);
    // Unnamed (length == offset) or abstract (leading NUL): no file to name.
    if (address.sun_family != AF_UNIX || length <= offset || address.sun_path[0] == '\0') return 0;
    size_t path_length = strnlen(address.sun_path, length - offset);
    if (path_length + 1 > size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buffer, address.sun_path, path_length);
    buffer[path_length] = '\0';
    return (int)path_length;
}

int herald_socket_unix_datagram(void) {
#ifdef __linux__
    return socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
#else
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd < 0) return -1;
    if (herald_set_flags(fd, 0) < 0) return herald_close_preserving_errno(fd);
    return fd;
#endif
}

// Fills `target` with the datagram address `address` (a path, or '@' and an abstract name) and sets its length.
// Returns -1 with errno set for an empty or too long address.
static int herald_unix_target(
    const char *address, size_t address_len, struct sockaddr_un *target, socklen_t *target_length
) {
    memset(target, 0, sizeof *target);
    if (address_len == 0 || address_len + 1 > sizeof target->sun_path) {
        errno = address_len == 0 ? EINVAL : ENAMETOOLONG;
        return -1;
    }
    target->sun_family = AF_UNIX;
    memcpy(target->sun_path, address, address_len);
    *target_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + address_len);
    if (address[0] == '@') {
        // An abstract address: the kernel's name starts with a NUL and is exactly address_len bytes long.
        target->sun_path[0] = '\0';
    } else {
        *target_length += 1;
    }
    return 0;
}

ssize_t herald_sendto_unix(int fd, const char *address, size_t address_len, const void *buffer, size_t length) {
    struct sockaddr_un target;
    socklen_t target_length;
    if (herald_unix_target(address, address_len, &target, &target_length) < 0) return -1;
    return sendto(fd, buffer, length, HERALD_SEND_FLAGS, (const struct sockaddr *)&target, target_length);
}

ssize_t herald_sendto_unix_with_fd(
    int fd, const char *address, size_t address_len, const void *buffer, size_t length, int passed
) {
    struct sockaddr_un target;
    socklen_t target_length;
    if (herald_unix_target(address, address_len, &target, &target_length) < 0) return -1;
    struct iovec part = {.iov_base = (void *)buffer, .iov_len = length};
    union {
        char bytes[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {
        .msg_name = &target,
        .msg_namelen = target_length,
        .msg_iov = &part,
        .msg_iovlen = 1,
        .msg_control = control.bytes,
        .msg_controllen = sizeof control.bytes,
    };
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &passed, sizeof(int));
    return sendmsg(fd, &message, HERALD_SEND_FLAGS);
}

ssize_t herald_receive_with_fd(int fd, void *buffer, size_t length, int *passed) {
    struct iovec part = {.iov_base = buffer, .iov_len = length};
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    struct msghdr message = {
        .msg_iov = &part,
        .msg_iovlen = 1,
        .msg_control = control.bytes,
        .msg_controllen = sizeof control.bytes,
    };
    *passed = -1;
    ssize_t count = recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
    if (count < 0) return count;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS && *passed < 0) {
            memcpy(passed, CMSG_DATA(header), sizeof(int));
        }
    }
    return count;
}

// MARK: - TCP (chat server)

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

int herald_tcp_family(const char *host) {
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, host, &v4) == 1) return AF_INET;
    if (inet_pton(AF_INET6, host, &v6) == 1) return AF_INET6;
    errno = EINVAL;
    return -1;
}

int herald_socket_tcp(int family, int nonblock) {
#ifdef __linux__
    return socket(family, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
#else
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (herald_set_flags(fd, nonblock) < 0) return herald_close_preserving_errno(fd);
    return fd;
#endif
}

/// Fills `storage` with the numeric `host` and `port`; EINVAL for a host that
/// is not an IPv4 or IPv6 literal.
static int herald_make_tcp_address(struct sockaddr_storage *storage, socklen_t *length, const char *host,
                                   uint16_t port) {
    memset(storage, 0, sizeof *storage);
    struct sockaddr_in *v4 = (struct sockaddr_in *)storage;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)storage;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        *length = sizeof *v4;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        *length = sizeof *v6;
        return 0;
    }
    errno = EINVAL;
    return -1;
}

int herald_bind_tcp(int fd, const char *host, uint16_t port) {
    struct sockaddr_storage address;
    socklen_t length;
    if (herald_make_tcp_address(&address, &length, host, port) < 0) return -1;
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) return -1;
    return bind(fd, (const struct sockaddr *)&address, length);
}

int herald_connect_tcp(int fd, const char *host, uint16_t port) {
    struct sockaddr_storage address;
    socklen_t length;
    if (herald_make_tcp_address(&address, &length, host, port) < 0) return -1;
    if (connect(fd, (const struct sockaddr *)&address, length) == 0) return 0;
    if (errno != EINTR) return -1;
    // The connection goes on in the background; wait for it rather than calling connect again.
    struct pollfd entry = {.fd = fd, .events = POLLOUT};
    int ready;
    do {
        ready = poll(&entry, 1, -1);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -1;
    int error = 0;
    socklen_t error_length = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_length) < 0) return -1;
    if (error != 0) {
        errno = error;
        return -1;
    }
    return 0;
}

int herald_tcp_local_port(int fd) {
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (getsockname(fd, (struct sockaddr *)&address, &length) < 0) return -1;
    if (address.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&address)->sin_port);
    if (address.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&address)->sin6_port);
    errno = EAFNOSUPPORT;
    return -1;
}

int herald_tcp_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int herald_socket_set_send_buffer(int fd, int bytes) {
    return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
}

int herald_tcp_peer_address(int fd, char *buffer, size_t length) {
    struct sockaddr_storage address;
    socklen_t address_length = sizeof address;
    if (getpeername(fd, (struct sockaddr *)&address, &address_length) < 0) return -1;
    if (address.ss_family == AF_INET) {
        return inet_ntop(AF_INET, &((struct sockaddr_in *)&address)->sin_addr, buffer, length) ? 0 : -1;
    }
    if (address.ss_family == AF_INET6) {
        struct in6_addr *v6 = &((struct sockaddr_in6 *)&address)->sin6_addr;
        // An IPv4 client of a dual-stack listener: shown as the IPv4 address it is.
        if (IN6_IS_ADDR_V4MAPPED(v6)) return inet_ntop(AF_INET, &v6->s6_addr[12], buffer, length) ? 0 : -1;
        return inet_ntop(AF_INET6, v6, buffer, length) ? 0 : -1;
    }
    errno = EAFNOSUPPORT;
    return -1;
}

int herald_set_current_thread_name(const char *name) {
#ifdef __APPLE__
    return pthread_setname_np(name);
#else
    return pthread_setname_np(pthread_self(), name);
#endif
}

int herald_memfd_create(const char *name) {
#if defined(__linux__)
    return memfd_create(name, MFD_CLOEXEC);
#else
    (void)name;
    errno = ENOSYS;
    return -1;
#endif
}

int herald_fallocate(int fd, long long offset, long long length) {
#if defined(__linux__)
    return fallocate(fd, 0, (off_t)offset, (off_t)length);
#else
    (void)fd;
    (void)offset;
    (void)length;
    errno = ENOSYS;
    return -1;
#endif
}

// MARK: - Guarded stores into a shared mapping

// Where a copy in progress on this thread jumps back to on SIGBUS; NULL outside herald_copy_to_mapping.
static __thread sigjmp_buf *herald_copy_jump;
static struct sigaction herald_previous_bus;
static pthread_once_t herald_bus_once = PTHREAD_ONCE_INIT;

static void herald_bus_handler(int number, siginfo_t *info, void *context) {
    sigjmp_buf *jump = herald_copy_jump;
    if (jump != NULL) {
        herald_copy_jump = NULL;
        siglongjmp(*jump, 1);
    }
    // Not one of ours: the handler there was before takes it (the Swift runtime's backtracer, say), or the fault
    // happens again under the default disposition, as if we were not here.
    if (herald_previous_bus.sa_flags & SA_SIGINFO) {
        herald_previous_bus.sa_sigaction(number, info, context);
    } else if (herald_previous_bus.sa_handler != SIG_DFL && herald_previous_bus.sa_handler != SIG_IGN) {
        herald_previous_bus.sa_handler(number);
    } else {
        signal(SIGBUS, SIG_DFL);
    }
}

static void herald_install_bus_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = herald_bus_handler;
    // SA_NODEFER: SIGBUS is not blocked while the handler runs, so jumping out of it leaves the mask as it was, and
    // the copy needs no sigsetjmp that saves the mask (a sigprocmask call per copy).
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &herald_previous_bus);
}

int herald_copy_to_mapping(void *destination, const void *source, size_t count) {
    pthread_once(&herald_bus_once, herald_install_bus_handler);
    sigjmp_buf jump;
    // savemask 0: no system call; the handler runs with SIGBUS unblocked (SA_NODEFER), so the mask needs no restoring.
    if (sigsetjmp(jump, 0) != 0) {
        errno = EFAULT;
        return -1;
    }
    herald_copy_jump = &jump;
    // Compiler barriers: the stores stay inside the guarded window.
    __asm__ volatile("" ::: "memory");
    memcpy(destination, source, count);
    __asm__ volatile("" ::: "memory");
    herald_copy_jump = NULL;
    return 0;
}
