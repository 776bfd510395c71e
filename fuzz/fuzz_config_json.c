/* libFuzzer target: a Hugging Face config.json (types, ranges, unsupported keys). */
#include <stdint.h>

#include "fuzz_util.h"
#include "gpt2c/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fuzz_path("config.json");
    fuzz_write(p, data, size);
    gpt2c_hf_config hc;
    (void)gpt2c_hf_config_read(p, &hc);
    return 0;
}
