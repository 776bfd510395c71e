/* The cpu backend against the ref oracle, op by op, on random shapes that are
 * not multiples of any block size, for every ISA path this CPU can run
 * (forced one by one), with 1 and 2 threads giving bitwise-identical results.
 *
 * Tolerances are relative to the largest |ref| value of each output
 * (tu_max_rel_err): fp32 arithmetic against the double-accumulating ref,
 * 2e-5 for single-pass ops, scaled up with sqrt(reduction length) for GEMMs
 * and attention, whose fp32 sums grow error that way. */
#include <stdint.h>

#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "kernels/bf16.h"
#include "core/sanitizer.h"
#include "kernels/kernels.h"
#include "testutil.h"

/* Under AddressSanitizer (GPT2C_SANITIZED) the T = 1024 attention cases run
 * on the first ISA only: on the portable kernel they took 38 of the test's
 * 57 s there.  The other builds run them on every ISA. */

static const gpt2c_kernels *REF, *CPU;
static const char *g_isa = "";
static int g_bitwise = 1; /* 0 for blas: OpenBLAS's sums depend on its thread count */

static float *rnd(size_t n, uint64_t seed, float scale) {
    float *x = malloc(sizeof(float) * (n ? n : 1));
    gpt2c_rng r;
    gpt2c_rng_seed(&r, seed, n);
    for (size_t i = 0; i < n; i++) x[i] = (2.0f * gpt2c_rng_uniform(&r) - 1.0f) * scale;
    return x;
}
static float *dup(const float *x, size_t n) {
    float *y = malloc(sizeof(float) * (n ? n : 1));
    memcpy(y, x, sizeof(float) * n);
    return y;
}

/* checks cpu output `a` (threads=1) against ref and against `b` (threads=2) bitwise */
static void check(const char *what, const float *a, const float *b, const float *ref, size_t n, double tol) {
    double e = tu_max_rel_err(a, ref, n, 1e-6);
    CHECK_MSG(e <= tol, "[%s] %s: rel err %.3g > %.3g", g_isa, what, e, tol);
    if (g_bitwise) CHECK_MSG(memcmp(a, b, sizeof(float) * n) == 0, "[%s] %s: 1 and 2 threads differ", g_isa, what);
}

static double gemm_tol(int K) { return 2e-6 * (4 + sqrt((double)K)); }

