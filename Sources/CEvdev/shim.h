// libevdev: device names and capability bits for vibrator discovery.
#pragma once
#include <libevdev/libevdev.h>
