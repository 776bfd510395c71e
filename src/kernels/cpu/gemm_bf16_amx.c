/* The bf16 GEMM on AMX tiles: packing, units and slicing (gemm_bf16_amx.h).
 *
 *   A is packed once per GEMM (all threads, 16-row groups), tile (g, c) =
 *   rows 16g..16g+15, k 32c..32c+31 at pa + (g*nch + c)*256 words; an A of
 *   bf16 rows with K a multiple of 32 is read in place instead (its whole
 *   32-row blocks; the last rows packed).
 *   C is cut into units of whole 32-column groups (all rows); threads take
 *   units.  In a unit, per K block (kc k, in order): its B columns are packed
 *   into tiles (each B element is packed once in the whole GEMM), then for
 *   each 32 columns (B: 2 x kc/32 KiB, L1) for each 32 rows (A from L2):
 *   the 2 x 2 tile micro-kernel over the block.  Edge tiles go through a
 *   32 x 32 buffer.
 *   Packed A larger than PACK_MAX (the LM head's dW: 50304 rows) is not kept
 *   whole: the GEMM runs as GEMMs on slices of rows (B packed again per
 *   slice) or of K (C stored and reloaded exactly between them), whichever
 *   moves fewer bytes; K slices start at multiples of 32, so the sums are
 *   the same either way. */
#include "kernels/cpu/gemm_bf16_amx.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/cpu/bf16_pair_words.h"

static int g_kc = 512;
static size_t g_pack_max = (size_t)32 << 20;

void gpt2c_cpu_gemm_bf16_amx_set_kc(int kc) { g_kc = kc > 0 ? (kc + 31) / 32 * 32 : 512; }
void gpt2c_cpu_gemm_bf16_amx_set_pack_max(size_t bytes) { g_pack_max = bytes ? bytes : (size_t)32 << 20; }

static size_t round_up(size_t a, size_t b) { return (a + b - 1) / b * b; }
static int imin(int a, int b) { return a < b ? a : b; }

static inline uint32_t op_elem16(const gemm_operand *o, size_t i) { return elem16(o->p, i, o->fmt == GPT2C_FMT_BF16); }

/* d[q] (q < nq) = the pair word of elements (i, k0+2q), (i, k0+2q+1) of an
 * operand whose pairs are contiguous (element (i,k) at p[i*si + k]); zero
 * past K (an odd K's last element alone in its word). */
static void row_words(const gemm_bf16_isa_kernel *kk, uint32_t *d, const gemm_operand *o, long si, long i, int k0,
                      int nq, int K) {
    const int left = K - k0 > 0 ? K - k0 : 0, full = imin(left / 2, nq);
    const size_t base = (size_t)i * si + k0;
    if (o->fmt == GPT2C_FMT_BF16)
        memcpy(d, (const uint16_t *)o->p + base, sizeof(uint32_t) * full); /* little-endian: even k low */
    else if (kk && kk->f32_pairs)
        kk->f32_pairs(d, (const float *)o->p + base, full);
    else
        for (int q = 0; q < full; q++) d[q] = op_elem16(o, base + 2 * q) | op_elem16(o, base + 2 * q + 1) << 16;
    int q = full;
    if (q < nq && left > 2 * q) d[q++] = op_elem16(o, base + 2 * full);
    for (; q < nq; q++) d[q] = 0;
}

/* d[r] (r < n) = the pair word of elements (i0+r, k), (i0+r, k+1) of an
 * operand with element (i,k) at p[i*si + k*sk]; k+1 >= K: k alone; k >= K: 0. */
static void col_words(const gemm_bf16_isa_kernel *kk, uint32_t *d, const gemm_operand *o, long si, long sk, long i0,
                      int n, int k, int K) {
    const size_t b0 = (size_t)i0 * si + (size_t)k * sk, b1 = b0 + sk;
    if (k >= K)
        memset(d, 0, sizeof(uint32_t) * n);
    else if (si == 1)
        pair_words(kk, d, o->p, b0, b1, n, k + 1 < K, o->fmt == GPT2C_FMT_BF16);
    else
        for (int r = 0; r < n; r++)
            d[r] = op_elem16(o, b0 + (size_t)r * si) | (k + 1 < K ? op_elem16(o, b1 + (size_t)r * si) << 16 : 0);
}

