// Definitions of the libcanberra, libevdev, libebur128, libsoxr and libasound functions
// FeedbackServices calls, each forwarding to the real one in the library, which is dlopen()ed on the first call.
//
// Why: linking them makes every process map them and their dependencies (libvorbisfile, libtdb,
// libltdl, libgomp: eight shared objects) and resolve their relocations before main, about 1 ms of
// a `feedbackctl fire` that uses none of them (issue 14; `perf stat` of a program linking only
// paplay's libraries against one linking these four too: 2.8 vs 4.0 ms of CPU). The Swift code
// calls them by their own names, as if linked; the module maps of CCanberra, CEvdev, CEbur128,
// CSoxr and CALSA give the declarations and link nothing. libasound (ALSAOutput, for machines with
// no sound server) joined them for the same reason: 0.3–1.4 ms of `feedbackctl --version`'s CPU
// time when linked.
//
// When a library cannot be loaded, each function returns the library's own failure value (an
// error code, NULL, an error string) and fbs_optional_library_error() says why, for the message.
//
// Thread safety: a library is opened once (pthread_once); a resolved function pointer is published
// with release/acquire atomics, so any thread may call any function at any time.
#include "COptionalLibraries.h"

#include <alsa/asoundlib.h>
#include <canberra.h>
#include <dlfcn.h>
#include <ebur128.h>
#include <errno.h>
#include <libevdev-1.0/libevdev/libevdev.h>
#include <pthread.h>
#include <soxr.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *soname;
    const char *package;
    pthread_once_t once;
    void *handle;
    _Atomic int incomplete;  // the library loaded but lacks a function we call
    char error[512];         // written once, by the opener
} optional_library;

static optional_library libraries[] = {
    [FBS_LIBRARY_CANBERRA] = {"libcanberra.so.0", "libcanberra0", PTHREAD_ONCE_INIT, NULL, 0, ""},
    [FBS_LIBRARY_EVDEV] = {"libevdev.so.2", "libevdev2", PTHREAD_ONCE_INIT, NULL, 0, ""},
    [FBS_LIBRARY_EBUR128] = {"libebur128.so.1", "libebur128-1", PTHREAD_ONCE_INIT, NULL, 0, ""},
    [FBS_LIBRARY_SOXR] = {"libsoxr.so.0", "libsoxr0", PTHREAD_ONCE_INIT, NULL, 0, ""},
    [FBS_LIBRARY_ALSA] = {"libasound.so.2", "libasound2", PTHREAD_ONCE_INIT, NULL, 0, ""},
};

// pthread_once takes no argument, hence one opener per library.
static void open_library(optional_library *library) {
    library->handle = dlopen(library->soname, RTLD_NOW | RTLD_LOCAL);
    if (library->handle == NULL) {
        const char *reason = dlerror();
        snprintf(library->error, sizeof library->error, "%s (install the Debian package %s)",
                 reason != NULL ? reason : library->soname, library->package);
    } else {
        snprintf(library->error, sizeof library->error,
                 "%s lacks a function FeedbackServices calls (older than Debian 12's %s?)",
                 library->soname, library->package);
    }
}
static void open_canberra(void) { open_library(&libraries[FBS_LIBRARY_CANBERRA]); }
static void open_evdev(void) { open_library(&libraries[FBS_LIBRARY_EVDEV]); }
static void open_ebur128(void) { open_library(&libraries[FBS_LIBRARY_EBUR128]); }
static void open_soxr(void) { open_library(&libraries[FBS_LIBRARY_SOXR]); }
static void open_alsa(void) { open_library(&libraries[FBS_LIBRARY_ALSA]); }
static void (*const openers[])(void) = {open_canberra, open_evdev, open_ebur128, open_soxr, open_alsa};

static void *handle_of(fbs_optional_library which) {
    optional_library *library = &libraries[which];
    pthread_once(&library->once, openers[which]);
    return library->handle;
}

