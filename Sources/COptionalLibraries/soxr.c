// libsoxr (Debian libsoxr0): resampling (Resampler, StreamFeeder). Without it the calls that
// report an error return the reason as their soxr_error_t; the spec constructors, which only fill
// structures, return zeroes (the call that takes them fails).
#include "forwarding.h"

#include <soxr.h>

/// soxr_create's failure: NULL, with the reason in *error.
static soxr_t soxr_create_failed(soxr_error_t *error);

#define FUNCTIONS(F, V, D)                                                                                  \
    F(soxr_t, soxr_create, soxr_create_failed(a4), double, double, unsigned, soxr_error_t *,                \
      soxr_io_spec_t const *, soxr_quality_spec_t const *, soxr_runtime_spec_t const *)                     \
    F(soxr_error_t, soxr_process, FBS_ERROR, soxr_t, soxr_in_t, size_t, size_t *, soxr_out_t, size_t,       \
      size_t *)                                                                                             \
    V(soxr_delete, soxr_t)                                                                                  \
    F(soxr_error_t, soxr_oneshot, FBS_ERROR, double, double, unsigned, soxr_in_t, size_t, size_t *,         \
      soxr_out_t, size_t, size_t *, soxr_io_spec_t const *, soxr_quality_spec_t const *,                    \
      soxr_runtime_spec_t const *)                                                                          \
    F(soxr_io_spec_t, soxr_io_spec, (soxr_io_spec_t){0}, soxr_datatype_t, soxr_datatype_t)                  \
    F(soxr_quality_spec_t, soxr_quality_spec, (soxr_quality_spec_t){0}, unsigned long, unsigned long)       \
    F(soxr_runtime_spec_t, soxr_runtime_spec, (soxr_runtime_spec_t){0}, unsigned)

FBS_LIBRARY(soxr, "libsoxr.so.0", "libsoxr0", FUNCTIONS)

static soxr_t soxr_create_failed(soxr_error_t *error) {
    if (error != NULL) *error = FBS_ERROR;
    return NULL;
}
