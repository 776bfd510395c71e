/* Packed, cache-blocked SGEMM driver (see gemm.h), BLIS-style:
 *
 *   C is cut into tiles of MB x NB (NB <= 512 columns: the packed B block,
 *   GEMM_KC x NB floats = 512 KiB, stays in L2); threads take whole tiles.
 *   For each K block of GEMM_KC (in order):
 *     pack A's tile rows into MR-row micro-panels  (Ap[k*MR + r]),
 *     pack B's tile columns into NR-column panels  (Bp[k*NR + j]), zero-padded,
 *     for each MR-row panel (stays in L1), for each NR-column panel (from L2):
 *        micro-kernel: the MR x NR block of C += Ap Bp.
 *   Bias is folded into the first K block (accumulators start at bias).
 *   Edge tiles go through a small MR x NR buffer so kernels stay full-size. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm.h"

#define MB_MAX 1536 /* multiple of every MR */
#define NB_MAX 512  /* multiple of every NR */
#define MR_MAX 8
#define NR_MAX 64

/* Portable micro-kernel: 4 x 16 in plain C (the compiler vectorises it for
 * the baseline ISA: SSE2 on x86-64, NEON on arm64). */
static void kern_scalar_4x16(int K, const float *Ap, const float *Bp, float *C, long ldc, int load_c,
                             const float *bias) {
    float c[4][16];
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 16; j++) c[r][j] = load_c ? C[r * ldc + j] : (bias ? bias[j] : 0.0f);
    for (int k = 0; k < K; k++) {
        for (int r = 0; r < 4; r++) {
            const float a = Ap[r];
            for (int j = 0; j < 16; j++) c[r][j] += a * Bp[j];
        }
        Ap += 4;
        Bp += 16;
    }
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 16; j++) C[r * ldc + j] = c[r][j];
}
static const gemm_isa_kernel gemm_kernel_scalar = {4, 16, kern_scalar_4x16};

static const gemm_isa_kernel *pick_kernel(gpt2c_isa isa) {
#if defined(__x86_64__) || defined(_M_X64)
    if (isa == GPT2C_ISA_AVX512) return &gemm_kernel_avx512;
    if (isa == GPT2C_ISA_AVX2) return &gemm_kernel_avx2;
#else
    (void)isa;
#endif
    return &gemm_kernel_scalar;
}

/* Ap: rows [m0, m0+mb) x cols [k0, k0+kc) of A into MR-row panels, rows past mb zero. */
static void pack_a(float *Ap, const float *A, long rsa, long csa, int m0, int mb, int k0, int kc, int MR) {
    for (int ir = 0; ir < mb; ir += MR) {
        float *dst = Ap + (size_t)ir * kc;
        const int mr = mb - ir < MR ? mb - ir : MR;
        if (csa == 1) { /* rows contiguous in k */
            for (int r = 0; r < mr; r++) {
                const float *src = A + (size_t)(m0 + ir + r) * rsa + k0;
                for (int k = 0; k < kc; k++) dst[k * MR + r] = src[k];
            }
            for (int r = mr; r < MR; r++)
                for (int k = 0; k < kc; k++) dst[k * MR + r] = 0.0f;
        } else { /* columns contiguous in m (rsa == 1 for dout^T) */
            for (int k = 0; k < kc; k++) {
                const float *src = A + (size_t)(k0 + k) * csa + (size_t)(m0 + ir) * rsa;
                for (int r = 0; r < MR; r++) dst[k * MR + r] = r < mr ? src[r * rsa] : 0.0f;
            }
        }
    }
}

