/* Pair words, the packed form of every bf16 GEMM here (gemm_bf16.h): a
 * 32-bit word holds element k (low half) and k+1 (high half) of one row or
 * column, as bf16.  Shared by the pair-panel packing (gemm_bf16.c) and the
 * AMX tile packing (gemm_bf16_amx.c); private to those two (short names). */
#ifndef GPT2C_BF16_PAIR_WORDS_H
#define GPT2C_BF16_PAIR_WORDS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/bf16.h"
#include "kernels/cpu/gemm_bf16.h"

/* element i of p as bf16: p holds bf16 (bf) or fp32 (rounded to nearest even) */
static inline __attribute__((always_inline)) uint32_t elem16(const void *p, size_t i, const int bf) {
    return bf ? ((const uint16_t *)p)[i] : gpt2c_bf16_from_f32(((const float *)p)[i]);
}

/* d[i] (i < m) = the pair word of elements b0+i (low half) and b1+i (high
 * half) of p, or of b0+i alone when !pair (an odd K's last k); kk's vector
 * helpers where it has them (kk may be NULL: the portable loop) */
static inline __attribute__((always_inline)) void pair_words(const gemm_bf16_isa_kernel *kk, uint32_t *restrict d,
                                                             const void *p, size_t b0, size_t b1, int m, int pair,
                                                             const int bf) {
    if (pair && !bf && kk && kk->f32_2rows)
        kk->f32_2rows(d, (const float *)p + b0, (const float *)p + b1, m);
    else if (pair && bf && kk && kk->bf16_2rows)
        kk->bf16_2rows(d, (const uint16_t *)p + b0, (const uint16_t *)p + b1, m);
    else if (pair)
        for (int i = 0; i < m; i++) d[i] = elem16(p, b0 + i, bf) | elem16(p, b1 + i, bf) << 16;
    else
        for (int i = 0; i < m; i++) d[i] = elem16(p, b0 + i, bf);
}

#endif