static void test_matmul(int N, int IC, int OC, int use_bias) {
    char what[96];
    float *inp = rnd((size_t)N * IC, 1, 1), *w = rnd((size_t)OC * IC, 2, 1), *bias = use_bias ? rnd(OC, 3, 1) : NULL;
    float *dout = rnd((size_t)N * OC, 4, 1), *dw0 = rnd((size_t)OC * IC, 5, 1), *db0 = rnd(OC, 6, 1);
    const size_t no = (size_t)N * OC, ni = (size_t)N * IC, nw = (size_t)OC * IC;
    float *out_r = malloc(4 * no), *out[2] = {malloc(4 * no), malloc(4 * no)};
    float *dinp_r = malloc(4 * ni), *dinp[2] = {malloc(4 * ni), malloc(4 * ni)};
    float *dw_r = dup(dw0, nw), *dw[2] = {dup(dw0, nw), dup(dw0, nw)};
    float *db_r = dup(db0, OC), *db[2] = {dup(db0, OC), dup(db0, OC)};
    const gpt2c_tensor W = gpt2c_tensor_f32(w, OC, IC);
    REF->matmul_forward(out_r, inp, &W, bias, N, IC, OC);
    REF->matmul_backward(dinp_r, dw_r, use_bias ? db_r : NULL, dout, inp, &W, N, IC, OC, 1);
    for (int t = 0; t < 2; t++) {
        gpt2c_set_threads(t + 1);
        CPU->matmul_forward(out[t], inp, &W, bias, N, IC, OC);
        CPU->matmul_backward(dinp[t], dw[t], use_bias ? db[t] : NULL, dout, inp, &W, N, IC, OC, 1);
    }
    snprintf(what, sizeof what, "matmul fwd N=%d IC=%d OC=%d bias=%d", N, IC, OC, use_bias);
    check(what, out[0], out[1], out_r, no, gemm_tol(IC));
    snprintf(what, sizeof what, "matmul dinp N=%d IC=%d OC=%d", N, IC, OC);
    check(what, dinp[0], dinp[1], dinp_r, ni, gemm_tol(OC));
    snprintf(what, sizeof what, "matmul dw N=%d IC=%d OC=%d", N, IC, OC);
    check(what, dw[0], dw[1], dw_r, nw, gemm_tol(N));
    snprintf(what, sizeof what, "matmul dbias N=%d OC=%d", N, OC);
    check(what, db[0], db[1], db_r, OC, gemm_tol(N));
    /* dinp == NULL is skipped, dw still accumulates */
    float *dw2 = dup(dw0, nw);
    CPU->matmul_backward(NULL, dw2, NULL, dout, inp, &W, N, IC, OC, 1);
    if (g_bitwise) CHECK_MSG(memcmp(dw2, dw[0], 4 * nw) == 0, "[%s] matmul dinp=NULL changes dw", g_isa);
    free(dw2);
    /* dw == NULL (a frozen weight): dinp as before, nothing else written */
    float *dinp2 = malloc(4 * ni);
    CPU->matmul_backward(dinp2, NULL, NULL, dout, inp, &W, N, IC, OC, 1);
    if (g_bitwise) CHECK_MSG(memcmp(dinp2, dinp[0], 4 * ni) == 0, "[%s] matmul dw=NULL changes dinp", g_isa);
    REF->matmul_backward(dinp2, NULL, NULL, dout, inp, &W, N, IC, OC, 1);
    CHECK_MSG(memcmp(dinp2, dinp_r, 4 * ni) == 0, "ref matmul dw=NULL changes dinp");
    free(dinp2);
    /* dw_acc 0 (fresh gradients): dw overwritten, never read (NaN before), the bits
     * of accumulating onto zeros; ref likewise */
    float *dwz = calloc(nw, 4), *dwo = malloc(4 * nw), *dwz_r = calloc(nw, 4), *dwo_r = malloc(4 * nw);
    for (size_t i = 0; i < nw; i++) dwo[i] = dwo_r[i] = NAN;
    CPU->matmul_backward(NULL, dwz, NULL, dout, inp, &W, N, IC, OC, 1);
    CPU->matmul_backward(NULL, dwo, NULL, dout, inp, &W, N, IC, OC, 0);
    CHECK_MSG(memcmp(dwz, dwo, 4 * nw) == 0, "[%s] matmul dw overwritten (dw_acc 0) != accumulated onto zeros N=%d IC=%d OC=%d",
              g_isa, N, IC, OC);
    REF->matmul_backward(NULL, dwz_r, NULL, dout, inp, &W, N, IC, OC, 1);
    REF->matmul_backward(NULL, dwo_r, NULL, dout, inp, &W, N, IC, OC, 0);
    CHECK_MSG(memcmp(dwz_r, dwo_r, 4 * nw) == 0, "ref matmul dw overwritten (dw_acc 0) != accumulated onto zeros");
    free(dwz), free(dwo), free(dwz_r), free(dwo_r);
    free(inp), free(w), free(bias), free(dout), free(dw0), free(db0), free(out_r), free(dinp_r), free(dw_r), free(db_r);
    for (int t = 0; t < 2; t++) free(out[t]), free(dinp[t]), free(dw[t]), free(db[t]);
}

static void test_layernorm(int N, int C) {
    char what[64];
    const size_t n = (size_t)N * C;
    float *x = rnd(n, 11, 2), *y = rnd(n, 12, 1), *w = rnd(C, 13, 1), *b = rnd(C, 14, 1), *d = rnd(n, 15, 1);
    float *o_r = malloc(4 * n), *res_r = malloc(4 * n), *m_r = malloc(4 * N), *s_r = malloc(4 * N);
    float *dx0 = rnd(n, 16, 1), *dw0 = rnd(C, 17, 1), *db0 = rnd(C, 18, 1);
    float *dx_r = dup(dx0, n), *dw_r = dup(dw0, C), *db_r = dup(db0, C);
    REF->residual_layernorm_forward(res_r, o_r, m_r, s_r, x, y, w, b, N, C);
    REF->layernorm_backward(dx_r, dw_r, db_r, d, res_r, w, m_r, s_r, N, C);
    float *o[2], *res[2], *m[2], *s[2], *dx[2], *dw[2], *db[2], *o2[2];
    for (int t = 0; t < 2; t++) {
        gpt2c_set_threads(t + 1);
        o[t] = malloc(4 * n), res[t] = malloc(4 * n), m[t] = malloc(4 * N), s[t] = malloc(4 * N), o2[t] = malloc(4 * n);
        dx[t] = dup(dx0, n), dw[t] = dup(dw0, C), db[t] = dup(db0, C);
        CPU->residual_layernorm_forward(res[t], o[t], m[t], s[t], x, y, w, b, N, C);
        CPU->layernorm_forward(o2[t], m[t], s[t], res_r, w, b, N, C);
        CPU->layernorm_backward(dx[t], dw[t], db[t], d, res_r, w, m_r, s_r, N, C);
    }
    snprintf(what, sizeof what, "residual N=%d C=%d", N, C);
    check(what, res[0], res[1], res_r, n, 1e-7);
    snprintf(what, sizeof what, "residual_layernorm N=%d C=%d", N, C);
    check(what, o[0], o[1], o_r, n, 2e-5);
    snprintf(what, sizeof what, "layernorm fwd N=%d C=%d", N, C);
    check(what, o2[0], o2[1], o_r, n, 2e-5);
    check("layernorm mean", m[0], m[1], m_r, N, 2e-5);
    check("layernorm rstd", s[0], s[1], s_r, N, 2e-5);
    snprintf(what, sizeof what, "layernorm dx N=%d C=%d", N, C);
    check(what, dx[0], dx[1], dx_r, n, 5e-5);
    snprintf(what, sizeof what, "layernorm dw N=%d C=%d", N, C);
    check(what, dw[0], dw[1], dw_r, C, gemm_tol(N));
    check("layernorm db", db[0], db[1], db_r, C, gemm_tol(N));
    free(x), free(y), free(w), free(b), free(d), free(o_r), free(res_r), free(m_r), free(s_r), free(dx0), free(dw0),
        free(db0), free(dx_r), free(dw_r), free(db_r);
    for (int t = 0; t < 2; t++) free(o[t]), free(res[t]), free(m[t]), free(s[t]), free(dx[t]), free(dw[t]), free(db[t]), free(o2[t]);
}

