/* The cpu backend's ops, written once in plain C that the compiler
 * vectorises, and compiled three times (ops_avx512.c, ops_avx2.c,
 * ops_scalar.c) with OPS_ISA set; each compile defines one table,
 * cpu_ops_<isa>.  `#pragma omp simd` marks the loops to vectorise (with a
 * reduction clause the lane order is fixed at compile time, so results do
 * not depend on the thread count).  Threads always split work by outputs:
 * rows, (batch, head) pairs, or channel strips for parameter gradients.
 *
 * Shapes as in kernels.h: N = B*T rows, C channels, NH heads, hs = C/NH. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/cpu/cpu_ops.h"

/* compiled with -fno-math-errno (CMakeLists.txt): sqrtf in a loop vectorises */
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/vexp.h"
#include "kernels/ref/ref.h"
#if defined(__AVX512F__)
#include <immintrin.h>

#include "kernels/cpu/bf16_split_avx512.h"
#endif

#define LN_EPS 1e-5f
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define PAR_MIN 16384              /* elements below which a pointwise op stays on one thread */

/* ---- encoder ---------------------------------------------------------------- */

static void encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe, int B, int T,
                            int C) {
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PAR_MIN)
    for (int n = 0; n < B * T; n++) {
        const float *we = wte + (size_t)tokens[n] * C, *pe = wpe + (size_t)(n % T) * C;
        float *o = out + (size_t)n * C;
#pragma omp simd
        for (int i = 0; i < C; i++) o[i] = we[i] + pe[i];
    }
}

/* dwte rows repeat when tokens repeat: threads own channel strips, rows in order. */
static void encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B, int T,
                             int C) {
    const int strips = (C + 63) / 64;
    if (!dwte || !dwpe) { /* one of them (or both) frozen: scatter into the other alone */
        if (!dwte && !dwpe) return;
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PAR_MIN)
        for (int s = 0; s < strips; s++) {
            const int c0 = s * 64, c1 = c0 + 64 < C ? c0 + 64 : C;
            for (int n = 0; n < B * T; n++) {
                const float *d = dout + (size_t)n * C;
                float *dst = dwte ? dwte + (size_t)tokens[n] * C : dwpe + (size_t)(n % T) * C;
#pragma omp simd
                for (int i = c0; i < c1; i++) dst[i] += d[i];
            }
        }
        return;
    }
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PAR_MIN)
    for (int s = 0; s < strips; s++) {
        const int c0 = s * 64, c1 = c0 + 64 < C ? c0 + 64 : C;
        for (int n = 0; n < B * T; n++) {
            const float *d = dout + (size_t)n * C;
            float *dwe = dwte + (size_t)tokens[n] * C, *dpe = dwpe + (size_t)(n % T) * C;
#pragma omp simd
            for (int i = c0; i < c1; i++) {
                dwe[i] += d[i];
                dpe[i] += d[i];
            }
        }
    }
}

/* ---- column sums (weight and bias gradients) ------------------------------------ */

/* Sums over rows of an (N, C) matrix, each column's in row order, are split by
 * columns: this thread's share of the C columns, in whole 16-column groups,
 * and within it chunks of at most COLSUM_CHUNK columns (accumulators in L1),
 * each walking the rows once.  Strips of 64 columns walked the rows 64
 * columns at a time (4 lines of each 3-12 KiB row: a stride the prefetchers
 * do not follow across pages); the order of each column's sum is the same. */
#define COLSUM_CHUNK 1024
static inline void thread_columns(int C, int *c0, int *c1) {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads(), g = (C + 15) / 16;
    const int a = 16 * (int)((long)g * t / nt), b = 16 * (int)((long)g * (t + 1) / nt);
    *c0 = a < C ? a : C;
    *c1 = b < C ? b : C;
}

/* ---- layernorm ---------------------------------------------------------------- */

static inline void ln_row(float *o, float *mean, float *rstd, const float *x, const float *w, const float *b, int C) {
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < C; i++) s += x[i];
    const float m = s / C;
    float v = 0;
#pragma omp simd reduction(+ : v)
    for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
    const float r = 1.0f / sqrtf(v / C + LN_EPS);
#pragma omp simd
    for (int i = 0; i < C; i++) o[i] = (x[i] - m) * r * w[i] + b[i];
    *mean = m;
    *rstd = r;
}

static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                              int N, int C) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= PAR_MIN)
    for (int n = 0; n < N; n++)
        ln_row(out + (size_t)n * C, mean + n, rstd + n, inp + (size_t)n * C, w, b, C);
}