const char *fbs_optional_library_error(fbs_optional_library which) {
    if (handle_of(which) != NULL && !atomic_load(&libraries[which].incomplete)) return NULL;
    return libraries[which].error;
}

// The library's `name`, or NULL when the library is missing (or lacks it: then the error says so).
static void *resolve(fbs_optional_library which, _Atomic(void *) *slot, const char *name) {
    void *function = atomic_load_explicit(slot, memory_order_acquire);
    if (function != NULL) return function;
    void *handle = handle_of(which);
    if (handle == NULL) return NULL;
    // dlsym on the handle looks in the library first, so a call never comes back to these
    // definitions even though the executable defines the same names.
    function = dlsym(handle, name);
    if (function == NULL) {
        atomic_store(&libraries[which].incomplete, 1);
        return NULL;
    }
    atomic_store_explicit(slot, function, memory_order_release);
    return function;
}

// `real` is `name` in the library, typed as the header declares it; `failure` runs when it is missing.
#define FORWARD(library, name, failure)                                                  \
    static _Atomic(void *) name##_slot;                                                  \
    __typeof__(&name) real = (__typeof__(&name))resolve(library, &name##_slot, #name);   \
    if (real == NULL) { failure; }

// --- libcanberra ------------------------------------------------------------------------------
#define CANBERRA(name) FORWARD(FBS_LIBRARY_CANBERRA, name, return CA_ERROR_NOTAVAILABLE)

int ca_proplist_create(ca_proplist **p) { CANBERRA(ca_proplist_create); return real(p); }
int ca_proplist_destroy(ca_proplist *p) { CANBERRA(ca_proplist_destroy); return real(p); }
int ca_proplist_sets(ca_proplist *p, const char *key, const char *value) {
    CANBERRA(ca_proplist_sets);
    return real(p, key, value);
}
int ca_context_create(ca_context **c) { CANBERRA(ca_context_create); return real(c); }
int ca_context_set_driver(ca_context *c, const char *driver) {
    CANBERRA(ca_context_set_driver);
    return real(c, driver);
}
int ca_context_open(ca_context *c) { CANBERRA(ca_context_open); return real(c); }
int ca_context_destroy(ca_context *c) { CANBERRA(ca_context_destroy); return real(c); }
int ca_context_change_props_full(ca_context *c, ca_proplist *p) {
    CANBERRA(ca_context_change_props_full);
    return real(c, p);
}
int ca_context_play_full(ca_context *c, uint32_t id, ca_proplist *p, ca_finish_callback_t cb, void *userdata) {
    CANBERRA(ca_context_play_full);
    return real(c, id, p, cb, userdata);
}
int ca_context_cancel(ca_context *c, uint32_t id) { CANBERRA(ca_context_cancel); return real(c, id); }
const char *ca_strerror(int code) {
    FORWARD(FBS_LIBRARY_CANBERRA, ca_strerror, return libraries[FBS_LIBRARY_CANBERRA].error);
    return real(code);
}

// --- libevdev ---------------------------------------------------------------------------------
int libevdev_new_from_fd(int fd, struct libevdev **dev) {
    FORWARD(FBS_LIBRARY_EVDEV, libevdev_new_from_fd, return -ELIBACC);
    return real(fd, dev);
}
// The rest take a device only libevdev_new_from_fd makes, so they are never reached without it.
void libevdev_free(struct libevdev *dev) { FORWARD(FBS_LIBRARY_EVDEV, libevdev_free, return); real(dev); }
const char *libevdev_get_name(const struct libevdev *dev) {
    FORWARD(FBS_LIBRARY_EVDEV, libevdev_get_name, return NULL);
    return real(dev);
}
int libevdev_has_event_type(const struct libevdev *dev, unsigned int type) {
    FORWARD(FBS_LIBRARY_EVDEV, libevdev_has_event_type, return 0);
    return real(dev, type);
}
int libevdev_has_event_code(const struct libevdev *dev, unsigned int type, unsigned int code) {
    FORWARD(FBS_LIBRARY_EVDEV, libevdev_has_event_code, return 0);
    return real(dev, type, code);
}

// --- libebur128 -------------------------------------------------------------------------------
ebur128_state *ebur128_init(unsigned int channels, unsigned long samplerate, int mode) {
    FORWARD(FBS_LIBRARY_EBUR128, ebur128_init, return NULL);
    return real(channels, samplerate, mode);
}
void ebur128_destroy(ebur128_state **st) { FORWARD(FBS_LIBRARY_EBUR128, ebur128_destroy, return); real(st); }
int ebur128_set_channel(ebur128_state *st, unsigned int channel_number, int value) {
    FORWARD(FBS_LIBRARY_EBUR128, ebur128_set_channel, return EBUR128_ERROR_NOMEM);
    return real(st, channel_number, value);
}
int ebur128_add_frames_float(ebur128_state *st, const float *src, size_t frames) {
    FORWARD(FBS_LIBRARY_EBUR128, ebur128_add_frames_float, return EBUR128_ERROR_NOMEM);
    return real(st, src, frames);
}
int ebur128_loudness_global(ebur128_state *st, double *out) {
    FORWARD(FBS_LIBRARY_EBUR128, ebur128_loudness_global, return EBUR128_ERROR_NOMEM);
    return real(st, out);
}

// --- libsoxr ----------------------------------------------------------------------------------
#define SOXR_ERROR libraries[FBS_LIBRARY_SOXR].error

soxr_t soxr_create(double input_rate, double output_rate, unsigned num_channels, soxr_error_t *error,
                   soxr_io_spec_t const *io, soxr_quality_spec_t const *quality, soxr_runtime_spec_t const *runtime) {
    FORWARD(FBS_LIBRARY_SOXR, soxr_create, if (error != NULL) *error = SOXR_ERROR; return NULL);
    return real(input_rate, output_rate, num_channels, error, io, quality, runtime);
}
soxr_error_t soxr_process(soxr_t resampler, soxr_in_t in, size_t ilen, size_t *idone, soxr_out_t out,
                          size_t olen, size_t *odone) {
    FORWARD(FBS_LIBRARY_SOXR, soxr_process, return SOXR_ERROR);
    return real(resampler, in, ilen, idone, out, olen, odone);
}
void soxr_delete(soxr_t resampler) { FORWARD(FBS_LIBRARY_SOXR, soxr_delete, return); real(resampler); }
soxr_error_t soxr_oneshot(double input_rate, double output_rate, unsigned num_channels, soxr_in_t in,
                          size_t ilen, size_t *idone, soxr_out_t out, size_t olen, size_t *odone,
                          soxr_io_spec_t const *io, soxr_quality_spec_t const *quality,
                          soxr_runtime_spec_t const *runtime) {
    FORWARD(FBS_LIBRARY_SOXR, soxr_oneshot, return SOXR_ERROR);
    return real(input_rate, output_rate, num_channels, in, ilen, idone, out, olen, odone, io, quality, runtime);
}
// The spec constructors only fill structures; without the library the call that takes them fails.
soxr_io_spec_t soxr_io_spec(soxr_datatype_t itype, soxr_datatype_t otype) {
    FORWARD(FBS_LIBRARY_SOXR, soxr_io_spec, return (soxr_io_spec_t){0});
    return real(itype, otype);
}
soxr_quality_spec_t soxr_quality_spec(unsigned long recipe, unsigned long flags) {
    FORWARD(FBS_LIBRARY_SOXR, soxr_quality_spec, return (soxr_quality_spec_t){0});
    return real(recipe, flags);
}
soxr_runtime_spec_t soxr_runtime_spec(unsigned num_threads) {
    FORWARD(FBS_LIBRARY_SOXR, soxr_runtime_spec, return (soxr_runtime_spec_t){0});
    return real(num_threads);
}

// --- libasound ------------------------------------------------------------------------------
// Without the library an ALSA call fails as a missing device would, with -ELIBACC, and
// snd_strerror gives the reason; the calls that return nothing or a pointer do nothing / NULL.
#define ALSA_FAILED return -ELIBACC
int snd_card_get_longname(int card, char **name) {
    FORWARD(FBS_LIBRARY_ALSA, snd_card_get_longname, ALSA_FAILED);
    return real(card, name);
}
int snd_card_get_name(int card, char **name) {
    FORWARD(FBS_LIBRARY_ALSA, snd_card_get_name, ALSA_FAILED);
    return real(card, name);
}
int snd_card_next(int *card) {
    FORWARD(FBS_LIBRARY_ALSA, snd_card_next, ALSA_FAILED);
    return real(card);
}
int snd_device_name_free_hint(void **hints) {
    FORWARD(FBS_LIBRARY_ALSA, snd_device_name_free_hint, ALSA_FAILED);
    return real(hints);
}
char *snd_device_name_get_hint(const void *hint, const char *id) {
    FORWARD(FBS_LIBRARY_ALSA, snd_device_name_get_hint, return NULL);
    return real(hint, id);
}
int snd_device_name_hint(int card, const char *iface, void ***hints) {
    FORWARD(FBS_LIBRARY_ALSA, snd_device_name_hint, ALSA_FAILED);
    return real(card, iface, hints);
}
int snd_output_buffer_open(snd_output_t **outputp) {
    FORWARD(FBS_LIBRARY_ALSA, snd_output_buffer_open, ALSA_FAILED);
    return real(outputp);
}
size_t snd_output_buffer_string(snd_output_t *output, char **buf) {
    FORWARD(FBS_LIBRARY_ALSA, snd_output_buffer_string, return 0);
    return real(output, buf);
}
int snd_output_close(snd_output_t *output) {
    FORWARD(FBS_LIBRARY_ALSA, snd_output_close, ALSA_FAILED);
    return real(output);
}
snd_pcm_sframes_t snd_pcm_avail_update(snd_pcm_t *pcm) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_avail_update, ALSA_FAILED);
    return real(pcm);
}
int snd_pcm_close(snd_pcm_t *pcm) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_close, ALSA_FAILED);
    return real(pcm);
}
int snd_pcm_delay(snd_pcm_t *pcm, snd_pcm_sframes_t *delayp) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_delay, ALSA_FAILED);
    return real(pcm, delayp);
}
int snd_pcm_drop(snd_pcm_t *pcm) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_drop, ALSA_FAILED);
    return real(pcm);
}
int snd_pcm_dump(snd_pcm_t *pcm, snd_output_t *out) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_dump, ALSA_FAILED);
    return real(pcm, out);
}
int snd_pcm_hw_params(snd_pcm_t *pcm, snd_pcm_hw_params_t *params) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params, ALSA_FAILED);
    return real(pcm, params);
}
int snd_pcm_hw_params_any(snd_pcm_t *pcm, snd_pcm_hw_params_t *params) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_any, ALSA_FAILED);
    return real(pcm, params);
}
void snd_pcm_hw_params_free(snd_pcm_hw_params_t *obj) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_free, return);
    real(obj);
}
int snd_pcm_hw_params_get_buffer_size(const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_get_buffer_size, ALSA_FAILED);
    return real(params, val);
}
int snd_pcm_hw_params_get_period_size(const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *frames, int *dir) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_get_period_size, ALSA_FAILED);
    return real(params, frames, dir);
}
int snd_pcm_hw_params_malloc(snd_pcm_hw_params_t **ptr) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_malloc, ALSA_FAILED);
    return real(ptr);
}
int snd_pcm_hw_params_set_access(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_access_t _access) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_set_access, ALSA_FAILED);
    return real(pcm, params, _access);
}
int snd_pcm_hw_params_set_buffer_size_near(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_set_buffer_size_near, ALSA_FAILED);
    return real(pcm, params, val);
}
int snd_pcm_hw_params_set_channels(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_set_channels, ALSA_FAILED);
    return real(pcm, params, val);
}
int snd_pcm_hw_params_set_format(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_set_format, ALSA_FAILED);
    return real(pcm, params, val);
}
int snd_pcm_hw_params_set_period_size_near(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val, int *dir) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_set_period_size_near, ALSA_FAILED);
    return real(pcm, params, val, dir);
}
int snd_pcm_hw_params_set_rate(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val, int dir) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_set_rate, ALSA_FAILED);
    return real(pcm, params, val, dir);
}
int snd_pcm_hw_params_test_format(snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_hw_params_test_format, ALSA_FAILED);
    return real(pcm, params, val);
}
int snd_pcm_open(snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_open, ALSA_FAILED);
    return real(pcm, name, stream, mode);
}
int snd_pcm_poll_descriptors(snd_pcm_t *pcm, struct pollfd *pfds, unsigned int space) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_poll_descriptors, ALSA_FAILED);
    return real(pcm, pfds, space);
}
int snd_pcm_poll_descriptors_revents(snd_pcm_t *pcm, struct pollfd *pfds, unsigned int nfds, unsigned short *revents) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_poll_descriptors_revents, ALSA_FAILED);
    return real(pcm, pfds, nfds, revents);
}
int snd_pcm_recover(snd_pcm_t *pcm, int err, int silent) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_recover, ALSA_FAILED);
    return real(pcm, err, silent);
}
snd_pcm_sframes_t snd_pcm_rewind(snd_pcm_t *pcm, snd_pcm_uframes_t frames) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_rewind, ALSA_FAILED);
    return real(pcm, frames);
}
snd_pcm_sframes_t snd_pcm_rewindable(snd_pcm_t *pcm) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_rewindable, ALSA_FAILED);
    return real(pcm);
}
int snd_pcm_sw_params(snd_pcm_t *pcm, snd_pcm_sw_params_t *params) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_sw_params, ALSA_FAILED);
    return real(pcm, params);
}
int snd_pcm_sw_params_current(snd_pcm_t *pcm, snd_pcm_sw_params_t *params) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_sw_params_current, ALSA_FAILED);
    return real(pcm, params);
}
void snd_pcm_sw_params_free(snd_pcm_sw_params_t *obj) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_sw_params_free, return);
    real(obj);
}
int snd_pcm_sw_params_malloc(snd_pcm_sw_params_t **ptr) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_sw_params_malloc, ALSA_FAILED);
    return real(ptr);
}
int snd_pcm_sw_params_set_avail_min(snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_sw_params_set_avail_min, ALSA_FAILED);
    return real(pcm, params, val);
}
int snd_pcm_sw_params_set_start_threshold(snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_sw_params_set_start_threshold, ALSA_FAILED);
    return real(pcm, params, val);
}
snd_pcm_sframes_t snd_pcm_writei(snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_writei, ALSA_FAILED);
    return real(pcm, buffer, size);
}
snd_pcm_type_t snd_pcm_type(snd_pcm_t *pcm) {
    FORWARD(FBS_LIBRARY_ALSA, snd_pcm_type, return SND_PCM_TYPE_HW);
    return real(pcm);
}
const char *snd_strerror(int errnum) {
    FORWARD(FBS_LIBRARY_ALSA, snd_strerror, return libraries[FBS_LIBRARY_ALSA].error);
    return real(errnum);
}
int snd_lib_error_set_handler(snd_lib_error_handler_t handler) {
    FORWARD(FBS_LIBRARY_ALSA, snd_lib_error_set_handler, ALSA_FAILED);
    return real(handler);
}
