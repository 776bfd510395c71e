/* Packed, cache-blocked SGEMM driver (see gemm.h), BLIS-style, in one
 * parallel region:
 *
 *   for each block of NC_MAX columns (jc), for each K block of GEMM_KC (pc, in order):
 *     all threads pack B's block into NR-column micro-panels (Bp[k*NR + j],
 *       zero-padded; shared, in L3), barrier;
 *     threads take row chunks of MC rows (and column groups when rows are few):
 *       pack A's rows into MR-row micro-panels (Ap[k*MR + r], per thread, in L2),
 *       for each B micro-panel (stays in L1), for each A micro-panel:
 *         micro-kernel: the MR x NR block of C (+)= Ap Bp.
 *   Every element of A and B is packed once per GEMM (A once per column block).
 *   Bias is folded into the first K block (accumulators start at bias).
 *   Edge tiles go through a small MR x NR buffer so kernels stay full-size. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm.h"

#define MC_MAX 384   /* rows of A per packed block (multiple of every MR): 192 KiB, in L2 */
#define NC_MAX 4096  /* columns of B per packed block (multiple of every NR): 2 MiB, in L3 */
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
static const gemm_isa_kernel gemm_kernel_scalar = {4, 16, kern_scalar_4x16, NULL};

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

/* Packing buffers, allocated at the first GEMM and kept (no allocation in
 * later steps): one shared B block, one A block per thread.  A GEMM called
 * from inside someone else's parallel region runs on that thread alone with
 * its own (thread-local) buffers. */
#define MAX_THREADS 256
static float *g_bpack;                    /* GEMM_KC x NC_MAX, shared */
static float *g_apack[MAX_THREADS];       /* MC_MAX x GEMM_KC per thread */
static _Thread_local float *tl_apack, *tl_bpack;

static float *alloc_floats(size_t n) { return aligned_alloc(64, sizeof(float) * n); }

/* Unpacked fallback, only if the packing buffers cannot be allocated. */
static void gemm_naive(int M, int N, int K, const float *A, long rsa, long csa, const float *B, long rsb, long csb,
                       float *C, long ldc, const float *bias, int accumulate) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = accumulate ? C[(size_t)i * ldc + j] : (bias ? bias[j] : 0.0f);
            for (int k = 0; k < K; k++) acc += A[(size_t)i * rsa + (size_t)k * csa] * B[(size_t)k * rsb + (size_t)j * csb];
            C[(size_t)i * ldc + j] = acc;
        }
}

/* C rows [m0, m0+mb) x cols [n0, n0+nb) (relative to the packed blocks) += Ap Bp for one K block */
static void macro_kernel(const gemm_isa_kernel *kk, const float *Ap, const float *Bp, int kc, int mb, int jr0,
                         int jr1, int nbtot, float *C, long ldc, int load_c, const float *bias) {
    const int MR = kk->mr, NR = kk->nr;
    /* jr outer: the B micro-panel (GEMM_KC x NR) stays in L1 while A panels come from L2 */
    for (int jr = jr0; jr < jr1; jr += NR) {
        const int nr = nbtot - jr < NR ? nbtot - jr : NR;
        const float *bp = Bp + (size_t)jr * kc;
        const float *bi = (!load_c && bias) ? bias + jr : NULL;
        for (int ir = 0; ir < mb; ir += MR) {
            const int mr = mb - ir < MR ? mb - ir : MR;
            const float *ap = Ap + (size_t)ir * kc;
            float *c = C + (size_t)ir * ldc + jr;
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
    const int nested = omp_in_parallel();
    int nth = nested ? 1 : omp_get_max_threads();
    if (nth > MAX_THREADS) nth = MAX_THREADS;

    /* buffers */
    float *bpack;
    if (nested) {
        if (!tl_bpack) tl_bpack = alloc_floats((size_t)GEMM_KC * NC_MAX);
        if (!tl_apack) tl_apack = alloc_floats((size_t)MC_MAX * GEMM_KC);
        if (!tl_apack || !tl_bpack) {
            gemm_naive(M, N, K, A, rsa, csa, B, rsb, csb, C, ldc, bias, accumulate);
            return;
        }
        bpack = tl_bpack;
    } else {
        int ok = 1;
        if (!g_bpack) g_bpack = alloc_floats((size_t)GEMM_KC * NC_MAX);
        for (int t = 0; t < nth; t++)
            if (!g_apack[t]) g_apack[t] = alloc_floats((size_t)MC_MAX * GEMM_KC);
        for (int t = 0; t < nth; t++) ok &= g_apack[t] != NULL;
        if (!g_bpack || !ok) {
            gemm_naive(M, N, K, A, rsa, csa, B, rsb, csb, C, ldc, bias, accumulate);
            return;
        }
        bpack = g_bpack;
    }

    /* Work split of one B block (any split gives the same numbers: only the K
     * blocking sets the summation order).  Row chunks of <= MC_MAX, a
     * multiple of the thread count when few; column groups when rows are too
     * few to keep the threads busy. */
    int mch = ceil_div(M, MC_MAX);
    if (nth > 1 && mch % nth && mch < 4 * nth && round_up(mch, nth) <= ceil_div(M, MR)) mch = round_up(mch, nth);
    const int MC = round_up(ceil_div(M, mch), MR);
    mch = ceil_div(M, MC);

#pragma omp parallel num_threads(nth) if (nth > 1)
    {
        const int tid = omp_get_thread_num();
        float *apack = nested ? tl_apack : g_apack[tid];
        for (int jc = 0; jc < N; jc += NC_MAX) {
            const int nc = N - jc < NC_MAX ? N - jc : NC_MAX;
            const int npan = ceil_div(nc, NR);
            int ngr = 1;
            if (mch < nth) ngr = ceil_div(nth, mch) < npan ? ceil_div(nth, mch) : npan;
            const int pan_per_gr = ceil_div(npan, ngr);
            for (int pc = 0; pc < K; pc += GEMM_KC) {
                const int kc = K - pc < GEMM_KC ? K - pc : GEMM_KC;
                const int load_c = accumulate || pc > 0;
#pragma omp for schedule(static)
                for (int p = 0; p < npan; p++) {
                    const int j0 = p * NR, nb = nc - j0 < NR ? nc - j0 : NR;
                    if (csb != 1 && kk->pack_bt)
                        kk->pack_bt(bpack + (size_t)j0 * kc, B + (size_t)(jc + j0) * csb + (size_t)pc * rsb, csb, nb, kc, NR);
                    else
                        pack_b(bpack + (size_t)j0 * kc, B, rsb, csb, jc + j0, nb, pc, kc, NR);
                }
#pragma omp for schedule(dynamic, 1)
                for (int u = 0; u < mch * ngr; u++) {
                    const int ic = (u / ngr) * MC, g = u % ngr;
                    const int mb = M - ic < MC ? M - ic : MC;
                    const int jr0 = g * pan_per_gr * NR;
                    int jr1 = (g + 1) * pan_per_gr * NR;
                    if (jr1 > nc) jr1 = nc;
                    if (jr0 >= jr1) continue;
                    pack_a(apack, A, rsa, csa, ic, mb, pc, kc, MR);
                    macro_kernel(kk, apack, bpack, kc, mb, jr0, jr1, nc, C + (size_t)ic * ldc + jc, ldc, load_c,
                                 bias ? bias + jc : NULL);
                }
            }
        }
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