/* residual = a + b and its layernorm in one pass over the row (the row stays in L1) */
static void residual_layernorm_forward(float *residual, float *out, float *mean, float *rstd, const float *a,
                                       const float *b, const float *w, const float *bias, int N, int C) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        float *r = residual + (size_t)n * C;
        const float *x = a + (size_t)n * C, *y = b + (size_t)n * C;
#pragma omp simd
        for (int i = 0; i < C; i++) r[i] = x[i] + y[i];
        ln_row(out + (size_t)n * C, mean + n, rstd + n, r, w, bias, C);
    }
}

/* Phase 1 (threads over rows): dx += rstd (g - mean(g) - xhat mean(g xhat)), g = dout w.
 * Phase 2 (threads over channels, thread_columns; rows in order): dw += sum xhat dout, db += sum dout. */
static void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *mean, const float *rstd, int N, int C) {
#pragma omp parallel if ((size_t)N * C >= PAR_MIN)
    {
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
            float *dx = dinp + (size_t)n * C;
            const float m = mean[n], r = rstd[n];
            float gs = 0, gxs = 0;
#pragma omp simd reduction(+ : gs, gxs)
            for (int i = 0; i < C; i++) {
                const float g = d[i] * w[i];
                gs += g;
                gxs += g * (x[i] - m) * r;
            }
            const float gm = gs / C, gxm = gxs / C;
#pragma omp simd
            for (int i = 0; i < C; i++) dx[i] += r * (d[i] * w[i] - gm - (x[i] - m) * r * gxm);
        }
        if (dw || db) { /* NULL: a frozen tensor (the same for every thread) */
            int t0, t1;
            thread_columns(C, &t0, &t1);
            for (int c0 = t0; c0 < t1; c0 += COLSUM_CHUNK) {
                const int c1 = c0 + COLSUM_CHUNK < t1 ? c0 + COLSUM_CHUNK : t1;
                float aw[COLSUM_CHUNK], ab[COLSUM_CHUNK];
                memset(aw, 0, sizeof(float) * (c1 - c0));
                memset(ab, 0, sizeof(float) * (c1 - c0));
                for (int n = 0; n < N; n++) {
                    const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
                    const float m = mean[n], r = rstd[n];
#pragma omp simd
                    for (int i = c0; i < c1; i++) {
                        aw[i - c0] += (x[i] - m) * r * d[i];
                        ab[i - c0] += d[i];
                    }
                }
                for (int i = c0; i < c1; i++) {
                    if (dw) dw[i] += aw[i - c0];
                    if (db) db[i] += ab[i - c0];
                }
            }
        }
    }
}

/* ---- matmul (the GEMM of gemm.c) ------------------------------------------------- */

/* f32 and bf16 weights (the table's formats mask says so; others go to ref).
 * A bf16 weight makes every GEMM of its layer a bf16 one (gemm_bf16.h: the
 * fp32 activations and gradients rounded to bf16 as they are packed, fp32
 * accumulation), the weight gradient included. */
static void matmul_forward(float *out, const float *inp, const gpt2c_tensor *wt, const float *bias, int N, int IC,
                           int OC) {
    if (wt->fmt == GPT2C_FMT_BF16) {
        const gemm_operand a = {inp, GPT2C_FMT_F32, IC, 1}, b = {wt->data, GPT2C_FMT_BF16, 1, IC};
        gpt2c_cpu_gemm_bf16(OPS_ISA, N, OC, IC, a, b, out, OC, bias, 0);
        return;
    }
    const float *w = (const float *)wt->data;
    gpt2c_cpu_gemm(OPS_ISA, N, OC, IC, inp, IC, 1, w, 1, IC, out, OC, bias, 0);
}

static int bf16_panel_width(int rows, int cols);

/* dinp (N,IC) = dout (N,OC) W for a bf16 W: from its panels (wt->aux, ops.h's
 * bf16_panels) where the GEMM reads them, else from its rows; the same bits */
static void dinp_bf16(float *dinp, gemm_operand d, const gpt2c_tensor *wt, int N, int IC, int OC) {
    const int width = wt->aux ? bf16_panel_width(OC, IC) : 0;
    if (width && gpt2c_cpu_gemm_bf16_paneled_b(OPS_ISA, N, IC, OC, d, wt->aux, width, dinp, IC, NULL, 0)) return;
    const gemm_operand w = {wt->data, GPT2C_FMT_BF16, IC, 1};
    gpt2c_cpu_gemm_bf16(OPS_ISA, N, IC, OC, d, w, dinp, IC, NULL, 0);
}

