// CHeraldShim: the few pieces of the kernel interface that Glibc does not
// expose cleanly to Swift. Everything here is a thin, errno-preserving
// wrapper: it returns -1 and leaves errno set on failure, exactly like the
// syscall it wraps, so HeraldPosix can apply its one retry policy.
#ifndef C_HERALD_SHIM_H
#define C_HERALD_SHIM_H

#include <stdint.h>
#include <sys/types.h>

// Declared, not included: including <sys/uio.h> here would make Swift see `iovec`
// as this module's type instead of Glibc's.
struct iovec;

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Sockets

/// Creates an AF_UNIX SOCK_STREAM socket with SOCK_CLOEXEC, and SOCK_NONBLOCK
/// when `nonblock` is non-zero. (On Glibc SOCK_STREAM is an enum that Swift
/// imports awkwardly, and the flag forms are Linux-only.)
int herald_socket_unix_stream(int nonblock);

/// Creates a connected AF_UNIX SOCK_STREAM pair with close-on-exec set on
/// both ends; blocking. Returns 0 or -1 with errno.
int herald_socketpair_unix_stream(int fds[2]);

/// accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK); on platforms
/// without accept4 it emulates the flags with fcntl.
int herald_accept4(int fd);

/// Binds `fd` to the AF_UNIX address `path` (`path_len` bytes, no NUL).
/// Fails with ENAMETOOLONG when the path does not fit in sun_path with its NUL.
int herald_bind_unix(int fd, const char *path, size_t path_len);

/// Connects `fd` to the AF_UNIX address `path` (`path_len` bytes, no NUL).
/// Fails with ENAMETOOLONG when the path does not fit in sun_path with its NUL.
int herald_connect_unix(int fd, const char *path, size_t path_len);

/// Connects `fd` to the Linux abstract AF_UNIX address `name` (`name_len` bytes,
/// which may hold NULs): sun_path starts with a NUL and the address length
/// covers the name exactly, as D-Bus's `unix:abstract=` addresses need.
/// Fails with ENAMETOOLONG when the name does not fit after the leading NUL,
/// and with EAFNOSUPPORT where there is no abstract namespace (not Linux).
int herald_connect_unix_abstract(int fd, const char *name, size_t name_len);

/// The capacity of sockaddr_un.sun_path in bytes, including the NUL.
size_t herald_sun_path_capacity(void);

/// The credentials of the peer of a connected AF_UNIX socket.
/// Linux: SO_PEERCRED. Darwin: getpeereid plus LOCAL_PEERPID.
int herald_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);

/// send(2) with MSG_NOSIGNAL so that a closed peer yields EPIPE, never SIGPIPE.
/// (Darwin has no MSG_NOSIGNAL; there every socket this shim creates has
/// SO_NOSIGPIPE set instead.)
ssize_t herald_send(int fd, const void *buffer, size_t length);

/// sendmsg(2) of an iovec array with MSG_NOSIGNAL (see herald_send).
ssize_t herald_sendv(int fd, const struct iovec *iov, int iovcnt);

/// sendmsg(2) of `length` bytes with `count` descriptors attached as one
/// SCM_RIGHTS message, with MSG_NOSIGNAL (see herald_send). For D-Bus's unix
/// fd passing: the descriptors travel with the message's first byte.
ssize_t herald_send_with_descriptors(int fd, const void *buffer, size_t length, const int *descriptors, int count);

/// recvmsg(2) into `buffer`, collecting up to `capacity` descriptors the peer
/// attached (SCM_RIGHTS, received close-on-exec) into `descriptors` and their
/// number into `*count`. Descriptors past `capacity` are closed. Returns the
/// byte count, or -1 with errno.
ssize_t herald_receive_with_descriptors(int fd, void *buffer, size_t length, int *descriptors, int capacity,
                                        int *count);

// MARK: - Timers