/* Bp: rows [k0, k0+kc) x cols [n0, n0+nb) of B into NR-column panels, columns past nb zero. */
static void pack_b(float *Bp, const float *B, long rsb, long csb, int n0, int nb, int k0, int kc, int NR) {
    for (int jr = 0; jr < nb; jr += NR) {
        float *dst = Bp + (size_t)jr * kc;
        const int nr = nb - jr < NR ? nb - jr : NR;
        if (csb == 1) { /* rows of B contiguous */
            for (int k = 0; k < kc; k++) {
                const float *src = B + (size_t)(k0 + k) * rsb + n0 + jr;
                float *d = dst + (size_t)k * NR;
                memcpy(d, src, sizeof(float) * nr);
                for (int j = nr; j < NR; j++) d[j] = 0.0f;
            }
        } else { /* B = W^T: columns contiguous in k; transpose 8 columns at a time */
            int j = 0;
            for (; j + 8 <= nr; j += 8) {
                const float *s0 = B + (size_t)(n0 + jr + j) * csb + k0;
                for (int k = 0; k < kc; k++) {
                    float *d = dst + (size_t)k * NR + j;
                    for (int u = 0; u < 8; u++) d[u] = s0[(size_t)u * csb + k];
                }
            }
            for (; j < nr; j++) {
                const float *src = B + (size_t)(n0 + jr + j) * csb + k0;
                for (int k = 0; k < kc; k++) dst[(size_t)k * NR + j] = src[k];
            }
            for (; j < NR; j++)
                for (int k = 0; k < kc; k++) dst[(size_t)k * NR + j] = 0.0f;
        }
    }
}

/* Per-thread packing buffers, allocated at a thread's first GEMM and kept
 * (no allocation in later steps). */
static _Thread_local float *tl_apack, *tl_bpack;

static int thread_buffers(float **ap, float **bp) {
    if (!tl_apack) {
        tl_apack = aligned_alloc(64, sizeof(float) * (size_t)MB_MAX * GEMM_KC);
        tl_bpack = aligned_alloc(64, sizeof(float) * (size_t)NB_MAX * GEMM_KC);
        if (!tl_apack || !tl_bpack) {
            free(tl_apack);
            free(tl_bpack);
            tl_apack = tl_bpack = NULL;
            return 0;
        }
    }
    *ap = tl_apack;
    *bp = tl_bpack;
    return 1;
}

/* Unpacked fallback, only if the packing buffers cannot be allocated. */
static void gemm_tile_naive(int m0, int mb, int n0, int nb, int K, const float *A, long rsa, long csa,
                            const float *B, long rsb, long csb, float *C, long ldc, const float *bias,
                            int accumulate) {
    for (int i = m0; i < m0 + mb; i++)
        for (int j = n0; j < n0 + nb; j++) {
            float acc = accumulate ? C[(size_t)i * ldc + j] : (bias ? bias[j] : 0.0f);
            for (int k0 = 0; k0 < K; k0 += GEMM_KC) {
                const int ke = K - k0 < GEMM_KC ? K : k0 + GEMM_KC;
                for (int k = k0; k < ke; k++) acc += A[(size_t)i * rsa + (size_t)k * csa] * B[(size_t)k * rsb + (size_t)j * csb];
            }
            C[(size_t)i * ldc + j] = acc;
        }
}

