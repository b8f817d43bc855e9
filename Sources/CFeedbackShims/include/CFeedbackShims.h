// What Swift cannot import from the C headers: function-like macros and variadic calls.
// Every symbol is prefixed `fbs_`.
#pragma once

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <linux/input.h>

/// `S_ISREG`: whether a `stat` mode is a regular file.
static inline int fbs_s_isreg(mode_t mode) { return S_ISREG(mode); }
/// `S_ISDIR`: whether a `stat` mode is a directory.
static inline int fbs_s_isdir(mode_t mode) { return S_ISDIR(mode); }

// The Swift side builds `struct ff_effect` and `struct input_event` field by field and writes
// them whole; these sizes are the x86_64 (and every 64-bit) kernel ABI.
_Static_assert(sizeof(struct ff_effect) == 48, "struct ff_effect is 48 bytes");
_Static_assert(sizeof(struct input_event) == 24, "struct input_event is 24 bytes");
_Static_assert(sizeof(struct ff_replay) == 4, "struct ff_replay is 4 bytes");

/// `EVIOCSFF`: upload (or, with an existing id, update) a force-feedback effect.
static inline unsigned long fbs_eviocsff(void) { return EVIOCSFF; }
/// `EVIOCRMFF`: erase an uploaded effect; the argument is the effect id itself, not a pointer.
static inline unsigned long fbs_eviocrmff(void) { return EVIOCRMFF; }
/// `EVIOCGEFFECTS`: how many effects the device can hold at once.
static inline unsigned long fbs_eviocgeffects(void) { return EVIOCGEFFECTS; }
/// `EVIOCGBIT(ev, len)`: the bitmap of codes of event type `ev` the device supports.
static inline unsigned long fbs_eviocgbit(unsigned int ev, unsigned int len) { return EVIOCGBIT(ev, len); }

/// `ioctl(fd, request, pointer)`: `ioctl` is variadic, which Swift cannot call.
static inline int fbs_ioctl_pointer(int fd, unsigned long request, void *argument) {
    return ioctl(fd, request, argument);
}
/// `ioctl(fd, request, value)` for requests that take an integer by value (`EVIOCRMFF`).
static inline int fbs_ioctl_value(int fd, unsigned long request, long value) {
    return ioctl(fd, request, value);
}

/// `eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)`: a counter a thread polls to be woken by another.
static inline int fbs_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

/// `ppoll(fds, count, timeout, NULL)`: `poll` with a nanosecond timeout (NULL waits forever), so a
/// thread wakes for a pattern step at its time rather than at the next whole millisecond. It needs
/// `_GNU_SOURCE`, which shims.c defines.
int fbs_ppoll(struct pollfd *fds, unsigned long count, const struct timespec *timeout);

/// `pthread_setname_np(pthread_self(), name)`: names the calling thread (at most 15 bytes) for
/// `top -H` and debuggers. It needs `_GNU_SOURCE`, which shims.c defines.
int fbs_set_thread_name(const char *name);

/// The calling thread's scheduling policy as `sched_getscheduler(0)` reports it, without
/// `SCHED_RESET_ON_FORK` (a GNU flag, which shims.c can name), which the kernel ORs into the
/// policy of a thread that has it: libpipewire-module-rt makes PipeWire's data thread
/// `SCHED_FIFO | SCHED_RESET_ON_FORK`. Stores the real-time priority in `priority` (0 for the
/// normal policies). Returns -1 with `errno` set if the thread cannot be asked. Two system calls:
/// real-time safe.
int fbs_sched_policy(int *priority);

/// Whether the calling thread may make itself `SCHED_FIFO` at `priority` without help (root,
/// `CAP_SYS_NICE`, or `RLIMIT_RTPRIO` ≥ `priority`): tries it, then puts the thread's policy and
/// priority back. Returns 1 or 0.
int fbs_may_schedule_fifo(int priority);

/// Makes `thread` (of this process) `SCHED_FIFO | SCHED_RESET_ON_FORK` at `priority`, as
/// libpipewire-module-rt does when the process may. Returns 0, or the error number.
int fbs_schedule_fifo(pthread_t thread, int priority);

