/* FMA peak loop, AVX2: 12 independent chains of 8-lane FMAs. */
#include <immintrin.h>

#include "kernels/cpu/peak.h"

double cpu_fma_loop_avx2(long iters) {
    __m256 a[12];
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) a[i] = _mm256_fmadd_ps(a[i], x, y);
    __m256 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, a[i]);
    float f[8];
    _mm256_storeu_ps(f, s);
    return (double)(f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7]);
}
