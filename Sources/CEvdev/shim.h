// libevdev: device names and capability bits for vibrator discovery.
#pragma once
#include <libevdev-1.0/libevdev/libevdev.h>
