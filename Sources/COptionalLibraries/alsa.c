// libasound (Debian libasound2): ALSAOutput, for machines with no sound server. Without it an ALSA
// call fails as a missing device would, with -ELIBACC, and snd_strerror gives the reason; the
// calls that return nothing or a pointer do nothing / return NULL.
#include "forwarding.h"

#include <alsa/asoundlib.h>
#include <errno.h>

#define FUNCTIONS(F, V, D)                                                                                  \
    F(int, snd_card_get_longname, -ELIBACC, int, char **)                                                   \
    F(int, snd_card_get_name, -ELIBACC, int, char **)                                                       \
    F(int, snd_card_next, -ELIBACC, int *)                                                                  \
    F(int, snd_device_name_free_hint, -ELIBACC, void **)                                                    \
    F(char *, snd_device_name_get_hint, NULL, const void *, const char *)                                   \
    F(int, snd_device_name_hint, -ELIBACC, int, const char *, void ***)                                     \
    F(int, snd_output_buffer_open, -ELIBACC, snd_output_t **)                                               \
    F(size_t, snd_output_buffer_string, 0, snd_output_t *, char **)                                         \
    F(int, snd_output_close, -ELIBACC, snd_output_t *)                                                      \
    F(snd_pcm_sframes_t, snd_pcm_avail_update, -ELIBACC, snd_pcm_t *)                                       \
    F(int, snd_pcm_close, -ELIBACC, snd_pcm_t *)                                                            \
    F(int, snd_pcm_delay, -ELIBACC, snd_pcm_t *, snd_pcm_sframes_t *)                                       \
    F(int, snd_pcm_drop, -ELIBACC, snd_pcm_t *)                                                             \
    F(int, snd_pcm_dump, -ELIBACC, snd_pcm_t *, snd_output_t *)                                             \
    F(int, snd_pcm_hw_params, -ELIBACC, snd_pcm_t *, snd_pcm_hw_params_t *)                                 \
    F(int, snd_pcm_hw_params_any, -ELIBACC, snd_pcm_t *, snd_pcm_hw_params_t *)                             \
    V(snd_pcm_hw_params_free, snd_pcm_hw_params_t *)                                                        \
    F(int, snd_pcm_hw_params_get_buffer_size, -ELIBACC, const snd_pcm_hw_params_t *, snd_pcm_uframes_t *)   \
    F(int, snd_pcm_hw_params_get_period_size, -ELIBACC, const snd_pcm_hw_params_t *, snd_pcm_uframes_t *,   \
      int *)                                                                                                \
    F(int, snd_pcm_hw_params_malloc, -ELIBACC, snd_pcm_hw_params_t **)                                      \
    F(int, snd_pcm_hw_params_set_access, -ELIBACC, snd_pcm_t *, snd_pcm_hw_params_t *, snd_pcm_access_t)    \
    F(int, snd_pcm_hw_params_set_buffer_size_near, -ELIBACC, snd_pcm_t *, snd_pcm_hw_params_t *,            \
      snd_pcm_uframes_t *)                                                                                  \
    F(int, snd_pcm_hw_params_set_channels, -ELIBACC, snd_pcm_t *, snd_pcm_hw_params_t *, unsigned int)      \
    F(int, snd_pcm_hw_params_set_format, -ELIBACC, snd_pcm_t *, snd_pcm_hw_params_t *, snd_pcm_format_t)    \
    F(int, snd_pcm_hw_params_set_period_size_near, -ELIBACC, snd_pcm_t *, snd_pcm_hw_params_t *,            \
      snd_pcm_uframes_t *, int *)                                                                           \
    F(int, snd_pcm_hw_params_set_rate, -ELIBACC, snd_pcm_t *, snd_pcm_hw_params_t *, unsigned int, int)     \
    F(int, snd_pcm_hw_params_test_format, -ELIBACC, snd_pcm_t *, snd_pcm_hw_params_t *, snd_pcm_format_t)   \
    F(int, snd_pcm_open, -ELIBACC, snd_pcm_t **, const char *, snd_pcm_stream_t, int)                       \
    F(int, snd_pcm_poll_descriptors, -ELIBACC, snd_pcm_t *, struct pollfd *, unsigned int)                  \
    F(int, snd_pcm_poll_descriptors_revents, -ELIBACC, snd_pcm_t *, struct pollfd *, unsigned int,          \
      unsigned short *)                                                                                     \
    F(int, snd_pcm_recover, -ELIBACC, snd_pcm_t *, int, int)                                                \
    F(snd_pcm_sframes_t, snd_pcm_rewind, -ELIBACC, snd_pcm_t *, snd_pcm_uframes_t)                          \
    F(snd_pcm_sframes_t, snd_pcm_rewindable, -ELIBACC, snd_pcm_t *)                                         \
    F(int, snd_pcm_sw_params, -ELIBACC, snd_pcm_t *, snd_pcm_sw_params_t *)                                 \
    F(int, snd_pcm_sw_params_current, -ELIBACC, snd_pcm_t *, snd_pcm_sw_params_t *)                         \
    V(snd_pcm_sw_params_free, snd_pcm_sw_params_t *)                                                        \
    F(int, snd_pcm_sw_params_malloc, -ELIBACC, snd_pcm_sw_params_t **)                                      \
    F(int, snd_pcm_sw_params_set_avail_min, -ELIBACC, snd_pcm_t *, snd_pcm_sw_params_t *, snd_pcm_uframes_t) \
    F(int, snd_pcm_sw_params_set_start_threshold, -ELIBACC, snd_pcm_t *, snd_pcm_sw_params_t *,             \
      snd_pcm_uframes_t)                                                                                    \
    F(snd_pcm_sframes_t, snd_pcm_writei, -ELIBACC, snd_pcm_t *, const void *, snd_pcm_uframes_t)            \
    F(snd_pcm_type_t, snd_pcm_type, SND_PCM_TYPE_HW, snd_pcm_t *)                                           \
    F(const char *, snd_strerror, FBS_ERROR, int)                                                           \
    F(int, snd_lib_error_set_handler, -ELIBACC, snd_lib_error_handler_t)

FBS_LIBRARY(alsa, "libasound.so.2", "libasound2", FUNCTIONS)
