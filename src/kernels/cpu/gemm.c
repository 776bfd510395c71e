/* Cache-blocked SGEMM driver (see gemm.h), after BLIS, with as little
 * packing as the layouts allow:
 *
 *   C is cut into units of <= mc rows x <= nc columns (from this core's L2:
 *   see gpt2c_cpu_gemm_fp32_blocking; they never change results); threads take
 *   whole units (no barriers, no shared buffers).  In a unit, for each K
 *   block of kc (in order; each element's sum runs over k in order across
 *   the blocks, C stored and reloaded exactly between them, so kc does not
 *   change results either):
 *     B: used in place when its rows are contiguous (dinp: W, dweight: inp);
 *        packed into NR-column panels (per-thread buffer, in L2) when it is
 *        W^T (forward), with the ISA's in-register transpose;
 *     A: read in place when its rows are contiguous (inp, dout); packed into
 *        MR-row panels when it is dout^T (rows a page apart: TLB misses);
 *     for each NR-column panel of B (stays in L1), for each MR-row panel of A
 *     (from L2): micro-kernel on the MR x NR tile.
 *   Edge panels (fewer than MR rows / NR columns) are copied zero-padded and
 *   their C tile goes through a small buffer, so kernels stay full-size.
 *   Bias is folded into the first K block (accumulators start at bias). */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_caches.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_split.h"

#define MC_LIMIT 1536 /* bounds of the per-CPU blocking (fp32_blocking) */
#define KC_MIN 64
#define KC_LIMIT 2048
#define NC_LIMIT 2048
#define MR_MAX 8
/* B is read in place only when its rows are close: a K block of rows further
 * apart spans more pages than the L1 TLB holds (W of the MLP projection: 12 KiB) */
#define DIRECT_B_MAX_LD 1024
#define NR_MAX 64

/* Portable micro-kernel: 4 x 16 in plain C (the compiler vectorises it for
 * the baseline ISA: SSE2 on x86-64, NEON on arm64). */
static void kern_scalar_4x16(int K, const float *a, long rsa, long csa, const float *b, long ldb, float *C, long ldc,
                             int load_c, const float *bias) {
    float c[4][16];
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 16; j++) c[r][j] = load_c ? C[r * ldc + j] : (bias ? bias[j] : 0.0f);
    for (int k = 0; k < K; k++) {
        for (int r = 0; r < 4; r++) {
            const float ar = a[r * rsa + (size_t)k * csa];
            for (int j = 0; j < 16; j++) c[r][j] += ar * b[j];
        }
        b += ldb;
    }
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 16; j++) C[r * ldc + j] = c[r][j];
}
static const gemm_isa_kernel gemm_kernel_scalar = {4, 16, kern_scalar_4x16, NULL, NULL};

static const gemm_isa_kernel *pick_kernel(gpt2c_isa isa) {
#if defined(__x86_64__) || defined(_M_X64)
    if (isa == GPT2C_ISA_AVX512) return &gpt2c_gemm_kernel_avx512;
    if (isa == GPT2C_ISA_AVX2) return &gpt2c_gemm_kernel_avx2;
#else
    (void)isa;
#endif
    return &gemm_kernel_scalar;
}

const gemm_isa_kernel *gpt2c_cpu_gemm_kernel(gpt2c_isa isa) { return pick_kernel(isa); }

/* One NR-column panel of B (rows [k0, k0+kc), columns [n0, n0+nb)) into
 * dst[k*NR + j], columns past nb zero. */
static void pack_b_panel(float *dst, const float *B, long rsb, long csb, int n0, int nb, int k0, int kc, int NR) {
    if (csb == 1 && nb == 64 && NR == 64) { /* a constant size: vector moves, not a libc call per row (~1% of a step) */
        for (int k = 0; k < kc; k++) memcpy(dst + (size_t)k * 64, B + (size_t)(k0 + k) * rsb + n0, 64 * sizeof(float));
    } else if (csb == 1) {
        for (int k = 0; k < kc; k++) {
            const float *src = B + (size_t)(k0 + k) * rsb + n0;
            float *d = dst + (size_t)k * NR;
            memcpy(d, src, sizeof(float) * nb);
            for (int j = nb; j < NR; j++) d[j] = 0.0f;
        }
    } else {
        for (int j = 0; j < NR; j++) {
            const float *src = B + (size_t)(n0 + j) * csb + (size_t)k0 * rsb;
            for (int k = 0; k < kc; k++) dst[(size_t)k * NR + j] = j < nb ? src[(size_t)k * rsb] : 0.0f;
        }
    }
}