/// Sets `attributes`' CPU affinity to every CPU the calling thread may run on except the one it
/// runs on now, so that the thread made with them starts beside its creator rather than behind it
/// (a kernel may queue a new thread on its creator's CPU), and stores the calling thread's whole
/// set in `allowed`, for the new thread to take back (`fbs_set_affinity`) once it runs. Leaves
/// `attributes` as they were, and returns 0, when the caller may run on one CPU only or its CPUs
/// cannot be read; returns 1 when it set them.
int fbs_attributes_avoid_current_cpu(pthread_attr_t *attributes, cpu_set_t *allowed);

/// Lets the calling thread run on the CPUs in `allowed` (sched_setaffinity). Returns 0 or -1.
int fbs_set_affinity(const cpu_set_t *allowed);

/// The CPUs the calling thread may run on (sched_getaffinity), and those `attributes` give a new
/// thread (pthread_attr_getaffinity_np), which Swift cannot import. Return 0, or -1 / an error number.
int fbs_get_affinity(cpu_set_t *allowed);
int fbs_attributes_affinity(const pthread_attr_t *attributes, cpu_set_t *allowed);

/// `prctl(PR_SET_TIMER_SLACK, nanoseconds)` for the calling thread: `prctl` is variadic. The default
/// 50 µs slack lets the kernel merge wake-ups; a thread that starts vibration steps wants them on time.
static inline int fbs_set_timer_slack(unsigned long nanoseconds) {
    return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0);
}

/// Replaces C stdio's `stdout` and `stderr` with unbuffered streams that write to descriptors 1
/// and 2 as before, except what a thread prints inside `fbs_quiet_begin()`…`fbs_quiet_end()`,
/// which is dropped. For programs (not libraries) whose own output does not go through C stdio.
/// Call once, before any other thread runs. Returns 0, or -1 if the streams could not be made
/// (stdio is then left as it was).
int fbs_filter_c_stdio(void);
/// Starts a quiet section on the calling thread (they nest); see `fbs_filter_c_stdio`.
void fbs_quiet_begin(void);
/// Ends the calling thread's innermost quiet section.
void fbs_quiet_end(void);

/// `memfd_create(name, MFD_CLOEXEC)`: an anonymous file in memory, seekable like a regular file.
int fbs_memfd(const char *name);

// ThreadSanitizer's annotation interface (compiler-rt's sanitizer/tsan_interface.h), for the
// builds scripts/tsan makes: Synchronization.Mutex locks with a futex TSan cannot see, so
// `TSanMutex` tells it what the lock orders. Only called under FEEDBACKSERVICES_TSAN, where the
// TSan runtime is linked; static inline, so other builds never reference these symbols.
void __tsan_acquire(void *address);
void __tsan_release(void *address);
/// `__tsan_acquire`: what was released at `address` happens before what the caller does next.
static inline void fbs_tsan_acquire(void *address) { __tsan_acquire(address); }
/// `__tsan_release`: what the caller did happens before the next acquire at `address`.
static inline void fbs_tsan_release(void *address) { __tsan_release(address); }

/// A `NETLINK_KOBJECT_UEVENT` socket bound to the kernel's multicast group 1, non-blocking and
/// close-on-exec: the kernel's device add/remove/change events, which sysfs does not report through
/// inotify. Any user may bind it. Returns the descriptor, or -1 with `errno` set.
int fbs_uevent_socket(void);
/// Receives one uevent datagram from `fd` into `buffer` (`recvmsg`). Returns its length; 0 for a
/// datagram some process rather than the kernel sent (it is dropped, so nothing can forge a device);
/// -1 with `errno` set (`EAGAIN` when none is waiting).
long fbs_uevent_receive(int fd, void *buffer, unsigned long size);

/// `posix_spawn_file_actions_addclosefrom_np` (a GNU extension): the child closes every
/// descriptor from `from` up, so that it holds none of its parent's pipes open (a test's sound
/// server that kept `swift test`'s event pipe cut the run's output short).
/// `actions` is a `posix_spawn_file_actions_t *` (untyped here: Swift would give the type to this
/// module rather than Glibc).
int fbs_spawn_close_from(void *actions, int from);

/// `pipe2(fds, O_CLOEXEC)`: a pipe whose ends no spawned child inherits (a child is given one as a
/// standard stream by `dup2`, which clears the flag). It needs `_GNU_SOURCE`, which shims.c defines.
int fbs_pipe_cloexec(int fds[2]);

