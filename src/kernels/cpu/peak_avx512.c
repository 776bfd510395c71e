/* FMA peak loop, AVX-512: 12 independent chains of 16-lane FMAs (>= latency x pipes). */
#include <immintrin.h>

#include "kernels/cpu/peak.h"

double cpu_fma_loop_avx512(long iters) {
    __m512 a[12];
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) a[i] = _mm512_fmadd_ps(a[i], x, y);
    __m512 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);
    return (double)_mm512_reduce_add_ps(s);
}
