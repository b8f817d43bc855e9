// The C libraries FeedbackServices calls are loaded on their first call, not when the process
// starts: this target defines every function of theirs the package calls, forwarding to the library,
// which it dlopen()s then (see forwarding.h). `feedbackctl version` maps none of them; `fire`
// only those its route needs. Their module maps (CPulse, CSystemd, …) give declarations and link nothing.
#pragma once

#include <stddef.h>

/// A library loaded on first use.
typedef enum {
    FBS_LIBRARY_CANBERRA = 0,
    FBS_LIBRARY_EVDEV = 1,
    FBS_LIBRARY_EBUR128 = 2,
    FBS_LIBRARY_SOXR = 3,
    FBS_LIBRARY_ALSA = 4,
    FBS_LIBRARY_PULSE = 5,
    FBS_LIBRARY_SNDFILE = 6,
    FBS_LIBRARY_SYSTEMD = 7,
    FBS_LIBRARY_PIPEWIRE = 8,
    FBS_LIBRARY_DCONF = 9,
} fbs_optional_library;

/// Why `library` cannot be used ("libcanberra.so.0: cannot open shared object file: …; install
/// the Debian package libcanberra0"), or NULL when it is loaded. Loads it if that was not tried
/// yet. The text lives as long as the process.
///
/// Thread safety: any thread, any time (the library is opened once, under pthread_once).
const char *fbs_optional_library_error(fbs_optional_library library);

/// The string dconf holds at `key` ("/org/sigxcpu/feedbackd/application/APP/profile"), read with
/// libdconf in this process from the databases the dconf profile stacks (the user's, the
/// system's), copied into `buffer` (NUL-terminated, cut to `size`). Returns 1 when it holds a
/// string, 0 when it holds nothing, -1 when it holds another type, -2 when libdconf cannot be
/// loaded (fbs_optional_library_error(FBS_LIBRARY_DCONF) says why). Reads the process's own
/// environment (XDG_CONFIG_HOME, DCONF_PROFILE, XDG_RUNTIME_DIR), once, at the first call.
///
/// Thread safety: any thread (the client is made once; libdconf locks its engine).
int fbs_dconf_read_string(const char *key, char *buffer, size_t size);