/* One MR-row panel of A, zero-padded (gemm.h) */
void gpt2c_cpu_gemm_pack_a_panel(float *dst, const float *a, long rsa, long csa, int mr, int kc, int MR) {
    for (int k = 0; k < kc; k++)
        for (int r = 0; r < MR; r++) dst[k * MR + r] = r < mr ? a[r * rsa + (size_t)k * csa] : 0.0f;
}

/* Per-thread pack buffers, grown when the blocking asks for more (kept: no
 * allocation in later steps). */
static _Thread_local float *tl_bbuf, *tl_abuf, *tl_apan;
static _Thread_local size_t tl_bcap, tl_acap, tl_apcap;
float *gpt2c_cpu_grow_buffer(float **buf, size_t *cap, size_t n) {
    if (*cap >= n) return *buf;
    free(*buf);
    *buf = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    *cap = *buf ? n : 0;
    return *buf;
}

/* A block with contiguous columns (dout^T: rsa == 1, csa = OC) into MR-row
 * panels dst[(ir/MR)*MR*kc + k*MR + r]: its rows are far apart in memory (one
 * page each), so reading it in place would miss the TLB on every k. */
static void pack_a_cols(float *dst, const float *A, long csa, int ic, int mb, int pc, int kc, int MR) {
    const int npan = (mb + MR - 1) / MR;
    /* panel by panel: sequential writes; the kc source lines of one panel stay in L1 for the next */
    for (int p = 0; p < npan; p++) {
        const int r0 = p * MR, mr = mb - r0 < MR ? mb - r0 : MR;
        const float *src = A + (size_t)pc * csa + ic + r0;
        float *d = dst + (size_t)p * MR * kc;
        if (mr == MR && MR == 6) /* a constant-size copy per k: two moves, not a loop over a variable MR */
            for (int k = 0; k < kc; k++) memcpy(d + k * 6, src + (size_t)k * csa, 6 * sizeof(float));
        else if (mr == MR)
            for (int k = 0; k < kc; k++)
                for (int r = 0; r < MR; r++) d[k * MR + r] = src[(size_t)k * csa + r];
        else
            for (int k = 0; k < kc; k++)
                for (int r = 0; r < MR; r++) d[k * MR + r] = r < mr ? src[(size_t)k * csa + r] : 0.0f;
    }
}

/* One NR-column panel of B into dst (the ISA's transpose for B = W^T). */
static void pack_b_any(const gemm_isa_kernel *kk, float *dst, const float *B, long rsb, long csb, int n0, int nb, int k0,
                       int kc) {
    if (csb != 1 && kk->pack_bt)
        kk->pack_bt(dst, B + (size_t)n0 * csb + (size_t)k0 * rsb, csb, nb, kc, kk->nr);
    else
        pack_b_panel(dst, B, rsb, csb, n0, nb, k0, kc, kk->nr);
}

