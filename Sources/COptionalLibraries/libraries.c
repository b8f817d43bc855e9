// Opening the libraries loaded on first use, and saying why one cannot be.
//
// Why they are not linked: a linked library is mapped, with everything it depends on, and its
// relocations resolved before main, in every process, whether or not it is called; and every
// symbol the executable imports is then looked up across all of them. libpulse alone brings about
// thirty shared objects (libpulsecommon, X11, xcb, D-Bus, gcrypt, libsndfile's codecs), libsystemd
// and libpipewire a few more: about 65% of `feedbackctl version`'s time was the dynamic loader
// Loaded on first use, each process maps only what its route calls: `version` none,
// `fire` through the service libsystemd, `fire` in process libpulse or libpipewire, and libsndfile.
//
// When a library cannot be loaded, each of its functions returns the library's own failure value
// (an error code, NULL, an error string) and fbs_optional_library_error() says why, naming the
// Debian package that provides it.
//
// Thread safety: a library is opened once, under its pthread_once; the addresses it fills are
// read only after that pthread_once has returned, which orders the reads after the writes.
#include "forwarding.h"

#include <dlfcn.h>
#include <stdio.h>

FBS_HIDDEN extern fbs_library *const fbs_library_canberra, *const fbs_library_evdev, *const fbs_library_ebur128,
    *const fbs_library_soxr, *const fbs_library_alsa, *const fbs_library_pulse, *const fbs_library_sndfile,
    *const fbs_library_systemd, *const fbs_library_pipewire, *const fbs_library_dconf;

void fbs_library_open(fbs_library *library) {
    // RTLD_LOCAL: the library's symbols do not join the global scope, which every later lookup
    // (another library's, this executable's lazy ones) would then search as well. RTLD_LAZY: the
    // calls of libpulse's thirty dependencies (X11, xcb, gcrypt, …) are bound only where made;
    // 0.6 ms less to `fire`'s first sample than RTLD_NOW (feedbackbench --only command, 100 runs
    // each interleaved: median 10.4 against 11.0 ms). Our own names are all looked up below, so a
    // library that lacks one is still refused here, not at the call.
    void *handle = dlopen(library->soname, RTLD_LAZY | RTLD_LOCAL);
    if (handle == NULL) {
        const char *reason = dlerror();
        snprintf(library->error, sizeof library->error, "%s; install the Debian package %s",
                 reason != NULL ? reason : library->soname, library->package);
        return;
    }
    // dlsym on the handle looks in the library (and what it depends on) only, so an address is
    // never one of the executable's forwarding definitions of the same name.
    for (size_t index = 0; index < library->count; index++) {
        library->addresses[index] = dlsym(handle, library->names[index]);
        if (library->addresses[index] == NULL) {
            snprintf(library->error, sizeof library->error,
                     "%s lacks %s, which FeedbackServices calls (older than Debian 12's %s?)", library->soname,
                     library->names[index], library->package);
            dlclose(handle);
            return;
        }
    }
    library->usable = true;
}

const char *fbs_optional_library_error(fbs_optional_library which) {
    fbs_library *const libraries[] = {
        [FBS_LIBRARY_CANBERRA] = fbs_library_canberra, [FBS_LIBRARY_EVDEV] = fbs_library_evdev,
        [FBS_LIBRARY_EBUR128] = fbs_library_ebur128,   [FBS_LIBRARY_SOXR] = fbs_library_soxr,
        [FBS_LIBRARY_ALSA] = fbs_library_alsa,         [FBS_LIBRARY_PULSE] = fbs_library_pulse,
        [FBS_LIBRARY_SNDFILE] = fbs_library_sndfile,   [FBS_LIBRARY_SYSTEMD] = fbs_library_systemd,
        [FBS_LIBRARY_PIPEWIRE] = fbs_library_pipewire, [FBS_LIBRARY_DCONF] = fbs_library_dconf,
    };
    fbs_library *library = libraries[which];
    pthread_once(&library->once, library->open);
    return library->usable ? NULL : library->error;
}
