/* The table of tensor formats (include/gpt2c/format.h). */
#include "gpt2c/format.h"

#include <stdint.h>
#include <string.h>

static const gpt2c_format_info formats[GPT2C_FMT_COUNT] = {
#define GPT2C_FORMAT_ROW(e, name, block, bytes) {name, block, bytes},
    GPT2C_FORMAT_LIST(GPT2C_FORMAT_ROW)
#undef GPT2C_FORMAT_ROW
};

const gpt2c_format_info *gpt2c_format_get(gpt2c_format f) {
    return (unsigned)f < GPT2C_FMT_COUNT ? &formats[f] : NULL;
}

int gpt2c_format_parse(const char *s, gpt2c_format *out) {
    if (!s) return -1;
    if (strcmp(s, "fp32") == 0) s = "f32";
    for (int i = 0; i < GPT2C_FMT_COUNT; i++) {
        if (strcmp(s, formats[i].name) == 0) {
            *out = (gpt2c_format)i;
            return 0;
        }
    }
    return -1;
}

int gpt2c_format_is_quantized(gpt2c_format f) {
    const gpt2c_format_info *fi = gpt2c_format_get(f);
    return fi && fi->block > 1;
}

size_t gpt2c_format_bytes(gpt2c_format f, size_t n) {
    const gpt2c_format_info *fi = gpt2c_format_get(f);
    if (!fi || n % fi->block) return 0;
    size_t blocks = n / fi->block;
    if (blocks > SIZE_MAX / fi->block_bytes) return 0;
    return blocks * fi->block_bytes;
}