static void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                            const gpt2c_tensor *wt, int N, int IC, int OC, int dw_acc) {
    if (wt->fmt == GPT2C_FMT_BF16) {
        const gemm_operand d = {dout, GPT2C_FMT_F32, OC, 1};
        const gemm_operand dt = {dout, GPT2C_FMT_F32, 1, OC}, x = {inp, GPT2C_FMT_F32, IC, 1};
        if (dinp) dinp_bf16(dinp, d, wt, N, IC, OC);
        if (dw) gpt2c_cpu_gemm_bf16(OPS_ISA, OC, IC, N, dt, x, dw, IC, NULL, dw_acc);
    } else {
        const float *w = (const float *)wt->data;
        if (dinp) gpt2c_cpu_gemm(OPS_ISA, N, IC, OC, dout, OC, 1, w, IC, 1, dinp, IC, NULL, 0);
        if (dw) gpt2c_cpu_gemm(OPS_ISA, OC, IC, N, dout, 1, OC, inp, IC, 1, dw, IC, NULL, dw_acc);
    }
    if (!dbias) return;
#pragma omp parallel if ((size_t)N * OC >= PAR_MIN)
    { /* column sums, rows in order */
        int t0, t1;
        thread_columns(OC, &t0, &t1);
        for (int c0 = t0; c0 < t1; c0 += COLSUM_CHUNK) {
            const int c1 = c0 + COLSUM_CHUNK < t1 ? c0 + COLSUM_CHUNK : t1;
            float acc[COLSUM_CHUNK];
            memset(acc, 0, sizeof(float) * (c1 - c0));
            for (int n = 0; n < N; n++) {
                const float *d = dout + (size_t)n * OC;
#pragma omp simd
                for (int i = c0; i < c1; i++) acc[i - c0] += d[i];
            }
            for (int i = c0; i < c1; i++) dbias[i] += acc[i - c0];
        }
    }
}

/* matmul_backward (no bias) from a bf16 dout of leading dimension ld (ops.h):
 * the bf16 GEMMs take it as it is (rounding it again changes nothing), so
 * the numbers are matmul_backward's on the widened dout, without the fp32
 * rows' conversion (the LM head's dlogits: B*T x 50304) or their bytes. */
static void matmul_backward_dout_bf16(float *dinp, float *dw, const uint16_t *dout, long ld, const float *inp,
                                      const gpt2c_tensor *wt, int N, int IC, int OC, int dw_acc) {
    if (wt->fmt != GPT2C_FMT_BF16 && wt->fmt != GPT2C_FMT_F32) { /* a quantized weight: ref's, as matmul_backward's */
        gpt2c_ref_matmul_backward_dout_bf16(dinp, dw, dout, ld, inp, wt, N, IC, OC, dw_acc);
        return;
    }
    if (wt->fmt == GPT2C_FMT_F32) { /* not bf16 precision's case: widened, then the fp32 op */
        float *d = malloc(sizeof(float) * ((size_t)N * OC + 1));
        if (!d) { /* no silent wrong answer: NaN, as ref does on allocation failure */
            for (size_t i = 0; dinp && i < (size_t)N * IC; i++) dinp[i] = NAN;
            for (size_t i = 0; dw && i < (size_t)OC * IC; i++) dw[i] = NAN;
            return;
        }
        gpt2c_bf16_widen_rows(d, dout, (size_t)N, (size_t)OC, (size_t)ld);
        matmul_backward(dinp, dw, NULL, d, inp, wt, N, IC, OC, dw_acc);
        free(d);
        return;
    }
    const gemm_operand d = {dout, GPT2C_FMT_BF16, ld, 1};
    const gemm_operand dt = {dout, GPT2C_FMT_BF16, 1, ld}, x = {inp, GPT2C_FMT_F32, IC, 1};
    if (dinp) dinp_bf16(dinp, d, wt, N, IC, OC);
    if (dw) gpt2c_cpu_gemm_bf16(OPS_ISA, OC, IC, N, dt, x, dw, IC, NULL, dw_acc);
}

/* ---- attention: flash-style, blocked, state = log-sum-exp (B,NH,T) ------------------ */

#include "kernels/cpu/attention_impl.h"

/* ---- pointwise ---------------------------------------------------------------- */

/* gelu(x) = 0.5 x (1 + tanh(u)) = x sigmoid(2u),  u = k (x + 0.044715 x^3) */
static inline float gelu1(float x) {
    const float u = GELU_K * (x + 0.044715f * x * x * x);
    return x / (1.0f + vexp(-2.0f * u));
}
static void gelu_forward(float *out, const float *inp, size_t N) {
    if (N < PAR_MIN) { /* no parallel region at all: even a one-thread one costs ~1 us, and
                        * a bf16 decode calls this once per 64 outputs of each fc matmul */
#pragma omp simd
        for (size_t i = 0; i < N; i++) out[i] = gelu1(inp[i]);
        return;
    }
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < N; i++) out[i] = gelu1(inp[i]);
}

