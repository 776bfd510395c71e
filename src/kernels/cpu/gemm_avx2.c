/* AVX2+FMA SGEMM micro-kernel: a 6 x 16 tile of C in 12 ymm accumulators. */
#include <immintrin.h>

#include "kernels/cpu/gemm.h"

#define MR 6
#define NR 16

static inline __attribute__((always_inline)) void kern_body(int K, const float *a, long rsa, long csa, const float *b,
                                                            long ldb, float *C, long ldc, int load_c, const float *bias,
                                                            const int a_rows) {
    __m256 c[MR][2];
    #pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
    #pragma GCC unroll 2
        for (int v = 0; v < 2; v++)
            c[r][v] = load_c ? _mm256_loadu_ps(C + r * ldc + 8 * v)
                             : (bias ? _mm256_loadu_ps(bias + 8 * v) : _mm256_setzero_ps());
    for (int k = 0; k < K; k++) {
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        _mm_prefetch((const char *)(b + 8 * ldb), _MM_HINT_T0);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            const __m256 ar = _mm256_broadcast_ss(a_rows ? a + r * rsa + k : a + (size_t)k * csa + r);
            c[r][0] = _mm256_fmadd_ps(ar, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(ar, b1, c[r][1]);
        }
        b += ldb;
    }
    #pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
    #pragma GCC unroll 2
        for (int v = 0; v < 2; v++) _mm256_storeu_ps(C + r * ldc + 8 * v, c[r][v]);
}

static void kern_6x16(int K, const float *a, long rsa, long csa, const float *b, long ldb, float *C, long ldc,
                      int load_c, const float *bias) {
    if (csa == 1)
        kern_body(K, a, rsa, 1, b, ldb, C, ldc, load_c, bias, 1);
    else
        kern_body(K, a, 1, csa, b, ldb, C, ldc, load_c, bias, 0);
}

const gemm_isa_kernel gpt2c_gemm_kernel_avx2 = {MR, NR, kern_6x16, NULL, NULL};
