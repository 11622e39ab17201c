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
            (void)setrlimit(RLIMIT_NOFILE, &raised);
        }
        // Whatever happened, report what is in force now.
        if (getrlimit(RLIMIT_NOFILE, &limit) < 0) return -1;
    }
    *soft = limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_cur;
    *hard = limit.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_max;
    return 0;
}