/* with sg = sigmoid(2u): 1 + tanh u = 2 sg, sech^2 u = 4 sg (1 - sg):
 * gelu'(x) = sg + 2 x sg (1 - sg) k (1 + 3 0.044715 x^2).  dinp may alias dout. */
static void gelu_backward(float *dinp, const float *inp, const float *dout, size_t N) {
#pragma omp parallel for simd schedule(static) if (N >= PAR_MIN)
    for (size_t i = 0; i < N; i++) {
        const float x = inp[i];
        const float u = GELU_K * (x + 0.044715f * x * x * x);
        const float sg = 1.0f / (1.0f + vexp(-2.0f * u));
        const float grad = sg + 2.0f * x * sg * (1.0f - sg) * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = grad * dout[i];
    }
}

static void residual_forward(float *out, const float *a, const float *b, size_t N) {
#pragma omp parallel for simd schedule(static) if (N >= PAR_MIN)
    for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

/* ---- softmax cross-entropy ----------------------------------------------------------- */

static void softmax_xent_forward(float *losses, float *logits_probs, const int32_t *targets, int N, int V, int Vp) {
#pragma omp parallel for schedule(static) if (N > 1)
    for (int n = 0; n < N; n++) {
        float *row = logits_probs + (size_t)n * Vp;
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int i = 0; i < V; i++) mx = row[i] > mx ? row[i] : mx;
        const float lt = row[targets[n]];
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int i = 0; i < V; i++) {
            const float e = vexp(row[i] - mx);
            row[i] = e;
            sum += e;
        }
        losses[n] = logf(sum) + mx - lt;
        const float inv = 1.0f / sum;
#pragma omp simd
        for (int i = 0; i < V; i++) row[i] *= inv;
        for (int i = V; i < Vp; i++) row[i] = 0.0f;
    }
}

static void softmax_xent_backward(float *probs_dlogits, const int32_t *targets, float dloss, int N, int V, int Vp) {
#pragma omp parallel for schedule(static) if (N > 1)
    for (int n = 0; n < N; n++) {
        float *row = probs_dlogits + (size_t)n * Vp;
#pragma omp simd
        for (int i = 0; i < V; i++) row[i] *= dloss;
        row[targets[n]] -= dloss;
        for (int i = V; i < Vp; i++) row[i] = 0.0f;
    }
}

/* softmax_xent_backward's numbers (the same products, then the target's
 * -= dloss), each rounded to bf16 into its row's first half (ops.h), front
 * to back: word i lands on float i/2 of the row, read by then (a vector's
 * floats are loaded before its words are stored). */
static void softmax_xent_backward_bf16(float *probs_dlogits, const int32_t *targets, float dloss, int N, int V, int Vp) {
#pragma omp parallel for schedule(static) if (N > 1)
    for (int n = 0; n < N; n++) {
        float *row = probs_dlogits + (size_t)n * Vp;
        char *words = (char *)row;
        const int t = targets[n];
        float pt = row[t] * dloss; /* the target's, before its float is written over */
        pt -= dloss;
        int i = 0;
#if defined(__AVX512F__)
        const __m512 dl = _mm512_set1_ps(dloss);
        for (; i + 32 <= V; i += 32) {
            const __m512 a = _mm512_mul_ps(_mm512_loadu_ps(row + i), dl), b = _mm512_mul_ps(_mm512_loadu_ps(row + i + 16), dl);
            _mm256_storeu_si256((__m256i *)(words + 2 * (size_t)i), gpt2c_bf16x16(a));
            _mm256_storeu_si256((__m256i *)(words + 2 * (size_t)i + 32), gpt2c_bf16x16(b));
        }
#endif
        for (; i < Vp; i++) {
            const uint16_t h = gpt2c_bf16_from_f32(i < V ? row[i] * dloss : 0.0f); /* pad columns 0 */
            memcpy(words + 2 * (size_t)i, &h, 2);
        }
        const uint16_t ht = gpt2c_bf16_from_f32(pt);
        memcpy(words + 2 * (size_t)t, &ht, 2);
    }
}

/* ---- optimizer ---------------------------------------------------------------- */

#define SUMSQ_CHUNKS 1024 /* fixed partition: the reduction order is independent of threads */

