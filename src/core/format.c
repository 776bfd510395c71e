/* The table of tensor formats (include/gpt2c/format.h). */
#include "gpt2c/format.h"
#include "gpt2c/quant.h"

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

int gpt2c_tensor_row_f32(const gpt2c_tensor *t, int64_t r, float *dst) {
    if (r < 0 || r >= t->rows) return -1;
    const size_t n = (size_t)t->cols, base = (size_t)r * n;
    switch (t->fmt) {
    case GPT2C_FMT_F32: memcpy(dst, (const float *)t->data + base, n * sizeof(float)); return 0;
    case GPT2C_FMT_BF16: {
        const uint16_t *s = (const uint16_t *)t->data + base;
        for (size_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)s[i] << 16;
            memcpy(dst + i, &u, sizeof u);
        }
        return 0;
    }
    case GPT2C_FMT_Q8:
    case GPT2C_FMT_Q4:
    case GPT2C_FMT_NF4: gpt2c_quant_unpack_row(t, r, dst); return 0; /* src/quant defines them */
    default: return -1;
    }
}