/* dst[w*16 + r] = src[r*ld + w] (r, w < 16): a 16 x 16 word transpose */
static void transpose16(const gemm_bf16_isa_kernel *kk, uint32_t *dst, const uint32_t *src, long ld) {
    if (kk && kk->pack_words) {
        kk->pack_words((float *)dst, (const float *)src, ld, 16, 16, 16); /* bits moved, never computed on */
        return;
    }
    for (int r = 0; r < 16; r++)
        for (int w = 0; w < 16; w++) dst[w * 16 + r] = src[r * ld + w];
}

enum { LAYOUT_A, LAYOUT_B }; /* tile rows: the operand's i (A), or its pairs (B) */

/* Tiles of an operand (element (i,k) at p[i*si + k*sk]) for i in [i0, i0+n),
 * padded with zero rows to ng groups of 16, and chunks [c0, c0+nc) of 16
 * pairs (zero past K): tile (g, c) at dst + g*gstride + (c-c0)*256 words,
 * A layout tile[r*16 + w] (i = 16g+r, pair 16c+w), B layout tile[w*16 + r].
 * Pairs contiguous (sk == 1): 16 rows' words along k at a time, 16 chunks
 * wide; else a pair's words across 64 rows at a time (one vector call per
 * pair row, not per 16 words), 4 chunks wide. */
static void pack_tiles(const gemm_bf16_isa_kernel *kk, uint32_t *dst, size_t gstride, int layout, const gemm_operand *o,
                       long si, long sk, long i0, int n, int ng, int c0, int nc, int K) {
    enum { RB = 16, RCH = 16, CB = 64, CCH = 4 }; /* rows x chunks per step: row path, column path */
    uint32_t tmp[RB * RCH * 16] __attribute__((aligned(64))); /* = CB * CCH * 16 words */
    if (sk == 1) {
        for (int g = 0; g < ng; g++) {
            const int nv = n - 16 * g < 0 ? 0 : imin(16, n - 16 * g);
            uint32_t *gd = dst + (size_t)g * gstride;
            for (int cb = 0; cb < nc; cb += RCH) {
                const int nb = imin(RCH, nc - cb), nq = 16 * nb;
                for (int r = 0; r < 16; r++) { /* tmp[r*256 + q] */
                    if (r < nv) row_words(kk, tmp + r * 256, o, si, i0 + 16L * g + r, 32 * (c0 + cb), nq, K);
                    else memset(tmp + r * 256, 0, sizeof(uint32_t) * nq);
                }
                for (int c = 0; c < nb; c++) {
                    uint32_t *t = gd + (size_t)(cb + c) * GPT2C_AMX_TILE_WORDS;
                    if (layout == LAYOUT_A)
                        for (int r = 0; r < 16; r++) memcpy(t + r * 16, tmp + r * 256 + c * 16, 64);
                    else
                        transpose16(kk, t, tmp + c * 16, 256);
                }
            }
        }
        return;
    }
    for (int g0 = 0; g0 < ng; g0 += CB / 16) {
        const int gn = imin(CB / 16, ng - g0), nv = n - 16 * g0 < 0 ? 0 : imin(16 * gn, n - 16 * g0);
        for (int cb = 0; cb < nc; cb += CCH) {
            const int nb = imin(CCH, nc - cb), nq = 16 * nb, q0 = 16 * (c0 + cb);
            for (int q = 0; q < nq; q++) { /* tmp[q*64 + r] */
                if (nv) col_words(kk, tmp + q * CB, o, si, sk, i0 + 16L * g0, nv, 2 * (q0 + q), K);
                memset(tmp + q * CB + nv, 0, sizeof(uint32_t) * (CB - nv));
            }
            for (int gg = 0; gg < gn; gg++)
                for (int c = 0; c < nb; c++) {
                    uint32_t *t = dst + (size_t)(g0 + gg) * gstride + (size_t)(cb + c) * GPT2C_AMX_TILE_WORDS;
                    const uint32_t *src = tmp + c * 16 * CB + gg * 16;
                    if (layout == LAYOUT_B)
                        for (int w = 0; w < 16; w++) memcpy(t + w * 16, src + w * CB, 64);
                    else
                        transpose16(kk, t, src, CB);
                }
        }
    }
}

