// The shim is header-only so far; this file gives SwiftPM a C translation unit to build.
#include "CFeedbackShims.h"
