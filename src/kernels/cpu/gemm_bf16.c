/* bf16 GEMM driver (see gemm_bf16.h), the same plan as cpu_gemm's:
 *
 *   C is cut into units of <= mc rows x <= nc columns; threads take whole
 *   units (no barriers, no shared buffers).  In a unit, for each K block of
 *   kc (in order):
 *     A's block is packed into MR-row pair panels and B's into NR-column pair
 *     panels (per-thread buffers), rounding fp32 operands to bf16 on the way:
 *     every later read is of half the bytes, in the order the kernel wants;
 *     for each B panel (L1), for each A panel (L2): micro-kernel on the tile.
 *   Edge panels are zero-padded and their C tile goes through a small
 *   buffer, so kernels stay full-size.  Bias is folded into the first K block.
 * The summation order is fixed by the pair arithmetic alone (not by kc, mc,
 * nc or threads), so the blocking is free to be tuned per CPU. */
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_split.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/cpu/bf16_engine.h"
#include "kernels/cpu/bf16_pair_words.h"
#include "kernels/cpu/cpu_caches.h"

#define MR_MAX 6
#define NR_MAX 64
#define MC_STEP 12 /* lcm of every MR */
#define NC_STEP 64 /* lcm of every NR */

static gemm_bf16_blocking g_blocking = {256, 192, 1024};

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static int round_up(int a, int b) { return (a + b - 1) / b * b; }
static int ceil_div(int a, int b) { return (a + b - 1) / b; }
static int imin(int a, int b) { return a < b ? a : b; }

gemm_bf16_blocking gpt2c_cpu_gemm_bf16_get_blocking(void) { return g_blocking; }

gemm_bf16_blocking gpt2c_cpu_gemm_bf16_set_blocking(gemm_bf16_blocking b) {
    b.kc = round_up(clampi(b.kc, 16, 4096), 2);
    b.mc = round_up(clampi(b.mc, MC_STEP, 4096), MC_STEP);
    b.nc = round_up(clampi(b.nc, NC_STEP, 1 << 16), NC_STEP);
    g_blocking = b;
    return b;
}