static void gemm_unit(const gemm_isa_kernel *kk, int kcb, int ic, int mb, int jc, int nb, int K, const float *A, long rsa,
                      long csa, const float *B, long rsb, long csb, float *C, long ldc, const float *bias,
                      int accumulate, float *bbuf, float *abuf, float *apan) {
    const int MR = kk->mr, NR = kk->nr;
    const int direct_b = csb == 1 && rsb <= DIRECT_B_MAX_LD, a_strided = rsa == 1 || csa == 1, pack_a = rsa == 1 && csa != 1;
    for (int pc = 0; pc < K; pc += kcb) {
        const int kc = K - pc < kcb ? K - pc : kcb;
        const int load_c = accumulate || pc > 0;
        uint64_t t0 = gemm_split_t0();
        if (pack_a) pack_a_cols(abuf, A, csa, ic, mb, pc, kc, MR);
        /* edge rows (fewer than MR) of an A read in place: their zero-padded
         * panel once per K block, not once per B panel (B*T = 256 rows: 4
         * edge rows per unit, copied again for each of its 9-12 panels) */
        const int edge_ir = mb / MR * MR, edge = !pack_a && a_strided && edge_ir < mb;
        if (edge) gpt2c_cpu_gemm_pack_a_panel(apan, A + (size_t)(ic + edge_ir) * rsa + (size_t)pc * csa, rsa, csa, mb - edge_ir, kc, MR);
        /* A packed B (for B = W^T: the transpose) is packed panel by panel, each
         * just before its tiles, while the next panel's source is prefetched
         * into L2 across them (packing the unit's whole block first streamed
         * it from memory with the core idle, then read it back from L3) */
        if (!direct_b) pack_b_any(kk, bbuf, B, rsb, csb, jc, nb < NR ? nb : NR, pc, kc);
        gemm_split_end(GEMM_SPLIT_PACK, t0);
        const int ntiles = (mb + MR - 1) / MR;
        for (int jr = 0; jr < nb; jr += NR) {
            const int nr = nb - jr < NR ? nb - jr : NR, nnext = nb - jr - NR < NR ? nb - jr - NR : NR;
            line_walk next = {0, 0, 0, 0, 0, 0};
            int per = 0;
            if (!direct_b && nnext > 0) {
                if (csb != 1) /* columns of W^T: rows of W, contiguous in k */
                    next = (line_walk){(const char *)(B + (size_t)(jc + jr + NR) * csb + (size_t)pc * rsb), csb * 4, nnext, kc * 4, 0, 0};
                else /* rows of B, far apart */
                    next = (line_walk){(const char *)(B + (size_t)pc * rsb + jc + jr + NR), rsb * 4, kc, nnext * 4, 0, 0};
                if (csb != 1 && rsb != 1) next.runs = 0; /* neither contiguous: not prefetched */
                per = (int)(((long)next.runs * ((next.len + 127) / 64) + ntiles - 1) / ntiles);
            }
            const float *bp;
            long ldb;
            if (!direct_b) {
                bp = bbuf;
                ldb = NR;
            } else if (nr == NR) {
                bp = B + (size_t)pc * rsb + jc + jr;
                ldb = rsb;
            } else { /* edge columns: zero-padded copy */
                pack_b_panel(bbuf, B, rsb, csb, jc + jr, nr, pc, kc, NR);
                bp = bbuf;
                ldb = NR;
            }
            const float *bi = (!load_c && bias) ? bias + jc + jr : NULL;
            t0 = gemm_split_t0();
            for (int ir = 0; ir < mb; ir += MR) {
                if (per) walk_prefetch(&next, per);
                const int mr = mb - ir < MR ? mb - ir : MR;
                const float *a = A + (size_t)(ic + ir) * rsa + (size_t)pc * csa;
                long ars = rsa, acs = csa;
                if (pack_a) {
                    a = abuf + (size_t)ir * kc, ars = 1, acs = MR;
                } else if (edge && ir == edge_ir) {
                    a = apan, ars = 1, acs = MR;
                } else if (mr < MR || !a_strided) { /* rows neither contiguous: zero-padded copy */
                    gpt2c_cpu_gemm_pack_a_panel(apan, a, rsa, csa, mr, kc, MR);
                    a = apan, ars = 1, acs = MR;
                }
                float *c = C + (size_t)(ic + ir) * ldc + jc + jr;
                if (ir + MR < mb) /* the next tile's C is loaded, or written over, first thing: fetch it now (its
                                   * rows only: the unit's next rows can be another unit's, being written) */
                    for (int r = 0; r < MR && ir + MR + r < mb; r++)
                        for (int j = 0; j < nr; j += 16) __builtin_prefetch(c + (size_t)(MR + r) * ldc + j, 1);
                if (mr == MR && nr == NR) {
                    kk->kern(kc, a, ars, acs, bp, ldb, c, ldc, load_c, bi);
                } else if (nr == NR && kk->kern_rows) { /* the unit's last rows */
                    kk->kern_rows(mr, kc, a, ars, acs, bp, ldb, c, ldc, load_c, bi);
                } else { /* edge tile: through a full-size buffer */
                    float tmp[MR_MAX * NR_MAX] __attribute__((aligned(64)));
                    float bpad[NR_MAX] __attribute__((aligned(64)));
                    if (load_c)
                        for (int r = 0; r < mr; r++) memcpy(tmp + r * NR, c + (size_t)r * ldc, sizeof(float) * nr);
                    if (bi) {
                        memset(bpad, 0, sizeof bpad);
                        memcpy(bpad, bi, sizeof(float) * nr);
                    }
                    kk->kern(kc, a, ars, acs, bp, ldb, tmp, NR, load_c, bi ? bpad : NULL);
                    for (int r = 0; r < mr; r++) memcpy(c + (size_t)r * ldc, tmp + r * NR, sizeof(float) * nr);
                }
            }
            gemm_split_end(GEMM_SPLIT_KERNEL, t0);
            t0 = gemm_split_t0();
            if (!direct_b && nnext > 0) pack_b_any(kk, bbuf, B, rsb, csb, jc + jr + NR, nnext, pc, kc);
            gemm_split_end(GEMM_SPLIT_PACK, t0);
        }
    }
}

