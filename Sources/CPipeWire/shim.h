#pragma once
// libpipewire-0.3 for PipeWireOutput: declarations only (COptionalLibraries loads the library on
// first use). Swift cannot call PipeWire's method macros (the loop utilities, the core's listener)
// nor build SPA pods with the SPA_POD_* builder macros, and pw_properties_new is variadic: the
// static inline functions below do it for Swift, each named fb_pw_* after what it wraps.
//
// Only FeedbackServices, which calls PipeWire, sees these declarations: it is compiled with
// PipeWire's include directories and FEEDBACKSERVICES_PIPEWIRE (Package.swift's `pipeWireHeaders`).
// A client in the Swift 5 language mode also loads the C modules its dependencies import
// internally, with its own flags, which name no PipeWire directory: for it this module is empty,
// so a Swift 5 package that depends on the library builds without PipeWire's include paths.
#ifdef FEEDBACKSERVICES_PIPEWIRE
#include <errno.h>
#include <pipewire/impl-module.h>
#include <pipewire/pipewire.h>
#include <spa/param/audio/format-utils.h>
#include <spa/param/props.h>

/// An empty property list: pw_properties_new(NULL) made from an empty dictionary, as the variadic
/// form can be neither called from Swift nor forwarded by COptionalLibraries.
static inline struct pw_properties *fb_pw_properties_new(void) {
    const struct spa_dict empty = SPA_DICT_INIT(NULL, 0);
    return pw_properties_new_dict(&empty);
}

/// The EnumFormat pod for interleaved float32 at `rate` Hz, stereo (FL FR), built into `buffer`.
static inline const struct spa_pod *fb_pw_build_f32_stereo_format(uint8_t *buffer, uint32_t size, uint32_t rate) {
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, size);
    struct spa_audio_info_raw info = {
        .format = SPA_AUDIO_FORMAT_F32, .rate = rate, .channels = 2,
        .position = { SPA_AUDIO_CHANNEL_FL, SPA_AUDIO_CHANNEL_FR },
    };
    return spa_format_audio_raw_build(&builder, SPA_PARAM_EnumFormat, &info);
}

/// pw_loop_add_event: a source that runs `callback` on the loop's thread each time
/// fb_pw_loop_signal_event signals it (from any thread; it writes an eventfd).
static inline struct spa_source *fb_pw_loop_add_event(struct pw_loop *loop, spa_source_event_func_t callback, void *data) {
    return pw_loop_add_event(loop, callback, data);
}

/// pw_loop_signal_event. Real-time safe: one write to an eventfd.
static inline int fb_pw_loop_signal_event(struct pw_loop *loop, struct spa_source *source) {
    return pw_loop_signal_event(loop, source);
}

/// pw_loop_add_timer: a timer source, disarmed until fb_pw_loop_arm_timer.
static inline struct spa_source *fb_pw_loop_add_timer(struct pw_loop *loop, spa_source_timer_func_t callback, void *data) {
    return pw_loop_add_timer(loop, callback, data);
}

/// pw_loop_update_timer: fires after `nanoseconds`, then every `interval` nanoseconds (0: once).
static inline int fb_pw_loop_arm_timer(struct pw_loop *loop, struct spa_source *source, uint64_t nanoseconds, uint64_t interval) {
    struct timespec value = { (time_t)(nanoseconds / 1000000000u), (long)(nanoseconds % 1000000000u) };
    struct timespec every = { (time_t)(interval / 1000000000u), (long)(interval % 1000000000u) };
    return pw_loop_update_timer(loop, source, &value, interval ? &every : NULL, false);
}

/// pw_loop_destroy_source.
static inline void fb_pw_loop_destroy_source(struct pw_loop *loop, struct spa_source *source) {
    pw_loop_destroy_source(loop, source);
}

/// pw_core_add_listener, for the core's error event (the daemon went away: -EPIPE on PW_ID_CORE).
static inline int fb_pw_core_add_listener(struct pw_core *core, struct spa_hook *listener, const struct pw_core_events *events, void *data) {
    return pw_core_add_listener(core, listener, events, data);
}

/// PW_ID_CORE, the core object's id.
static const uint32_t fb_pw_id_core = PW_ID_CORE;

/// PW_ID_ANY: let the session manager choose the target.
static const uint32_t fb_pw_id_any = PW_ID_ANY;
#endif
