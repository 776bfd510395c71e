/* AVX2 + FMA peak loops: 12 independent accumulators (of 16 ymm registers). */
#include <immintrin.h>

#include "profile/peak_kernels.h"

#define NACC 12
const double gpt2c_peak_fma_flops_per_iter_avx2 = NACC * 8 * 2;

static float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

float gpt2c_peak_fma_avx2(long iters) {
    __m256 acc[NACC];
    for (int i = 0; i < NACC; i++) acc[i] = _mm256_set1_ps(0.001f * (float)i);
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 12
        for (int i = 0; i < NACC; i++) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    }
    __m256 s = acc[0];
    for (int i = 1; i < NACC; i++) s = _mm256_add_ps(s, acc[i]);
    return hsum256(s);
}

float gpt2c_peak_sum_avx2(const float *x, size_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 64) {
        s0 = _mm256_add_ps(s0, _mm256_load_ps(x + i));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(x + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_load_ps(x + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_load_ps(x + i + 24));
        s0 = _mm256_add_ps(s0, _mm256_load_ps(x + i + 32));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(x + i + 40));
        s2 = _mm256_add_ps(s2, _mm256_load_ps(x + i + 48));
        s3 = _mm256_add_ps(s3, _mm256_load_ps(x + i + 56));
    }
    return hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

/* dst = s * src and dst = a + s * b (see peak_avx512.c) */
void gpt2c_peak_scale_avx2(float *dst, const float *src, float s, size_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    for (size_t i = 0; i < n; i += 64)
        for (int v = 0; v < 8; v++) _mm256_store_ps(dst + i + 8 * v, _mm256_mul_ps(vs, _mm256_load_ps(src + i + 8 * v)));
}

void gpt2c_peak_update_avx2(float *x, float s, size_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    for (size_t i = 0; i < n; i += 64)
        for (int v = 0; v < 8; v++) _mm256_store_ps(x + i + 8 * v, _mm256_mul_ps(vs, _mm256_load_ps(x + i + 8 * v)));
}

void gpt2c_peak_triad_avx2(float *dst, const float *a, const float *b, float s, size_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    for (size_t i = 0; i < n; i += 64)
        for (int v = 0; v < 8; v++)
            _mm256_store_ps(dst + i + 8 * v, _mm256_fmadd_ps(vs, _mm256_load_ps(b + i + 8 * v), _mm256_load_ps(a + i + 8 * v)));
}
