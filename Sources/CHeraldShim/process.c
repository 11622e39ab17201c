// See include/CHeraldShim.h for the contract of each function.
#include "CHeraldShim.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

// MARK: - Signals

int herald_ignore_signals(const int *signals, int count) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_IGN;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &action, NULL) < 0) return -1;
    }
    return 0;
}

// MARK: - Descriptor limit

int herald_raise_descriptor_limit(uint64_t *soft, uint64_t *hard) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) < 0) return -1;
    if (limit.rlim_cur != limit.rlim_max) {
        struct rlimit raised = limit;
        if (limit.rlim_max == RLIM_INFINITY) {
            // Linux refuses a soft limit above fs.nr_open (EPERM): halve until it is taken.
            raised.rlim_cur = 1048576;
            while (raised.rlim_cur > limit.rlim_cur && setrlimit(RLIMIT_NOFILE, &raised) < 0) {
                raised.rlim_cur /= 2;
            }
        } else {
            raised.rlim_cur = limit.rlim_max;
            (void)setrlimit(RLIMIT_NOFILE, &raised);
        }
        // Whatever happened, report what is in force now.
        if (getrlimit(RLIMIT_NOFILE, &limit) < 0) return -1;
    }
    *soft = limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_cur;
    *hard = limit.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_max;
    return 0;
}

int herald_descriptor_limit(uint64_t *soft, uint64_t *hard) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) < 0) return -1;
    *soft = limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_cur;
    *hard = limit.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_max;
    return 0;
}

// MARK: - Child processes

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#endif

// Marks every descriptor from 3 up close-on-exec, so the program starts with only stdin, stdout and stderr. In a
// process with other threads a descriptor opened without O_CLOEXEC (a file being written by Foundation, say) would
// otherwise outlive exec in the child: held open for writing there, a script being written meanwhile could never be
// executed (ETXTBSY), and a pipe's reader would never see its end. close_range(2) with CLOSE_RANGE_CLOEXEC (Linux
// 5.11) does it in one call; elsewhere each descriptor up to the limit is marked.
static void herald_mark_descriptors_cloexec(void) {
#if defined(__linux__) && defined(SYS_close_range)
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
    struct rlimit limit;
    long last = 65536;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && (long)limit.rlim_cur < last) {
        last = (long)limit.rlim_cur;
    }
    for (int fd = 3; fd < last; fd++) {
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0 && !(flags & FD_CLOEXEC)) (void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
}

// Only async-signal-safe calls between fork and execve: the daemon may have other threads (io_uring's are the
// kernel's, but a library's could be anywhere), and only the forking thread exists in the child.
static __thread int herald_spawn_step = HERALD_SPAWN_STEP_SETUP;

int herald_spawn_failed_step(void) { return herald_spawn_step; }

static void herald_spawn_child(const char *path, char *const argv[], char *const envp[], const char *cwd,
                               int stdin_fd, int stdout_fd, int stderr_fd, uint64_t nofile_soft, int flags,
                               pid_t parent, int report) {
    int failure[2] = {HERALD_SPAWN_STEP_SETUP, 0};
    (void)setsid();
    if (flags & HERALD_SPAWN_DIE_WITH_PARENT) {
#ifdef __linux__
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) goto failed;
#endif
        // The parent may have died between fork and prctl: then nobody would kill us later.
        if (getppid() != parent) _exit(127);
    }
    sigset_t none;
    sigemptyset(&none);
    if (sigprocmask(SIG_SETMASK, &none, NULL) < 0) goto failed;
    struct sigaction standard;
    memset(&standard, 0, sizeof standard);
    standard.sa_handler = SIG_DFL;
    sigemptyset(&standard.sa_mask);
    for (int number = 1; number < NSIG; number++) {
        (void)sigaction(number, &standard, NULL);  // EINVAL for SIGKILL, SIGSTOP and the libc's own: fine
    }
    if (stdin_fd < 0) {
        stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (stdin_fd < 0) goto failed;
    }
    if (dup2(stdin_fd, 0) < 0 || dup2(stdout_fd, 1) < 0 || dup2(stderr_fd, 2) < 0) goto failed;
    herald_mark_descriptors_cloexec();
    // Lowered only now: with many connections open, the lowest free descriptor (for /dev/null above) may be past
    // the limit the child gets back, which would make that open fail with EMFILE. Descriptors past the limit stay
    // valid until exec closes them (they are close-on-exec).
    if (nofile_soft != 0) {
        struct rlimit limit;
        if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && (rlim_t)nofile_soft < limit.rlim_cur) {
            limit.rlim_cur = (rlim_t)nofile_soft;
            (void)setrlimit(RLIMIT_NOFILE, &limit);
        }
    }
    failure[0] = HERALD_SPAWN_STEP_CHDIR;
    if (cwd != NULL && chdir(cwd) < 0) goto failed;
    failure[0] = HERALD_SPAWN_STEP_EXEC;
    execve(path, argv, envp);