/* One attention case: random q, k, v and dout, ref's outputs (the oracle),
 * and runs of the cpu backend's fp32 or bf16 attention. */
typedef struct {
    int B, T, C, NH;
    size_t nq, no;
    float *qkv, *dout, *out_r, *dq_r;
} att_case;

static att_case att_case_new(int B, int T, int C, int NH, uint64_t seed) {
    att_case a = {B, T, C, NH, (size_t)B * T * 3 * C, (size_t)B * T * C, NULL, NULL, NULL, NULL};
    a.qkv = rnd(a.nq, seed, 2), a.dout = rnd(a.no, seed + 1, 1);
    float *st = malloc(4 * REF->attention_state_floats(B, T, NH)), *sc = malloc(4 * REF->attention_scratch_floats(B, T, NH));
    a.out_r = malloc(4 * a.no), a.dq_r = malloc(4 * a.nq);
    REF->attention_forward(a.out_r, st, a.qkv, B, T, C, NH);
    REF->attention_backward(a.dq_r, sc, a.dout, a.qkv, a.out_r, st, B, T, C, NH);
    free(st), free(sc);
    return a;
}

/* the cpu attention (bf16: its bf16 precision ops) on `threads` threads, forward then backward */
static void att_run(const att_case *a, int bf16, int threads, float **out, float **dq) {
    gpt2c_set_threads(threads);
    float *st = malloc(4 * CPU->attention_state_floats(a->B, a->T, a->NH));
    float *sc = malloc(4 * CPU->attention_scratch_floats(a->B, a->T, a->NH));
    *out = malloc(4 * a->no), *dq = malloc(4 * a->nq);
    (bf16 ? CPU->attention_forward_bf16 : CPU->attention_forward)(*out, st, a->qkv, a->B, a->T, a->C, a->NH);
    (bf16 ? CPU->attention_backward_bf16 : CPU->attention_backward)(*dq, sc, a->dout, a->qkv, *out, st, a->B, a->T, a->C,
                                                                     a->NH);
    free(st), free(sc);
}

static void att_case_free(att_case *a) { free(a->qkv), free(a->dout), free(a->out_r), free(a->dq_r); }

static void test_attention(int B, int T, int C, int NH) {
    char what[80];
    att_case a = att_case_new(B, T, C, NH, 21);
    float *out[2], *dq[2];
    for (int t = 0; t < 2; t++) att_run(&a, 0, t + 1, &out[t], &dq[t]);
    snprintf(what, sizeof what, "attention fwd B=%d T=%d C=%d NH=%d", B, T, C, NH);
    check(what, out[0], out[1], a.out_r, a.no, 4e-6 * (4 + sqrt((double)T)));
    snprintf(what, sizeof what, "attention bwd B=%d T=%d C=%d NH=%d", B, T, C, NH);
    check(what, dq[0], dq[1], a.dq_r, a.nq, 1e-5 * (4 + sqrt((double)T)));
    /* without the per-thread pair buffer (as when it cannot be allocated):
     * tile by tile copies and dQ accumulated in place, the same bits */
    float *out_nb, *dq_nb;
    setenv("GPT2C_ATT_NO_PAIR_BUFFER", "1", 1);
    att_run(&a, 0, 2, &out_nb, &dq_nb);
    unsetenv("GPT2C_ATT_NO_PAIR_BUFFER");
    CHECK_MSG(memcmp(out_nb, out[1], 4 * a.no) == 0 && memcmp(dq_nb, dq[1], 4 * a.nq) == 0,
              "[%s] attention B=%d T=%d C=%d NH=%d: the no-pair-buffer path differs", g_isa, B, T, C, NH);
    free(out_nb), free(dq_nb);
    att_case_free(&a);
    for (int t = 0; t < 2; t++) free(out[t]), free(dq[t]);
}

