/* AVX-512 SGEMM micro-kernel: a 6 x 64 tile of C in 24 zmm accumulators.
 * Per k: 4 vector loads of B, 6 broadcasts of A, 24 FMAs (enough independent
 * chains to cover the FMA latency on both pipes).  The k loop is unrolled by
 * two: with its counter, pointer updates and two prefetches it issued about
 * 40 uops per 24 FMAs, close to the 4-wide front end of Skylake-class cores
 * (Cascade Lake: 4-9% faster on the GEMMs with B in place, 1.05x median;
 * unrolling by 4 gained nothing more). */
#include <immintrin.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/transpose16_avx512.h"

#define MR 6
#define NR 64

/* R x 64 tiles (R <= MR): kern_6x64 for whole tiles, the first R rows for a
 * unit's last rows (kern_rows: A read in place or from a panel, R rows only;
 * each element gets the same FMAs in the same order either way).
 * a_rows: A's rows are contiguous (csa == 1), else its columns are (rsa == 1);
 * a constant after inlining, so each variant gets its own loop. */
static inline __attribute__((always_inline)) void kern_body(const int R, int K, const float *a, long rsa, long csa,
                                                            const float *b, long ldb, float *C, long ldc, int load_c,
                                                            const float *bias, const int a_rows) {
    __m512 c[MR][4];
    #pragma GCC unroll 6
    for (int r = 0; r < R; r++)
    #pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            c[r][v] = load_c ? _mm512_loadu_ps(C + r * ldc + 16 * v)
                             : (bias ? _mm512_loadu_ps(bias + 16 * v) : _mm512_setzero_ps());
    const float *ar[MR];
    #pragma GCC unroll 6
    for (int r = 0; r < R; r++) ar[r] = a + r * rsa;
#pragma GCC unroll 2
    for (int k = 0; k < K; k++) {
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), b2 = _mm512_loadu_ps(b + 32),
                     b3 = _mm512_loadu_ps(b + 48);
        _mm_prefetch((const char *)(b + 8 * ldb), _MM_HINT_T0);
        _mm_prefetch((const char *)(b + 8 * ldb + 32), _MM_HINT_T0);
        float av[MR];
        const float *ak = a + (size_t)k * csa;
        #pragma GCC unroll 6
        for (int r = 0; r < R; r++) av[r] = a_rows ? ar[r][k] : ak[r];
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            const __m512 av_r = _mm512_set1_ps(av[r]);
            c[r][0] = _mm512_fmadd_ps(av_r, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(av_r, b1, c[r][1]);
            c[r][2] = _mm512_fmadd_ps(av_r, b2, c[r][2]);
            c[r][3] = _mm512_fmadd_ps(av_r, b3, c[r][3]);
        }
        b += ldb;
    }
    #pragma GCC unroll 6
    for (int r = 0; r < R; r++)
    #pragma GCC unroll 4
        for (int v = 0; v < 4; v++) _mm512_storeu_ps(C + r * ldc + 16 * v, c[r][v]);
}

static inline __attribute__((always_inline)) void kern_rx64(const int R, int K, const float *a, long rsa, long csa,
                                                            const float *b, long ldb, float *C, long ldc, int load_c,
                                                            const float *bias) {
    if (csa == 1)
        kern_body(R, K, a, rsa, 1, b, ldb, C, ldc, load_c, bias, 1);
    else
        kern_body(R, K, a, 1, csa, b, ldb, C, ldc, load_c, bias, 0);
}

static void kern_6x64(int K, const float *a, long rsa, long csa, const float *b, long ldb, float *C, long ldc,
                      int load_c, const float *bias) {
    kern_rx64(MR, K, a, rsa, csa, b, ldb, C, ldc, load_c, bias);
}

static void kern_rows(int rows, int K, const float *a, long rsa, long csa, const float *b, long ldb, float *C, long ldc,
                      int load_c, const float *bias) {
    switch (rows) {
    case 1: kern_rx64(1, K, a, rsa, csa, b, ldb, C, ldc, load_c, bias); break;
    case 2: kern_rx64(2, K, a, rsa, csa, b, ldb, C, ldc, load_c, bias); break;
    case 3: kern_rx64(3, K, a, rsa, csa, b, ldb, C, ldc, load_c, bias); break;
    case 4: kern_rx64(4, K, a, rsa, csa, b, ldb, C, ldc, load_c, bias); break;
    default: kern_rx64(5, K, a, rsa, csa, b, ldb, C, ldc, load_c, bias); break;
    }
}

static void pack_bt(float *dst, const float *src, long ld, int nb, int kc, int NRp) {
    int j0 = 0;
    for (; j0 + 16 <= nb; j0 += 16) {
        int k0 = 0;
        for (; k0 + 16 <= kc; k0 += 16) {
            __m512 r[16];
            for (int j = 0; j < 16; j++) r[j] = _mm512_loadu_ps(src + (j0 + j) * ld + k0);
            transpose16(dst + (size_t)k0 * NRp + j0, NRp, r);
        }
        for (; k0 < kc; k0++)
            for (int j = 0; j < 16; j++) dst[(size_t)k0 * NRp + j0 + j] = src[(j0 + j) * ld + k0];
    }
    for (int j = j0; j < NRp; j++)
        for (int k = 0; k < kc; k++) dst[(size_t)k * NRp + j] = j < nb ? src[j * ld + k] : 0.0f;
}

const gemm_isa_kernel gpt2c_gemm_kernel_avx512 = {MR, NR, kern_6x64, pack_bt, kern_rows};
