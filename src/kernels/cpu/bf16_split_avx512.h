/* The two bf16 of a pair word (gemm_bf16.h: k even in the low half, k odd
 * in the high half) as fp32 vectors: a bf16 is the top half of an fp32, so
 * the high one is the word with its low 16 bits cleared and the low one is
 * the word shifted up by 16.  Used where the pair arithmetic runs on FMAs
 * (CPUs without AVX512_BF16).  For files compiled with AVX-512 only. */
#ifndef GPT2C_CPU_BF16_SPLIT_AVX512_H
#define GPT2C_CPU_BF16_SPLIT_AVX512_H

#include <immintrin.h>

static inline __attribute__((always_inline)) __m512 gpt2c_bf16_hi_ps(__m512i w) {
    return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32((int)0xffff0000u)));
}
static inline __attribute__((always_inline)) __m512 gpt2c_bf16_lo_ps(__m512i w) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

#endif
