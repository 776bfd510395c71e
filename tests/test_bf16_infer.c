/* The bf16 inference matmul (kernels/cpu/infer_bf16.h) and the model's bf16
 * weight copies (gpt2c/precision.h).
 *
 *  - the matrix-vector product: vdpbf16ps (where the CPU has AVX512_BF16)
 *    against the portable path, bitwise, on ragged shapes (IC not a multiple
 *    of 32, 1..7 rows, output ranges starting anywhere); and the portable
 *    path against a double dot product of the bf16-rounded inputs, within
 *    |error| <= (IC + 4) 2^-24 sum |x w| (a recursive fp32 sum's bound);
 *  - the range matmul through the cpu table (matmul_infer_range with a bf16
 *    view): few rows = the portable product bitwise, many rows (prefill) =
 *    the bf16 GEMM bitwise, GELU epilogue = the table's gelu_forward;
 *  - the weight copies: every element the nearest-even bf16 of its master
 *    weight (NaN, infinities and ties included), and refreshed by an
 *    optimizer step for trainable tensors only. */
#include <math.h>
#include <stdint.h>

#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "gpt2c/model.h"
#include "gpt2c/precision.h"
#include "kernels/bf16.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/infer_bf16.h"
#include "kernels/kernels.h"
#include "model/model_internal.h"
#include "testutil.h"

static float *rnd(size_t n, uint64_t seed) {
    float *x = malloc(sizeof(float) * (n ? n : 1));
    gpt2c_rng r;
    gpt2c_rng_seed(&r, seed, n);
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * gpt2c_rng_uniform(&r) - 1.0f;
    return x;
}

static size_t ndiff(const float *a, const float *b, size_t n) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], 4) != 0;
    return d;
}

static void test_gemv(void) {
    const int ICs[] = {1, 2, 31, 32, 33, 64, 95, 130, 768};
    const int Ns[] = {1, 2, 3, 4, 5, 7};
    const int OC = 37;
    int dp = 0;
#if defined(__x86_64__)
    dp = gpt2c_cpu_has_avx512bf16();
#endif
    printf("  vdpbf16ps path: %s\n", dp ? "checked" : "absent on this CPU (portable path only)");
    for (size_t a = 0; a < sizeof ICs / sizeof *ICs; a++)
        for (size_t b = 0; b < sizeof Ns / sizeof *Ns; b++) {
            const int IC = ICs[a], N = Ns[b], ld = (IC + 31) / 32 * 32 + 32; /* a row stride beyond the padding */
            float *x = rnd((size_t)N * IC, 10 + IC), *wf = rnd((size_t)OC * IC, 20 + IC), *bias = rnd(OC, 30);
            uint16_t *w = malloc(sizeof(uint16_t) * OC * IC), *xb = malloc(sizeof(uint16_t) * N * ld);
            for (int i = 0; i < OC * IC; i++) w[i] = gpt2c_bf16_from_f32(wf[i]);
            gpt2c_cpu_bf16_round_rows(xb, ld, x, N, IC);
            float *p = calloc((size_t)N * OC, sizeof(float)), *q = calloc((size_t)N * OC, sizeof(float));
            const int o0 = 3, o1 = OC - 2; /* a range starting mid-way */
            gpt2c_cpu_bf16_gemv_portable(p, xb, ld, w, bias, N, IC, OC, o0, o1);
            int bound_ok = 1;
            for (int n = 0; n < N; n++)
                for (int o = o0; o < o1; o++) {
                    double s = bias[o], sa = fabs(bias[o]);
                    for (int i = 0; i < IC; i++) {
                        const double t = (double)gpt2c_bf16_round(x[n * IC + i]) * gpt2c_bf16_to_f32(w[o * IC + i]);
                        s += t, sa += fabs(t);
                    }
                    if (!(fabs(p[n * OC + o] - s) <= (IC + 4) * 0x1p-24 * sa)) bound_ok = 0;
                }
            CHECK_MSG(bound_ok, "portable gemv N=%d IC=%d: outside the fp32 summation bound", N, IC);
            for (int n = 0; n < N; n++) /* outside the range: untouched */
                for (int o = 0; o < OC; o++)
                    if (o < o0 || o >= o1) CHECK(p[n * OC + o] == 0.0f);
#if defined(__x86_64__)
            if (dp) {
                gpt2c_cpu_bf16_gemv_avx512bf16(q, xb, ld, w, bias, N, IC, OC, o0, o1);
                CHECK_MSG(ndiff(p, q, (size_t)N * OC) == 0, "vdpbf16ps gemv N=%d IC=%d: %zu outputs differ", N, IC,
                          ndiff(p, q, (size_t)N * OC));
            }
#endif
            free(x), free(wf), free(bias), free(w), free(xb), free(p), free(q);
        }
}