failed:
    failure[1] = errno;
    while (write(report, failure, sizeof failure) < 0 && errno == EINTR) {
    }
    _exit(127);
}

static pid_t herald_spawn_from_spawner(const char *path, char *const argv[], char *const envp[], const char *cwd,
                                       int stdin_fd, int stdout_fd, int stderr_fd, uint64_t nofile_soft);

// Forks the child, which reports a failure on report[1]; the parent keeps report[0]. Returns the pid, or -1.
static pid_t herald_fork_child(const char *path, char *const argv[], char *const envp[], const char *cwd,
                               int stdin_fd, int stdout_fd, int stderr_fd, uint64_t nofile_soft, int flags,
                               int report[2]) {
#ifdef __linux__
    if (pipe2(report, O_CLOEXEC) < 0) {
        herald_spawn_step = HERALD_SPAWN_STEP_FORK;
        return -1;
    }
#else
    if (pipe(report) < 0) {
        herald_spawn_step = HERALD_SPAWN_STEP_FORK;
        return -1;
    }
    (void)fcntl(report[0], F_SETFD, FD_CLOEXEC);
    (void)fcntl(report[1], F_SETFD, FD_CLOEXEC);
#endif
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        int error = errno;
        herald_spawn_step = HERALD_SPAWN_STEP_FORK;
        close(report[0]);
        close(report[1]);
        errno = error;
        return -1;
    }
    if (child == 0) {
        close(report[0]);
        herald_spawn_child(path, argv, envp, cwd, stdin_fd, stdout_fd, stderr_fd, nofile_soft, flags, parent,
                           report[1]);
    }
    close(report[1]);
    return child;
}

pid_t herald_spawn_async(const char *path, char *const argv[], char *const envp[], const char *cwd, int stdin_fd,
                         int stdout_fd, int stderr_fd, uint64_t nofile_soft, int flags, int *report_fd) {
    int report[2];
    pid_t child = herald_fork_child(path, argv, envp, cwd, stdin_fd, stdout_fd, stderr_fd, nofile_soft,
                                    flags & HERALD_SPAWN_DIE_WITH_PARENT, report);
    if (child < 0) return -1;
    int status = fcntl(report[0], F_GETFL);
    if (status >= 0) (void)fcntl(report[0], F_SETFL, status | O_NONBLOCK);
    *report_fd = report[0];
    return child;
}

int herald_spawn_report(int report_fd, int32_t *step, int32_t *error) {
    int failure[2] = {0, 0};
    ssize_t got;
    do {
        got = read(report_fd, failure, sizeof failure);
    } while (got < 0 && errno == EINTR);
    if (got < 0) return -1;
    if (got == (ssize_t)sizeof failure) {
        *step = failure[0];
        *error = failure[1];
        return 1;
    }
    // End of file: the exec succeeded (the pipe was close-on-exec). A short read cannot happen for 8 bytes
    // written at once to a pipe; it is taken as success rather than guessed at.
    return 0;
}

pid_t herald_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd, int stdin_fd,
                   int stdout_fd, int stderr_fd, uint64_t nofile_soft, int flags) {
    if (flags & HERALD_SPAWN_DIE_WITH_PROCESS) {
        return herald_spawn_from_spawner(path, argv, envp, cwd, stdin_fd, stdout_fd, stderr_fd, nofile_soft);
    }
    int report[2];
    pid_t child = herald_fork_child(path, argv, envp, cwd, stdin_fd, stdout_fd, stderr_fd, nofile_soft, flags,
                                    report);
    if (child < 0) return -1;
    // End of file means the exec succeeded (the pipe was close-on-exec); eight bytes are the step that failed in
    // the child and its errno.
    int failure[2] = {0, 0};
    ssize_t got;
    do {
        got = read(report[0], failure, sizeof failure);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof failure) {
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
        herald_spawn_step = failure[0];
        errno = failure[1];
        return -1;
    }
    return child;
}

// MARK: - The spawner thread

#include <pthread.h>

// PR_SET_PDEATHSIG fires when the thread that forked the child ends, not the process: a child forked from a thread
// of a pool (Swift's cooperative pool, libdispatch's workers) would be killed whenever the pool retires that thread,
// and one forked without it outlives a SIGKILLed parent. So children that must die with the process, however it
// dies, are forked by one thread that is never retired: it is started on first use, detached, with every signal
// blocked (process signals are for the threads that expect them), and loops forever taking one request at a time.
// The caller waits for its request, so the pointers it passes stay valid, and errno comes back as herald_spawn's.
//
// A process forked by this one (and not exec'ed) would inherit spawner_running without the thread: nothing here
// forks without exec'ing.