static double sumsq(const float *x, size_t n) {
    size_t chunk = (n + SUMSQ_CHUNKS - 1) / SUMSQ_CHUNKS;
    if (chunk < 4096) chunk = 4096;
    const int nch = (int)((n + chunk - 1) / chunk);
    double part[SUMSQ_CHUNKS];
#pragma omp parallel for schedule(static) if (nch > 1)
    for (int c = 0; c < nch; c++) {
        const size_t i0 = (size_t)c * chunk, i1 = i0 + chunk < n ? i0 + chunk : n;
        double s = 0;
#pragma omp simd reduction(+ : s)
        for (size_t i = i0; i < i1; i++) s += (double)x[i] * x[i];
        part[c] = s;
    }
    double s = 0;
    for (int c = 0; c < nch; c++) s += part[c];
    return s;
}

/* AdamW's per-step constants (same arithmetic as gpt2c_ref_adamw, element by element:
 * one divide per element, sqrt(v)/sqrt(bc2) as sqrt(v) * (1/sqrt(bc2)), within an ulp of ref). */
typedef struct {
    float beta1, beta2, step, inv_bc2_sqrt, decay, eps, grad_scale;
} adamw_consts;

static adamw_consts adamw_setup(float lr, float beta1, float beta2, float eps, float wd, float grad_scale, int t) {
    const double bc1 = 1.0 - pow(beta1, t), bc2 = 1.0 - pow(beta2, t);
    return (adamw_consts){beta1, beta2, (float)(lr / bc1), (float)(1.0 / sqrt(bc2)), 1.0f - lr * wd, eps, grad_scale};
}

/* element i of p, m, v from gradient value g */
static inline void adamw_elem(float *p, float *m, float *v, float g, const adamw_consts *c) {
    const float gi = g * c->grad_scale;
    const float mi = c->beta1 * *m + (1.0f - c->beta1) * gi;
    const float vi = c->beta2 * *v + (1.0f - c->beta2) * gi * gi;
    *m = mi;
    *v = vi;
    *p = *p * c->decay - c->step * mi / (sqrtf(vi) * c->inv_bc2_sqrt + c->eps);
}

/* One pass over p, g, m, v; threads take contiguous halves (static split). */
static void adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                  float eps, float wd, float grad_scale, int t) {
    const adamw_consts c = adamw_setup(lr, beta1, beta2, eps, wd, grad_scale, t);
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) adamw_elem(p + i, m + i, v + i, g[i], &c);
}

/* adamw, zeroing g as it goes: saves the separate zero_grad pass over the slab. */
static void adamw_zero_grad(float *p, float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                            float eps, float wd, float grad_scale, int t) {
    const adamw_consts c = adamw_setup(lr, beta1, beta2, eps, wd, grad_scale, t);
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        adamw_elem(p + i, m + i, v + i, g[i], &c);
        g[i] = 0.0f;
    }
}

/* adamw that also writes p's bf16 copy, zeroing g as it goes or not (zero_g, a
 * constant after inlining): the copy's refresh (a read of p and a write of pb)
 * rides on the update's pass, p is read once. */
static inline __attribute__((always_inline)) void adamw_bf16_range(float *p, float *g, float *m, float *v, uint16_t *pb,
                                                                   size_t i0, size_t i1, const adamw_consts *cp,
                                                                   const int zero_g) {
    const adamw_consts c = *cp; /* a local copy: the stores below cannot alias it, so it stays in registers */
#pragma omp simd
    for (size_t i = i0; i < i1; i++) {
        adamw_elem(p + i, m + i, v + i, g[i], &c);
        if (zero_g) g[i] = 0.0f;
        pb[i] = gpt2c_bf16_from_f32(p[i]);
    }
}

#define ADAMW_NT_BLOCK 32 /* bf16 words per 64-byte non-temporal store */

static inline __attribute__((always_inline)) void adamw_bf16_impl(float *p, float *g, float *m, float *v, uint16_t *pb,
                                                                  size_t n, const adamw_consts c, const int zero_g) {
#if defined(__AVX512F__)
    /* The copy is only written here (read by the next forward's GEMMs, long
     * after it has left the caches): whole 64-byte lines of it are written
     * with non-temporal stores, so the pass does not first read each line of
     * pb into the cache (2 of the ~36 bytes it moves per parameter).  Same
     * arithmetic per element, so the same bits. */
    if (n >= 4 * ADAMW_NT_BLOCK && ((uintptr_t)pb & 1) == 0) {
        size_t head = ((64 - ((uintptr_t)pb & 63)) & 63) / 2; /* elements before pb's first 64-byte line */
        const size_t nblk = (n - head) / ADAMW_NT_BLOCK, tail = head + nblk * ADAMW_NT_BLOCK;
        adamw_bf16_range(p, g, m, v, pb, 0, head, &c, zero_g);
#pragma omp parallel if (n >= PAR_MIN)
        {
            const adamw_consts cl = c;
#pragma omp for schedule(static) nowait
            for (size_t b = 0; b < nblk; b++) {
                const size_t i0 = head + b * ADAMW_NT_BLOCK;
                uint16_t blk[ADAMW_NT_BLOCK] __attribute__((aligned(64)));
#pragma omp simd
                for (int j = 0; j < ADAMW_NT_BLOCK; j++) {
                    const size_t i = i0 + j;
                    adamw_elem(p + i, m + i, v + i, g[i], &cl);
                    if (zero_g) g[i] = 0.0f;
                    blk[j] = gpt2c_bf16_from_f32(p[i]);
                }
                _mm512_stream_si512((void *)(pb + i0), _mm512_load_si512(blk));
            }
            _mm_sfence(); /* each thread's streamed lines are visible before the region's barrier */
        }
        adamw_bf16_range(p, g, m, v, pb, tail, n, &c, zero_g);
        return;
    }
#endif
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t b = 0; b < (n + 4095) / 4096; b++)
        adamw_bf16_range(p, g, m, v, pb, b * 4096, b * 4096 + 4096 < n ? b * 4096 + 4096 : n, &c, zero_g);
}

