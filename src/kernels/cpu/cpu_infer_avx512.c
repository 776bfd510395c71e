/* AVX-512 inference kernels: the decode/prefill matmul (dot-product form, a
 * 4-output x 6-row register tile, every weight row read once per row panel;
 * many rows: the fp32 GEMM)
 * and attention against the transposed-key cache.  Compiled with -mavx512f
 * etc. (CMake: *_avx512.c); called only when the CPU has AVX-512F. */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/avx512_exp.h"
#include "kernels/cpu/cpu_infer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/kernels.h"
#include "kernels/kv_task.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* Decode tiles prefetch the weight rows of the tile PF_TILES ahead into L2
 * during their first row pass (Zen 4, 2 threads, fp32 decode: batch 1 1.09x,
 * 4 1.28x, 8 1.17x; one tile ahead gained less at batches 1 and 8, into L1
 * less everywhere): the hardware prefetchers do not keep 4 row streams ahead. */
#define PF_TILES 2


/* gelu(x) = 0.5 x (1 + tanh(u)) = x / (1 + e^{-2u}),  u = sqrt(2/pi) (x + 0.044715 x^3):
 * the sigmoid form has no cancellation near 0 and saturates cleanly. */
ALWAYS_INLINE __m512 gelu512(__m512 x) {
    const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    const __m512 u = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), _mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x));
    const __m512 e = gpt2c_exp512(_mm512_mul_ps(u, _mm512_set1_ps(-2.0f)));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

static void gelu_row(float *y, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, gelu512(_mm512_loadu_ps(y + i)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, gelu512(_mm512_maskz_loadu_ps(m, y + i)));
    }
}

/* out[n][r] = bias[r] + dot(x[n], w[r]) for RO outputs x RN rows: RO*RN
 * accumulators, RO weight vectors and one input vector live per step of 16
 * channels.  Each (n, r) sum is the same sequence of lane FMAs then one
 * reduce, whatever tile computes it: results do not depend on N or threads. */
ALWAYS_INLINE void tile(float *out, size_t ldo, const float *x, size_t ldx, const float *w, size_t ldw,
                        const float *bias, int IC, const float *pf, const int RN, const int RO) {
    __m512 acc[4][6];
#pragma GCC unroll 4
    for (int r = 0; r < RO; r++)
#pragma GCC unroll 6
        for (int n = 0; n < RN; n++) acc[r][n] = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= IC; i += 16) {
        __m512 wv[4];
        if (pf) /* a later tile's 4 weight rows, a line of each per 16 channels */
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) _mm_prefetch((const char *)(pf + r * ldw + i), _MM_HINT_T1);
#pragma GCC unroll 4
        for (int r = 0; r < RO; r++) wv[r] = _mm512_loadu_ps(w + r * ldw + i);
