/* bf16 <-> fp32 on AVX-512 vectors.  For files compiled with AVX-512 only.
 *
 * The two bf16 of a pair word (gemm_bf16.h: k even in the low half, k odd
 * in the high half) as fp32 vectors: a bf16 is the top half of an fp32, so
 * the high one is the word with its low 16 bits cleared and the low one is
 * the word shifted up by 16.  Used where the pair arithmetic runs on FMAs
 * (CPUs without AVX512_BF16).
 *
 * And the other way, fp32 rounded to bf16: kernels/bf16.h's
 * gpt2c_bf16_from_f32 lane by lane in integers, so bit-identical to it for
 * every input (NaN, infinities, denormals: vcvtneps2bf16 would flush the
 * denormals, so it is not used). */
#ifndef GPT2C_CPU_BF16_SPLIT_AVX512_H
#define GPT2C_CPU_BF16_SPLIT_AVX512_H

#include <immintrin.h>

static inline __attribute__((always_inline)) __m512 gpt2c_bf16_hi_ps(__m512i w) {
    return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32((int)0xffff0000u)));
}
static inline __attribute__((always_inline)) __m512 gpt2c_bf16_lo_ps(__m512i w) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

/* 16 fp32 (as their bits) rounded to bf16 (nearest even; a NaN kept, made quiet), each left in its lane's
 * high half (the low half is not zero: shift it out, or mask it, to use it) */
static inline __attribute__((always_inline)) __m512i gpt2c_bf16_round_hi(__m512i u) {
    const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff);
    const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x400000)); /* NaN: (u >> 16) | 0x40, quiet */
}

/* 16 floats -> 16 packed bf16 words (gpt2c_bf16_round_hi) */
static inline __attribute__((always_inline)) __m256i gpt2c_bf16x16(__m512 x) {
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(gpt2c_bf16_round_hi(_mm512_castps_si512(x)), 16));
}

#endif
