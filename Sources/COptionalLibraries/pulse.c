// libpulse (Debian libpulse0): PulseAudioOutput and SoundServerInfo. Without it the constructors
// return NULL (the callers check at the first, pa_threaded_mainloop_new or pa_mainloop_new, and
// report fbs_optional_library_error), the calls that return an error code -1, the state getters
// the FAILED state, and pa_strerror the reason.
#include "forwarding.h"

#include <pulse/pulseaudio.h>

#define FUNCTIONS(F, V, D)                                                                                  \
    F(int, pa_context_connect, -1, pa_context *, const char *, pa_context_flags_t, const pa_spawn_api *)    \
    V(pa_context_disconnect, pa_context *)                                                                  \
    F(int, pa_context_errno, PA_ERR_UNKNOWN, const pa_context *)                                            \
    F(const char *, pa_context_get_server, NULL, const pa_context *)                                        \
    F(pa_operation *, pa_context_get_server_info, NULL, pa_context *, pa_server_info_cb_t, void *)          \
    F(pa_operation *, pa_context_get_sink_info_list, NULL, pa_context *, pa_sink_info_cb_t, void *)         \
    F(pa_context_state_t, pa_context_get_state, PA_CONTEXT_FAILED, const pa_context *)                       \
    F(pa_context *, pa_context_new_with_proplist, NULL, pa_mainloop_api *, const char *, const pa_proplist *) \
    F(pa_time_event *, pa_context_rttime_new, NULL, const pa_context *, pa_usec_t, pa_time_event_cb_t, void *) \
    V(pa_context_rttime_restart, const pa_context *, pa_time_event *, pa_usec_t)                            \
    V(pa_context_set_state_callback, pa_context *, pa_context_notify_cb_t, void *)                          \
    V(pa_context_unref, pa_context *)                                                                       \
    V(pa_mainloop_free, pa_mainloop *)                                                                      \
    F(pa_mainloop_api *, pa_mainloop_get_api, NULL, pa_mainloop *)                                          \
    F(pa_mainloop *, pa_mainloop_new, NULL)                                                                 \
    V(pa_mainloop_quit, pa_mainloop *, int)                                                                 \
    F(int, pa_mainloop_run, -1, pa_mainloop *, int *)                                                       \
    V(pa_operation_unref, pa_operation *)                                                                   \
    V(pa_proplist_free, pa_proplist *)                                                                      \
    F(pa_proplist *, pa_proplist_new, NULL)                                                                 \
    F(int, pa_proplist_sets, -1, pa_proplist *, const char *, const char *)                                 \
    F(pa_usec_t, pa_rtclock_now, 0)                                                                         \
    F(const char *, pa_sample_format_to_string, NULL, pa_sample_format_t)                                   \
    F(int, pa_stream_connect_playback, -1, pa_stream *, const char *, const pa_buffer_attr *,               \
      pa_stream_flags_t, const pa_cvolume *, pa_stream *)                                                   \
    F(int, pa_stream_disconnect, -1, pa_stream *)                                                           \
    F(pa_stream_state_t, pa_stream_get_state, PA_STREAM_FAILED, const pa_stream *)                          \
    F(int, pa_stream_get_time, -1, pa_stream *, pa_usec_t *)                                                \
    F(const pa_timing_info *, pa_stream_get_timing_info, NULL, pa_stream *)                                 \
    F(pa_stream *, pa_stream_new_with_proplist, NULL, pa_context *, const char *, const pa_sample_spec *,   \
      const pa_channel_map *, pa_proplist *)                                                                \
    V(pa_stream_set_latency_update_callback, pa_stream *, pa_stream_notify_cb_t, void *)                    \
    V(pa_stream_set_state_callback, pa_stream *, pa_stream_notify_cb_t, void *)                             \
    V(pa_stream_set_underflow_callback, pa_stream *, pa_stream_notify_cb_t, void *)                         \
    V(pa_stream_set_write_callback, pa_stream *, pa_stream_request_cb_t, void *)                            \
    V(pa_stream_unref, pa_stream *)                                                                         \
    F(pa_operation *, pa_stream_update_timing_info, NULL, pa_stream *, pa_stream_success_cb_t, void *)      \
    F(int, pa_stream_write, -1, pa_stream *, const void *, size_t, pa_free_cb_t, int64_t, pa_seek_mode_t)   \
    F(size_t, pa_stream_writable_size, (size_t)-1, const pa_stream *)                                       \
    F(const char *, pa_strerror, FBS_ERROR, int)                                                            \
    V(pa_threaded_mainloop_free, pa_threaded_mainloop *)                                                    \
    F(pa_mainloop_api *, pa_threaded_mainloop_get_api, NULL, pa_threaded_mainloop *)                        \
    V(pa_threaded_mainloop_lock, pa_threaded_mainloop *)                                                    \
    F(pa_threaded_mainloop *, pa_threaded_mainloop_new, NULL)                                               \
    F(int, pa_threaded_mainloop_start, -1, pa_threaded_mainloop *)                                          \
    V(pa_threaded_mainloop_stop, pa_threaded_mainloop *)                                                    \
    V(pa_threaded_mainloop_unlock, pa_threaded_mainloop *)

FBS_LIBRARY(pulse, "libpulse.so.0", "libpulse0", FUNCTIONS)