/* Per-thread buffers (kept between calls: no allocation once shapes repeat):
 * the caller's packed A (shared with its workers for the call), a unit's B. */
static _Thread_local float *tl_abuf, *tl_bbuf;
static _Thread_local size_t tl_acap, tl_bcap;

/* Where A's tiles are: rows below `rows_in_place` straight from A's own
 * bf16 rows (rows, rs elements apart), the rest packed (packed: group g of
 * 16 rows from row rows_in_place on at packed + g*nch*256 words). */
typedef struct {
    const uint16_t *rows;
    long rs;
    int rows_in_place;
    const uint32_t *packed;
    int nch;
} a_tiles;

/* One unit: columns [jc, jc+nb) of C, all M rows. */
static void run_unit(const gpt2c_amx_tiles *t, const gemm_bf16_isa_kernel *kk, uint32_t *bbuf, const a_tiles *at,
                     int M, int K, int jc, int nb, const gemm_operand *B, float *C, long ldc, const float *bias,
                     int accumulate) {
    const int kcc = g_kc / GPT2C_AMX_KCHUNK, Mp = (int)round_up((size_t)M, 32), nbp = (int)round_up((size_t)nb, 32);
    const int nch = at->nch;
    t->begin();
    for (int kb = 0; kb < nch; kb += kcc) {
        const int nc = imin(kcc, nch - kb), load_c = accumulate || kb > 0;
        const size_t gs = (size_t)nc * GPT2C_AMX_TILE_WORDS; /* words per 16-column group */
        pack_tiles(kk, bbuf, gs, LAYOUT_B, B, B->cs, B->rs, jc, nb, nbp / 16, kb, nc, K);
        for (int h = 0; h < nbp; h += 32) {
            const uint32_t *b0 = bbuf + (size_t)(h / 16) * gs, *b1 = b0 + gs;
            const float *bi = (!load_c && bias) ? bias + jc + h : NULL;
            for (int i = 0; i < Mp; i += 32) {
                const uint32_t *a0, *a1;
                long lda = 64, astep = GPT2C_AMX_TILE_WORDS;
                if (i < at->rows_in_place) { /* 32 k = 16 words a chunk along the row */
                    a0 = (const uint32_t *)(const void *)(at->rows + (size_t)i * at->rs + (size_t)kb * GPT2C_AMX_KCHUNK);
                    a1 = (const uint32_t *)(const void *)((const uint16_t *)(const void *)a0 + 16 * at->rs);
                    lda = at->rs * (long)sizeof(uint16_t), astep = 16;
                } else {
                    a0 = at->packed + ((size_t)(i - at->rows_in_place) / 16 * nch + kb) * GPT2C_AMX_TILE_WORDS;
                    a1 = a0 + (size_t)nch * GPT2C_AMX_TILE_WORDS;
                }
                float *c = C + (size_t)i * ldc + jc + h;
                const int mr = imin(32, M - i), nr = imin(32, nb - h);
                if (mr == 32 && nr == 32) {
                    t->block(nc, a0, a1, lda, astep, b0, b1, c, ldc, load_c, bi);
                } else { /* edge: through a full tile block */
                    float tmp[32 * 32] __attribute__((aligned(64))), bpad[32];
                    memset(tmp, 0, sizeof tmp);
                    if (load_c)
                        for (int r = 0; r < mr; r++) memcpy(tmp + r * 32, c + (size_t)r * ldc, sizeof(float) * nr);
                    if (bi) {
                        memset(bpad, 0, sizeof bpad);
                        memcpy(bpad, bi, sizeof(float) * nr);
                    }
                    t->block(nc, a0, a1, lda, astep, b0, b1, tmp, 32, load_c, bi ? bpad : NULL);
                    for (int r = 0; r < mr; r++) memcpy(c + (size_t)r * ldc, tmp + r * 32, sizeof(float) * nr);
                }
            }
        }
    }
    t->end();
}

