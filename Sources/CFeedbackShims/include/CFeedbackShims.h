// What Swift cannot import from the C headers: function-like macros. Every symbol is prefixed `fbs_`.
#pragma once

#include <sys/stat.h>

/// `S_ISREG`: whether a `stat` mode is a regular file.
static inline int fbs_s_isreg(mode_t mode) { return S_ISREG(mode); }
/// `S_ISDIR`: whether a `stat` mode is a directory.
static inline int fbs_s_isdir(mode_t mode) { return S_ISDIR(mode); }
