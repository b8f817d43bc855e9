// The machinery behind every library file of COptionalLibraries (canberra.c, pulse.c, …): from a
// table of the functions FeedbackServices calls in one library, FBS_LIBRARY defines each of them,
// forwarding to the real one in the library, which is dlopen()ed on the first call.
//
// A library file is one table, one line a function, then FBS_LIBRARY:
//
//     #define FUNCTIONS(F, V, D)                                                                  \
//         F(int, pa_context_connect, -1, pa_context *, const char *, pa_context_flags_t,          \
//           const pa_spawn_api *)                                                                 \
//         V(pa_context_unref, pa_context *)
//     FBS_LIBRARY(pulse, "libpulse.so.0", "libpulse0", FUNCTIONS)
//
// F(return type, name, failure, parameter types…): `failure` is what the function returns when the
// library cannot be used: the library's own failure value (NULL, a negative error code, an error
// string), so the caller's error path runs and fbs_optional_library_error() says why. It may use
// FBS_ERROR (that text) and the parameters, named a1, a2, ….
// V(name, parameter types…): a function that returns nothing (and does nothing without the library).
// D(type, name): a variable of the library's, whose address fbs_NAME() returns (NULL without the library).
//
// The definitions repeat the header's prototype, so a table line that differs from it does not
// compile. A variadic function cannot be forwarded (nor called from Swift): call its `…v` or basic
// variant instead.
//
// Each file is its own translation unit: the names FBS_LIBRARY defines (fbs_this, fbs_loaded, …)
// are static, and one library's table never sees another's.
#pragma once

#include "COptionalLibraries.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/// One library loaded on first use, and the addresses of the names its table lists.
typedef struct fbs_library {
    const char *soname;
    const char *package;
    const char *const *names;
    /// Filled by fbs_library_open, in `names`' order; read-only once `once` has run.
    void **addresses;
    size_t count;
    /// fbs_library_open on this library (pthread_once takes no argument, hence one per library).
    void (*open)(void);
    pthread_once_t once;
    /// Whether the library loaded and has every name; written once, by the opener.
    bool usable;
    /// Why it is not usable; written once, by the opener.
    char error[512];
} fbs_library;

/// Opens `library` and looks up every name of its table; on failure leaves it unusable, with the
/// reason in `error`. Run once per library, under its pthread_once.
void fbs_library_open(fbs_library *library);

/// The forwarding definitions are local to the executable: not exported, so a loaded library's
/// own calls to its functions (and its relocations) never bind to them, and the executable's
/// dynamic symbol table does not grow by them.
#define FBS_HIDDEN __attribute__((visibility("hidden")))

/// The library's message, for failure values that are an error string.
#define FBS_ERROR (fbs_this.error)

#define FBS_LIBRARY(id, soname, package, TABLE)                                                       \
    enum { TABLE(FBS_INDEX, FBS_INDEX_VOID, FBS_INDEX_DATA) fbs_count };                              \
    static const char *const fbs_names[] = {TABLE(FBS_NAME, FBS_NAME_VOID, FBS_NAME_DATA)};           \
    static void *fbs_addresses[fbs_count];                                                           \
    static void fbs_open(void);                                                                      \
    static fbs_library fbs_this = {soname, package, fbs_names, fbs_addresses, fbs_count, fbs_open,    \
                                   PTHREAD_ONCE_INIT, false, ""};                                    \
    static void fbs_open(void) { fbs_library_open(&fbs_this); }                                      \
    FBS_HIDDEN fbs_library *const fbs_library_##id = &fbs_this;                                      \
    /* The addresses, or NULL when the library cannot be used; loads it on the first call. */        \
    static inline void *const *fbs_loaded(void) {                                                    \
        pthread_once(&fbs_this.once, fbs_open);                                                      \
        return fbs_this.usable ? fbs_addresses : NULL;                                               \
    }                                                                                                \
    TABLE(FBS_DEFINE, FBS_DEFINE_VOID, FBS_DEFINE_DATA)

#define FBS_INDEX(type, name, failure, ...) fbs_index_##name,
#define FBS_INDEX_VOID(name, ...) fbs_index_##name,
#define FBS_INDEX_DATA(type, name) fbs_index_##name,
#define FBS_NAME(type, name, failure, ...) #name,
#define FBS_NAME_VOID(name, ...) #name,
#define FBS_NAME_DATA(type, name) #name,