/// Sets the calling thread's timer slack (prctl PR_SET_TIMERSLACK, Linux), how
/// late the kernel may wake a sleep to batch wake-ups: 50 us by default. Returns
/// 0, or -1 with errno (ENOSYS where there is no such setting).
int herald_set_timer_slack(unsigned long nanoseconds);

// MARK: - Threads

/// Names the calling thread (pthread_setname_np, which Glibc declares only
/// under _GNU_SOURCE); Linux keeps 15 bytes. Returns 0 or an error number.
int herald_set_current_thread_name(const char *name);

// MARK: - Errors

/// The text of `error`, thread-safely (strerror_r into `buffer`). Returns a
/// pointer to a NUL-terminated string, which may or may not be `buffer`.
const char *herald_strerror(int error, char *buffer, size_t size);

#ifdef __linux__

// MARK: - epoll

/// An epoll event copied out of the packed `struct epoll_event`, which Swift
/// cannot lay out correctly on x86_64.
typedef struct herald_epoll_event {
    uint32_t events;
    uint64_t data;
} herald_epoll_event;

extern const uint32_t HERALD_EPOLLIN;
extern const uint32_t HERALD_EPOLLOUT;
extern const uint32_t HERALD_EPOLLERR;
extern const uint32_t HERALD_EPOLLHUP;
extern const uint32_t HERALD_EPOLLRDHUP;
extern const uint32_t HERALD_EPOLLET;
extern const int HERALD_EPOLL_CTL_ADD;
extern const int HERALD_EPOLL_CTL_MOD;
extern const int HERALD_EPOLL_CTL_DEL;

/// epoll_create1(EPOLL_CLOEXEC).
int herald_epoll_create(void);

/// epoll_ctl with the event built from `events` and `data` (stored in data.u64).
int herald_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);

/// epoll_wait into a temporary packed array, copied out to `events`.
/// `max` must be between 1 and 1024.
int herald_epoll_wait(int epfd, herald_epoll_event *events, int max, int timeout_ms);

// MARK: - eventfd

extern const int HERALD_EFD_CLOEXEC;
extern const int HERALD_EFD_NONBLOCK;

/// eventfd(initval, flags).
int herald_eventfd(unsigned int initval, int flags);

// MARK: - signalfd

/// Blocks `signals` (count `count`) for the calling thread with
/// pthread_sigmask(SIG_BLOCK) and creates a signalfd for them with
/// SFD_CLOEXEC | SFD_NONBLOCK. Returns the fd or -1 with errno.
int herald_signalfd(const int *signals, int count);

/// Unblocks `signals` for the calling thread (pthread_sigmask(SIG_UNBLOCK)).
int herald_unblock_signals(const int *signals, int count);

/// Reads one signalfd_siginfo from `fd`: returns the signal number, or -1 with
/// errno (EAGAIN when none is pending).
int herald_signalfd_read(int fd);

// MARK: - Batched sends (io_uring)

/// A reusable set of io_uring rings that performs many non-blocking sends in
/// one system call (see send_batch.c for why).
typedef struct herald_send_batch herald_send_batch;

/// One send of a batch: `iovcnt` buffers at `iov` to socket `fd`. `result`
/// is set to the bytes sent (possibly fewer than offered) or -errno
/// (-EAGAIN when the socket is full, -EPIPE, -EBADF, ...).
typedef struct herald_send_op {
    int32_t fd;
    uint32_t iovcnt;
    const struct iovec *iov;
    int64_t result;
} herald_send_op;

/// Sets up a batch for at most `capacity` sends per run (1...4096). NULL
/// with errno when the kernel offers no io_uring (ENOSYS, EPERM when a
/// seccomp filter or kernel.io_uring_disabled forbids it, ENOMEM).
herald_send_batch *herald_send_batch_create(uint32_t capacity);

/// Releases the batch and its rings.
void herald_send_batch_destroy(herald_send_batch *batch);

/// How many sends one run takes.
uint32_t herald_send_batch_capacity(const herald_send_batch *batch);