/* bf16 attention (bf16 precision): the products' operands rounded to bf16, so
 * against ref's fp32 attention within a bf16 tolerance, relative to the largest
 * output (each operand rounded by <= 2^-9: a score or a product sum errs by
 * ~2^-8 of its largest terms; measured ~4e-3 / ~6e-3 of the largest out / dqkv
 * on these inputs), bitwise the same on 1 and 2 threads, and not the fp32 path's
 * numbers (it does round) */
static double max_rel(const float *a, const float *r, size_t n) {
    double e = 0, m = 0;
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs((double)a[i] - r[i])), m = fmax(m, fabs((double)r[i]));
    return m > 0 ? e / m : e;
}

static void test_attention_bf16(int B, int T, int C, int NH) {
    att_case a = att_case_new(B, T, C, NH, 31);
    const size_t nq = a.nq, no = a.no;
    float *out[3], *dq[3];
    for (int t = 0; t < 3; t++) att_run(&a, t < 2, t == 1 ? 2 : 1, &out[t], &dq[t]); /* bf16 on 1 and 2 threads, then fp32 */
    const double eo = max_rel(out[0], a.out_r, no), ed = max_rel(dq[0], a.dq_r, nq);
    CHECK_MSG(eo <= 2e-2 && ed <= 3e-2, "[%s] bf16 attention B=%d T=%d C=%d NH=%d: out %.3g (tol 2e-2), dqkv %.3g (tol 3e-2)",
              g_isa, B, T, C, NH, eo, ed);
    CHECK_MSG(memcmp(out[0], out[1], 4 * no) == 0 && memcmp(dq[0], dq[1], 4 * nq) == 0,
              "[%s] bf16 attention B=%d T=%d C=%d NH=%d: 1 and 2 threads differ", g_isa, B, T, C, NH);
    if (T > 1) /* one key: the output is v itself, whatever the rounding of the scores */
        CHECK_MSG(memcmp(out[0], out[2], 4 * no) != 0 && max_rel(out[2], a.out_r, no) < eo,
                  "[%s] bf16 attention B=%d T=%d C=%d NH=%d: gives the fp32 path's numbers", g_isa, B, T, C, NH);
    if (T == 1024) printf("  [%s] bf16 attention T=%d hs=%d: out %.2e, dqkv %.2e of the largest\n", g_isa, T, C / NH, eo, ed);
    /* the vector packing of activation rows into pair panels (even head sizes)
     * gives the portable loop's words: the same bits */
    float *out_p, *dq_p;
    setenv("GPT2C_ATT_PORTABLE_PACK", "1", 1);
    att_run(&a, 1, 2, &out_p, &dq_p);
    unsetenv("GPT2C_ATT_PORTABLE_PACK");
    CHECK_MSG(memcmp(out_p, out[1], 4 * no) == 0 && memcmp(dq_p, dq[1], 4 * nq) == 0,
              "[%s] bf16 attention B=%d T=%d C=%d NH=%d: the vector packing differs from the portable one", g_isa, B, T, C,
              NH);
    free(out_p), free(dq_p);
    att_case_free(&a);
    for (int t = 0; t < 3; t++) free(out[t]), free(dq[t]);
}

