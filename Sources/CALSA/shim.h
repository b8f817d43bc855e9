#pragma once
#include <alsa/asoundlib.h>

/// libasound's error handler prints every failure to stderr ("ALSA lib pcm.c:...: Unknown PCM"),
/// also those the caller handles; FeedbackServices reports them as typed errors instead. A
/// variadic C function, which Swift cannot define.
static void fbs_alsa_ignore_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

/// Installs the handler above (snd_lib_error_set_handler), process-wide.
static inline void fbs_alsa_silence_errors(void) {
    snd_lib_error_set_handler(fbs_alsa_ignore_error);
}
