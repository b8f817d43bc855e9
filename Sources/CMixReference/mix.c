#include "CMixReference.h"

#include <string.h>

void fbref_mix(const float *const *sources, const float *left_gains, const float *right_gains, size_t voices,
               size_t frames, float *output) {
    memset(output, 0, frames * 2 * sizeof(float));
    for (size_t v = 0; v < voices; v++) {
        const float *source = sources[v];
        const float l = left_gains[v], r = right_gains[v];
        for (size_t i = 0; i < frames; i++) {
            output[2 * i] += source[i] * l;
            output[2 * i + 1] += source[i] * r;
        }
    }
}
