// libFuzzer's driver, which -sanitize=fuzzer links in. SwiftPM defines an executable's `main`
// itself (calling MODULE_main), so libFuzzer's own `main` is not used: each target's MODULE_main
// calls FuzzSupport.runFuzzer, which calls this.
#pragma once
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
