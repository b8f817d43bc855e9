// The C libraries only some commands need (libcanberra, libevdev, libebur128, libsoxr, libasound) are loaded
// on their first call, not when the process starts: feedbackctl fire, which needs none of them,
// starts without mapping them and the eight shared objects they bring (see optional.c).
#pragma once

/// A library loaded on first use.
typedef enum {
    FBS_LIBRARY_CANBERRA = 0,
    FBS_LIBRARY_EVDEV = 1,
    FBS_LIBRARY_EBUR128 = 2,
    FBS_LIBRARY_SOXR = 3,
    FBS_LIBRARY_ALSA = 4,
} fbs_optional_library;

/// Why `library` cannot be used ("libcanberra.so.0: cannot open shared object file: …; install
/// the Debian package libcanberra0"), or NULL when it is loaded. Loads it if that was not tried yet.
/// The text lives as long as the process.
const char *fbs_optional_library_error(fbs_optional_library library);
