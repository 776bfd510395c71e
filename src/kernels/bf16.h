/* bfloat16 <-> fp32, the one rounding every bf16 path uses.
 *
 * bf16 is the top half of an fp32 (sign, 8-bit exponent, 7-bit mantissa).
 * fp32 -> bf16 rounds to nearest, ties to even (as vcvtneps2bf16 does); a NaN
 * stays a (quiet) NaN instead of rounding into infinity.  bf16 -> fp32 is
 * exact. */
#ifndef GPT2C_KERNELS_BF16_H
#define GPT2C_KERNELS_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Branch-free (a select, not a jump), so loops calling it vectorise. */
static inline uint16_t gpt2c_bf16_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; /* round half to even */
    const uint32_t q = (u >> 16) | 0x40u;                        /* NaN: keep it, quiet */
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? q : r);
}

static inline float gpt2c_bf16_to_f32(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The fp32 bit pattern of f rounded to bf16: the bf16 in the high half, zeros
 * below (unsigned, so shifting a bf16 with its sign bit set is defined). */
static inline uint32_t gpt2c_bf16_f32_bits(float f) { return (uint32_t)gpt2c_bf16_from_f32(f) << 16; }

/* fp32 rounded through bf16 (the value a bf16 GEMM multiplies by). */
static inline float gpt2c_bf16_round(float f) { return gpt2c_bf16_to_f32(gpt2c_bf16_from_f32(f)); }

/* dst (rows, cols) = src (rows of cols bf16, ld apart) widened to fp32 (exact) */
static inline void gpt2c_bf16_widen_rows(float *dst, const uint16_t *src, size_t rows, size_t cols, size_t ld) {
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) dst[r * cols + c] = gpt2c_bf16_to_f32(src[r * ld + c]);
}

#endif
