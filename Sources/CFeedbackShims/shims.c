// ppoll is a GNU extension: define _GNU_SOURCE here, for this file only, rather than in the header.
#define _GNU_SOURCE
#include <poll.h>
#include "CFeedbackShims.h"

int fbs_ppoll(struct pollfd *fds, unsigned long count, const struct timespec *timeout) {
    return ppoll(fds, count, timeout, NULL);
}
