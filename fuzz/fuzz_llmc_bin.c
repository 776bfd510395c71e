/* libFuzzer target: the llm.c .bin model loader (header, sizes against the
 * file length, fp32/bf16 payload, non-finite check) on a file of arbitrary bytes. */
#include <stdint.h>

#include "fuzz_util.h"
#include "gpt2c/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fuzz_path("model.bin");
    fuzz_write(p, data, size);
    gpt2c_model *m = NULL;
    if (gpt2c_model_load(p, &m) == GPT2C_OK) gpt2c_model_free(m);
    return 0;
}
