/* e^x on 16 floats (AVX-512), shared by the inference kernels
 * (cpu_infer_avx512.c, flash_infer_avx512.c).  Include only from files
 * compiled for AVX-512 (*_avx512.c). */
#ifndef GPT2C_AVX512_EXP_H
#define GPT2C_AVX512_EXP_H

#include <immintrin.h>

/* e^x, |rel err| ~ 2e-7: x = n ln2 + r (Cody-Waite, |r| <= ln2/2), e^r by a
 * degree-7 Taylor polynomial, times 2^n with scalef.  x clamped to [-88, 88]. */
static inline __attribute__((always_inline)) __m512 gpt2c_exp512(__m512 x) {
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-88.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

#endif
