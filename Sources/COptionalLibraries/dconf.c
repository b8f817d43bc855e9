// libdconf (Debian libdconf1): dconf's databases read in this process, for feedbackservicesd's
// per-app levels (feedbackd's org.sigxcpu.feedbackd.application), which a gsettings process took
// about 10 ms to read at each app's first feedback. Without it fbs_dconf_read_string returns -2,
// and the levels are read with gsettings as before.
//
// Declared here rather than taken from <dconf.h>: that header needs GLib's, whose configuration
// header lives in a directory of the machine's architecture (/usr/lib/<triplet>/glib-2.0/include)
// that the package manifest cannot name for every machine. These five functions are dconf's and
// GLib's stable ABI (dconf 0.16 and since, GLib 2.24 and since); DConfClient and GVariant stay opaque.
#include "forwarding.h"

#include <pthread.h>
#include <stdio.h>

typedef struct _DConfClient DConfClient;
typedef struct _GVariant GVariant;
typedef struct _GVariantType GVariantType;

DConfClient *dconf_client_new(void);
GVariant *dconf_client_read(DConfClient *, const char *);
int g_variant_is_of_type(GVariant *, const GVariantType *);
const char *g_variant_get_string(GVariant *, unsigned long *);
void g_variant_unref(GVariant *);

#define FUNCTIONS(F, V, D)                                                                                  \
    F(DConfClient *, dconf_client_new, NULL)                                                                \
    F(GVariant *, dconf_client_read, NULL, DConfClient *, const char *)                                    \
    F(int, g_variant_is_of_type, 0, GVariant *, const GVariantType *)                                      \
    F(const char *, g_variant_get_string, NULL, GVariant *, unsigned long *)                                \
    V(g_variant_unref, GVariant *)

// g_variant_is_of_type and the rest are GLib's: dlsym on libdconf's handle finds them in the
// libraries it depends on.
FBS_LIBRARY(dconf, "libdconf.so.1", "libdconf1", FUNCTIONS)

/// The one client, made on the first read and kept: it maps the databases and sees their
/// changes itself at each read (dconf's writer replaces a database and marks the old one stale).
static DConfClient *fbs_dconf_client;
static pthread_once_t fbs_dconf_client_once = PTHREAD_ONCE_INIT;
static void fbs_dconf_make_client(void) { fbs_dconf_client = dconf_client_new(); }

int fbs_dconf_read_string(const char *key, char *buffer, size_t size) {
    if (fbs_loaded() == NULL) return -2;
    pthread_once(&fbs_dconf_client_once, fbs_dconf_make_client);
    if (fbs_dconf_client == NULL) return -2;
    GVariant *value = dconf_client_read(fbs_dconf_client, key);
    if (value == NULL) return 0;
    int result = -1;
    // G_VARIANT_TYPE_STRING: a GVariantType is its type string.
    if (g_variant_is_of_type(value, (const GVariantType *)"s")) {
        const char *text = g_variant_get_string(value, NULL);
        snprintf(buffer, size, "%s", text != NULL ? text : "");
        result = 1;
    }
    g_variant_unref(value);
    return result;
}
