// ppoll, pthread_setname_np and fopencookie are GNU extensions: define _GNU_SOURCE here, for this
// file only, rather than in the header.
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "CFeedbackShims.h"

int fbs_set_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

int fbs_ppoll(struct pollfd *fds, unsigned long count, const struct timespec *timeout) {
    return ppoll(fds, count, timeout, NULL);
}

// How many quiet sections the calling thread is in (fbs_quiet_begin/end).
static _Thread_local int fbs_quiet_depth;

void fbs_quiet_begin(void) { fbs_quiet_depth++; }
void fbs_quiet_end(void) { fbs_quiet_depth--; }

// The write function of the streams fbs_filter_c_stdio installs: the cookie is the descriptor.
static ssize_t fbs_forward(void *cookie, const char *bytes, size_t size) {
    if (fbs_quiet_depth > 0) return (ssize_t)size;
    int fd = (int)(intptr_t)cookie;
    size_t done = 0;
    while (done < size) {
        ssize_t written = write(fd, bytes + done, size - done);
        if (written < 0) {
            if (errno == EINTR) continue;
            return done > 0 ? (ssize_t)done : -1;
        }
        done += (size_t)written;
    }
    return (ssize_t)size;
}

int fbs_filter_c_stdio(void) {
    cookie_io_functions_t functions = {.read = NULL, .write = fbs_forward, .seek = NULL, .close = NULL};
    FILE *out = fopencookie((void *)(intptr_t)STDOUT_FILENO, "w", functions);
    FILE *err = fopencookie((void *)(intptr_t)STDERR_FILENO, "w", functions);
    if (out == NULL || err == NULL) {
        if (out != NULL) fclose(out);
        if (err != NULL) fclose(err);
        return -1;
    }
    // Unbuffered: each print is checked against the quiet sections of the thread making it.
    setvbuf(out, NULL, _IONBF, 0);
    setvbuf(err, NULL, _IONBF, 0);
    fflush(stdout);
    fflush(stderr);
    stdout = out;
    stderr = err;
    return 0;
}

int fbs_memfd(const char *name) { return memfd_create(name, MFD_CLOEXEC); }
