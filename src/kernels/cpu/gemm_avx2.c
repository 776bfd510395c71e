/* AVX2+FMA SGEMM micro-kernel: a 6 x 16 tile of C in 12 ymm accumulators. */
#include <immintrin.h>

#include "kernels/cpu/gemm.h"

#define MR 6
#define NR 16

static void kern_6x16(int K, const float *Ap, const float *Bp, float *C, long ldc, int load_c, const float *bias) {
    __m256 c[MR][2];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 2; v++)
            c[r][v] = load_c ? _mm256_loadu_ps(C + r * ldc + 8 * v)
                             : (bias ? _mm256_loadu_ps(bias + 8 * v) : _mm256_setzero_ps());
    for (int k = 0; k < K; k++) {
        const __m256 b0 = _mm256_load_ps(Bp), b1 = _mm256_load_ps(Bp + 8);
        _mm_prefetch((const char *)(Bp + 16 * NR), _MM_HINT_T0);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            const __m256 a = _mm256_broadcast_ss(Ap + r);
            c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
        }
        Ap += MR;
        Bp += NR;
    }
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 2; v++) _mm256_storeu_ps(C + r * ldc + 8 * v, c[r][v]);
}

const gemm_isa_kernel gemm_kernel_avx2 = {MR, NR, kern_6x16, NULL};
