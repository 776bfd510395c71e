/* libFuzzer target: the safetensors header parser on arbitrary bytes.  When a
 * file parses, every tensor it hands out is read back in full (ASan catches
 * any byte outside the input), and the GPT-2 config inference runs on it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpt2c_st_file *f = NULL;
    if (gpt2c_st_parse("fuzz.safetensors", data, size, &f) != GPT2C_OK) return 0;
    for (int i = 0; i < gpt2c_st_count(f); i++) {
        const gpt2c_st_tensor *t = gpt2c_st_get(f, i);
        if (gpt2c_st_find(f, t->name) != t) abort(); /* names are unique: find must return this one */
        size_t n = t->nbytes / gpt2c_dtype_size(t->dtype);
        float *dst = malloc((n ? n : 1) * sizeof(float));
        if (dst && gpt2c_st_read_f32(f, t->name, dst, n) != GPT2C_OK) abort();
        free(dst);
    }
    for (int i = 0; i < gpt2c_st_meta_count(f); i++) {
        const char *v = NULL;
        const char *k = gpt2c_st_meta_get(f, i, &v);
        if (!k || gpt2c_st_meta(f, k) != v) abort();
    }
    gpt2c_config cfg;
    const char *prefix, *heads_from;
    /* a directory that does not exist: no config.json is ever read */
    (void)gpt2c_st_gpt2_config(f, "/nonexistent-gpt2c-fuzz/model.safetensors", &cfg, &prefix, &heads_from);
    gpt2c_st_close(f);
    return 0;
}