static void test_pointwise(size_t n) {
    float *x = rnd(n, 31, 5), *d = rnd(n, 32, 1), *y = rnd(n, 33, 1);
    float *o_r = malloc(4 * n), *g_r = malloc(4 * n), *o[2], *g[2];
    REF->gelu_forward(o_r, x, n);
    REF->gelu_backward(g_r, x, d, n);
    for (int t = 0; t < 2; t++) {
        gpt2c_set_threads(t + 1);
        o[t] = malloc(4 * n);
        g[t] = dup(d, n);
        CPU->gelu_forward(o[t], x, n);
        CPU->gelu_backward(g[t], x, g[t], n); /* in place, as the model calls it */
    }
    check("gelu fwd", o[0], o[1], o_r, n, 2e-6);
    check("gelu bwd (in place)", g[0], g[1], g_r, n, 2e-6);
    for (int t = 0; t < 2; t++) {
        gpt2c_set_threads(t + 1);
        CPU->residual_forward(o[t], x, y, n);
    }
    REF->residual_forward(o_r, x, y, n);
    check("residual", o[0], o[1], o_r, n, 0);
    /* sumsq, zero */
    double s_r = REF->sumsq(x, n), s[2];
    for (int t = 0; t < 2; t++) {
        gpt2c_set_threads(t + 1);
        s[t] = CPU->sumsq(x, n);
        CPU->zero(o[t], n);
    }
    CHECK_MSG(fabs(s[0] - s_r) <= 1e-12 * s_r + 1e-30 && s[0] == s[1], "[%s] sumsq n=%zu: %.17g %.17g ref %.17g", g_isa, n, s[0], s[1], s_r);
    memset(o_r, 0, 4 * n);
    check("zero", o[0], o[1], o_r, n, 0);
    /* adamw: 3 steps */
    float *p_r = rnd(n, 34, 1), *m_r = rnd(n, 35, 0.1f), *v_r = rnd(n, 36, 0.1f), *p[2], *m[2], *v[2];
    for (size_t i = 0; i < n; i++) v_r[i] = fabsf(v_r[i]);
    for (int t = 0; t < 2; t++) p[t] = dup(p_r, n), m[t] = dup(m_r, n), v[t] = dup(v_r, n);
    for (int step = 1; step <= 3; step++) {
        REF->adamw(p_r, d, m_r, v_r, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, step);
        for (int t = 0; t < 2; t++) {
            gpt2c_set_threads(t + 1);
            CPU->adamw(p[t], d, m[t], v[t], n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, step);
        }
    }
    check("adamw p", p[0], p[1], p_r, n, 1e-6);
    check("adamw m", m[0], m[1], m_r, n, 1e-6);
    check("adamw v", v[0], v[1], v_r, n, 1e-6);
    /* adamw_zero_grad: adamw's numbers bitwise, and the gradient left zero */
    for (int t = 0; t < 2; t++) {
        gpt2c_set_threads(t + 1);
        float *pz = dup(p[t], n), *mz = dup(m[t], n), *vz = dup(v[t], n), *gz = dup(d, n);
        CPU->adamw(p[t], d, m[t], v[t], n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, 4);
        CPU->adamw_zero_grad(pz, gz, mz, vz, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, 4);
        CHECK_MSG(memcmp(pz, p[t], 4 * n) == 0 && memcmp(mz, m[t], 4 * n) == 0 && memcmp(vz, v[t], 4 * n) == 0,
                  "[%s] adamw_zero_grad n=%zu threads=%d: not bitwise adamw", g_isa, n, t + 1);
        CHECK_MSG(memcmp(gz, o_r, 4 * n) == 0, "[%s] adamw_zero_grad n=%zu threads=%d: gradient not zeroed", g_isa, n,
                  t + 1);
        free(pz), free(mz), free(vz), free(gz);
    }
    /* adamw_zero_grad_bf16 (cpu and ref): adamw_zero_grad's numbers bitwise, and
     * the bf16 copy is the updated p rounded by gpt2c_bf16_from_f32; one NaN and
     * one value halfway between two bf16 (ties to even) among them */
    for (int t = 0; t < 3; t++) {
        gpt2c_set_threads(t == 2 ? 2 : t + 1);
        const gpt2c_kernels *K = t == 2 ? REF : CPU;
        float *pz = dup(p[0], n), *mz = dup(m[0], n), *vz = dup(v[0], n), *gz = dup(d, n);
        float *pb_ = dup(p[0], n), *mb = dup(m[0], n), *vb = dup(v[0], n), *gb = dup(d, n);
        uint16_t *copy = malloc(2 * n);
        if (n > 2) gz[1] = gb[1] = NAN;
        K->adamw_zero_grad(pz, gz, mz, vz, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, 5);
        K->adamw_zero_grad_bf16(pb_, gb, mb, vb, copy, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, 5);
        int bad = 0;
        for (size_t i = 0; i < n; i++) bad += copy[i] != gpt2c_bf16_from_f32(pb_[i]);
        CHECK_MSG(memcmp(pz, pb_, 4 * n) == 0 && memcmp(mz, mb, 4 * n) == 0 && memcmp(vz, vb, 4 * n) == 0 &&
                      memcmp(gz, gb, 4 * n) == 0,
                  "[%s] adamw_zero_grad_bf16 (%s) n=%zu: not bitwise adamw_zero_grad", g_isa, K->name, n);
        CHECK_MSG(bad == 0, "[%s] adamw_zero_grad_bf16 (%s) n=%zu: %d bf16 copies differ from the rounded p", g_isa,
                  K->name, n, bad);
        uint16_t tie[2];
        float pt[2] = {1.0f + 0x1.0p-8f, 1.0f + 3 * 0x1.0p-8f}, zt[2] = {0, 0}, mt[2] = {0, 0}, vt[2] = {0, 0};
        K->adamw_zero_grad_bf16(pt, zt, mt, vt, tie, 2, 0.0f, 0.9f, 0.95f, 1e-8f, 0.0f, 1.0f, 1); /* lr 0: p kept */
        CHECK_MSG(tie[0] == 0x3f80 && tie[1] == 0x3f82, "[%s] adamw_zero_grad_bf16 (%s): ties %04x %04x, want 3f80 3f82",
                  g_isa, K->name, tie[0], tie[1]);
        /* adamw_bf16: the same p, m, v and copy, the gradient left as it was */
        float *pk = dup(p[0], n), *mk = dup(m[0], n), *vk = dup(v[0], n), *gk = dup(d, n);
        uint16_t *copyk = malloc(2 * n);
        if (n > 2) gk[1] = NAN;
        K->adamw_bf16(pk, gk, mk, vk, copyk, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, 5);
        int kept = n <= 2 || isnan(gk[1]);
        for (size_t i = 0; i < n; i++) kept &= i == 1 || memcmp(&gk[i], &d[i], 4) == 0;
        CHECK_MSG(memcmp(pk, pb_, 4 * n) == 0 && memcmp(mk, mb, 4 * n) == 0 && memcmp(vk, vb, 4 * n) == 0 &&
                      memcmp(copyk, copy, 2 * n) == 0 && kept,
                  "[%s] adamw_bf16 (%s) n=%zu: not adamw_zero_grad_bf16's numbers with the gradient kept", g_isa,
                  K->name, n);
        free(pk), free(mk), free(vk), free(gk), free(copyk);
        free(pz), free(mz), free(vz), free(gz), free(pb_), free(mb), free(vb), free(gb), free(copy);
    }
    /* the cpu op streams whole 64-byte lines of the copy: the same bits wherever
     * the copy starts within a line (head, lines, tail), on 1 and 2 threads */
    for (int off = 1; off < 40; off += 9) {
        gpt2c_set_threads(off % 2 + 1);
        float *pz = dup(p[0], n), *mz = dup(m[0], n), *vz = dup(v[0], n), *gz = dup(d, n);
        float *pb_ = dup(p[0], n), *mb = dup(m[0], n), *vb = dup(v[0], n), *gb = dup(d, n);
        uint16_t *buf = malloc(2 * (n + 64)), *copy = buf + off;
        CPU->adamw_zero_grad(pz, gz, mz, vz, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, 3);
        CPU->adamw_zero_grad_bf16(pb_, gb, mb, vb, copy, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, 3);
        int bad = 0;
        for (size_t i = 0; i < n; i++) bad += copy[i] != gpt2c_bf16_from_f32(pb_[i]);
        CHECK_MSG(bad == 0 && memcmp(pz, pb_, 4 * n) == 0 && memcmp(mz, mb, 4 * n) == 0 && memcmp(vz, vb, 4 * n) == 0 &&
                      memcmp(gz, gb, 4 * n) == 0,
                  "[%s] adamw_zero_grad_bf16 n=%zu, copy at word %d of a line: not bitwise adamw_zero_grad (%d copies)",
                  g_isa, n, off, bad);
        uint16_t *bufk = malloc(2 * (n + 64)), *copyk = bufk + off;
        float *pk = dup(p[0], n), *mk = dup(m[0], n), *vk = dup(v[0], n), *gk = dup(d, n);
        CPU->adamw_bf16(pk, gk, mk, vk, copyk, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, 3);
        CHECK_MSG(memcmp(copyk, copy, 2 * n) == 0 && memcmp(pk, pb_, 4 * n) == 0 && memcmp(mk, mb, 4 * n) == 0 &&
                      memcmp(vk, vb, 4 * n) == 0 && memcmp(gk, d, 4 * n) == 0,
                  "[%s] adamw_bf16 n=%zu, copy at word %d of a line: not adamw_zero_grad_bf16's numbers", g_isa, n, off);
        free(bufk), free(pk), free(mk), free(vk), free(gk);
        free(pz), free(mz), free(vz), free(gz), free(pb_), free(mb), free(vb), free(gb), free(buf);
    }
    free(x), free(d), free(y), free(o_r), free(g_r), free(p_r), free(m_r), free(v_r);
    for (int t = 0; t < 2; t++) free(o[t]), free(g[t]), free(p[t]), free(m[t]), free(v[t]);
}