static void adamw_zero_grad_bf16(float *p, float *g, float *m, float *v, uint16_t *pb, size_t n, float lr,
                                 float beta1, float beta2, float eps, float wd, float grad_scale, int t) {
    adamw_bf16_impl(p, g, m, v, pb, n, adamw_setup(lr, beta1, beta2, eps, wd, grad_scale, t), 1);
}

/* g is only read (zero_g 0): the cast drops a const nothing writes through */
static void adamw_bf16(float *p, const float *g, float *m, float *v, uint16_t *pb, size_t n, float lr, float beta1,
                       float beta2, float eps, float wd, float grad_scale, int t) {
    adamw_bf16_impl(p, (float *)g, m, v, pb, n, adamw_setup(lr, beta1, beta2, eps, wd, grad_scale, t), 0);
}

/* ---- bf16 training's data-gradient panels of a weight (ops.h) ---- */

static int bf16_panel_width(int rows, int cols) {
    const int w = gpt2c_cpu_gemm_bf16_panel_width(OPS_ISA);
    return w > 0 && rows % 2 == 0 && cols % w == 0 ? w : 0;
}

/* n words to dst, whole 64-byte lines streamed past the caches where dst
 * and n allow (panels and copies are read next by a later step's GEMMs,
 * long after they would have left the caches: no read for ownership) */
static inline void store_words(void *dst, const void *src, size_t bytes) {
#if defined(__AVX512F__)
    size_t head = (64 - ((uintptr_t)dst & 63)) & 63; /* bytes before dst's first whole line */
    if (head > bytes) head = bytes;
    memcpy(dst, src, head);
    size_t o = head;
    for (; o + 64 <= bytes; o += 64)
        _mm512_stream_si512((void *)((char *)dst + o), _mm512_loadu_si512((const char *)src + o));
    memcpy((char *)dst + o, (const char *)src + o, bytes - o);
#else
    memcpy(dst, src, bytes);
#endif
}

/* Pair row q of the panels over columns [j1, j1 + n) (multiples of width),
 * from rows r0 and r1 (pointing at column j1) */
static inline void panel_pair_row(uint32_t *pd, const uint16_t *r0, const uint16_t *r1, size_t q, size_t kq, int j1,
                                  int n, int width) {
    const int wn = width < 64 ? width : 64; /* words per store */
    for (int j0 = 0; j0 < n; j0 += wn) {
        uint32_t w[64] __attribute__((aligned(64)));
#pragma omp simd
        for (int j = 0; j < wn; j++) w[j] = r0[j0 + j] | (uint32_t)r1[j0 + j] << 16;
        const int col = j1 + j0;
        store_words(pd + (size_t)(col / width) * kq * width + q * width + col % width, w, sizeof(uint32_t) * wn);
    }
}

static void bf16_panels(uint32_t *pd, const uint16_t *pb, int rows, int cols, int width) {
    const size_t kq = (size_t)rows / 2;
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PAR_MIN)
    for (size_t q = 0; q < kq; q++) panel_pair_row(pd, pb + 2 * q * cols, pb + (2 * q + 1) * cols, q, kq, 0, cols, width);
#if defined(__AVX512F__)
    _mm_sfence();
#endif
}

#if defined(__AVX512F__)
/* adamw_elem on 16 lanes: the same operations in the same order (each
 * multiply, add and divide rounded on its own, sqrt correctly rounded), so
 * the same bits; p, m, v updated in place, the new p returned */
typedef struct {
    __m512 beta1, one_m_beta1, beta2, one_m_beta2, step, inv_bc2_sqrt, decay, eps, grad_scale;
} adamw_vconsts;

