// libsystemd (Debian libsystemd0): sd-bus and sd-event, for feedbackservicesd's connection and
// its loop and for feedbackctl's calls to it (FeedbackBus). Without it the calls fail as sd-bus
// calls do, with a negative errno, -ELIBACC (BusError names the library then), and the functions
// that return a pointer return NULL.
//
// sd_bus_object_vtable_format is a variable: a vtable's start entry points at libsystemd's own
// (csystemd_vtable_new takes its address from fbs_sd_bus_object_vtable_format()).
#include "forwarding.h"

#include <errno.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#define FUNCTIONS(F, V, D)                                                                                  \
    F(int, sd_bus_add_filter, -ELIBACC, sd_bus *, sd_bus_slot **, sd_bus_message_handler_t, void *)         \
    F(int, sd_bus_add_match, -ELIBACC, sd_bus *, sd_bus_slot **, const char *, sd_bus_message_handler_t, void *) \
    F(int, sd_bus_add_match_async, -ELIBACC, sd_bus *, sd_bus_slot **, const char *, sd_bus_message_handler_t, \
      sd_bus_message_handler_t, void *)                                                                     \
    F(int, sd_bus_add_object_vtable, -ELIBACC, sd_bus *, sd_bus_slot **, const char *, const char *,        \
      const sd_bus_vtable *, void *)                                                                        \
    F(int, sd_bus_attach_event, -ELIBACC, sd_bus *, sd_event *, int)                                        \
    F(int, sd_bus_call, -ELIBACC, sd_bus *, sd_bus_message *, uint64_t, sd_bus_error *, sd_bus_message **)  \
    F(int, sd_bus_call_async, -ELIBACC, sd_bus *, sd_bus_slot **, sd_bus_message *, sd_bus_message_handler_t, \
      void *, uint64_t)                                                                                     \
    F(int, sd_bus_creds_get_euid, -ELIBACC, sd_bus_creds *, uid_t *)                                        \
    F(int, sd_bus_creds_get_pid, -ELIBACC, sd_bus_creds *, pid_t *)                                         \
    F(sd_bus_creds *, sd_bus_creds_unref, NULL, sd_bus_creds *)                                             \
    F(int, sd_bus_detach_event, -ELIBACC, sd_bus *)                                                         \
    F(int, sd_bus_emit_properties_changed_strv, -ELIBACC, sd_bus *, const char *, const char *, char **)    \
    V(sd_bus_error_free, sd_bus_error *)                                                                    \
    F(int, sd_bus_error_is_set, 0, const sd_bus_error *)                                                    \
    F(int, sd_bus_error_set, -ELIBACC, sd_bus_error *, const char *, const char *)                          \
    F(int, sd_bus_flush, -ELIBACC, sd_bus *)                                                                \
    F(sd_bus *, sd_bus_flush_close_unref, NULL, sd_bus *)                                                   \
    F(int, sd_bus_get_events, -ELIBACC, sd_bus *)                                                           \
    F(int, sd_bus_get_fd, -ELIBACC, sd_bus *)                                                               \
    F(int, sd_bus_get_name_creds, -ELIBACC, sd_bus *, const char *, uint64_t, sd_bus_creds **)              \
    F(int, sd_bus_get_unique_name, -ELIBACC, sd_bus *, const char **)                                       \
    F(int, sd_bus_message_append_basic, -ELIBACC, sd_bus_message *, char, const void *)                     \
    F(int, sd_bus_message_append_strv, -ELIBACC, sd_bus_message *, char **)                                 \
    F(int, sd_bus_message_close_container, -ELIBACC, sd_bus_message *)                                      \
    F(int, sd_bus_message_enter_container, -ELIBACC, sd_bus_message *, char, const char *)                  \
    F(int, sd_bus_message_exit_container, -ELIBACC, sd_bus_message *)                                       \
    F(int, sd_bus_message_get_cookie, -ELIBACC, sd_bus_message *, uint64_t *)                               \
    F(const char *, sd_bus_message_get_destination, NULL, sd_bus_message *)                                 \
    F(int, sd_bus_message_get_expect_reply, -ELIBACC, sd_bus_message *)                                     \
    F(const sd_bus_error *, sd_bus_message_get_error, NULL, sd_bus_message *)                               \
    F(const char *, sd_bus_message_get_interface, NULL, sd_bus_message *)                                   \
    F(const char *, sd_bus_message_get_member, NULL, sd_bus_message *)                                      \
    F(int, sd_bus_message_get_reply_cookie, -ELIBACC, sd_bus_message *, uint64_t *)                         \
    F(const char *, sd_bus_message_get_sender, NULL, sd_bus_message *)                                      \
    F(int, sd_bus_message_get_type, -ELIBACC, sd_bus_message *, uint8_t *)                                  \
    F(int, sd_bus_message_is_signal, -ELIBACC, sd_bus_message *, const char *, const char *)                \
    F(int, sd_bus_message_new_method_call, -ELIBACC, sd_bus *, sd_bus_message **, const char *, const char *, \
      const char *, const char *)                                                                           \
    F(int, sd_bus_message_new_method_return, -ELIBACC, sd_bus_message *, sd_bus_message **)                 \
    F(int, sd_bus_message_new_signal, -ELIBACC, sd_bus *, sd_bus_message **, const char *, const char *,    \
      const char *)                                                                                         \
    F(int, sd_bus_message_open_container, -ELIBACC, sd_bus_message *, char, const char *)                   \
    F(int, sd_bus_message_peek_type, -ELIBACC, sd_bus_message *, char *, const char **)                     \
    F(int, sd_bus_message_read_basic, -ELIBACC, sd_bus_message *, char, void *)                             \
    F(sd_bus_message *, sd_bus_message_ref, NULL, sd_bus_message *)                                         \
    F(int, sd_bus_message_set_auto_start, -ELIBACC, sd_bus_message *, int)                                  \
    F(int, sd_bus_message_set_destination, -ELIBACC, sd_bus_message *, const char *)                        \
    F(int, sd_bus_message_skip, -ELIBACC, sd_bus_message *, const char *)                                   \
    F(sd_bus_message *, sd_bus_message_unref, NULL, sd_bus_message *)                                       \
    F(int, sd_bus_new, -ELIBACC, sd_bus **)                                                                 \
    D(unsigned, sd_bus_object_vtable_format)                                                                \
    F(int, sd_bus_open_user, -ELIBACC, sd_bus **)                                                           \
    F(int, sd_bus_process, -ELIBACC, sd_bus *, sd_bus_message **)                                           \
    F(int, sd_bus_query_sender_creds, -ELIBACC, sd_bus_message *, uint64_t, sd_bus_creds **)                \
    F(int, sd_bus_release_name, -ELIBACC, sd_bus *, const char *)                                           \
    F(int, sd_bus_reply_method_error, -ELIBACC, sd_bus_message *, const sd_bus_error *)                     \
    F(int, sd_bus_request_name, -ELIBACC, sd_bus *, const char *, uint64_t)                                 \
    F(int, sd_bus_send, -ELIBACC, sd_bus *, sd_bus_message *, uint64_t *)                                   \
    F(int, sd_bus_set_address, -ELIBACC, sd_bus *, const char *)                                            \
    F(int, sd_bus_set_bus_client, -ELIBACC, sd_bus *, int)                                                  \
    F(int, sd_bus_set_description, -ELIBACC, sd_bus *, const char *)                                        \
    F(int, sd_bus_set_exit_on_disconnect, -ELIBACC, sd_bus *, int)                                          \
    F(int, sd_bus_set_monitor, -ELIBACC, sd_bus *, int)                                                     \
    F(sd_bus_slot *, sd_bus_slot_unref, NULL, sd_bus_slot *)                                                \
    F(int, sd_bus_start, -ELIBACC, sd_bus *)                                                                \
    F(sd_bus *, sd_bus_unref, NULL, sd_bus *)                                                               \
    F(int, sd_bus_wait, -ELIBACC, sd_bus *, uint64_t)                                                       \
    F(int, sd_event_add_io, -ELIBACC, sd_event *, sd_event_source **, int, uint32_t, sd_event_io_handler_t, \
      void *)                                                                                               \
    F(int, sd_event_add_signal, -ELIBACC, sd_event *, sd_event_source **, int, sd_event_signal_handler_t,   \
      void *)                                                                                               \
    F(int, sd_event_add_time_relative, -ELIBACC, sd_event *, sd_event_source **, clockid_t, uint64_t,       \
      uint64_t, sd_event_time_handler_t, void *)                                                            \
    F(int, sd_event_exit, -ELIBACC, sd_event *, int)                                                        \
    F(int, sd_event_loop, -ELIBACC, sd_event *)                                                             \
    F(int, sd_event_new, -ELIBACC, sd_event **)                                                             \
    F(int, sd_event_source_set_destroy_callback, -ELIBACC, sd_event_source *, sd_event_destroy_t)           \
    F(sd_event_source *, sd_event_source_unref, NULL, sd_event_source *)                                    \
    F(sd_event *, sd_event_unref, NULL, sd_event *)

FBS_LIBRARY(systemd, "libsystemd.so.0", "libsystemd0", FUNCTIONS)
