/* libFuzzer target: the full GPT-2 load from a safetensors file -- config from
 * the tensors and metadata, size checks before allocation, every tensor slice
 * (shape, dtype, Conv1D transpose), the AdamW state, the non-finite check. */
#include <stdint.h>

#include "fuzz_util.h"
#include "gpt2c/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fuzz_path("model.safetensors");
    fuzz_write(p, data, size);
    gpt2c_model *m = NULL;
    if (gpt2c_model_load(p, &m) == GPT2C_OK) gpt2c_model_free(m);
    return 0;
}
