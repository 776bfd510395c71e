/* AVX-512 SGEMM micro-kernel: a 6 x 64 tile of C in 24 zmm accumulators.
 * Per k: 4 vector loads of B, 6 broadcasts of A, 24 FMAs (enough independent
 * chains to cover the FMA latency on both pipes). */
#include <immintrin.h>

#include "kernels/cpu/gemm.h"

#define MR 6
#define NR 64

static void kern_6x64(int K, const float *Ap, const float *Bp, float *C, long ldc, int load_c, const float *bias) {
    __m512 c[MR][4];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 4; v++)
            c[r][v] = load_c ? _mm512_loadu_ps(C + r * ldc + 16 * v)
                             : (bias ? _mm512_loadu_ps(bias + 16 * v) : _mm512_setzero_ps());
    for (int k = 0; k < K; k++) {
        const __m512 b0 = _mm512_load_ps(Bp), b1 = _mm512_load_ps(Bp + 16), b2 = _mm512_load_ps(Bp + 32),
                     b3 = _mm512_load_ps(Bp + 48);
        _mm_prefetch((const char *)(Bp + 8 * NR), _MM_HINT_T0);
        _mm_prefetch((const char *)(Bp + 8 * NR + 32), _MM_HINT_T0);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            const __m512 a = _mm512_set1_ps(Ap[r]);
            c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
            c[r][2] = _mm512_fmadd_ps(a, b2, c[r][2]);
            c[r][3] = _mm512_fmadd_ps(a, b3, c[r][3]);
        }
        Ap += MR;
        Bp += NR;
    }
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 4; v++) _mm512_storeu_ps(C + r * ldc + 16 * v, c[r][v]);
}

const gemm_isa_kernel gemm_kernel_avx512 = {MR, NR, kern_6x64};