static void test_xent(int N, int V) {
    const int Vp = V + 7;
    const size_t n = (size_t)N * Vp;
    float *lg = rnd(n, 41, 8);
    int32_t *tg = malloc(4 * N);
    for (int i = 0; i < N; i++) tg[i] = (i * 7919) % V;
    float *p_r = dup(lg, n), *l_r = malloc(4 * N), *p[2], *l[2];
    REF->softmax_xent_forward(l_r, p_r, tg, N, V, Vp);
    for (int t = 0; t < 2; t++) {
        gpt2c_set_threads(t + 1);
        p[t] = dup(lg, n), l[t] = malloc(4 * N);
        CPU->softmax_xent_forward(l[t], p[t], tg, N, V, Vp);
    }
    check("xent probs", p[0], p[1], p_r, n, 2e-5);
    check("xent losses", l[0], l[1], l_r, N, 2e-5);
    REF->softmax_xent_backward(p_r, tg, 0.25f, N, V, Vp);
    for (int t = 0; t < 2; t++) {
        gpt2c_set_threads(t + 1);
        CPU->softmax_xent_backward(p[t], tg, 0.25f, N, V, Vp);
    }
    check("xent dlogits", p[0], p[1], p_r, n, 2e-5);
    free(lg), free(tg), free(p_r), free(l_r);
    for (int t = 0; t < 2; t++) free(p[t]), free(l[t]);
}