#pragma GCC unroll 6
        for (int n = 0; n < RN; n++) {
            const __m512 xv = _mm512_loadu_ps(x + n * ldx + i);
#pragma GCC unroll 4
            for (int r = 0; r < RO; r++) acc[r][n] = _mm512_fmadd_ps(wv[r], xv, acc[r][n]);
        }
    }
    if (i < IC) {
        const __mmask16 m = (__mmask16)((1u << (IC - i)) - 1);
        __m512 wv[4];
#pragma GCC unroll 4
        for (int r = 0; r < RO; r++) wv[r] = _mm512_maskz_loadu_ps(m, w + r * ldw + i);
#pragma GCC unroll 6
        for (int n = 0; n < RN; n++) {
            const __m512 xv = _mm512_maskz_loadu_ps(m, x + n * ldx + i);
#pragma GCC unroll 4
            for (int r = 0; r < RO; r++) acc[r][n] = _mm512_fmadd_ps(wv[r], xv, acc[r][n]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < RO; r++)
#pragma GCC unroll 6
        for (int n = 0; n < RN; n++) out[n * ldo + r] = _mm512_reduce_add_ps(acc[r][n]) + (bias ? bias[r] : 0.0f);
}

#define TILE_CASES(RO)                                                      \
    switch (rn) {                                                           \
    case 6: tile(o, ldo, x, ldx, w, ldw, bias, IC, pf, 6, RO); break;      \
    case 5: tile(o, ldo, x, ldx, w, ldw, bias, IC, pf, 5, RO); break;      \
    case 4: tile(o, ldo, x, ldx, w, ldw, bias, IC, pf, 4, RO); break;      \
    case 3: tile(o, ldo, x, ldx, w, ldw, bias, IC, pf, 3, RO); break;      \
    case 2: tile(o, ldo, x, ldx, w, ldw, bias, IC, pf, 2, RO); break;      \
    default: tile(o, ldo, x, ldx, w, ldw, bias, IC, pf, 1, RO); break;     \
    }

static void tile4(float *o, size_t ldo, const float *x, size_t ldx, const float *w, size_t ldw, const float *bias,
                  int IC, int rn, const float *pf) {
    TILE_CASES(4)
}
static void tile1(float *o, size_t ldo, const float *x, size_t ldx, const float *w, size_t ldw, const float *bias,
                  int IC, int rn) {
    const float *pf = NULL;
    TILE_CASES(1)
}

/* ---- many rows (prefill): the fp32 GEMM (gemm.h) on the range's weight rows.
 * Its micro-kernel sums each output as this file's packed kernel did (the
 * bias, then one FMA per channel in order; C stored and reloaded exactly
 * between K blocks, whatever the tuned block size), so prefill's bits did
 * not change when it took over;
 * the GELU (gelu512) is applied to the finished rows. */

static void matmul_gemm(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC, int act,
                        int o0, int o1) {
    if (o1 <= o0) return;
    gpt2c_cpu_gemm(GPT2C_ISA_AVX512, N, o1 - o0, IC, inp, IC, 1, w + (size_t)o0 * IC, 1, IC, out + o0, OC,
                   bias ? bias + o0 : NULL, 0);
    if (act == GPT2C_ACT_GELU)
        for (int n = 0; n < N; n++) gelu_row(out + (size_t)n * OC + o0, o1 - o0);
}

/* Rows in the next tile when `left` rows remain: 6, but 8 go as 4 + 4: a last
 * pass of 2 rows streams the 4 weight rows again for a third of the FMAs
 * (batch-8 fp32 decode 1.035x, Cascade Lake; 7 as 4 + 3 measured 0.96x of 6 + 1) */
static inline int tile_rows(int left) { return left == 8 ? 4 : left < 6 ? left : 6; }

/* ---- few rows (decode): dot-product tiles -------------------------------
 * Outputs [o0, o1) for every row: the weight rows of the range are streamed
 * once per row panel (decode: once), 4 at a time; row panels of ~1 MiB of
 * inputs stay in L2 across the range's tiles. */
void gpt2c_cpu_infer_matmul_avx512(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC,
                             int act, int o0, int o1) {
    if (N >= GPT2C_CPU_INFER_GEMM_ROWS) {
        matmul_gemm(out, inp, w, bias, N, IC, OC, act, o0, o1);
        return;
    }
    int panel = (int)((1u << 20) / (4u * (unsigned)IC)) / 6 * 6; /* rows per panel, a multiple of 6 */
    if (panel < 6) panel = 6;
    for (int n0 = 0; n0 < N; n0 += panel) {
        const int nn = N - n0 < panel ? N - n0 : panel;
        const float *xp = inp + (size_t)n0 * IC;
        float *op = out + (size_t)n0 * OC;
        int o = o0;
        for (; o + 4 <= o1; o += 4)
            for (int n = 0, rn; n < nn; n += rn)
                tile4(op + (size_t)n * OC + o, (size_t)OC, xp + (size_t)n * IC, (size_t)IC, w + (size_t)o * IC,
                      (size_t)IC, bias ? bias + o : NULL, IC, rn = tile_rows(nn - n),
                      n == 0 && o + 4 + PF_TILES * 4 <= o1 ? w + (size_t)(o + PF_TILES * 4) * IC : NULL);
        for (; o < o1; o++)
            for (int n = 0, rn; n < nn; n += rn)
                tile1(op + (size_t)n * OC + o, (size_t)OC, xp + (size_t)n * IC, (size_t)IC, w + (size_t)o * IC,
                      (size_t)IC, bias ? bias + o : NULL, IC, rn = tile_rows(nn - n));
        if (act == GPT2C_ACT_GELU && o1 > o0)
            for (int n = 0; n < nn; n++) gelu_row(op + (size_t)n * OC + o0, o1 - o0);
    }
}

/* ---- attention against the cache -----------------------------------------
 * A block of Q <= 4 consecutive queries of one head (prefill; decode has Q = 1):
 * query qi sees keys [0, n0 + qi).  Each key vector and value row is loaded
 * once for the block: QK^T as 4 key-vectors x Q broadcasts of q, PV as one
 * value row x Q broadcasts of p.  Scores s (Q, MAX_CTX). */
#define MAX_CTX 4096

static inline __mmask16 lane_mask(int k) {
    return k >= 16 ? (__mmask16)0xFFFF : k <= 0 ? (__mmask16)0 : (__mmask16)((1u << k) - 1);
}

ALWAYS_INLINE void attend_block(float *o, size_t ldo, const float *q, size_t ldq, const float *K, const float *V,
                                int hs, int ctx, int n0, float *s, const int Q) {
    const int n = n0 + Q - 1; /* keys of the last query */
    const __m512 scale = _mm512_set1_ps(1.0f / sqrtf((float)hs));
    /* scores, 64 keys per pass */
    for (int j0 = 0; j0 < n; j0 += 64) {
        __m512 a[4][4];
#pragma GCC unroll 4
        for (int qi = 0; qi < Q; qi++)
            for (int c = 0; c < 4; c++) a[qi][c] = _mm512_setzero_ps();
        __mmask16 m[4];
        for (int c = 0; c < 4; c++) m[c] = lane_mask(n - j0 - 16 * c);
        for (int i = 0; i < hs; i++) {
            const float *kr = K + (size_t)i * ctx + j0;
            const __m512 k0 = _mm512_maskz_loadu_ps(m[0], kr), k1 = _mm512_maskz_loadu_ps(m[1], kr + 16);
            const __m512 k2 = _mm512_maskz_loadu_ps(m[2], kr + 32), k3 = _mm512_maskz_loadu_ps(m[3], kr + 48);
#pragma GCC unroll 4
            for (int qi = 0; qi < Q; qi++) {
                const __m512 qb = _mm512_set1_ps(q[qi * ldq + i]);
                a[qi][0] = _mm512_fmadd_ps(qb, k0, a[qi][0]);
                a[qi][1] = _mm512_fmadd_ps(qb, k1, a[qi][1]);
                a[qi][2] = _mm512_fmadd_ps(qb, k2, a[qi][2]);
                a[qi][3] = _mm512_fmadd_ps(qb, k3, a[qi][3]);
            }
        }
#pragma GCC unroll 4
        for (int qi = 0; qi < Q; qi++)
            for (int c = 0; c < 4; c++)
                if (m[c]) _mm512_mask_storeu_ps(s + qi * MAX_CTX + j0 + 16 * c, m[c], _mm512_mul_ps(a[qi][c], scale));
    }
    /* softmax per query over its own keys; p = 0 beyond them (up to n) */
    float inv[4];
    for (int qi = 0; qi < Q; qi++) {
        float *sq = s + qi * MAX_CTX;
        const int nq = n0 + qi;
        __m512 mx = _mm512_set1_ps(-INFINITY);
        for (int j = 0; j < nq; j += 16) {
            const __mmask16 mk = lane_mask(nq - j);
            mx = _mm512_mask_max_ps(mx, mk, mx, _mm512_maskz_loadu_ps(mk, sq + j));
        }
        const __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
        __m512 sum = _mm512_setzero_ps();
        for (int j = 0; j < n; j += 16) {
            const __mmask16 mk = lane_mask(nq - j), mall = lane_mask(n - j);
            const __m512 e = _mm512_maskz_mov_ps(mk, gpt2c_exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, sq + j), vmax)));
            _mm512_mask_storeu_ps(sq + j, mall, e);
            sum = _mm512_add_ps(sum, e);
        }
        inv[qi] = 1.0f / _mm512_reduce_add_ps(sum);
    }
    /* out_q = sum_j p_q[j] V[j] / sum_q, up to 64 channels per pass */
    for (int c0 = 0; c0 < hs; c0 += 64) {
        __mmask16 m[4];
        for (int c = 0; c < 4; c++) m[c] = lane_mask(hs - c0 - 16 * c);
        __m512 a[4][4];
#pragma GCC unroll 4
        for (int qi = 0; qi < Q; qi++)
            for (int c = 0; c < 4; c++) a[qi][c] = _mm512_setzero_ps();
        for (int j = 0; j < n; j++) {
            const float *vr = V + (size_t)j * hs + c0;
            const __m512 v0 = _mm512_maskz_loadu_ps(m[0], vr), v1 = _mm512_maskz_loadu_ps(m[1], vr + 16);
            const __m512 v2 = _mm512_maskz_loadu_ps(m[2], vr + 32), v3 = _mm512_maskz_loadu_ps(m[3], vr + 48);
#pragma GCC unroll 4
            for (int qi = 0; qi < Q; qi++) {
                const __m512 pb = _mm512_set1_ps(s[qi * MAX_CTX + j]);
                a[qi][0] = _mm512_fmadd_ps(pb, v0, a[qi][0]);
                a[qi][1] = _mm512_fmadd_ps(pb, v1, a[qi][1]);
                a[qi][2] = _mm512_fmadd_ps(pb, v2, a[qi][2]);
                a[qi][3] = _mm512_fmadd_ps(pb, v3, a[qi][3]);
            }
        }
#pragma GCC unroll 4
        for (int qi = 0; qi < Q; qi++) {
            const __m512 iv = _mm512_set1_ps(inv[qi]);
            for (int c = 0; c < 4; c++)
                if (m[c]) _mm512_mask_storeu_ps(o + qi * ldo + c0 + 16 * c, m[c], _mm512_mul_ps(a[qi][c], iv));
        }
    }
}