static inline __attribute__((always_inline)) adamw_vconsts adamw_vsetup(const adamw_consts *c) {
    return (adamw_vconsts){_mm512_set1_ps(c->beta1), _mm512_set1_ps(1.0f - c->beta1), _mm512_set1_ps(c->beta2),
                           _mm512_set1_ps(1.0f - c->beta2), _mm512_set1_ps(c->step), _mm512_set1_ps(c->inv_bc2_sqrt),
                           _mm512_set1_ps(c->decay), _mm512_set1_ps(c->eps), _mm512_set1_ps(c->grad_scale)};
}

static inline __attribute__((always_inline)) __m512 adamw_elem16(float *p, const float *g, float *m, float *v,
                                                                 const adamw_vconsts *c) {
    const __m512 gi = _mm512_mul_ps(_mm512_loadu_ps(g), c->grad_scale);
    const __m512 mi = _mm512_add_ps(_mm512_mul_ps(c->beta1, _mm512_loadu_ps(m)), _mm512_mul_ps(c->one_m_beta1, gi));
    const __m512 vi = _mm512_add_ps(_mm512_mul_ps(c->beta2, _mm512_loadu_ps(v)),
                                    _mm512_mul_ps(_mm512_mul_ps(c->one_m_beta2, gi), gi));
    _mm512_storeu_ps(m, mi);
    _mm512_storeu_ps(v, vi);
    const __m512 den = _mm512_add_ps(_mm512_mul_ps(_mm512_sqrt_ps(vi), c->inv_bc2_sqrt), c->eps);
    const __m512 pn =
        _mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(p), c->decay), _mm512_div_ps(_mm512_mul_ps(c->step, mi), den));
    _mm512_storeu_ps(p, pn);
    return pn;
}

/* columns i..i+31 updated, each new p rounded to bf16 in its lane's high half (h[0]: the first 16) */
static inline __attribute__((always_inline)) void adamw_round32(float *p, const float *g, float *m, float *v, size_t i,
                                                                const adamw_vconsts *c, __m512i h[2]) {
    for (int k = 0; k < 2; k++) {
        const size_t o = i + 16 * (size_t)k;
        h[k] = gpt2c_bf16_round_hi(_mm512_castps_si512(adamw_elem16(p + o, g + o, m + o, v + o, c)));
    }
}

/* 16 pair words: row 2q's bf16 words (zero-extended) low, row 2q+1's (in their lanes' high halves) high */
static inline __attribute__((always_inline)) __m512i pair_words16(__m256i first, __m512i second_hi) {
    return _mm512_mask_blend_epi16(0xAAAAAAAAu, _mm512_cvtepu16_epi32(first), second_hi);
}

/* one 64-byte line: streamed past the caches where dst is a whole line */
static inline __attribute__((always_inline)) void put_line(void *dst, __m512i w, int nt) {
    if (nt)
        _mm512_stream_si512(dst, w);
    else
        _mm512_storeu_si512(dst, w);
}

/* adamw_bf16_panels with no staging of p: row 2q, then row 2q+1, each
 * front to back (one read stream per array, as the plain AdamW), 32 columns
 * at a time: the 32 rounded words are one line of the copy; row 2q's also
 * go to a small buffer, from which row 2q+1's pass makes the pair words (two
 * lines of the panels).  The staged form (below) built the words through
 * two stack buffers and, past 1024 columns, alternated rows every 1024; with
 * fast memory it ran 1.1-1.35x slower than this (bench/optimizer_ceiling.sh).
 * Needs cols and width multiples of 32. */