/* A's tiles are loaded in place from its bf16 rows when each row pair is
 * whole words (K a multiple of 32, rows 4-byte aligned), for the rows of
 * whole 32-row blocks (the rest, up to 31 rows, packed). */
static int rows_in_place(const gemm_operand *A, int M, int K) {
    if (A->fmt != GPT2C_FMT_BF16 || A->cs != 1 || K % GPT2C_AMX_KCHUNK || A->rs % 2 || ((uintptr_t)A->p & 3)) return 0;
    return M / 32 * 32;
}

/* The GEMM with packed A kept whole (no slicing). */
static void amx_run(const gpt2c_amx_tiles *t, const gemm_bf16_isa_kernel *kk, int M, int N, int K, gemm_operand A,
                    gemm_operand B, float *C, long ldc, const float *bias, int accumulate) {
    const int nth = omp_in_parallel() ? 1 : omp_get_max_threads();
    const int nch = (int)round_up((size_t)K, 32) / 32, in_place = rows_in_place(&A, M, K);
    const int groups = (int)round_up((size_t)(M - in_place), 32) / 16; /* packed 16-row groups */
    const size_t gsa = (size_t)nch * GPT2C_AMX_TILE_WORDS;
    uint32_t *pa = groups ? (uint32_t *)gpt2c_cpu_grow_buffer(&tl_abuf, &tl_acap, (size_t)groups * gsa) : NULL;
    if (groups && !pa) { /* no memory for packed A: the pair engine (same sums up to the order of a pair's two adds) */
        gpt2c_cpu_gemm_bf16_with(kk, M, N, K, A, B, C, ldc, bias, accumulate);
        return;
    }
#pragma omp parallel for schedule(dynamic, 2) num_threads(nth) if (nth > 1 && groups > 2)
    for (int g = 0; g < groups; g++)
        pack_tiles(kk, pa + (size_t)g * gsa, gsa, LAYOUT_A, &A, A.rs, A.cs, (long)in_place + 16 * g, M - in_place - 16 * g,
                   1, 0, nch, K);
    const a_tiles at = {(const uint16_t *)A.p, A.rs, in_place, pa, nch};
    /* units of whole 32-column groups, about two per thread (A is shared, and
     * each B column packed once, so more units cost nothing but C edges) */
    const int ncu = (int)round_up((size_t)(N + 2 * nth - 1) / (2 * nth), 32);
    const int NCU = ncu < 32 ? 32 : ncu > 256 ? 256 : ncu, units = (N + NCU - 1) / NCU;
    const size_t bwords = (size_t)NCU / 16 * (g_kc / GPT2C_AMX_KCHUNK) * GPT2C_AMX_TILE_WORDS;
#pragma omp parallel for schedule(dynamic, 1) num_threads(imin(units, nth)) if (units > 1 && nth > 1)
    for (int u = 0; u < units; u++) {
        const int jc = u * NCU, nb = imin(NCU, N - jc);
        uint32_t *bb = (uint32_t *)gpt2c_cpu_grow_buffer(&tl_bbuf, &tl_bcap, bwords);
        gemm_operand Bu = B;
        if (bb)
            run_unit(t, kk, bb, &at, M, K, jc, nb, &B, C, ldc, bias, accumulate);
        else { /* no memory for this unit's B: the pair engine on its columns */
            Bu.p = (const char *)B.p + (size_t)jc * B.cs * (B.fmt == GPT2C_FMT_BF16 ? 2 : 4);
            gpt2c_cpu_gemm_bf16_with(kk, M, nb, K, A, Bu, C + jc, ldc, bias ? bias + jc : NULL, accumulate);
        }
    }
}