static void gemm_tile(const gemm_isa_kernel *kk, int m0, int mb, int n0, int nb, int K, const float *A, long rsa,
                      long csa, const float *B, long rsb, long csb, float *C, long ldc, const float *bias,
                      int accumulate) {
    float *Ap, *Bp;
    if (!thread_buffers(&Ap, &Bp)) {
        gemm_tile_naive(m0, mb, n0, nb, K, A, rsa, csa, B, rsb, csb, C, ldc, bias, accumulate);
        return;
    }
    const int MR = kk->mr, NR = kk->nr;
    for (int k0 = 0; k0 < K; k0 += GEMM_KC) {
        const int kc = K - k0 < GEMM_KC ? K - k0 : GEMM_KC;
        const int load_c = accumulate || k0 > 0;
        pack_a(Ap, A, rsa, csa, m0, mb, k0, kc, MR);
        pack_b(Bp, B, rsb, csb, n0, nb, k0, kc, NR);
        for (int ir = 0; ir < mb; ir += MR) {
            const int mr = mb - ir < MR ? mb - ir : MR;
            const float *ap = Ap + (size_t)ir * kc;
            for (int jr = 0; jr < nb; jr += NR) {
                const int nr = nb - jr < NR ? nb - jr : NR;
                float *c = C + (size_t)(m0 + ir) * ldc + n0 + jr;
                const float *bp = Bp + (size_t)jr * kc;
                const float *bi = (!load_c && bias) ? bias + n0 + jr : NULL;
                if (mr == MR && nr == NR) {
                    kk->kern(kc, ap, bp, c, ldc, load_c, bi);
                } else { /* edge: through a full-size buffer */
                    float tmp[MR_MAX * NR_MAX] __attribute__((aligned(64)));
                    float bpad[NR_MAX] __attribute__((aligned(64)));
                    if (load_c)
                        for (int r = 0; r < mr; r++) memcpy(tmp + r * NR, c + (size_t)r * ldc, sizeof(float) * nr);
                    if (bi) {
                        memset(bpad, 0, sizeof bpad);
                        memcpy(bpad, bi, sizeof(float) * nr);
                    }
                    kk->kern(kc, ap, bp, tmp, NR, load_c, bi ? bpad : NULL);
                    for (int r = 0; r < mr; r++) memcpy(c + (size_t)r * ldc, tmp + r * NR, sizeof(float) * nr);
                }
            }
        }
    }
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }
static int round_up(int a, int b) { return ceil_div(a, b) * b; }

void cpu_gemm(gpt2c_isa isa, int M, int N, int K, const float *A, long rsa, long csa, const float *B, long rsb,
              long csb, float *C, long ldc, const float *bias, int accumulate) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (!accumulate)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = bias ? bias[j] : 0.0f;
        return;
    }
    const gemm_isa_kernel *kk = pick_kernel(isa);
    const int MR = kk->mr, NR = kk->nr;
    const int nth = omp_in_parallel() ? 1 : omp_get_max_threads();
    /* Tiling (any tiling gives the same numbers: only the K blocking sets the order) */
    int rb = ceil_div(M, MB_MAX), cb = ceil_div(N, NB_MAX);
    if (nth > 1 && (rb * cb) % nth != 0 && rb * cb < 8 * nth) { /* balance the threads */
        if (round_up(cb, nth) <= ceil_div(N, NR))
            cb = round_up(cb, nth);
        else if (round_up(rb, nth) <= ceil_div(M, MR))
            rb = round_up(rb, nth);
    }
    const int NB = round_up(ceil_div(N, cb), NR), MB = round_up(ceil_div(M, rb), MR);
    cb = ceil_div(N, NB);
    rb = ceil_div(M, MB);
    const int jobs = rb * cb;
#pragma omp parallel for schedule(dynamic, 1) num_threads(jobs < nth ? jobs : nth) if (jobs > 1 && nth > 1)
    for (int job = 0; job < jobs; job++) {
        const int ib = job / cb, jb = job % cb;
        const int m0 = ib * MB, n0 = jb * NB;
        const int mb = M - m0 < MB ? M - m0 : MB, nb = N - n0 < NB ? N - n0 : NB;
        gemm_tile(kk, m0, mb, n0, nb, K, A, rsa, csa, B, rsb, csb, C, ldc, bias, accumulate);
    }
}

void cpu_linear_gemm(gpt2c_isa isa, gemm_linear_op op, float *C, const float *A, const float *B, int N, int IC,
                     int OC) {
    switch (op) {
    case GEMM_FWD: cpu_gemm(isa, N, OC, IC, A, IC, 1, B, 1, IC, C, OC, NULL, 0); break;
    case GEMM_DINP: cpu_gemm(isa, N, IC, OC, A, OC, 1, B, IC, 1, C, IC, NULL, 0); break;
    case GEMM_DW: cpu_gemm(isa, OC, IC, N, A, 1, OC, B, IC, 1, C, IC, NULL, 1); break;
    }
}