static void adamw_bf16_panels_avx512(float *p, const float *g, float *m, float *v, uint16_t *pb, uint32_t *pd,
                                     int rows, int cols, int width, const adamw_consts *c) {
    enum { CHUNK = 4096 }; /* columns per pass over the two rows (GPT-2's widest: 3072) */
    const size_t kq = (size_t)rows / 2;
    /* lines are whole where the bases are: rows are 64 bytes apart in both */
    const int nt = ((uintptr_t)pb & 63) == 0 && ((uintptr_t)pd & 63) == 0;
    static const int16_t odd_words[32] __attribute__((aligned(64))) = {
        1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
        33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63}; /* the high halves of a, then of b */
#pragma omp parallel if ((size_t)rows * cols >= PAR_MIN)
    {
        const adamw_vconsts vc = adamw_vsetup(c);
        const __m512i odd = _mm512_load_si512(odd_words);
        uint16_t first[CHUNK] __attribute__((aligned(64))); /* row 2q's words of the chunk */
#pragma omp for schedule(static) nowait
        for (size_t q = 0; q < kq; q++) {
            const size_t r0 = 2 * q * (size_t)cols, r1 = r0 + (size_t)cols;
            for (int c0 = 0; c0 < cols; c0 += CHUNK) {
                const int c1 = cols - c0 < CHUNK ? cols : c0 + CHUNK;
                for (int j = c0; j < c1; j += 32) {
                    __m512i h[2];
                    adamw_round32(p, g, m, v, r0 + (size_t)j, &vc, h);
                    const __m512i w = _mm512_permutex2var_epi16(h[0], odd, h[1]);
                    put_line(pb + r0 + j, w, nt);
                    _mm512_store_si512(first + (j - c0), w);
                }
                for (int j = c0; j < c1; j += 32) {
                    __m512i h[2];
                    adamw_round32(p, g, m, v, r1 + (size_t)j, &vc, h);
                    put_line(pb + r1 + j, _mm512_permutex2var_epi16(h[0], odd, h[1]), nt);
                    const __m512i lo = _mm512_load_si512(first + (j - c0));
                    uint32_t *dst = pd + (size_t)(j / width) * kq * width + q * width + (size_t)(j % width);
                    put_line(dst, pair_words16(_mm512_castsi512_si256(lo), h[0]), nt);
                    put_line(dst + 16, pair_words16(_mm512_extracti64x4_epi64(lo, 1), h[1]), nt);
                }
            }
        }
        if (nt) _mm_sfence(); /* each thread's streamed lines are visible before the region's barrier */
    }
}
#endif

/* adamw_bf16 by row pairs, each pair's bf16 values written to both copies:
 * the row-major one and the panels (the same element arithmetic, so the
 * same bits as adamw_bf16 followed by bf16_panels) */
static void adamw_bf16_panels(float *p, const float *g, float *m, float *v, uint16_t *pb, uint32_t *pd, int rows,
                              int cols, int width, float lr, float beta1, float beta2, float eps, float wd,
                              float grad_scale, int t) {
    const adamw_consts c = adamw_setup(lr, beta1, beta2, eps, wd, grad_scale, t);
#if defined(__AVX512F__)
    if (cols % 32 == 0 && width % 32 == 0 && !getenv("GPT2C_ADAMW_STAGED")) {
        adamw_bf16_panels_avx512(p, g, m, v, pb, pd, rows, cols, width, &c);
        return;
    }
#endif
    const size_t kq = (size_t)rows / 2;
    enum { CH = 1024 }; /* columns at a time (a multiple of every width) */
#pragma omp parallel if ((size_t)rows * cols >= PAR_MIN)
    {
        const adamw_consts cl = c;
        uint16_t blk[2 * CH] __attribute__((aligned(64)));
#pragma omp for schedule(static) nowait
        for (size_t q = 0; q < kq; q++) {
            for (int c0 = 0; c0 < cols; c0 += CH) {
                const int cw = cols - c0 < CH ? cols - c0 : CH;
                for (int r = 0; r < 2; r++) {
                    const size_t i0 = (2 * q + r) * (size_t)cols + c0;
#pragma omp simd
                    for (int j = 0; j < cw; j++) {
                        adamw_elem(p + i0 + j, m + i0 + j, v + i0 + j, g[i0 + j], &cl);
                        blk[r * CH + j] = gpt2c_bf16_from_f32(p[i0 + j]);
                    }
                    store_words(pb + i0, blk + r * CH, sizeof(uint16_t) * cw);
                }
                panel_pair_row(pd, blk, blk + CH, q, kq, c0, cw, width); /* the chunk's pair row */
            }
        }
#if defined(__AVX512F__)
        _mm_sfence(); /* each thread's streamed lines are visible before the region's barrier */
#endif
    }
}

static void zero(float *x, size_t n) {
    const size_t chunk = 1 << 16;
    const long nch = (long)((n + chunk - 1) / chunk);
#pragma omp parallel for schedule(static) if (nch > 1)
    for (long c = 0; c < nch; c++) {
        const size_t i0 = (size_t)c * chunk, len = i0 + chunk < n ? chunk : n - i0;
        memset(x + i0, 0, len * sizeof(float));
    }
}

/* ---- attention in bf16 precision ---------------------------------- */

#include "kernels/cpu/attention_bf16_impl.h"

const gpt2c_kernels OPS_TABLE = {
    .name = "cpu",
    .isa = OPS_ISA_NAME,
#define OPS_ENTRY(ret, name, params, args) .name = name,
    GPT2C_OPS_TRAIN(OPS_ENTRY) GPT2C_OPS_FUSED(OPS_ENTRY)
#undef OPS_ENTRY
};