/* Unpacked fallback, only if the B buffer cannot be allocated. */
static void gemm_naive(int ic, int mb, int jc, int nb, int K, const float *A, long rsa, long csa, const float *B,
                       long rsb, long csb, float *C, long ldc, const float *bias, int accumulate) {
    for (int i = ic; i < ic + mb; i++)
        for (int j = jc; j < jc + nb; j++) {
            float acc = accumulate ? C[(size_t)i * ldc + j] : (bias ? bias[j] : 0.0f);
            for (int k = 0; k < K; k++) acc += A[(size_t)i * rsa + (size_t)k * csa] * B[(size_t)k * rsb + (size_t)j * csb];
            C[(size_t)i * ldc + j] = acc;
        }
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }
static int round_up(int a, int b) { return ceil_div(a, b) * b; }

/* Rows and columns per unit from this core's L2 (CPUID, cpu_caches.h): A's
 * K block (mc x GEMM_KC fp32, read once per B panel) in 3/8 of L2 and a
 * packed B block (GEMM_KC x nc) in half of it: 1 MiB L2 (Zen 4/5) gives
 * mc 384, nc 512 (the values tuned on Zen 4), 2 MiB (Sapphire Rapids) 768
 * and 1024.  The blocking (these and kc) changes speed, never results.  Multiples of every MR (12) and NR (64). */
static int g_mc, g_nc, g_kc = GEMM_KC;

int gpt2c_cpu_gemm_fp32_kc(void) { return g_kc; }
int gpt2c_cpu_gemm_fp32_set_kc(int kc) {
    g_kc = round_up(kc < KC_MIN ? KC_MIN : kc > KC_LIMIT ? KC_LIMIT : kc, 16);
    return g_kc;
}

void gpt2c_cpu_gemm_fp32_set_blocking(int *mc, int *nc) {
    const int m = round_up(*mc < 96 ? 96 : *mc > MC_LIMIT ? MC_LIMIT : *mc, 12);
    const int n = round_up(*nc < 128 ? 128 : *nc > NC_LIMIT ? NC_LIMIT : *nc, 64);
    g_mc = m, g_nc = n;
    *mc = m, *nc = n;
}

void gpt2c_cpu_gemm_fp32_blocking_from_caches(int *mc, int *nc) {
    const long l2 = gpt2c_cpu_caches()->l2 > 0 ? gpt2c_cpu_caches()->l2 : 1 << 20;
    *mc = (int)(l2 * 3 / 8 / (GEMM_KC * (long)sizeof(float))) / 12 * 12;
    *nc = (int)(l2 / 2 / (GEMM_KC * (long)sizeof(float))) / 64 * 64;
    g_kc = GEMM_KC;
    gpt2c_cpu_gemm_fp32_set_blocking(mc, nc);
}

void gpt2c_cpu_gemm_fp32_blocking(int *mc, int *nc) {
    if (!g_mc) gpt2c_cpu_gemm_fp32_blocking_from_caches(mc, nc);
    *mc = g_mc, *nc = g_nc;
}

