// libFuzzer's driver, which -sanitize=fuzzer links in. The fuzz targets call it from the `main`
// SwiftPM gives an executable (MODULE_main), since SwiftPM, not libFuzzer, defines `main` there.
#pragma once
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
