/* AVX-512 peak loops.  16 independent accumulators: FMA latency (4 cycles)
 * times 2 FMA pipes needs at least 8 in flight; 16 leaves margin and fits in
 * the 32 zmm registers. */
#include <immintrin.h>

#include "profile/peak_kernels.h"

#define NACC 16
const double gpt2c_peak_fma_flops_per_iter_avx512 = NACC * 16 * 2;

float gpt2c_peak_fma_avx512(long iters) {
    __m512 acc[NACC];
    for (int i = 0; i < NACC; i++) acc[i] = _mm512_set1_ps(0.001f * (float)i);
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
        for (int i = 0; i < NACC; i++) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
    __m512 s = acc[0];
    for (int i = 1; i < NACC; i++) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

float gpt2c_peak_sum_avx512(const float *x, size_t n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 64) {
        s0 = _mm512_add_ps(s0, _mm512_load_ps(x + i));
        s1 = _mm512_add_ps(s1, _mm512_load_ps(x + i + 16));
        s2 = _mm512_add_ps(s2, _mm512_load_ps(x + i + 32));
        s3 = _mm512_add_ps(s3, _mm512_load_ps(x + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

/* vdpbf16ps: each does 16 x 2 multiply-adds (64 FLOPs per zmm). */
const double gpt2c_peak_dpbf16_flops_per_iter_avx512 = NACC * 16 * 2 * 2;

float gpt2c_peak_dpbf16_avx512(long iters) {
    __m512 acc[NACC];
    for (int i = 0; i < NACC; i++) acc[i] = _mm512_set1_ps(0.001f * (float)i);
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f7f3f7f), b = (__m512bh)_mm512_set1_epi32(0x33d633d6);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
        for (int i = 0; i < NACC; i++) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    }
    __m512 s = acc[0];
    for (int i = 1; i < NACC; i++) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

/* dst = s * src and dst = a + s * b, n a multiple of 64, 64-byte aligned:
 * ordinary stores, as the ops write (no streaming stores). */
void gpt2c_peak_scale_avx512(float *dst, const float *src, float s, size_t n) {
    const __m512 vs = _mm512_set1_ps(s);
    for (size_t i = 0; i < n; i += 64)
        for (int v = 0; v < 4; v++) _mm512_store_ps(dst + i + 16 * v, _mm512_mul_ps(vs, _mm512_load_ps(src + i + 16 * v)));
}

/* x = s * x in place: every line read is written back, so no hidden
 * write-allocate read (the pattern of AdamW and the in-place residuals). */
void gpt2c_peak_update_avx512(float *x, float s, size_t n) {
    const __m512 vs = _mm512_set1_ps(s);
    for (size_t i = 0; i < n; i += 64)
        for (int v = 0; v < 4; v++) _mm512_store_ps(x + i + 16 * v, _mm512_mul_ps(vs, _mm512_load_ps(x + i + 16 * v)));
}

void gpt2c_peak_triad_avx512(float *dst, const float *a, const float *b, float s, size_t n) {
    const __m512 vs = _mm512_set1_ps(s);
    for (size_t i = 0; i < n; i += 64)
        for (int v = 0; v < 4; v++)
            _mm512_store_ps(dst + i + 16 * v, _mm512_fmadd_ps(vs, _mm512_load_ps(b + i + 16 * v), _mm512_load_ps(a + i + 16 * v)));
}
