/* bf16 input rows of a prefill matmul (bf16_rows.h). */
#include "kernels/bf16_rows.h"

#include <stdint.h>

#include "kernels/bf16.h"

size_t gpt2c_bf16_in_row_bytes(int form, int IC) {
    return form == GPT2C_BF16_IN_F32_SWAPPED ? sizeof(float) * (size_t)(IC + (IC & 1)) : sizeof(uint16_t) * (size_t)IC;
}

void gpt2c_bf16_in_rows(void *dst, const float *src, size_t rows, int IC, int form) {
    if (form != GPT2C_BF16_IN_F32_SWAPPED) {
        uint16_t *restrict d = dst;
        const size_t count = rows * (size_t)IC;
        for (size_t i = 0; i < count; i++) d[i] = gpt2c_bf16_from_f32(src[i]);
        return;
    }
    const int ld = IC + (IC & 1), half = IC / 2;
    for (size_t r = 0; r < rows; r++) {
        uint32_t *restrict d = (uint32_t *)dst + r * (size_t)ld;
        const float *restrict s = src + r * (size_t)IC;
        for (int p = 0; p < half; p++) { /* the bf16 bits in the high half are the fp32 value */
            d[2 * p] = gpt2c_bf16_f32_bits(s[2 * p + 1]);
            d[2 * p + 1] = gpt2c_bf16_f32_bits(s[2 * p]);
        }
        if (IC & 1) d[IC - 1] = 0, d[IC] = gpt2c_bf16_f32_bits(s[IC - 1]);
    }
}
