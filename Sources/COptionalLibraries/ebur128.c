// libebur128 (Debian libebur128-1): loudness measurement for registered sounds (Loudness).
// Without it ebur128_init returns NULL and the rest fail with EBUR128_ERROR_NOMEM.
#include "forwarding.h"

#include <ebur128.h>

#define FUNCTIONS(F, V, D)                                                                                  \
    F(ebur128_state *, ebur128_init, NULL, unsigned int, unsigned long, int)                                \
    V(ebur128_destroy, ebur128_state **)                                                                    \
    F(int, ebur128_set_channel, EBUR128_ERROR_NOMEM, ebur128_state *, unsigned int, int)                    \
    F(int, ebur128_add_frames_float, EBUR128_ERROR_NOMEM, ebur128_state *, const float *, size_t)           \
    F(int, ebur128_loudness_global, EBUR128_ERROR_NOMEM, ebur128_state *, double *)

FBS_LIBRARY(ebur128, "libebur128.so.1", "libebur128-1", FUNCTIONS)