/// Performs `count` sends, each a sendmsg(2) with MSG_DONTWAIT and
/// MSG_NOSIGNAL, in one io_uring_enter(2), and sets each `result`. Returns
/// 0, or -1 with errno when the batch could not be submitted (then results
/// still at -ECANCELED were not sent, and the batch must be destroyed: it may
/// hold entries it would submit again). Not thread-safe: one caller at a time.
int herald_send_batch_run(herald_send_batch *batch, herald_send_op *ops, uint32_t count);

#endif  // __linux__

// MARK: - systemd

/// 1 when `fd` is a listening AF_UNIX SOCK_STREAM socket, 0 when it is any
/// other descriptor (a file, a datagram or TCP socket, one not listening),
/// -1 with errno when it cannot be inspected.
int herald_is_listening_unix_stream(int fd);

/// Writes the file system path that the AF_UNIX socket `fd` is bound to into
/// `buffer`, NUL-terminated. Returns its length, 0 when the socket has no path
/// (unnamed or abstract), or -1 with errno (ENAMETOOLONG when it does not fit).
int herald_unix_socket_path(int fd, char *buffer, size_t size);

/// Creates an AF_UNIX SOCK_DGRAM socket with SOCK_CLOEXEC; blocking.
int herald_socket_unix_datagram(void);

/// sendto(2) of one datagram to the AF_UNIX address `address` (`address_len`
/// bytes, no NUL), with MSG_NOSIGNAL. An address starting with '@' is
/// abstract: the '@' becomes the leading NUL, as $NOTIFY_SOCKET spells it.
ssize_t herald_sendto_unix(int fd, const char *address, size_t address_len, const void *buffer, size_t length);

/// herald_sendto_unix with the descriptor `passed` attached (SCM_RIGHTS): how
/// a service hands a descriptor to systemd's store (sd_pid_notify_with_fds).
ssize_t herald_sendto_unix_with_fd(
    int fd, const char *address, size_t address_len, const void *buffer, size_t length, int passed);

/// recvmsg of one datagram into `buffer`, with the first descriptor attached
/// to it (SCM_RIGHTS, received close-on-exec) in `*passed`, or -1 when none:
/// the test harness's stand-in for systemd's descriptor store.
ssize_t herald_receive_with_fd(int fd, void *buffer, size_t length, int *passed);

#ifdef __cplusplus
}
#endif

#endif  // C_HERALD_SHIM_H

// MARK: - TCP (chat server)
// Its own include guard and extern "C" block, so this section can sit after
// the others without touching them.
#ifndef C_HERALD_SHIM_TCP_H
#define C_HERALD_SHIM_TCP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The address family of the numeric host `host`: AF_INET for an IPv4
/// literal ("127.0.0.1"), AF_INET6 for an IPv6 one ("::1"), or -1 with errno
/// EINVAL for anything else (names are not resolved here).
int herald_tcp_family(const char *host);

/// Creates a TCP (SOCK_STREAM) socket of `family` with SOCK_CLOEXEC, and
/// SOCK_NONBLOCK when `nonblock` is non-zero.
int herald_socket_tcp(int family, int nonblock);

/// Sets SO_REUSEADDR (so a restarted server can bind while old connections
/// sit in TIME_WAIT) and binds `fd` to the numeric `host` and `port`
/// (0: the kernel picks a free port).
int herald_bind_tcp(int fd, const char *host, uint16_t port);

/// Connects `fd` to the numeric `host` and `port`. On a blocking socket an
/// interrupted connect is not restarted (that would fail with EALREADY): it
/// waits for the connection to complete and reports its result.
int herald_connect_tcp(int fd, const char *host, uint16_t port);

/// The local port `fd` is bound to, or -1 with errno.
int herald_tcp_local_port(int fd);

/// Sets TCP_NODELAY, so small writes (one chat line) go out at once.
int herald_tcp_set_nodelay(int fd);

/// Sets `fd`'s kernel send buffer to `bytes` (SO_SNDBUF; Linux reserves twice
/// that for its bookkeeping, and no longer grows it by itself); 0, or -1 with
/// errno.
int herald_socket_set_send_buffer(int fd, int bytes);

