/* AVX2+FMA bf16 GEMM micro-kernel (gemm_bf16.h): a 4 x 16 tile in 8 ymm
 * accumulators, the arithmetic of vdpbf16ps by FMAs: each pair word split
 * into its high (odd k) and low (even k) bf16, which are fp32 with the low
 * 16 bits zero; high first, then low.  The GEMM driver runs its GEMMs on
 * fp32 panels with the fp32 6 x 16 kernel instead (the `fp32` field,
 * gemm_bf16.h); this kernel serves the attention. */
#include <immintrin.h>

#include "kernels/cpu/gemm_bf16.h"

static void kern_fma_4x16(int kp, const uint32_t *a, const uint32_t *b, float *C, long ldc, int load_c,
                          const float *bias) {
    __m256 c[4][2];
    #pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
    #pragma GCC unroll 2
        for (int v = 0; v < 2; v++)
            c[r][v] = load_c ? _mm256_loadu_ps(C + r * ldc + 8 * v)
                             : (bias ? _mm256_loadu_ps(bias + 8 * v) : _mm256_setzero_ps());
    const __m256i hi_mask = _mm256_set1_epi32((int)0xffff0000u);
    for (int p = 0; p < kp; p++, a += 4, b += 16) {
        const __m256i w0 = _mm256_loadu_si256((const __m256i *)b), w1 = _mm256_loadu_si256((const __m256i *)(b + 8));
        const __m256 bh0 = _mm256_castsi256_ps(_mm256_and_si256(w0, hi_mask)), bl0 = _mm256_castsi256_ps(_mm256_slli_epi32(w0, 16));
        const __m256 bh1 = _mm256_castsi256_ps(_mm256_and_si256(w1, hi_mask)), bl1 = _mm256_castsi256_ps(_mm256_slli_epi32(w1, 16));
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            const __m256i aw = _mm256_set1_epi32((int)a[r]);
            const __m256 ah = _mm256_castsi256_ps(_mm256_and_si256(aw, hi_mask)), al = _mm256_castsi256_ps(_mm256_slli_epi32(aw, 16));
            c[r][0] = _mm256_fmadd_ps(ah, bh0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(ah, bh1, c[r][1]);
            c[r][0] = _mm256_fmadd_ps(al, bl0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(al, bl1, c[r][1]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
    #pragma GCC unroll 2
        for (int v = 0; v < 2; v++) _mm256_storeu_ps(C + r * ldc + 8 * v, c[r][v]);
}
/* the driver runs its GEMMs on fp32 panels with the fp32 6 x 16 kernel */
const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_avx2 = {"avx2-fp32", 4,    16,   kern_fma_4x16, NULL,
                                                          NULL,        NULL, NULL, &gpt2c_gemm_kernel_avx2, NULL};