/* tasks (b*NH + h)*Tq + t in [t0, t1): consecutive tasks of one (b, h) go in blocks of 4 queries */
int gpt2c_cpu_infer_attention_avx512(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                               const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1) {
    (void)B;
    if (ctx > MAX_CTX) return 0;
    const int hs = C / NH;
    float s[4 * MAX_CTX] __attribute__((aligned(64)));
    for (long task = t0; task < t1;) {
        const gpt2c_kv_task tk = gpt2c_kv_task_at(task, Tq, NH, hs, ctx, C, qstride, pos);
        long Q = Tq - tk.t; /* queries left in this (b, h) */
        if (Q > t1 - task) Q = t1 - task;
        if (Q > 4) Q = 4;
        const float *K = kc + tk.kv, *V = vc + tk.kv;
        float *o = out + tk.o;
        const float *qq = q + tk.q;
        const int n0 = tk.n;
        switch (Q) {
        case 4: attend_block(o, (size_t)C, qq, qstride, K, V, hs, ctx, n0, s, 4); break;
        case 3: attend_block(o, (size_t)C, qq, qstride, K, V, hs, ctx, n0, s, 3); break;
        case 2: attend_block(o, (size_t)C, qq, qstride, K, V, hs, ctx, n0, s, 2); break;
        default: attend_block(o, (size_t)C, qq, qstride, K, V, hs, ctx, n0, s, 1); break;
        }
        task += Q;
    }
    return 1;
}