void gpt2c_cpu_gemm(gpt2c_isa isa, int M, int N, int K, const float *A, long rsa, long csa, const float *B, long rsb,
              long csb, float *C, long ldc, const float *bias, int accumulate) {
    if (gpt2c_gemm_trivial(M, N, K, C, ldc, bias, accumulate)) return;
    if (!omp_in_parallel()) gpt2c_cpu_gemm_fp32_first_use(isa);
    const gemm_isa_kernel *kk = pick_kernel(isa);
    const int MR = kk->mr, NR = kk->nr;
    const int nth = omp_in_parallel() ? 1 : omp_get_max_threads();
    /* units (any split gives the same numbers): their count a multiple of the threads where it can be */
    /* A packed B block caps a unit's width; B read in place does not (then
     * wide units reuse each A panel, packed or not, across more columns),
     * nor does a packed A: each unit packs its own A block, so narrower
     * units packed dout^T again per column group (dW of the MLP projection,
     * 3072 wide: 6 times; full-width units 1.08-1.10x on it, Cascade Lake,
     * 1 and 2 threads; B is packed panel by panel either way). */
    const int direct_b = csb == 1 && rsb <= DIRECT_B_MAX_LD, packs_a = rsa == 1 && csa != 1;
    int mc_max, nc_max;
    gpt2c_cpu_gemm_fp32_blocking(&mc_max, &nc_max);
    const int kcb = g_kc;
    int cg = direct_b || packs_a ? 1 : ceil_div(N, nc_max), rc = ceil_div(M, mc_max);
    if (nth > 1 && (cg * rc) % nth) { /* e.g. the LM head: 25 units on 2 threads ran 13 + 12 */
        const int rows_ok = round_up(rc, nth) <= ceil_div(M, MR), cols_ok = round_up(cg, nth) <= ceil_div(N, NR);
        if (packs_a && rows_ok) /* split rows: each thread packs only its own A */
            rc = round_up(rc, nth);
        else if (cols_ok)
            cg = round_up(cg, nth);
        else if (rows_ok)
            rc = round_up(rc, nth);
    }
    /* rows per unit: whole tiles, or an even split where the kernel runs a unit's last rows at their own cost */
    const int NCU = round_up(ceil_div(N, cg), NR), MCU = kk->kern_rows ? ceil_div(M, rc) : round_up(ceil_div(M, rc), MR);
    cg = ceil_div(N, NCU);
    rc = ceil_div(M, MCU);
    const int units = cg * rc;
#pragma omp parallel for schedule(dynamic, 1) num_threads(units < nth ? units : nth) if (units > 1 && nth > 1)
    for (int u = 0; u < units; u++) {
        const int ic = (u % rc) * MCU, jc = (u / rc) * NCU;
        const int mb = M - ic < MCU ? M - ic : MCU, nb = N - jc < NCU ? N - jc : NCU;
        /* sized by this call's units (the blocking may be retuned between calls) */
        float *bb = gpt2c_cpu_grow_buffer(&tl_bbuf, &tl_bcap, (size_t)kcb * NR);
        float *ab = gpt2c_cpu_grow_buffer(&tl_abuf, &tl_acap, (size_t)kcb * round_up(MCU, MR)); /* whole panels */
        float *ap = gpt2c_cpu_grow_buffer(&tl_apan, &tl_apcap, (size_t)kcb * MR_MAX);
        if (bb && ab && ap)
            gemm_unit(kk, kcb, ic, mb, jc, nb, K, A, rsa, csa, B, rsb, csb, C, ldc, bias, accumulate, bb, ab, ap);
        else
            gemm_naive(ic, mb, jc, nb, K, A, rsa, csa, B, rsb, csb, C, ldc, bias, accumulate);
    }
}

void gpt2c_cpu_linear_gemm(gpt2c_isa isa, gemm_linear_op op, float *C, const float *A, const float *B, int N, int IC,
                     int OC) {
    switch (op) {
    case GEMM_FWD: gpt2c_cpu_gemm(isa, N, OC, IC, A, IC, 1, B, 1, IC, C, OC, NULL, 0); break;
    case GEMM_DINP: gpt2c_cpu_gemm(isa, N, IC, OC, A, OC, 1, B, IC, 1, C, IC, NULL, 0); break;
    case GEMM_DW:
    case GEMM_DW_ACC: gpt2c_cpu_gemm(isa, OC, IC, N, A, 1, OC, B, IC, 1, C, IC, NULL, op == GEMM_DW_ACC); break;
    }
}
