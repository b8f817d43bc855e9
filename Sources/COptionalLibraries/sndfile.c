// libsndfile (Debian libsndfile1): reading and writing sound files. Without it sf_open and
// sf_open_fd return NULL (SoundFileReader then reports fbs_optional_library_error), sf_error
// SF_ERR_SYSTEM, sf_strerror the reason; reads and writes move no frames.
#include "forwarding.h"

#include <sndfile.h>

#define FUNCTIONS(F, V, D)                                                                                  \
    F(int, sf_close, SF_ERR_SYSTEM, SNDFILE *)                                                              \
    F(int, sf_command, 0, SNDFILE *, int, void *, int)                                                      \
    F(int, sf_error, SF_ERR_SYSTEM, SNDFILE *)                                                              \
    F(int, sf_format_check, 0, const SF_INFO *)                                                             \
    F(SNDFILE *, sf_open, NULL, const char *, int, SF_INFO *)                                               \
    F(SNDFILE *, sf_open_fd, NULL, int, int, SF_INFO *, int)                                                \
    F(sf_count_t, sf_readf_float, 0, SNDFILE *, float *, sf_count_t)                                        \
    F(sf_count_t, sf_readf_int, 0, SNDFILE *, int *, sf_count_t)                                            \
    F(sf_count_t, sf_seek, -1, SNDFILE *, sf_count_t, int)                                                  \
    F(const char *, sf_strerror, FBS_ERROR, SNDFILE *)                                                      \
    F(sf_count_t, sf_writef_float, 0, SNDFILE *, const float *, sf_count_t)                                 \
    F(sf_count_t, sf_writef_int, 0, SNDFILE *, const int *, sf_count_t)

FBS_LIBRARY(sndfile, "libsndfile.so.1", "libsndfile1", FUNCTIONS)