/// Writes the numeric address of `fd`'s peer ("127.0.0.1", "::1"; an
/// IPv4-mapped IPv6 address as the IPv4 one) into `buffer`, NUL-terminated;
/// 0, or -1 with errno (ENOTCONN, ENOSPC when `length` is too small).
int herald_tcp_peer_address(int fd, char *buffer, size_t length);

#ifdef __cplusplus
}
#endif

#endif  // C_HERALD_SHIM_TCP_H

// MARK: - Process-wide settings (process.c): signal dispositions and the
// descriptor limit, which heraldd sets once at start.
#ifndef C_HERALD_SHIM_PROCESS_H
#define C_HERALD_SHIM_PROCESS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Sets the disposition of each of `signals` (count `count`) to SIG_IGN with
/// sigaction(2). Returns 0, or -1 with errno (EINVAL for a signal that cannot
/// be ignored, such as SIGKILL).
int herald_ignore_signals(const int *signals, int count);

/// Raises the soft RLIMIT_NOFILE to the hard limit (when the hard limit is
/// RLIM_INFINITY, to the soft limit's largest value the kernel accepts, tried
/// down from 1048576). On return `*soft` and `*hard` hold the limits now in
/// force, whether or not raising succeeded. Returns 0, or -1 with errno when
/// even reading the limits failed.
int herald_raise_descriptor_limit(uint64_t *soft, uint64_t *hard);

/// Reads RLIMIT_NOFILE's soft and hard limits (UINT64_MAX for unlimited);
/// 0, or -1 with errno.
int herald_descriptor_limit(uint64_t *soft, uint64_t *hard);

/// Starts `path` (an absolute path) with `argv` and `envp` (NULL-terminated) in
/// a child process, the way heraldd starts a plugin:
/// - in a session of its own (setsid), so a terminal's Ctrl-C reaches the
///   daemon, which stops its children in order;
/// - with HERALD_SPAWN_DIE_WITH_PARENT in `flags`, on Linux, with
///   PR_SET_PDEATHSIG SIGKILL, so it cannot outlive the daemon even when the
///   daemon is SIGKILLed (the signal comes when the forking thread ends: fork
///   from a thread that lives as long as the process, or pass
///   HERALD_SPAWN_DIE_WITH_PROCESS instead);
/// - with no signal blocked and every disposition back to the default
///   (ignored signals would survive exec otherwise);
/// - with RLIMIT_NOFILE's soft limit set to `nofile_soft` when it is non-zero
///   (the daemon raised its own);
/// - stdin from `stdin_fd`, or /dev/null when it is negative; stdout and
///   stderr on `stdout_fd` and `stderr_fd`;
/// - in `cwd` when it is not NULL.
/// Every other descriptor is made close-on-exec in the child before exec, so
/// the program starts with only those three, whatever the parent's other
/// threads had open.
/// Returns the child's pid. Returns -1 with errno when fork fails, or when
/// chdir or execve fails in the child: that errno comes back over a
/// close-on-exec pipe, and the child has been reaped.
pid_t herald_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd, int stdin_fd,
                   int stdout_fd, int stderr_fd, uint64_t nofile_soft, int flags);

/// The step of herald_spawn that failed last on this thread, once it returned
/// -1: fork, the child's setup (descriptors, signals), its chdir to `cwd`, or
/// its execve. A failed chdir means the working directory is the problem, not
/// the program.
int herald_spawn_failed_step(void);
#define HERALD_SPAWN_STEP_FORK 0
#define HERALD_SPAWN_STEP_SETUP 1
#define HERALD_SPAWN_STEP_CHDIR 2
#define HERALD_SPAWN_STEP_EXEC 3

/// prctl(PR_SET_CHILD_SUBREAPER, 1) (Linux 3.4): every orphaned descendant of
/// this process is reparented to it, not to init, so the daemon can end what
/// its plugins left behind, including what left their process group and
/// session. Returns 0, or -1 with errno (ENOSYS elsewhere).
int herald_become_subreaper(void);

