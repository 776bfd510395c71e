/* AVX-512 bf16 GEMM micro-kernels (gemm_bf16.h):
 *   avx512bf16: a 6 x 64 tile in 24 zmm accumulators; per pair of k, 4 loads
 *               of B (64 columns x 2 k), 6 broadcast A words, 24 vdpbf16ps
 *               (32 multiply-adds each: twice an fp32 FMA's).
 *   avx512f:    for CPUs without AVX512_BF16, the same arithmetic by FMAs:
 *               a 6 x 32 tile, each pair word split into its high (odd k)
 *               and low (even k) bf16, which are fp32 with the low 16 bits
 *               zero; high first, then low, as vdpbf16ps adds them. */
#include <immintrin.h>

#include "kernels/cpu/gemm_bf16.h"

static void kern_dp_6x64(int kp, const uint32_t *a, const uint32_t *b, float *C, long ldc, int load_c,
                         const float *bias) {
    __m512 c[6][4];
    for (int r = 0; r < 6; r++)
        for (int v = 0; v < 4; v++)
            c[r][v] = load_c ? _mm512_loadu_ps(C + r * ldc + 16 * v)
                             : (bias ? _mm512_loadu_ps(bias + 16 * v) : _mm512_setzero_ps());
    for (int p = 0; p < kp; p++, a += 6, b += 64) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16),
                       b2 = (__m512bh)_mm512_loadu_si512(b + 32), b3 = (__m512bh)_mm512_loadu_si512(b + 48);
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++) {
            const __m512bh ar = (__m512bh)_mm512_set1_epi32((int)a[r]);
            c[r][0] = _mm512_dpbf16_ps(c[r][0], ar, b0);
            c[r][1] = _mm512_dpbf16_ps(c[r][1], ar, b1);
            c[r][2] = _mm512_dpbf16_ps(c[r][2], ar, b2);
            c[r][3] = _mm512_dpbf16_ps(c[r][3], ar, b3);
        }
    }
    for (int r = 0; r < 6; r++)
        for (int v = 0; v < 4; v++) _mm512_storeu_ps(C + r * ldc + 16 * v, c[r][v]);
}
/* the fp32 GEMM's in-register 16x16 transpose moves 32-bit words as they are */
static void pack_words(float *dst, const float *src, long ld, int nb, int kc, int NR) {
    gpt2c_gemm_kernel_avx512.pack_bt(dst, src, ld, nb, kc, NR);
}

const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_avx512bf16 = {"avx512bf16", 6, 64, kern_dp_6x64, pack_words};

static void kern_fma_6x32(int kp, const uint32_t *a, const uint32_t *b, float *C, long ldc, int load_c,
                          const float *bias) {
    __m512 c[6][2];
    for (int r = 0; r < 6; r++)
        for (int v = 0; v < 2; v++)
            c[r][v] = load_c ? _mm512_loadu_ps(C + r * ldc + 16 * v)
                             : (bias ? _mm512_loadu_ps(bias + 16 * v) : _mm512_setzero_ps());
    const __m512i hi_mask = _mm512_set1_epi32((int)0xffff0000u);
    for (int p = 0; p < kp; p++, a += 6, b += 32) {
        const __m512i w0 = _mm512_loadu_si512(b), w1 = _mm512_loadu_si512(b + 16);
        const __m512 bh0 = _mm512_castsi512_ps(_mm512_and_si512(w0, hi_mask)), bl0 = _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16));
        const __m512 bh1 = _mm512_castsi512_ps(_mm512_and_si512(w1, hi_mask)), bl1 = _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16));
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++) {
            const __m512i aw = _mm512_set1_epi32((int)a[r]);
            const __m512 ah = _mm512_castsi512_ps(_mm512_and_si512(aw, hi_mask)), al = _mm512_castsi512_ps(_mm512_slli_epi32(aw, 16));
            c[r][0] = _mm512_fmadd_ps(ah, bh0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(ah, bh1, c[r][1]);
            c[r][0] = _mm512_fmadd_ps(al, bl0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(al, bl1, c[r][1]);
        }
    }
    for (int r = 0; r < 6; r++)
        for (int v = 0; v < 2; v++) _mm512_storeu_ps(C + r * ldc + 16 * v, c[r][v]);
}
const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_avx512f = {"avx512f", 6, 32, kern_fma_6x32, pack_words};
