// The benchmark's reference: the mixer's inner work (sum mono voices into interleaved stereo
// with per-voice gains) as a plain C loop, compiled with -O3.
#pragma once
#include <stddef.h>

/// Adds `voices` mono sources of `frames` samples each into `output` (interleaved stereo),
/// each scaled by its left and right gain.
void fbref_mix(const float *const *sources, const float *left_gains, const float *right_gains, size_t voices,
               size_t frames, float *output);
