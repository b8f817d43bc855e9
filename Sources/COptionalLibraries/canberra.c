// libcanberra (Debian libcanberra0): CanberraOutput. Without it every call fails with
// CA_ERROR_NOTAVAILABLE, and ca_strerror gives the reason.
#include "forwarding.h"

#include <canberra.h>

#define FUNCTIONS(F, V, D)                                                                                  \
    F(int, ca_proplist_create, CA_ERROR_NOTAVAILABLE, ca_proplist **)                                       \
    F(int, ca_proplist_destroy, CA_ERROR_NOTAVAILABLE, ca_proplist *)                                       \
    F(int, ca_proplist_sets, CA_ERROR_NOTAVAILABLE, ca_proplist *, const char *, const char *)              \
    F(int, ca_context_create, CA_ERROR_NOTAVAILABLE, ca_context **)                                         \
    F(int, ca_context_set_driver, CA_ERROR_NOTAVAILABLE, ca_context *, const char *)                        \
    F(int, ca_context_open, CA_ERROR_NOTAVAILABLE, ca_context *)                                            \
    F(int, ca_context_destroy, CA_ERROR_NOTAVAILABLE, ca_context *)                                         \
    F(int, ca_context_change_props_full, CA_ERROR_NOTAVAILABLE, ca_context *, ca_proplist *)                \
    F(int, ca_context_play_full, CA_ERROR_NOTAVAILABLE, ca_context *, uint32_t, ca_proplist *,              \
      ca_finish_callback_t, void *)                                                                         \
    F(int, ca_context_cancel, CA_ERROR_NOTAVAILABLE, ca_context *, uint32_t)                                \
    F(const char *, ca_strerror, FBS_ERROR, int)

FBS_LIBRARY(canberra, "libcanberra.so.0", "libcanberra0", FUNCTIONS)