struct herald_spawn_request {
    const char *path;
    char *const *argv;
    char *const *envp;
    const char *cwd;
    int stdin_fd, stdout_fd, stderr_fd;
    uint64_t nofile_soft;
    pid_t result;
    int error;
    int step;
    int done;
};

static pthread_mutex_t herald_spawner_mutex = PTHREAD_MUTEX_INITIALIZER;
// Signalled when a request is posted and when one is done; waiters check their own condition.
static pthread_cond_t herald_spawner_changed = PTHREAD_COND_INITIALIZER;
static struct herald_spawn_request *herald_spawner_pending = NULL;
static int herald_spawner_running = 0;

static void *herald_spawner_main(void *unused) {
    (void)unused;
    pthread_mutex_lock(&herald_spawner_mutex);
    for (;;) {
        while (herald_spawner_pending == NULL) pthread_cond_wait(&herald_spawner_changed, &herald_spawner_mutex);
        struct herald_spawn_request *request = herald_spawner_pending;
        pthread_mutex_unlock(&herald_spawner_mutex);
        pid_t pid = herald_spawn(request->path, request->argv, request->envp, request->cwd, request->stdin_fd,
                                 request->stdout_fd, request->stderr_fd, request->nofile_soft,
                                 HERALD_SPAWN_DIE_WITH_PARENT);
        int error = errno;
        int step = herald_spawn_step;
        pthread_mutex_lock(&herald_spawner_mutex);
        request->result = pid;
        request->error = error;
        request->step = step;
        request->done = 1;
        herald_spawner_pending = NULL;
        pthread_cond_broadcast(&herald_spawner_changed);
    }
    return NULL;
}

// Called with herald_spawner_mutex held. Returns 0 or an errno value.
static int herald_start_spawner(void) {
    sigset_t all, previous;
    sigfillset(&all);
    // The new thread inherits the creating thread's mask.
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int error = pthread_create(&thread, &attributes, herald_spawner_main, NULL);
    pthread_attr_destroy(&attributes);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
#ifdef __linux__
    if (error == 0) (void)pthread_setname_np(thread, "herald-spawner");
#endif
    return error;
}

static pid_t herald_spawn_from_spawner(const char *path, char *const argv[], char *const envp[], const char *cwd,
                                       int stdin_fd, int stdout_fd, int stderr_fd, uint64_t nofile_soft) {
    struct herald_spawn_request request = {path, argv, envp, cwd, stdin_fd, stdout_fd, stderr_fd, nofile_soft,
                                           -1, 0, 0, 0};
    pthread_mutex_lock(&herald_spawner_mutex);
    if (!herald_spawner_running) {
        int error = herald_start_spawner();
        if (error != 0) {
            pthread_mutex_unlock(&herald_spawner_mutex);
            errno = error;
            return -1;
        }
        herald_spawner_running = 1;
    }
    while (herald_spawner_pending != NULL) pthread_cond_wait(&herald_spawner_changed, &herald_spawner_mutex);
    herald_spawner_pending = &request;
    pthread_cond_broadcast(&herald_spawner_changed);
    while (!request.done) pthread_cond_wait(&herald_spawner_changed, &herald_spawner_mutex);
    pthread_mutex_unlock(&herald_spawner_mutex);
    herald_spawn_step = request.step;
    errno = request.error;
    return request.result;
}

pid_t herald_reap_child(pid_t which, int32_t *code, int32_t *signal) {
    int status = 0;
    pid_t pid;
    do {
        pid = waitpid(which, &status, WNOHANG);
    } while (pid < 0 && errno == EINTR);
    if (pid <= 0) return pid;
    if (WIFSIGNALED(status)) {
        *code = 0;
        *signal = WTERMSIG(status);
    } else {
        *code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
        *signal = 0;
    }
    return pid;
}

pid_t herald_wait_child(pid_t which, int32_t *code, int32_t *signal) {
    int status = 0;
    pid_t pid;
    do {
        pid = waitpid(which, &status, 0);
    } while (pid < 0 && errno == EINTR);
    if (pid <= 0) return pid;
    if (WIFSIGNALED(status)) {
        *code = 0;
        *signal = WTERMSIG(status);
    } else {
        *code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
        *signal = 0;
    }
    return pid;
}

int herald_become_subreaper(void) {
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int herald_pipe(int fds[2], int nonblocking_read) {
#ifdef __linux__
    if (pipe2(fds, O_CLOEXEC) < 0) return -1;
#else
    if (pipe(fds) < 0) return -1;
    (void)fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    (void)fcntl(fds[1], F_SETFD, FD_CLOEXEC);
#endif
    if (!nonblocking_read) return 0;
    int flags = fcntl(fds[0], F_GETFL);
    if (flags < 0 || fcntl(fds[0], F_SETFL, flags | O_NONBLOCK) < 0) {
        int error = errno;
        close(fds[0]);
        close(fds[1]);
        errno = error;
        return -1;
    }
    return 0;
}