// `(__typeof__(&name))` is the header's own type for the function.
#define FBS_DEFINE(type, name, failure, ...)                                                          \
    FBS_HIDDEN type name(FBS_PARAMETERS(__VA_ARGS__)) {                                               \
        void *const *addresses = fbs_loaded();                                                       \
        if (addresses == NULL) return failure;                                                       \
        return ((__typeof__(&name))addresses[fbs_index_##name])(FBS_ARGUMENTS(__VA_ARGS__));         \
    }
#define FBS_DEFINE_VOID(name, ...)                                                                    \
    FBS_HIDDEN void name(FBS_PARAMETERS(__VA_ARGS__)) {                                               \
        void *const *addresses = fbs_loaded();                                                       \
        if (addresses != NULL) ((__typeof__(&name))addresses[fbs_index_##name])(FBS_ARGUMENTS(__VA_ARGS__)); \
    }
#define FBS_DEFINE_DATA(type, name)                                                                   \
    FBS_HIDDEN const type *fbs_##name(void) {                                                         \
        void *const *addresses = fbs_loaded();                                                       \
        return addresses != NULL ? (const type *)addresses[fbs_index_##name] : NULL;                 \
    }

// `t1 a1, t2 a2, …` and `a1, a2, …` for up to 12 parameter types (`void` for none).
#define FBS_COUNT(...) FBS_COUNT_(_ __VA_OPT__(, ) __VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define FBS_COUNT_(_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, count, ...) count
#define FBS_JOIN(a, b) FBS_JOIN_(a, b)
#define FBS_JOIN_(a, b) a##b
#define FBS_PARAMETERS(...) FBS_JOIN(FBS_PARAMETERS_, FBS_COUNT(__VA_ARGS__))(__VA_ARGS__)
#define FBS_PARAMETERS_0() void
#define FBS_PARAMETERS_1(t1) t1 a1
#define FBS_PARAMETERS_2(t1, t2) FBS_PARAMETERS_1(t1), t2 a2
#define FBS_PARAMETERS_3(t1, t2, t3) FBS_PARAMETERS_2(t1, t2), t3 a3
#define FBS_PARAMETERS_4(t1, t2, t3, t4) FBS_PARAMETERS_3(t1, t2, t3), t4 a4
#define FBS_PARAMETERS_5(t1, t2, t3, t4, t5) FBS_PARAMETERS_4(t1, t2, t3, t4), t5 a5
#define FBS_PARAMETERS_6(t1, t2, t3, t4, t5, t6) FBS_PARAMETERS_5(t1, t2, t3, t4, t5), t6 a6
#define FBS_PARAMETERS_7(t1, t2, t3, t4, t5, t6, t7) FBS_PARAMETERS_6(t1, t2, t3, t4, t5, t6), t7 a7
#define FBS_PARAMETERS_8(t1, t2, t3, t4, t5, t6, t7, t8) FBS_PARAMETERS_7(t1, t2, t3, t4, t5, t6, t7), t8 a8
#define FBS_PARAMETERS_9(t1, t2, t3, t4, t5, t6, t7, t8, t9) FBS_PARAMETERS_8(t1, t2, t3, t4, t5, t6, t7, t8), t9 a9
#define FBS_PARAMETERS_10(t1, t2, t3, t4, t5, t6, t7, t8, t9, t10)                                    \
    FBS_PARAMETERS_9(t1, t2, t3, t4, t5, t6, t7, t8, t9), t10 a10
#define FBS_PARAMETERS_11(t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11)                               \
    FBS_PARAMETERS_10(t1, t2, t3, t4, t5, t6, t7, t8, t9, t10), t11 a11
#define FBS_PARAMETERS_12(t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12)                          \
    FBS_PARAMETERS_11(t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11), t12 a12
#define FBS_ARGUMENTS(...) FBS_JOIN(FBS_ARGUMENTS_, FBS_COUNT(__VA_ARGS__))
#define FBS_ARGUMENTS_0
#define FBS_ARGUMENTS_1 a1
#define FBS_ARGUMENTS_2 FBS_ARGUMENTS_1, a2
#define FBS_ARGUMENTS_3 FBS_ARGUMENTS_2, a3
#define FBS_ARGUMENTS_4 FBS_ARGUMENTS_3, a4
#define FBS_ARGUMENTS_5 FBS_ARGUMENTS_4, a5
#define FBS_ARGUMENTS_6 FBS_ARGUMENTS_5, a6
#define FBS_ARGUMENTS_7 FBS_ARGUMENTS_6, a7
#define FBS_ARGUMENTS_8 FBS_ARGUMENTS_7, a8
#define FBS_ARGUMENTS_9 FBS_ARGUMENTS_8, a9
#define FBS_ARGUMENTS_10 FBS_ARGUMENTS_9, a10
#define FBS_ARGUMENTS_11 FBS_ARGUMENTS_10, a11
#define FBS_ARGUMENTS_12 FBS_ARGUMENTS_11, a12