void gpt2c_cpu_gemm_bf16_amx(const gpt2c_amx_tiles *t, const gemm_bf16_isa_kernel *kk, int M, int N, int K,
                             gemm_operand A, gemm_operand B, float *C, long ldc, const float *bias, int accumulate) {
    if (gpt2c_gemm_trivial(M, N, K, C, ldc, bias, accumulate)) return;
    const size_t Kp = round_up((size_t)K, 32), Mp = round_up((size_t)M, 32);
    const size_t ea = A.fmt == GPT2C_FMT_BF16 ? 2 : 4, eb = B.fmt == GPT2C_FMT_BF16 ? 2 : 4;
    const size_t packed_rows = Mp - (size_t)rows_in_place(&A, M, K); /* A read in place needs no packing */
    if (packed_rows * Kp * 2 <= g_pack_max || (Mp <= 32 && Kp <= 32)) {
        amx_run(t, kk, M, N, K, A, B, C, ldc, bias, accumulate);
        return;
    }
    /* slices: of rows (B packed again per slice) or of K (C read and
     * written again per slice), whichever moves fewer bytes */
    size_t ms = g_pack_max / (Kp * 2) / 32 * 32, ks = g_pack_max / (Mp * 2) / 32 * 32;
    if (ms < 32) ms = 32;
    if (ks < 32) ks = 32;
    const size_t nrs = ((size_t)M + ms - 1) / ms, nks = ((size_t)K + ks - 1) / ks;
    const double row_cost = (double)(nrs - 1) * N * K * eb, k_cost = (double)(nks - 1) * 2.0 * M * N * sizeof(float);
    if (row_cost <= k_cost)
        for (size_t r0 = 0; r0 < (size_t)M; r0 += ms) {
            gemm_operand a = A;
            a.p = (const char *)A.p + r0 * A.rs * ea;
            amx_run(t, kk, (int)((size_t)M - r0 < ms ? (size_t)M - r0 : ms), N, K, a, B, C + r0 * ldc, ldc, bias,
                    accumulate);
        }
    else
        for (size_t k0 = 0; k0 < (size_t)K; k0 += ks) {
            gemm_operand a = A, b = B;
            a.p = (const char *)A.p + k0 * A.cs * ea;
            b.p = (const char *)B.p + k0 * B.rs * eb;
            amx_run(t, kk, M, N, (int)((size_t)K - k0 < ks ? (size_t)K - k0 : ks), a, b, C, ldc, k0 ? NULL : bias,
                    accumulate || k0 > 0);
        }
}

/* A small deterministic pseudo-random value in [-1, 1) */
static float lcg_unit(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

int gpt2c_cpu_gemm_bf16_amx_check(const gpt2c_amx_tiles *t, const gemm_bf16_isa_kernel *kk, double *worst) {
    enum { M = 40, N = 72, K = 200 }; /* edges in every direction, K not a multiple of 32 */
    float *A = malloc(sizeof(float) * M * K), *C = malloc(sizeof(float) * M * N), *R = malloc(sizeof(float) * M * N);
    uint16_t *W = malloc(sizeof(uint16_t) * N * K);
    float bias[N];
    int ok = A && C && R && W;
    if (worst) *worst = 0;
    if (ok) {
        uint64_t s = 12345;
        for (int i = 0; i < M * K; i++) A[i] = lcg_unit(&s);
        for (int i = 0; i < N * K; i++) W[i] = gpt2c_bf16_from_f32(lcg_unit(&s));
        for (int j = 0; j < N; j++) bias[j] = lcg_unit(&s);
        const gemm_operand a = {A, GPT2C_FMT_F32, K, 1}, b = {W, GPT2C_FMT_BF16, 1, K};
        gpt2c_cpu_gemm_bf16_amx(t, kk, M, N, K, a, b, C, N, bias, 0);
        gpt2c_cpu_gemm_bf16_with(&gpt2c_gemm_bf16_kernel_scalar, M, N, K, a, b, R, N, bias, 0);
        for (int i = 0; i < M && ok; i++)
            for (int j = 0; j < N; j++) {
                double sum = fabs(bias[j]);
                for (int k = 0; k < K; k++)
                    sum += fabs((double)gpt2c_bf16_round(A[i * K + k]) * gpt2c_bf16_to_f32(W[(size_t)j * K + k]));
                /* each side within the recursive-sum bound of the exact value */
                const double bound = 2.0 * (K + 2) * 0x1p-24 * sum, e = fabs((double)C[i * N + j] - R[i * N + j]);
                if (!(e <= bound)) ok = 0; /* NaN fails too */
                if (worst && bound > 0 && e / bound > *worst) *worst = e / bound;
            }
    }
    free(A), free(C), free(R), free(W);
    return ok;
}
