// ppoll, pthread_setname_np, SCHED_RESET_ON_FORK and fopencookie are GNU extensions: define _GNU_SOURCE here, for this
// file only, rather than in the header.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <string.h>
#include <unistd.h>
#include "CFeedbackShims.h"

int fbs_set_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

int fbs_sched_policy(int *priority) {
    struct sched_param parameters;
    int policy = sched_getscheduler(0);
    if (policy < 0 || sched_getparam(0, &parameters) != 0) return -1;
    *priority = parameters.sched_priority;
    return policy & ~SCHED_RESET_ON_FORK;
}

int fbs_may_schedule_fifo(int priority) {
    struct sched_param previous, wanted = {.sched_priority = priority};
    int policy = sched_getscheduler(0);
    if (policy < 0 || sched_getparam(0, &previous) != 0) return 0;
    if (sched_setscheduler(0, SCHED_FIFO, &wanted) != 0) return 0;
    sched_setscheduler(0, policy, &previous);
    return 1;
}

int fbs_schedule_fifo(pthread_t thread, int priority) {
    struct sched_param parameters = {.sched_priority = priority};
    return pthread_setschedparam(thread, SCHED_FIFO | SCHED_RESET_ON_FORK, &parameters);
}

int fbs_attributes_avoid_current_cpu(pthread_attr_t *attributes, cpu_set_t *allowed) {
    cpu_set_t others;
    int current = sched_getcpu();
    if (current < 0 || sched_getaffinity(0, sizeof *allowed, allowed) != 0) return 0;
    if (!CPU_ISSET(current, allowed) || CPU_COUNT(allowed) < 2) return 0;
    others = *allowed;
    CPU_CLR(current, &others);
    return pthread_attr_setaffinity_np(attributes, sizeof others, &others) == 0;
}

int fbs_set_affinity(const cpu_set_t *allowed) { return sched_setaffinity(0, sizeof *allowed, allowed); }

int fbs_get_affinity(cpu_set_t *allowed) { return sched_getaffinity(0, sizeof *allowed, allowed); }

int fbs_attributes_affinity(const pthread_attr_t *attributes, cpu_set_t *allowed) {
    return pthread_attr_getaffinity_np(attributes, sizeof *allowed, allowed);
}

int fbs_ppoll(struct pollfd *fds, unsigned long count, const struct timespec *timeout) {
    return ppoll(fds, count, timeout, NULL);
}

int fbs_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

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

int fbs_uevent_socket(void) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
    if (fd < 0) return -1;
    struct sockaddr_nl address;
    memset(&address, 0, sizeof address);
    address.nl_family = AF_NETLINK;
    address.nl_groups = 1; // the kernel's own events; udev re-sends them on group 2 in its own format
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

long fbs_uevent_receive(int fd, void *buffer, unsigned long size) {
    struct sockaddr_nl sender;
    struct iovec part = {.iov_base = buffer, .iov_len = size};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    memset(&sender, 0, sizeof sender);
    message.msg_name = &sender;
    message.msg_namelen = sizeof sender;
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    ssize_t received = recvmsg(fd, &message, 0);
    if (received < 0) return -1;
    return sender.nl_pid == 0 ? (long)received : 0;
}

int fbs_spawn_close_from(void *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
