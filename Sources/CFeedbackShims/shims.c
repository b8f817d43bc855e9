// ppoll and pthread_setname_np are GNU extensions: define _GNU_SOURCE here, for this file only,
// rather than in the header.
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include "CFeedbackShims.h"

int fbs_set_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

int fbs_ppoll(struct pollfd *fds, unsigned long count, const struct timespec *timeout) {
    return ppoll(fds, count, timeout, NULL);
}