/* bf16 precision's loss gradient (cpu and ref): softmax_xent_backward's
 * dlogits rounded to bf16, row n's Vp words in place at the start of the
 * row (pad words 0); and the LM head's backward from them: matmul_backward's
 * numbers on the widened dout, bitwise (bf16 and f32 weights, ld > OC) */
static void test_xent_bf16(int N, int V) {
    const int Vp = V + 7;
    const size_t n = (size_t)N * Vp;
    float *lg = rnd(n, 43, 8);
    int32_t *tg = malloc(4 * N);
    for (int i = 0; i < N; i++) tg[i] = (i * 7919) % V;
    const gpt2c_kernels *ks[2] = {CPU, REF};
    for (int k = 0; k < 2; k++) {
        float *want = dup(lg, n), *got = dup(lg, n), *losses = malloc(4 * N);
        ks[k]->softmax_xent_forward(losses, want, tg, N, V, Vp);
        memcpy(got, want, 4 * n);
        ks[k]->softmax_xent_backward(want, tg, 0.25f, N, V, Vp);
        for (int t = 1; t <= 2; t++) {
            float *g = dup(got, n);
            gpt2c_set_threads(t);
            ks[k]->softmax_xent_backward_bf16(g, tg, 0.25f, N, V, Vp);
            size_t bad = 0;
            for (int r = 0; r < N; r++)
                for (int i = 0; i < Vp; i++) {
                    uint16_t h;
                    memcpy(&h, (const char *)(g + (size_t)r * Vp) + 2 * (size_t)i, 2);
                    bad += h != gpt2c_bf16_from_f32(want[(size_t)r * Vp + i]);
                }
            CHECK_MSG(bad == 0, "[%s] softmax_xent_backward_bf16 (%s) N=%d V=%d, %d threads: %zu words are not the rounded dlogits",
                      g_isa, ks[k]->name, N, V, t, bad);
            if (k == 0 && t == 2) { /* the LM head's backward from them */
                const int C = 37;
                float *x = rnd((size_t)N * C, 44, 1), *w = rnd((size_t)Vp * C, 45, 1), *wide = malloc(4 * n);
                uint16_t *wb = malloc(2 * (size_t)Vp * C);
                for (size_t i = 0; i < (size_t)Vp * C; i++) wb[i] = gpt2c_bf16_from_f32(w[i]);
                for (int r = 0; r < N; r++)
                    for (int i = 0; i < Vp; i++) {
                        uint16_t h;
                        memcpy(&h, (const char *)(g + (size_t)r * Vp) + 2 * (size_t)i, 2);
                        wide[(size_t)r * Vp + i] = gpt2c_bf16_to_f32(h);
                    }
                const gpt2c_tensor tw[2] = {{.fmt = GPT2C_FMT_BF16, .rows = Vp, .cols = C, .data = wb}, gpt2c_tensor_f32(w, Vp, C)};
                for (int f = 0; f < 2; f++)
                    for (int kk = 0; kk < 2; kk++) {
                        float *di = malloc(4 * (size_t)N * C), *di2 = malloc(4 * (size_t)N * C);
                        float *dw = rnd((size_t)Vp * C, 46, 1), *dw2 = dup(dw, (size_t)Vp * C);
                        ks[kk]->matmul_backward_dout_bf16(di, dw, (const uint16_t *)g, 2L * Vp, x, &tw[f], N, C, Vp, 1);
                        ks[kk]->matmul_backward(di2, dw2, NULL, wide, x, &tw[f], N, C, Vp, 1);
                        CHECK_MSG(memcmp(di, di2, 4 * (size_t)N * C) == 0 && memcmp(dw, dw2, 4 * (size_t)Vp * C) == 0,
                                  "[%s] matmul_backward_dout_bf16 (%s, %s weight) N=%d OC=%d: not matmul_backward's numbers",
                                  g_isa, ks[kk]->name, f ? "f32" : "bf16", N, Vp);
                        free(di), free(di2), free(dw), free(dw2);
                    }
                free(x), free(w), free(wide), free(wb);
            }
            free(g);
        }
        free(want), free(got), free(losses);
    }
    free(lg), free(tg);
}