/* matmul_infer_range of the cpu table with a bf16 view */
static void test_range(void) {
    const gpt2c_kernels *k;
    CHECK_OK(gpt2c_kernels_get("cpu", &k));
    CHECK(GPT2C_KERNELS_TAKES(k, matmul_infer_range, GPT2C_FMT_BF16));
    const int IC = 77, OC = 150;
    const int Ns[] = {3, GPT2C_BF16_GEMM_ROWS + 5};
    for (int t = 0; t < 2; t++) {
        const int N = Ns[t];
        float *x = rnd((size_t)N * IC, 41), *wf = rnd((size_t)OC * IC, 42), *bias = rnd(OC, 43);
        uint16_t *w = malloc(sizeof(uint16_t) * OC * IC);
        for (int i = 0; i < OC * IC; i++) w[i] = gpt2c_bf16_from_f32(wf[i]);
        const gpt2c_tensor wt = {GPT2C_FMT_BF16, OC, IC, w, NULL, NULL, 0};
        float *got = calloc((size_t)N * OC, sizeof(float)), *want = calloc((size_t)N * OC, sizeof(float));
        for (int o0 = 0; o0 < OC; o0 += 64) /* in stage-sized chunks, as inference calls it */
            k->matmul_infer_range(got, x, &wt, bias, N, IC, OC, GPT2C_ACT_NONE, o0, o0 + 64 < OC ? o0 + 64 : OC);
        if (N < GPT2C_BF16_GEMM_ROWS) {
            const int ld = (IC + 31) / 32 * 32;
            uint16_t *xb = malloc(sizeof(uint16_t) * N * ld);
            gpt2c_cpu_bf16_round_rows(xb, ld, x, N, IC);
            gpt2c_cpu_bf16_gemv_portable(want, xb, ld, w, bias, N, IC, OC, 0, OC);
            free(xb);
        } else {
            const gemm_operand a = {x, GPT2C_FMT_F32, IC, 1}, b = {w, GPT2C_FMT_BF16, 1, IC};
            gpt2c_cpu_gemm_bf16_with(gpt2c_cpu_gemm_bf16_kernel(GPT2C_ISA_SCALAR), N, OC, IC, a, b, want, OC, bias, 0);
        }
        CHECK_MSG(ndiff(got, want, (size_t)N * OC) == 0, "matmul_infer_range bf16 N=%d: %zu outputs differ", N,
                  ndiff(got, want, (size_t)N * OC));
        /* the GELU epilogue: the table's gelu_forward on the same sums */
        k->matmul_infer_range(got, x, &wt, bias, N, IC, OC, GPT2C_ACT_GELU, 0, OC);
        k->gelu_forward(want, want, (size_t)N * OC);
        CHECK_MSG(ndiff(got, want, (size_t)N * OC) == 0, "matmul_infer_range bf16 + gelu N=%d differs", N);
        free(x), free(wf), free(bias), free(w), free(got), free(want);
    }
}

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The copies: nearest-even rounding of the master weights, refreshed by the update for trainable tensors. */
static void test_copies(void) {
    gpt2c_config cfg = {64, 100, 0, 2, 2, 64};
    gpt2c_model *m;
    CHECK_OK(gpt2c_model_create(&cfg, &m));
    gpt2c_model_init_random(m, 7);
    float *qkv = gpt2c_param_slice(m, m->params_mem, GPT2C_P_QKVW, 1);
    const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f800000u, 0xff800000u, 0x7f7fffffu,
                                0x7fc00001u, 0x00000001u, 0x80000000u};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) qkv[i] = bits_f(special[i]);
    CHECK(gpt2c_model_precision(m) == GPT2C_FMT_F32);
    CHECK_OK(gpt2c_model_set_precision(m, GPT2C_FMT_BF16));
    CHECK(gpt2c_model_precision(m) == GPT2C_FMT_BF16);
    size_t bad = 0, seen = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
        for (int l = 0; l < (m->info[id].per_layer ? cfg.num_layers : 1); l++) {
            const gpt2c_tensor v = gpt2c_model_weight(m, id, l);
            CHECK(v.fmt == (gpt2c_precision_has_copy(id) ? GPT2C_FMT_BF16 : GPT2C_FMT_F32));
            if (v.fmt != GPT2C_FMT_BF16) continue;
            const float *master = gpt2c_param_slice(m, m->params_mem, id, l);
            const uint16_t *c = v.data;
            for (int64_t i = 0; i < v.rows * v.cols; i++, seen++) bad += c[i] != gpt2c_bf16_from_f32(master[i]);
        }
    CHECK_MSG(bad == 0 && seen > 0, "%zu of %zu copied weights are not the nearest-even bf16 of the master", bad, seen);
    /* an update refreshes the trainable copies, a frozen one keeps its bits */
    CHECK_OK(gpt2c_model_set_trainable(m, GPT2C_P_FCW, 0));
    int32_t tok[2 * 8];
    for (int i = 0; i < 16; i++) tok[i] = (i * 7) % 100;
    float loss, norm;
    const gpt2c_adamw_cfg opt = {0.9f, 0.95f, 1e-8f, 0.0f, 0.0f, 0};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) qkv[i] = 0.01f; /* finite for training */
    m->bf16_stale = 1;
    CHECK_OK(gpt2c_model_forward(m, tok, tok + 1, 1, 8, &loss));
    CHECK_OK(gpt2c_model_alloc_grads(m));
    gpt2c_model_zero_grad(m);
    CHECK_OK(gpt2c_model_backward(m, 1.0f));
    const gpt2c_tensor fc = gpt2c_model_weight(m, GPT2C_P_FCW, 0);
    const uint16_t fc0 = ((const uint16_t *)fc.data)[5];
    gpt2c_param_slice(m, m->params_mem, GPT2C_P_FCW, 0)[5] += 1.0f; /* a frozen master changed behind its back */
    CHECK_OK(gpt2c_model_update(m, &opt, 1e-2f, &norm));
    CHECK(((const uint16_t *)fc.data)[5] == fc0);
    bad = 0;
    const gpt2c_tensor q = gpt2c_model_weight(m, GPT2C_P_QKVW, 0);
    const float *qm = gpt2c_param_slice(m, m->params_mem, GPT2C_P_QKVW, 0);
    for (int64_t i = 0; i < q.rows * q.cols; i++) bad += ((const uint16_t *)q.data)[i] != gpt2c_bf16_from_f32(qm[i]);
    CHECK_MSG(bad == 0, "after the update %zu qkv copies do not match their master weights", bad);
    /* release for inference: training forward refuses, precision cannot change back */
    gpt2c_model_release_fp32_weights(m);
    CHECK_FAILS(gpt2c_model_forward(m, tok, tok + 1, 1, 8, &loss), GPT2C_ERR_UNSUPPORTED);
    CHECK_FAILS(gpt2c_model_set_precision(m, GPT2C_FMT_F32), GPT2C_ERR_ARG);
    CHECK(gpt2c_model_weight_bytes(m) < 4 * m->num_params);
    gpt2c_model_free(m);
    /* bad input: a precision that is not one, a backend without bf16 GEMMs */
    CHECK_OK(gpt2c_model_create(&cfg, &m));
    CHECK_FAILS(gpt2c_model_set_precision(m, GPT2C_FMT_Q8), GPT2C_ERR_ARG);
    CHECK_OK(gpt2c_model_set_backend(m, "ref"));
    CHECK_FAILS(gpt2c_model_set_precision(m, GPT2C_FMT_BF16), GPT2C_ERR_UNSUPPORTED);
    CHECK_FAILS(gpt2c_precision_check_backend(GPT2C_FMT_BF16, "ref"), GPT2C_ERR_UNSUPPORTED);
    CHECK_OK(gpt2c_precision_check_backend(GPT2C_FMT_BF16, "cpu"));
    gpt2c_format p;
    CHECK(gpt2c_precision_parse("bf16", &p) == 0 && p == GPT2C_FMT_BF16);
    CHECK(gpt2c_precision_parse("fp32", &p) == 0 && p == GPT2C_FMT_F32);
    CHECK(gpt2c_precision_parse("fp16", &p) != 0 && gpt2c_precision_parse("q8", &p) != 0);
    gpt2c_model_free(m);
}

int main(void) {
    test_gemv();
    test_range();
    test_copies();
    return tu_finish("test_bf16_infer");
}