/* ---- portable kernel: 4 x 16, plain C ---- */
static float hi_f32(uint32_t w) {
    const uint32_t u = w & 0xffff0000u;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static float lo_f32(uint32_t w) {
    const uint32_t u = w << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void kern_scalar_4x16(int kp, const uint32_t *a, const uint32_t *b, float *C, long ldc, int load_c,
                             const float *bias) {
    float c[4][16];
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 16; j++) c[r][j] = load_c ? C[r * ldc + j] : (bias ? bias[j] : 0.0f);
    for (int p = 0; p < kp; p++, a += 4, b += 16) {
        float bh[16], bl[16];
        for (int j = 0; j < 16; j++) bh[j] = hi_f32(b[j]), bl[j] = lo_f32(b[j]);
        for (int r = 0; r < 4; r++) {
            const float ah = hi_f32(a[r]), al = lo_f32(a[r]);
            for (int j = 0; j < 16; j++) {
                c[r][j] += ah * bh[j]; /* exact product: rounding only in the add */
                c[r][j] += al * bl[j];
            }
        }
    }
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 16; j++) C[r * ldc + j] = c[r][j];
}
const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_scalar = {"scalar", 4, 16, kern_scalar_4x16, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

const gemm_bf16_isa_kernel *gpt2c_cpu_gemm_bf16_kernel(gpt2c_isa isa) {
#if defined(__x86_64__) || defined(_M_X64)
    if (isa == GPT2C_ISA_AVX512) /* vdpbf16ps where the CPU has it and it is the faster (bf16_engine.h) */
        return gpt2c_cpu_bf16_use_dp() ? &gpt2c_gemm_bf16_kernel_avx512bf16 : &gpt2c_gemm_bf16_kernel_avx512f;
    if (isa == GPT2C_ISA_AVX2) return &gpt2c_gemm_bf16_kernel_avx2;
#else
    (void)isa;
#endif
    return &gpt2c_gemm_bf16_kernel_scalar;
}

/* ---- packing ---- */

/* dst[q*ds + i] (q < ceil(kc/2), i < n_pad) = the pair word of elements
 * (i0+i, k0+2q) and (i0+i, k0+2q+1), element (i,k) at p[i*si + k*sk]; zero
 * for i >= n and for k >= k0+kc. */
static inline __attribute__((always_inline)) void pack_pairs_t(const gemm_bf16_isa_kernel *kk, uint32_t *restrict dst,
                                                               int ds, const void *p, long si, long sk, long i0, int n,
                                                               int n_pad, int k0, int kc, const int bf) {
    const int kq = kc / 2, odd = kc & 1;
    if (sk == 1 && !bf && ds == 6 && n <= 6 && kk->f32_pairs && kk->pack_words) {
        /* fp32 rows into a 6-row A panel: each row's pair words contiguously
         * into tmp (vector rounding), then the vector 6-row word transpose
         * (pack_words) instead of a scalar store every 6 words; the same words */
        enum { QB = 512 };
        uint32_t tmp[6 * QB];
        const int kp = kq + odd;
        for (int q0 = 0; q0 < kp; q0 += QB) {
            const int nq = kp - q0 < QB ? kp - q0 : QB, full = q0 + nq <= kq ? nq : kq - q0;
            for (int i = 0; i < n; i++) {
                const size_t base = (size_t)(i0 + i) * si + k0;
                kk->f32_pairs(tmp + i * QB, (const float *)p + base + 2 * q0, full);
                if (full < nq) tmp[i * QB + full] = elem16(p, base + 2 * kq, 0); /* odd K: the last k alone */
            }
            kk->pack_words((float *)(dst + (size_t)q0 * 6), (const float *)tmp, QB, n, nq, 6);
        }
        return;
    }
    if (sk == 1) { /* pairs contiguous: row by row */
        for (int i = 0; i < n; i++) {
            const size_t base = (size_t)(i0 + i) * si + k0;
            uint32_t *d = dst + i;
            if (bf) {
                const uint16_t *s = (const uint16_t *)p + base;
                for (int q = 0; q < kq; q++) {
                    uint32_t w;
                    memcpy(&w, s + 2 * q, 4); /* little-endian: k even in the low half */
                    d[(size_t)q * ds] = w;
                }
            } else { /* convert the row contiguously (vectorises), then interleave */
                const float *s = (const float *)p + base;
                uint32_t tmp[2048];
                for (int q0 = 0; q0 < kq; q0 += 2048) {
                    const int nq = kq - q0 < 2048 ? kq - q0 : 2048;
                    if (kk->f32_pairs)
                        kk->f32_pairs(tmp, s + 2 * q0, nq);
                    else
                        for (int q = 0; q < nq; q++)
                            tmp[q] = gpt2c_bf16_from_f32(s[2 * (q0 + q)]) | gpt2c_bf16_f32_bits(s[2 * (q0 + q) + 1]);
                    for (int q = 0; q < nq; q++) d[(size_t)(q0 + q) * ds] = tmp[q];
                }
            }
            if (odd) d[(size_t)kq * ds] = elem16(p, base + 2 * kq, bf);
        }
    } else { /* two rows of k at a time, along i */
        for (int q = 0; q < kq; q++) {
            const size_t b0 = (size_t)(k0 + 2 * q) * sk + i0 * si, b1 = b0 + sk;
            uint32_t *restrict d = dst + (size_t)q * ds;
            if (si == 1)
                for (int i = 0; i < n; i++) d[i] = elem16(p, b0 + i, bf) | elem16(p, b1 + i, bf) << 16;
            else
                for (int i = 0; i < n; i++) d[i] = elem16(p, b0 + i * si, bf) | elem16(p, b1 + i * si, bf) << 16;
        }
        if (odd) {
            const size_t b0 = (size_t)(k0 + 2 * kq) * sk + i0 * si;
            for (int i = 0; i < n; i++) dst[(size_t)kq * ds + i] = elem16(p, b0 + i * si, bf);
        }
    }
    for (int q = 0; q < (kc + 1) / 2; q++)
        for (int i = n; i < n_pad; i++) dst[(size_t)q * ds + i] = 0;
}

enum { COLS_TMP = 4096 + 16 }; /* words: a row pair of a unit's rows (mc <= 4096) */

/* A whole block whose columns i are contiguous (element (i,k) at
 * p[i + k*sk]: W in dinp, X and dout^T in dweight) into ceil(n/P) panels of
 * P columns, dst[(i/P)*P*kp + q*P + i%P] (kp = ceil(kc/2) pair rows per
 * panel), zero-padded.  Row pair by row pair across all panels, so each
 * source row is read once, front to back (panel by panel, a new pair of rows
 * every P columns defeated the prefetchers: a third of the GEMM's time). */
static inline __attribute__((always_inline)) void pack_pairs_cols_t(const gemm_bf16_isa_kernel *kk, uint32_t *restrict dst,
                                                                    int P, const void *p, long sk, long i0, int n, int k0,
                                                                    int kc, const int bf) {
    const int kq = kc / 2, kp = (kc + 1) / 2, npan = (n + P - 1) / P;
    if (P < 16 && npan * P <= COLS_TMP && ((!bf && kk->f32_2rows) || (bf && kk->bf16_2rows))) {
        /* narrow panels (A's MR = 6): one vector call interleaves the whole
         * row pair into tmp, then each panel takes its P words (a call per
         * 6 words was ~7% of a bf16 training step); the same words */
        uint32_t tmp[COLS_TMP];
        for (int q = 0; q < kp; q++) {
            const size_t b0 = (size_t)(k0 + 2 * q) * sk + i0, b1 = b0 + sk;
            pair_words(kk, tmp, p, b0, b1, n, q < kq, bf);
            for (int i = n; i < npan * P; i++) tmp[i] = 0;
            uint32_t *d = dst + (size_t)q * P;
            if (P == 6) /* a constant size: three 8-byte moves, no memcpy call */
                for (int pan = 0; pan < npan; pan++) memcpy(d + (size_t)pan * 6 * kp, tmp + pan * 6, sizeof(uint32_t) * 6);
            else
                for (int pan = 0; pan < npan; pan++) memcpy(d + (size_t)pan * P * kp, tmp + pan * P, sizeof(uint32_t) * P);
        }
        return;
    }
    for (int q = 0; q < kp; q++) {
        const size_t b0 = (size_t)(k0 + 2 * q) * sk + i0, b1 = b0 + sk;
        const int pair = q < kq;
        for (int pan = 0; pan < npan; pan++) {
            uint32_t *restrict d = dst + (size_t)pan * P * kp + (size_t)q * P;
            const int lo = pan * P, m = n - lo < P ? n - lo : P;
            pair_words(kk, d, p, b0 + lo, b1 + lo, m, pair, bf);
            for (int i = m; i < P; i++) d[i] = 0;
        }
    }
}

static void pack_block(const gemm_bf16_isa_kernel *kk, uint32_t *dst, int P, const gemm_operand *o, long si, long sk, long i0,
                       int n, int k0, int kc);

static void pack_pairs(const gemm_bf16_isa_kernel *kk, uint32_t *dst, int ds, const gemm_operand *o, long si, long sk,
                       long i0, int n, int n_pad, int k0, int kc) {
    const uint16_t *wsrc = (const uint16_t *)o->p + (size_t)i0 * si + k0;
    if (kk->pack_words && o->fmt == GPT2C_FMT_BF16 && sk == 1 && si % 2 == 0 && kc % 2 == 0 && ((uintptr_t)wsrc & 3) == 0)
        kk->pack_words((float *)dst, (const float *)wsrc, si / 2, n, kc / 2, ds); /* words moved, never computed on */
    else if (o->fmt == GPT2C_FMT_BF16)
        pack_pairs_t(kk, dst, ds, o->p, si, sk, i0, n, n_pad, k0, kc, 1);
    else
        pack_pairs_t(kk, dst, ds, o->p, si, sk, i0, n, n_pad, k0, kc, 0);
}

/* The unit's whole block of an operand into P-wide panels (P = MR for A, NR for B). */
static void pack_block(const gemm_bf16_isa_kernel *kk, uint32_t *dst, int P, const gemm_operand *o, long si, long sk, long i0,
                       int n, int k0, int kc) {
    const int kp = (kc + 1) / 2;
    if (si == 1 && sk != 1) {
        if (o->fmt == GPT2C_FMT_BF16) pack_pairs_cols_t(kk, dst, P, o->p, sk, i0, n, k0, kc, 1);
        else pack_pairs_cols_t(kk, dst, P, o->p, sk, i0, n, k0, kc, 0);
        return;
    }
    for (int r = 0; r < n; r += P)
        pack_pairs(kk, dst + (size_t)r * kp, P, o, si, sk, i0 + r, n - r < P ? n - r : P, P, k0, kc);
}

/* fp32 panels (gemm_bf16.h, `fp32`): each of `rows` packed rows of P pair words
 * (panels are runs of kp such rows) becomes two rows of P floats, 2s the
 * high halves and 2s+1 the low halves, in place from the last row back (row
 * s's words are read before rows 2s, 2s+1 are written; rows below s are
 * untouched).  The floats are stored by memcpy, so the buffer holds floats
 * for the fp32 kernel that reads it. */
static inline __attribute__((always_inline)) void expand_rows_p(uint32_t *buf, long rows, const int P) {
    for (long s = rows - 1; s >= 0; s--) {
        uint32_t w[NR_MAX], h[NR_MAX], l[NR_MAX];
        float fh[NR_MAX], fl[NR_MAX];
        memcpy(w, buf + s * P, sizeof(uint32_t) * P);
        for (int j = 0; j < P; j++) h[j] = w[j] & 0xffff0000u, l[j] = w[j] << 16;
        memcpy(fh, h, sizeof(float) * P);
        memcpy(fl, l, sizeof(float) * P);
        memcpy(buf + 2 * s * P, fh, sizeof(float) * P);
        memcpy(buf + (2 * s + 1) * P, fl, sizeof(float) * P);
    }
}
static void expand_rows(uint32_t *buf, long rows, int P) {
    switch (P) { /* a constant width per call: vector moves, no memcpy calls */
    case 6: expand_rows_p(buf, rows, 6); break;
    case 16: expand_rows_p(buf, rows, 16); break;
    case 64: expand_rows_p(buf, rows, 64); break;
    default: expand_rows_p(buf, rows, P); break;
    }
}

/* pack_block, then for fp32-panel kernels the expansion (the block then
 * takes twice the words: panel i/P at dst + (i/P)*P*kp*2) */
static void pack_panels(const gemm_bf16_isa_kernel *kk, uint32_t *dst, int P, const gemm_operand *o, long si, long sk,
                        long i0, int n, int k0, int kc) {
    pack_block(kk, dst, P, o, si, sk, i0, n, k0, kc);
    if (kk->fp32) {
        const long rows = (long)(n + P - 1) / P * ((kc + 1) / 2);
        if (!kk->expand || !kk->expand(dst, rows, P)) expand_rows(dst, rows, P);
    }
}

/* Per-thread pack buffers, grown when the blocking asks for more (kept: no
 * allocation in later steps). */
static _Thread_local uint32_t *tl_abuf, *tl_bbuf;
static _Thread_local size_t tl_acap, tl_bcap;
/* The calling thread's buffers for operands packed once per GEMM (shared
 * with its workers for that call; kept between calls, at most PREPACK_MAX). */
static _Thread_local uint32_t *tl_pabuf, *tl_pbbuf;
static _Thread_local size_t tl_pacap, tl_pbcap;
static size_t g_prepack_max = (size_t)16 << 20; /* bytes per operand */
#define PREPACK_MAX g_prepack_max
void gpt2c_cpu_gemm_bf16_set_prepack_max(size_t bytes) { g_prepack_max = bytes ? bytes : (size_t)16 << 20; }

static uint32_t *grow(uint32_t **buf, size_t *cap, size_t words) {
    if (*cap >= words) return *buf;
    free(*buf);
    *buf = aligned_alloc(64, round_up((int)(words * 4), 64));
    *cap = *buf ? words : 0;
    return *buf;
}

/* An operand packed once for the whole GEMM (see prepack): K block b's
 * panels at p + b*stride, stride = kpmax * (rows padded to the panel width),
 * panel j/P of the block at + j*kp (pstride 0); or B given already in
 * panels spanning all of K (gpt2c_cpu_gemm_bf16_paneled_b): panel j/NR at
 * p + (j/NR)*pstride, K block b's pair rows in it from b*stride (kpmax*NR). */
typedef struct {
    const uint32_t *p;
    size_t stride, pstride;
} prepacked;

/* Walks the cache lines of an operand's source block (element (i,k) at
 * p[i*si + k*sk], i in [i0, i0+n), k in [k0, k0+kc)) as a list of runs
 * (rows of k when sk == 1, else rows of i), to prefetch it into L2 a few
 * lines at a time while the micro-kernels compute. */
static line_walk walk_block(const gemm_operand *o, long si, long sk, long i0, int n, int k0, int kc) {
    const int esz = o->fmt == GPT2C_FMT_BF16 ? 2 : 4;
    line_walk w = {0, 0, 0, 0, 0, 0};
    if (n <= 0 || kc <= 0) return w;
    w.base = (const char *)o->p + ((size_t)i0 * si + (size_t)k0 * sk) * esz;
    if (sk == 1) w.stride = si * esz, w.runs = n, w.len = kc * esz;
    else if (si == 1) w.stride = sk * esz, w.runs = kc, w.len = n * esz;
    return w; /* other strides: nothing (runs 0) */
}

/* A given as fp32 rows in kernel order (gpt2c_cpu_gemm_bf16_swapped_a): row
 * i at p + i*ld; p NULL when A is an operand to pack. */
typedef struct {
    const float *p;
    long ld;
} swapped_rows;

/* One MR x NR tile: the fp32 kernel on fp32 panels (2*kp steps of k) where
 * the ISA kernel names one, A at ap with row / column strides (ars, acs) in
 * floats (packed panels: 1, MR; swapped rows read in place: ld, 1); else the
 * pair kernel, on packed panels only. */
static inline void run_tile(const gemm_bf16_isa_kernel *kk, int kp, const uint32_t *ap, long ars, long acs,
                            const uint32_t *bp, float *c, long ldc, int load_c, const float *bias) {
    if (kk->fp32)
        kk->fp32->kern(2 * kp, (const float *)ap, ars, acs, (const float *)bp, kk->fp32->nr, c, ldc, load_c, bias);
    else
        kk->kern(kp, ap, bp, c, ldc, load_c, bias);
}

static void gemm_unit(const gemm_bf16_isa_kernel *kk, int kcmax, int ic, int mb, int jc, int nb, int K,
                      const gemm_operand *A, swapped_rows xa, const gemm_operand *B, float *C, long ldc,
                      const float *bias, int accumulate, uint32_t *abuf0, uint32_t *bbuf0, prepacked pa,
                      prepacked pb) {
    const int MR = kk->mr, NR = kk->nr, xw = gpt2c_gemm_bf16_words_per_pair(kk);
    for (int pc = 0; pc < K; pc += kcmax) {
        const int kc = K - pc < kcmax ? K - pc : kcmax, kp = (kc + 1) / 2;
        const size_t kpw = (size_t)kp * xw; /* words per panel column */
        const int load_c = accumulate || pc > 0;
        const uint32_t *abuf = abuf0, *bbuf = bbuf0;
        uint64_t t0 = gemm_split_t0();
        if (xa.p) { /* in place; only the edge rows (fewer than MR) into a zero-padded panel */
            const int r0 = mb / MR * MR;
            if (r0 < mb)
                gpt2c_cpu_gemm_pack_a_panel((float *)abuf0, xa.p + (size_t)(ic + r0) * xa.ld + pc, xa.ld, 1, mb - r0,
                                            2 * kp, MR);
        } else if (pa.p) {
            abuf = pa.p + (size_t)(pc / kcmax) * pa.stride + (size_t)ic * kpw;
        } else {
            pack_panels(kk, abuf0, MR, A, A->rs, A->cs, ic, mb, pc, kc);
        }
        if (pb.p) bbuf = pb.p + (size_t)(pc / kcmax) * pb.stride + (pb.pstride ? (size_t)(jc / NR) * pb.pstride : (size_t)jc * kpw);
        /* else B is packed panel by panel into bbuf0, each just before its
         * tiles, while the next panel's source is prefetched into L2 across
         * them (packing the whole block first streamed it from memory with
         * the cores idle, then read it back from L3) */
        if (!pb.p) pack_panels(kk, bbuf0, NR, B, B->cs, B->rs, jc, nb < NR ? nb : NR, pc, kc);
        gemm_split_end(GEMM_SPLIT_PACK, t0);
        const int ntiles = (mb + MR - 1) / MR;
        for (int jr = 0; jr < nb; jr += NR) {
            const int nr = nb - jr < NR ? nb - jr : NR;
            const size_t pan = pb.pstride ? pb.pstride : (size_t)NR * kpw; /* words from a B panel to the next */
            const uint32_t *bp = pb.p ? bbuf + (size_t)(jr / NR) * pan : bbuf0;
            const float *bi = (!load_c && bias) ? bias + jc + jr : NULL;
            int per = 0;
            line_walk next = {0, 0, 0, 0, 0, 0};
            if (pb.pstride) { /* B in memory, its panels read in place: the next one into L2 meanwhile */
                const int last = jr + NR >= nb; /* then the next K block's first panel */
                const uint32_t *np = !last ? bp + pan : pc + kc < K ? bbuf + pb.stride : NULL;
                const int nkp = !last ? kp : (imin(K - pc - kc, kcmax) + 1) / 2;
                if (np) next = (line_walk){(const char *)np, 0, 1, (int)sizeof(uint32_t) * NR * nkp, 0, 0};
            } else if (!pb.p && jr + NR < nb) {
                next = walk_block(B, B->cs, B->rs, jc + jr + NR, nb - jr - NR < NR ? nb - jr - NR : NR, pc, kc);
            } else if (!pb.p && pc + kc < K) {
                /* the last panel: the next K block's first one, packed cold
                 * before (the LM head's dinp at B*T = 256: 33 K blocks of 6
                 * panels per unit; Zen 4, alternated calls, 1.02-1.04x) */
                const int kn = K - pc - kc < kcmax ? K - pc - kc : kcmax;
                next = walk_block(B, B->cs, B->rs, jc, nb < NR ? nb : NR, pc + kc, kn);
            }
            if (next.runs) per = (int)(((long)next.runs * ((next.len + 127) / 64) + ntiles - 1) / ntiles);
            t0 = gemm_split_t0();
            for (int ir = 0; ir < mb; ir += MR) {
                if (per) walk_prefetch(&next, per);
                const int mr = mb - ir < MR ? mb - ir : MR;
                const uint32_t *ap = abuf + (size_t)ir * kpw;
                long ars = 1, acs = MR;
                if (xa.p && mr == MR)
                    ap = (const uint32_t *)(const void *)(xa.p + (size_t)(ic + ir) * xa.ld + pc), ars = xa.ld, acs = 1;
                else if (xa.p) /* the edge panel */
                    ap = abuf0;
                float *c = C + (size_t)(ic + ir) * ldc + jc + jr;
                if (ir + MR < mb) /* the next tile's C is loaded, or written over, first thing: fetch it now (its
                                   * rows only: the unit's next rows can be another unit's, being written) */
                    for (int r = 0; r < MR && ir + MR + r < mb; r++)
                        for (int j = 0; j < nr; j += 16) __builtin_prefetch(c + (size_t)(MR + r) * ldc + j, 1);
                if (mr == MR && nr == NR) {
                    run_tile(kk, kp, ap, ars, acs, bp, c, ldc, load_c, bi);
                } else if (nr == NR && kk->kern_rows && !xa.p) { /* the unit's last rows */
                    kk->kern_rows(mr, kp, ap, bp, c, ldc, load_c, bi);
                } else { /* edge tile: through a full-size buffer */
                    float tmp[MR_MAX * NR_MAX] __attribute__((aligned(64)));
                    float bpad[NR_MAX] __attribute__((aligned(64)));
                    if (load_c)
                        for (int r = 0; r < mr; r++) memcpy(tmp + r * NR, c + (size_t)r * ldc, sizeof(float) * nr);
                    if (bi) {
                        memset(bpad, 0, sizeof bpad);
                        memcpy(bpad, bi, sizeof(float) * nr);
                    }
                    run_tile(kk, kp, ap, ars, acs, bp, tmp, NR, load_c, bi ? bpad : NULL);
                    for (int r = 0; r < mr; r++) memcpy(c + (size_t)r * ldc, tmp + r * NR, sizeof(float) * nr);
                }
            }
            gemm_split_end(GEMM_SPLIT_KERNEL, t0);
            t0 = gemm_split_t0();
            if (!pb.p && jr + NR < nb) /* the next panel, its source now in L2 */
                pack_panels(kk, bbuf0, NR, B, B->cs, B->rs, jc + jr + NR, nb - jr - NR < NR ? nb - jr - NR : NR, pc, kc);
            gemm_split_end(GEMM_SPLIT_PACK, t0);
        }
    }
}

/* Element (k, j) of B as bf16 bits: from its operand, or (bq->p) from its
 * panels of width nr (gpt2c_cpu_gemm_bf16_paneled_b) */
static uint16_t b_elem(const gemm_operand *B, const prepacked *bq, int nr, int k, int j) {
    if (!bq->p) return elem16(B->p, (size_t)k * B->rs + (size_t)j * B->cs, B->fmt == GPT2C_FMT_BF16);
    const uint32_t w = bq->p[(size_t)(j / nr) * bq->pstride + (size_t)(k / 2) * nr + j % nr];
    return (uint16_t)(k % 2 ? w >> 16 : w);
}

/* Unpacked fallback (same arithmetic), only if a pack buffer cannot be
 * allocated; B from its operand, or (bq->p) from its panels of width nr. */
static void gemm_naive(int ic, int mb, int jc, int nb, int K, const gemm_operand *A, const gemm_operand *B,
                       const prepacked *bq, int nr, float *C, long ldc, const float *bias, int accumulate) {
    const int abf = A->fmt == GPT2C_FMT_BF16;
    for (int i = ic; i < ic + mb; i++)
        for (int j = jc; j < jc + nb; j++) {
            float acc = accumulate ? C[(size_t)i * ldc + j] : (bias ? bias[j] : 0.0f);
            for (int k = 0; k < K; k += 2) {
                if (k + 1 < K)
                    acc += gpt2c_bf16_to_f32(elem16(A->p, (size_t)i * A->rs + (size_t)(k + 1) * A->cs, abf)) *
                           gpt2c_bf16_to_f32(b_elem(B, bq, nr, k + 1, j));
                acc += gpt2c_bf16_to_f32(elem16(A->p, (size_t)i * A->rs + (size_t)k * A->cs, abf)) *
                       gpt2c_bf16_to_f32(b_elem(B, bq, nr, k, j));
            }
            C[(size_t)i * ldc + j] = acc;
        }
}

/* The same with A as swapped rows (value (i,k) at xa.p[i*ld + (k^1)]). */
static void gemm_naive_swapped(int ic, int mb, int jc, int nb, int K, swapped_rows xa, const gemm_operand *B,
                               float *C, long ldc, const float *bias, int accumulate) {
    const int bbf = B->fmt == GPT2C_FMT_BF16;
    for (int i = ic; i < ic + mb; i++)
        for (int j = jc; j < jc + nb; j++) {
            const float *x = xa.p + (size_t)i * xa.ld;
            float acc = accumulate ? C[(size_t)i * ldc + j] : (bias ? bias[j] : 0.0f);
            for (int k = 0; k < K; k += 2) {
                if (k + 1 < K)
                    acc += x[k] * gpt2c_bf16_to_f32(elem16(B->p, (size_t)(k + 1) * B->rs + (size_t)j * B->cs, bbf));
                acc += x[k + 1] * gpt2c_bf16_to_f32(elem16(B->p, (size_t)k * B->rs + (size_t)j * B->cs, bbf));
            }
            C[(size_t)i * ldc + j] = acc;
        }
}

/* The GEMM with A packed from its operand, or (xa.p) read in place; B
 * packed from its operand, or (bq.p) read in place from panels spanning K
 * (bq.pstride words apart; B's operand then unused). */
static void gemm_bf16_run(const gemm_bf16_isa_kernel *kk, int M, int N, int K, gemm_operand A, swapped_rows xa,
                          gemm_operand B, prepacked bq, float *C, long ldc, const float *bias, int accumulate) {
    if (gpt2c_gemm_trivial(M, N, K, C, ldc, bias, accumulate)) return;
    const gemm_bf16_blocking bl = g_blocking;
    const int MR = kk->mr, NR = kk->nr, xw = gpt2c_gemm_bf16_words_per_pair(kk);
    const int nth = omp_in_parallel() ? 1 : omp_get_max_threads();
    /* One K block where two would each take C through memory: C larger than
     * the last-level cache (the LM head's weight gradient at B*T = 1024: 154
     * MB) and K at most twice kc run the whole of K at once, in units of
     * fewer rows (A's block then no larger than under the tuned blocking,
     * with room for B's longer panels).  Zen 4, that GEMM: 0.955-0.96x the
     * time (C read back and written again once less); with C in cache (the
     * other weight gradients at N=1024) no gain, so not there.  The same
     * sums: C is stored and reloaded exactly between K blocks. */
    int kc = bl.kc, mc = bl.mc;
    if (K > kc && K <= 2 * kc && !xa.p) {
        const long l3 = gpt2c_cpu_caches()->l3 > 0 ? gpt2c_cpu_caches()->l3 : 32L << 20;
        if ((double)M * N * sizeof(float) > (double)l3) {
            mc = (int)((long)mc * kc / (2L * K)) / MC_STEP * MC_STEP;
            if (mc < MC_STEP) mc = MC_STEP;
            kc = K;
        }
    }
    int cg = ceil_div(N, bl.nc), rc = ceil_div(M, mc);
    /* units: their count a multiple of the threads where it can be (any split gives the same numbers) */
    if (nth > 1 && (cg * rc) % nth) { /* e.g. the LM head: 25 units on 2 threads ran 13 + 12 */
        if (round_up(cg, nth) <= ceil_div(N, NR))
            cg = round_up(cg, nth);
        else if (round_up(rc, nth) <= ceil_div(M, MR))
            rc = round_up(rc, nth);
    }
    /* Rows in as many groups as threads, within 1.5 mc, and C at least four
     * times wider than tall (B*T = 256 rows under mc 180 on 2 threads: the
     * T=64 step's forward GEMMs into 2304, 3072 and 50304 columns, and the
     * MLP projection's dinp): one row group, the columns cut instead.  Row
     * units each packed all of the B their columns need (W^T in the forward,
     * W's row pairs in dinp: 77 MB of wte for the LM head's forward); column
     * units pack their own share of it once, and each its own copy of A (all
     * rows, small beside B here).  Not the shared copy of A packed once for
     * all units: on the Zen 4 host, in the phases when data written by one
     * core and read by the other is slow (the vCPUs apart?), reading it ran
     * ~8% below the row cut; each unit's own A holds up there.  Measured
     * over minutes (both phases), medians of alternated calls, 2 threads:
     * fc forward 412 against 388 GFLOP/s, qkv 411/398, LM head 416/405, the
     * MLP projection's dinp 402/373.  For narrower C (768 columns: every
     * other dinp, the projections' forward) A is about as large as B, and in
     * dinp converted from fp32: no gain there (fc dinp 329 against 341). */
    const int cut_cols = nth > 1 && rc == nth && 2 * round_up(M, MR) <= 3 * mc && N >= 4 * M &&
                         round_up(cg, nth) <= ceil_div(N, NR);
    if (cut_cols) cg = round_up(cg, nth), rc = 1;
    /* rows per unit: whole tiles, or an even split where the kernel runs a
     * unit's last rows at their own cost (kern_rows) and no A packed once
     * for all units has to line up with its panels (the shared A below) */
    const int even_rows = kk->kern_rows && (xa.p || cg == 1 || cut_cols);
    const int NCU = round_up(ceil_div(N, cg), NR), MCU = even_rows ? ceil_div(M, rc) : round_up(ceil_div(M, rc), MR);
    cg = ceil_div(N, NCU);
    rc = ceil_div(M, MCU);
    const int units = cg * rc, kcmax = K < kc ? K : kc, kpmax = (kcmax + 1) / 2;
    /* An operand that several units would each pack again (A when C is cut
     * into several column groups, but for the column cut above; B when into
     * three or more row groups: B =
     * X in dweight was packed once per 384 rows of dW) is packed once, by all
     * threads, before the units run.  Not B for two row groups (measured at
     * B*T = 256 rows on 2 threads, before those became one row group, above):
     * there each unit packing its own B panels into its L2-resident buffer,
     * the next panel's source prefetched, ran 1.03-1.05x faster than reading
     * the shared prepacked copy on Zen 4, and up to 1.35x while the machine's
     * shared cache was contended; from three row groups on, packing once wins. */
    const int share_b = rc > 2 && !bq.p;
    const int nblk = ceil_div(K, kcmax), Mp = round_up(M, MR), Np = round_up(N, NR);
    /* An operand to pack once that is too large for it (A of the LM head's
     * dinp: B*T x 50304): the GEMM runs as a sequence of GEMMs over slices
     * of K (whole K blocks, even: pairs stay whole) whose packed operand
     * fits, accumulating into C, which is stored and reloaded exactly between
     * them (the same sums; each unit packing all of A again cost ~10%). */
    const size_t ablk = (size_t)kpmax * Mp * 4 * xw, bblk = (size_t)kpmax * Np * 4 * xw;
    /* B read in place from its panels by three or more row groups (each
     * reads all of it) and larger than PREPACK_MAX (wte's in the LM head's
     * dinp: 77 MB): sliced over K the same way, so that the row groups read
     * a slice the size of a packed one, from the last-level cache, not all
     * of B from memory each */
    const int big_a = !xa.p && cg > 1 && !cut_cols && (size_t)nblk * ablk > PREPACK_MAX,
              big_b = (share_b || (bq.p && rc > 2)) && (size_t)nblk * bblk > PREPACK_MAX;
    if ((big_a || big_b) && nblk > 1) {
        const size_t per = (big_a && big_b) ? (ablk > bblk ? ablk : bblk) : big_a ? ablk : bblk;
        const int sb = PREPACK_MAX / per > 1 ? (int)(PREPACK_MAX / per) : 1, ks = sb * kcmax;
        if (sb < nblk) {
            const size_t ea = A.fmt == GPT2C_FMT_BF16 ? 2 : 4, eb = B.fmt == GPT2C_FMT_BF16 ? 2 : 4;
            for (int k0 = 0; k0 < K; k0 += ks) {
                gemm_operand a = A, b = B;
                swapped_rows x = xa;
                prepacked q = bq;
                if (xa.p) x.p += k0; /* k0 even: whole pairs */
                else a.p = (const char *)A.p + (size_t)k0 * A.cs * ea;
                if (bq.p) q.p += (size_t)k0 / 2 * NR;
                else b.p = (const char *)B.p + (size_t)k0 * B.rs * eb;
                gemm_bf16_run(kk, M, N, K - k0 < ks ? K - k0 : ks, a, x, b, q, C, ldc, k0 ? NULL : bias, accumulate || k0 > 0);
            }
            return;
        }
    }
    prepacked pa = {NULL, (size_t)kpmax * Mp * xw, 0}, pb = {NULL, (size_t)kpmax * Np * xw, 0};
    uint32_t *pab = NULL, *pbb = NULL;
    if (!xa.p && cg > 1 && !cut_cols && (size_t)nblk * pa.stride * 4 <= PREPACK_MAX) pab = grow(&tl_pabuf, &tl_pacap, (size_t)nblk * pa.stride);
    if (share_b && (size_t)nblk * pb.stride * 4 <= PREPACK_MAX) pbb = grow(&tl_pbbuf, &tl_pbcap, (size_t)nblk * pb.stride);
    if (pab || pbb) {
        /* chunks of panels, several per thread (one chunk per unit left a
         * thread idle when the whole of A was one unit's rows) */
        const int AC = nth > 1 ? imin(MCU, round_up(ceil_div(M, 4 * nth), MR)) : MCU;
        const int BC = nth > 1 ? imin(NCU, round_up(ceil_div(N, 4 * nth), NR)) : NCU;
        const int ach = pab ? ceil_div(M, AC) : 0, bch = pbb ? ceil_div(N, BC) : 0, tasks = nblk * (ach + bch);
#pragma omp parallel for schedule(dynamic, 1) num_threads(tasks < nth ? tasks : nth) if (tasks > 1 && nth > 1)
        for (int t = 0; t < tasks; t++) {
            const uint64_t t0 = gemm_split_t0();
            const int b = t / (ach + bch), c = t % (ach + bch), pc = b * kcmax;
            const int kc = K - pc < kcmax ? K - pc : kcmax, kp = (kc + 1) / 2;
            if (c < ach) {
                const int i0 = c * AC, n = M - i0 < AC ? M - i0 : AC;
                pack_panels(kk, pab + (size_t)b * pa.stride + (size_t)i0 * kp * xw, MR, &A, A.rs, A.cs, i0, n, pc, kc);
            } else {
                const int j0 = (c - ach) * BC, n = N - j0 < BC ? N - j0 : BC;
                pack_panels(kk, pbb + (size_t)b * pb.stride + (size_t)j0 * kp * xw, NR, &B, B.cs, B.rs, j0, n, pc, kc);
            }
            gemm_split_end(GEMM_SPLIT_PACK, t0);
        }
    }
    pa.p = pab;
    pb.p = pbb;
    if (bq.p) pb = (prepacked){bq.p, (size_t)kpmax * NR, bq.pstride};
#pragma omp parallel for schedule(dynamic, 1) num_threads(units < nth ? units : nth) if (units > 1 && nth > 1)
    for (int u = 0; u < units; u++) {
        const int ic = (u % rc) * MCU, jc = (u / rc) * NCU;
        const int mb = M - ic < MCU ? M - ic : MCU, nb = N - jc < NCU ? N - jc : NCU;
        uint32_t *ab = grow(&tl_abuf, &tl_acap, (size_t)kpmax * (xa.p ? MR : round_up(MCU, MR)) * xw); /* swapped rows: the edge panel */
        uint32_t *bb = bq.p ? NULL : grow(&tl_bbuf, &tl_bcap, (size_t)kpmax * NCU * xw); /* paneled: none */
        if (ab && (bb || bq.p))
            gemm_unit(kk, kcmax, ic, mb, jc, nb, K, &A, xa, &B, C, ldc, bias, accumulate, ab, bb, pa, pb);
        else if (xa.p)
            gemm_naive_swapped(ic, mb, jc, nb, K, xa, &B, C, ldc, bias, accumulate);
        else
            gemm_naive(ic, mb, jc, nb, K, &A, &B, &bq, NR, C, ldc, bias, accumulate);
    }
}

void gpt2c_cpu_gemm_bf16_with(const gemm_bf16_isa_kernel *kk, int M, int N, int K, gemm_operand A, gemm_operand B, float *C,
                        long ldc, const float *bias, int accumulate) {
    gemm_bf16_run(kk, M, N, K, A, (swapped_rows){NULL, 0}, B, (prepacked){NULL, 0, 0}, C, ldc, bias, accumulate);
}

void gpt2c_cpu_gemm_bf16_swapped_a(const gemm_bf16_isa_kernel *kk, int M, int N, int K, const float *xa, long lda,
                                   gemm_operand B, float *C, long ldc, const float *bias, int accumulate) {
    const swapped_rows x = {xa, lda};
    if (!kk->fp32 && M > 0 && N > 0 && K > 0) { /* the pair kernels take packed panels only: the unpacked loop (same sums) */
        gemm_naive_swapped(0, M, 0, N, K, x, &B, C, ldc, bias, accumulate);
        return;
    }
    const gemm_operand none = {NULL, GPT2C_FMT_F32, 0, 0}; /* (not read: A is x) */
    gemm_bf16_run(kk, M, N, K, none, x, B, (prepacked){NULL, 0, 0}, C, ldc, bias, accumulate);
}

int gpt2c_cpu_gemm_bf16_panel_width(gpt2c_isa isa) {
    const gemm_bf16_isa_kernel *kk = gpt2c_cpu_gemm_bf16_kernel(isa);
    return kk->kern && !kk->fp32 && !gpt2c_cpu_bf16_amx() ? kk->nr : 0;
}

int gpt2c_cpu_gemm_bf16_paneled_b(gpt2c_isa isa, int M, int N, int K, gemm_operand A, const uint32_t *bp, int width,
                                  float *C, long ldc, const float *bias, int accumulate) {
    if (!omp_in_parallel()) {
        gpt2c_cpu_gemm_bf16_first_use(isa);
        gpt2c_cpu_bf16_amx();
    }
    if (!bp || width <= 0 || width != gpt2c_cpu_gemm_bf16_panel_width(isa) || N % width || K % 2 ||
        gpt2c_cpu_gemm_bf16_amx_tiles(isa, M))
        return 0;
    const gemm_operand none = {NULL, GPT2C_FMT_BF16, 0, 0}; /* (not read: B is bp) */
    gemm_bf16_run(gpt2c_cpu_gemm_bf16_kernel(isa), M, N, K, A, (swapped_rows){NULL, 0}, none,
                  (prepacked){bp, 0, (size_t)(K / 2) * width}, C, ldc, bias, accumulate);
    return 1;
}

void gpt2c_cpu_gemm_bf16_auto(gpt2c_isa isa, const gemm_bf16_isa_kernel *kk, int M, int N, int K, gemm_operand A,
                              gemm_operand B, float *C, long ldc, const float *bias, int accumulate) {
    const gpt2c_amx_tiles *t = gpt2c_cpu_gemm_bf16_amx_tiles(isa, M);
    if (t)
        gpt2c_cpu_gemm_bf16_amx(t, kk, M, N, K, A, B, C, ldc, bias, accumulate);
    else
        gpt2c_cpu_gemm_bf16_with(kk, M, N, K, A, B, C, ldc, bias, accumulate);
}

void gpt2c_cpu_gemm_bf16(gpt2c_isa isa, int M, int N, int K, gemm_operand A, gemm_operand B, float *C, long ldc,
                   const float *bias, int accumulate) {
    if (!omp_in_parallel()) {
        gpt2c_cpu_gemm_bf16_first_use(isa);
        gpt2c_cpu_bf16_amx(); /* decided here, on all threads, not first inside a parallel region */
    }
    gpt2c_cpu_gemm_bf16_auto(isa, gpt2c_cpu_gemm_bf16_kernel(isa), M, N, K, A, B, C, ldc, bias, accumulate);
}

void gpt2c_cpu_linear_gemm_bf16(gpt2c_isa isa, gemm_linear_op op, float *C, const void *A, gpt2c_format fa, const void *B,
                          gpt2c_format fb, int N, int IC, int OC) {
    switch (op) {
    case GEMM_FWD: {
        const gemm_operand a = {A, fa, IC, 1}, b = {B, fb, 1, IC};
        gpt2c_cpu_gemm_bf16(isa, N, OC, IC, a, b, C, OC, NULL, 0);
        break;
    }
    case GEMM_DINP: {
        const gemm_operand a = {A, fa, OC, 1}, b = {B, fb, IC, 1};
        gpt2c_cpu_gemm_bf16(isa, N, IC, OC, a, b, C, IC, NULL, 0);
        break;
    }
    case GEMM_DW:
    case GEMM_DW_ACC: {
        const gemm_operand a = {A, fa, 1, OC}, b = {B, fb, IC, 1};
        gpt2c_cpu_gemm_bf16(isa, OC, IC, N, a, b, C, IC, NULL, op == GEMM_DW_ACC);
        break;
    }
    }
}