/// herald_spawn without the wait for the exec: returns the child's pid (or -1
/// with errno when pipe2 or fork fails) and sets `*report_fd` to a
/// non-blocking, close-on-exec descriptor that becomes readable once the child
/// has exec'ed (end of file) or failed (see herald_spawn_report). The caller
/// owns it. Only HERALD_SPAWN_DIE_WITH_PARENT of `flags` applies. For a loop
/// that must not wait for a child to be scheduled and exec.
pid_t herald_spawn_async(const char *path, char *const argv[], char *const envp[], const char *cwd, int stdin_fd,
                         int stdout_fd, int stderr_fd, uint64_t nofile_soft, int flags, int *report_fd);

/// Reads herald_spawn_async's report: 0 when the child exec'ed, 1 when it
/// failed (then `*step` is a HERALD_SPAWN_STEP_ value and `*error` its errno;
/// the child exits 127), -1 with errno (EAGAIN: not yet known).
int herald_spawn_report(int report_fd, int32_t *step, int32_t *error);

/// herald_spawn's flag: the child dies when the forking thread does.
#define HERALD_SPAWN_DIE_WITH_PARENT 1

/// herald_spawn's flag: the child dies when this process does, however it
/// ends (SIGKILL included), and not before. It is forked with
/// HERALD_SPAWN_DIE_WITH_PARENT by a thread of the shim's own that is started
/// on first use and never ends; the calling thread waits for it. For children
/// started from threads that may end first (a pool's).
#define HERALD_SPAWN_DIE_WITH_PROCESS 2

/// waitpid(which, WNOHANG) decoded (`which` -1 for any child): returns the pid
/// of an exited child and sets `*code` to its exit status and `*signal` to 0,
/// or `*signal` to the signal that killed it; returns 0 when no such child has
/// exited, or -1 with errno (ECHILD when there is no such child).
pid_t herald_reap_child(pid_t which, int32_t *code, int32_t *signal);

/// waitpid(which, 0) decoded as herald_reap_child does, blocking until the
/// child exits; EINTR is retried. Returns its pid, or -1 with errno.
pid_t herald_wait_child(pid_t which, int32_t *code, int32_t *signal);

/// pipe2(fds, O_CLOEXEC), then, when `nonblocking_read` is non-zero, O_NONBLOCK
/// on the read end only: the writer (a child's stdout) blocks as programs
/// expect, the daemon never does.
int herald_pipe(int fds[2], int nonblocking_read);

// MARK: - Memory files

/// memfd_create(name, MFD_CLOEXEC): an anonymous file in memory for heraldd's
/// state log, which Glibc declares only under _GNU_SOURCE, out of Swift's view.
int herald_memfd_create(const char *name);

/// fallocate(fd, 0, offset, length): allocates the file's pages for
/// [offset, offset + length), extending its size, so that stores through a
/// shared mapping of them cannot fault for want of space (a full tmpfs fails
/// here, with ENOSPC, instead of raising SIGBUS on the store). Glibc declares
/// it only under _GNU_SOURCE. ENOSYS where there is no fallocate.
int herald_fallocate(int fd, long long offset, long long length);

/// memcpy(destination, source, count) into a shared mapping of a file, guarded
/// against SIGBUS: when the file was cut short under the mapping (another
/// process truncated it), the store faults, and instead of the process dying
/// this returns -1 with errno EFAULT; what was copied before the fault stays.
/// Returns 0 when every byte was stored. The first call installs a SIGBUS
/// handler (SA_SIGINFO) that jumps back into this function when the fault is
/// one of its copies on this thread, and otherwise puts the previous
/// disposition back and lets the fault happen again, as it would have.
int herald_copy_to_mapping(void *destination, const void *source, size_t count);

#ifdef __cplusplus
}
#endif

#endif  // C_HERALD_SHIM_PROCESS_H
