/* An in-register 16 x 16 fp32 transpose (AVX-512F), shared by the fp32
 * GEMM's packing of a transposed B, the bf16 attention's transposed stores
 * and the KV cache's key writes (kv_write_avx512.c). */
#ifndef GPT2C_CPU_TRANSPOSE16_AVX512_H
#define GPT2C_CPU_TRANSPOSE16_AVX512_H

#include <immintrin.h>

/* In-register 16 x 16 transpose: r[j] holds 16 consecutive k of column j;
 * writes dst[k*ldd + j].  Two unpack stages interleave 4-row groups inside
 * 128-bit lanes, two 128-bit-lane shuffles finish the job. */
static inline void transpose16(float *dst, long ldd, const __m512 r[16]) {
    __m512 u[16];
    for (int g = 0; g < 4; g++) {
        const __m512 t0 = _mm512_unpacklo_ps(r[4 * g], r[4 * g + 1]), t1 = _mm512_unpackhi_ps(r[4 * g], r[4 * g + 1]);
        const __m512 t2 = _mm512_unpacklo_ps(r[4 * g + 2], r[4 * g + 3]), t3 = _mm512_unpackhi_ps(r[4 * g + 2], r[4 * g + 3]);
        u[4 * g + 0] = _mm512_shuffle_ps(t0, t2, 0x44); /* element 0 of each lane, rows 4g..4g+3 */
        u[4 * g + 1] = _mm512_shuffle_ps(t0, t2, 0xEE);
        u[4 * g + 2] = _mm512_shuffle_ps(t1, t3, 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t1, t3, 0xEE);
    }
    for (int e = 0; e < 4; e++) {
        const __m512 a = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x88), b = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xDD);
        const __m512 c = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x88), d = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xDD);
        _mm512_storeu_ps(dst + (e + 0) * ldd, _mm512_shuffle_f32x4(a, c, 0x88));
        _mm512_storeu_ps(dst + (e + 8) * ldd, _mm512_shuffle_f32x4(a, c, 0xDD));
        _mm512_storeu_ps(dst + (e + 4) * ldd, _mm512_shuffle_f32x4(b, d, 0x88));
        _mm512_storeu_ps(dst + (e + 12) * ldd, _mm512_shuffle_f32x4(b, d, 0xDD));
    }
}

#endif