static void test_encoder(int B, int T, int C) {
    const int V = 7, N = B * T;
    float *wte = rnd((size_t)V * C, 51, 1), *wpe = rnd((size_t)T * C, 52, 1), *d = rnd((size_t)N * C, 53, 1);
    int32_t *tok = malloc(4 * N);
    for (int i = 0; i < N; i++) tok[i] = (i * 3) % V; /* repeats */
    float *o_r = malloc(4 * (size_t)N * C), *dte_r = rnd((size_t)V * C, 54, 1), *dpe_r = rnd((size_t)T * C, 55, 1);
    float *o[2], *dte[2], *dpe[2];
    for (int t = 0; t < 2; t++) o[t] = malloc(4 * (size_t)N * C), dte[t] = dup(dte_r, (size_t)V * C), dpe[t] = dup(dpe_r, (size_t)T * C);
    REF->encoder_forward(o_r, tok, wte, wpe, B, T, C);
    REF->encoder_backward(dte_r, dpe_r, d, tok, B, T, C);
    for (int t = 0; t < 2; t++) {
        gpt2c_set_threads(t + 1);
        CPU->encoder_forward(o[t], tok, wte, wpe, B, T, C);
        CPU->encoder_backward(dte[t], dpe[t], d, tok, B, T, C);
    }
    check("encoder fwd", o[0], o[1], o_r, (size_t)N * C, 0);
    check("encoder dwte", dte[0], dte[1], dte_r, (size_t)V * C, 1e-6);
    check("encoder dwpe", dpe[0], dpe[1], dpe_r, (size_t)T * C, 1e-6);
    free(wte), free(wpe), free(d), free(tok), free(o_r), free(dte_r), free(dpe_r);
    for (int t = 0; t < 2; t++) free(o[t]), free(dte[t]), free(dpe[t]);
}

int main(void) {
    CHECK_OK(gpt2c_kernels_get("ref", &REF));
    CHECK_OK(gpt2c_kernels_get("cpu", &CPU));
    CHECK_FAILS(gpt2c_cpu_force_isa("sse9"), GPT2C_ERR_ARG);
    const char *isas[] = {"avx512", "avx2", "scalar"};
    int ran = 0;
    for (int k = 0; k < 3; k++) {
        if (gpt2c_cpu_force_isa(isas[k]) != GPT2C_OK) {
            printf("  %s: not runnable here (%s), skipped\n", isas[k], gpt2c_errmsg());
            continue;
        }
        ran++;
        g_isa = isas[k];
        const int Ns[] = {1, 3, 17, 67}, Cs[] = {1, 5, 33, 100, 130};
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 5; b++)
                for (int c = 0; c < 5; c += 2) test_matmul(Ns[a], Cs[b], Cs[c], (a + b + c) & 1);
        test_matmul(67, 300, 130, 1);  /* K > one K block */
        test_matmul(5, 7, 1700, 1);    /* dW rows > one row block */
        test_matmul(258, 600, 70, 0);  /* dW K > one K block */
        test_matmul(2, 33, 1100, 1);   /* many column tiles */
        test_matmul(7, 1100, 70, 0);   /* B rows far apart: packed, not read in place */
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 5; b++) test_layernorm(Ns[a], Cs[b]);
        test_layernorm(17, 768);
        const int Ts[] = {1, 5, 37, 70};
        for (int t = 0; t < 4; t++) {
            test_attention(1, Ts[t], 5, 1);
            test_attention(2, Ts[t], 66, 2);
            test_attention(3, Ts[t], 256, 4);
        }
        /* several query blocks and key tiles (48 / 64), ragged ends, hs 33 and 64 */
        const int long_cases = !GPT2C_SANITIZED || ran == 1;
        test_attention(2, 150, 66, 2);
        if (long_cases) test_attention(1, 1024, 64, 1);
        for (int t = 0; t < 4; t++) {
            test_attention_bf16(1, Ts[t], 5, 1);
            test_attention_bf16(2, Ts[t], 66, 2);
            test_attention_bf16(3, Ts[t], 256, 4);
        }
        test_attention_bf16(2, 150, 66, 2);
        if (long_cases) test_attention_bf16(1, 1024, 64, 1);
        else printf("  %s: T=1024 attention left to the first ISA (a sanitizer build)\n", isas[k]);
        test_pointwise(1);
        test_pointwise(37);
        test_pointwise(100003);
        test_xent(1, 5);
        test_xent(3, 100);
        test_xent(17, 1000);
        test_xent_bf16(1, 5);
        test_xent_bf16(3, 100);
        test_xent_bf16(17, 1000);
        test_encoder(1, 1, 5);
        test_encoder(3, 37, 130);
        test_encoder(2, 5, 768);
        printf("  %s: done\n", isas[k]);
    }
    CHECK(ran >= 1);
    /* the blas backend (when built): its GEMMs against ref, within the same tolerance */
    const gpt2c_kernels *blas;
    if (gpt2c_kernels_get("blas", &blas) == GPT2C_OK) {
        const gpt2c_kernels *cpu = CPU;
        CPU = blas;
        g_isa = "blas";
        g_bitwise = 0; /* found: OpenBLAS 0.3.21 gives different bits for 1 and 2 threads */
        const int Ns[] = {1, 17, 67}, Cs[] = {1, 33, 130};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++) test_matmul(Ns[a], Cs[b], Cs[c], (a + b + c) & 1);
        CPU = cpu;
        printf("  blas: done\n");
    }
    gpt2c_cpu_force_isa("auto");
    return tu_finish("test_cpu_kernels");
}
