// libevdev (Debian libevdev2): vibrator discovery (EvdevNode). Without it libevdev_new_from_fd
// fails with -ELIBACC; the rest take a device only it makes, so they are never reached.
#include "forwarding.h"

#include <errno.h>
#include <libevdev-1.0/libevdev/libevdev.h>

#define FUNCTIONS(F, V, D)                                                                                  \
    F(int, libevdev_new_from_fd, -ELIBACC, int, struct libevdev **)                                         \
    V(libevdev_free, struct libevdev *)                                                                     \
    F(const char *, libevdev_get_name, NULL, const struct libevdev *)                                       \
    F(int, libevdev_has_event_type, 0, const struct libevdev *, unsigned int)                               \
    F(int, libevdev_has_event_code, 0, const struct libevdev *, unsigned int, unsigned int)

FBS_LIBRARY(evdev, "libevdev.so.2", "libevdev2", FUNCTIONS)
