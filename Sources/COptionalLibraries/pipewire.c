// libpipewire-0.3 (Debian libpipewire-0.3-0): PipeWireOutput. Without it the constructors return
// NULL (PipeWireOutput checks first, with fbs_optional_library_error), the calls that return an
// error code -ELIBACC, pw_stream_get_state PW_STREAM_STATE_ERROR. The loop and core methods
// CPipeWire wraps are inline calls through the objects' own method tables, and the SPA pod
// builders are header-only: neither needs a definition here.
#include "forwarding.h"

#include <errno.h>
#include <pipewire/impl-module.h>
#include <pipewire/pipewire.h>

#define FUNCTIONS(F, V, D)                                                                                  \
    F(int, pw_context_add_spa_lib, -ELIBACC, struct pw_context *, const char *, const char *)               \
    F(struct pw_core *, pw_context_connect, NULL, struct pw_context *, struct pw_properties *, size_t)      \
    V(pw_context_destroy, struct pw_context *)                                                              \
    F(struct pw_data_loop *, pw_context_get_data_loop, NULL, struct pw_context *)                           \
    F(struct pw_impl_module *, pw_context_load_module, NULL, struct pw_context *, const char *, const char *, \
      struct pw_properties *)                                                                               \
    F(struct pw_context *, pw_context_new, NULL, struct pw_loop *, struct pw_properties *, size_t)          \
    F(int, pw_core_disconnect, -ELIBACC, struct pw_core *)                                                  \
    F(struct spa_thread *, pw_data_loop_get_thread, NULL, struct pw_data_loop *)                            \
    F(int, pw_data_loop_invoke, -ELIBACC, struct pw_data_loop *, spa_invoke_func_t, uint32_t, const void *, \
      size_t, bool, void *)                                                                                 \
    V(pw_init, int *, char ***)                                                                             \
    F(struct pw_properties *, pw_properties_new_dict, NULL, const struct spa_dict *)                        \
    F(int, pw_properties_set, -ELIBACC, struct pw_properties *, const char *, const char *)                 \
    V(pw_stream_add_listener, struct pw_stream *, struct spa_hook *, const struct pw_stream_events *, void *) \
    F(int, pw_stream_connect, -ELIBACC, struct pw_stream *, enum spa_direction, uint32_t, enum pw_stream_flags, \
      const struct spa_pod **, uint32_t)                                                                    \
    F(struct pw_buffer *, pw_stream_dequeue_buffer, NULL, struct pw_stream *)                               \
    V(pw_stream_destroy, struct pw_stream *)                                                                \
    F(enum pw_stream_state, pw_stream_get_state, PW_STREAM_STATE_ERROR, struct pw_stream *, const char **)  \
    F(int, pw_stream_get_time_n, -ELIBACC, struct pw_stream *, struct pw_time *, size_t)                    \
    F(struct pw_stream *, pw_stream_new, NULL, struct pw_core *, const char *, struct pw_properties *)       \
    F(int, pw_stream_queue_buffer, -ELIBACC, struct pw_stream *, struct pw_buffer *)                        \
    V(pw_thread_loop_destroy, struct pw_thread_loop *)                                                      \
    F(struct pw_loop *, pw_thread_loop_get_loop, NULL, struct pw_thread_loop *)                             \
    V(pw_thread_loop_lock, struct pw_thread_loop *)                                                         \
    F(struct pw_thread_loop *, pw_thread_loop_new, NULL, const char *, const struct spa_dict *)             \
    F(int, pw_thread_loop_start, -ELIBACC, struct pw_thread_loop *)                                         \
    V(pw_thread_loop_stop, struct pw_thread_loop *)                                                         \
    V(pw_thread_loop_unlock, struct pw_thread_loop *)

FBS_LIBRARY(pipewire, "libpipewire-0.3.so.0", "libpipewire-0.3-0", FUNCTIONS)
