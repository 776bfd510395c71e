/* The bf16 inference matmul (kernels/cpu/infer_bf16.h) and the model's bf16
 * weight copies (gpt2c/precision.h).
 *
 *  - the rounding of the input rows: each ISA's vector rounding (the bf16
 *    GEMM kernel's f32_pairs) = the per-element one, bitwise, with ties,
 *    NaN, infinities and denormals in the rows, odd and even widths; and
 *    gpt2c_bf16_in_rows' two forms = their definition;
 *  - the matrix-vector product: vdpbf16ps (where the CPU has AVX512_BF16)
 *    against the portable path, bitwise, on ragged shapes (IC not a multiple
 *    of 32, 1..7 rows, output ranges starting anywhere); and the portable
 *    path against a double dot product of the bf16-rounded inputs, within
 *    |error| <= (IC + 4) 2^-24 sum |x w| (a recursive fp32 sum's bound);
 *  - the range matmul through the cpu table (matmul_infer_range with a bf16
 *    view): few rows = the portable product bitwise, many rows (prefill) =
 *    the bf16 GEMM bitwise, GELU epilogue = the table's gelu_forward; an
 *    input rounded once by the caller (GPT2C_ACT_IN_BF16) = the same bits;
 *  - a bf16 model's prefill against its decode path and the fp32 model
 *    (within the bf16 logits tolerance), independent of the thread count;
 *  - the weight copies: every element the nearest-even bf16 of its master
 *    weight (NaN, infinities and ties included), and refreshed by an
 *    optimizer step for trainable tensors only. */
#include <math.h>
#include <stdint.h>

#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "gpt2c/infer.h"
#include "gpt2c/model.h"
#include "gpt2c/precision.h"
#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/infer_bf16.h"
#include "kernels/kernels.h"
#include "model/model_internal.h"
#include "testutil.h"
#include "lib/bf16_order_bound.h"

static size_t ndiff(const float *a, const float *b, size_t n) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], 4) != 0;
    return d;
}

static void test_round_rows(void) {
    const int ICs[] = {1, 2, 30, 31, 32, 33, 96, 770};
    const gpt2c_isa isas[] = {GPT2C_ISA_SCALAR, GPT2C_ISA_AVX2, GPT2C_ISA_AVX512};
    const uint32_t special[] = {0x3f808000u /* tie, even below */, 0x3f818000u /* tie, odd below */, 0x7fc00001u,
                                0xffa00000u /* signalling NaN */, 0x7f800000u, 0xff800000u, 0x00000001u, 0x807fffffu,
                                0x7f7fffffu /* rounds to infinity */, 0x80000000u};
    for (size_t v = 0; v < sizeof isas / sizeof *isas; v++) {
        if (!gpt2c_cpu_has_isa(isas[v])) continue;
        const gemm_bf16_isa_kernel *kk = gpt2c_cpu_gemm_bf16_kernel(isas[v]);
        for (size_t a = 0; a < sizeof ICs / sizeof *ICs; a++) {
            const int IC = ICs[a], N = 3, ld = (IC + 31) / 32 * 32;
            float *x = tu_uniform((size_t)N * IC, 40 + IC);
            for (int i = 0; i < N * IC; i += 3) memcpy(&x[i], &special[(i / 3) % (sizeof special / sizeof *special)], 4);
            uint16_t *want = malloc(sizeof(uint16_t) * N * ld), *got = malloc(sizeof(uint16_t) * N * ld);
            gpt2c_cpu_bf16_round_rows(NULL, want, ld, x, N, IC);
            gpt2c_cpu_bf16_round_rows(kk, got, ld, x, N, IC);
            size_t bad = 0;
            for (int i = 0; i < N * ld; i++) bad += want[i] != got[i];
            for (int n = 0; n < N; n++)
                for (int i = 0; i < IC; i++) bad += want[n * ld + i] != gpt2c_bf16_from_f32(x[n * IC + i]);
            CHECK_MSG(bad == 0, "round_rows isa %d IC=%d: %zu words differ", (int)isas[v], IC, bad);
            free(x), free(want), free(got);
        }
    }
}

/* gpt2c_bf16_in_rows (kernels/bf16_rows.h), both forms: every word the
 * definition's, with the same special values */
static void test_in_rows(void) {
    const int ICs[] = {1, 2, 15, 16, 17, 33, 768, 771};
    const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x7fc00001u, 0xffa00000u, 0x7f800000u,
                                0xff800000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0x80000000u};
    for (size_t a = 0; a < sizeof ICs / sizeof *ICs; a++) {
        const int IC = ICs[a], N = 5, ld = IC + (IC & 1);
        float *x = tu_uniform((size_t)N * IC, 60 + IC);
        for (int i = 1; i < N * IC; i += 3) memcpy(&x[i], &special[(i / 3) % (sizeof special / sizeof *special)], 4);
        uint16_t *rows = malloc(sizeof(uint16_t) * N * IC);
        uint32_t *sw = malloc(sizeof(uint32_t) * N * ld);
        gpt2c_bf16_in_rows(rows, x, (size_t)N, IC, GPT2C_BF16_IN_ROWS);
        gpt2c_bf16_in_rows(sw, x, (size_t)N, IC, GPT2C_BF16_IN_F32_SWAPPED);
        size_t bad = 0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < IC; i++) {
                const float xi = x[n * IC + i];
                bad += rows[n * IC + i] != gpt2c_bf16_from_f32(xi);
                /* pair (2p, 2p+1) stored as (2p+1, 2p); an odd IC's last element after a zero */
                const int j = (IC & 1) && i == IC - 1 ? IC : i ^ 1;
                bad += sw[n * ld + j] != gpt2c_bf16_f32_bits(xi);
            }
        for (int n = 0; (IC & 1) && n < N; n++) bad += sw[n * ld + IC - 1] != 0;
        CHECK_MSG(bad == 0, "gpt2c_bf16_in_rows IC=%d: %zu words differ from the definition", IC, bad);
        free(x), free(rows), free(sw);
    }
}

static void test_gemv(void) {
    const int ICs[] = {1, 2, 31, 32, 33, 64, 95, 130, 768};
    const int Ns[] = {1, 2, 3, 4, 5, 7};
    const int OC = 37;
    int dp = 0, f512 = 0, f256 = 0;
#if defined(__x86_64__)
    dp = gpt2c_cpu_has_avx512bf16();
    f512 = gpt2c_cpu_has_isa(GPT2C_ISA_AVX512);
    f256 = gpt2c_cpu_has_isa(GPT2C_ISA_AVX2);
#endif
    printf("  vdpbf16ps path: %s; AVX-512F path: %s; AVX2 path: %s\n", dp ? "checked" : "absent on this CPU",
           f512 ? "checked" : "absent on this CPU", f256 ? "checked" : "absent on this CPU");
    for (size_t a = 0; a < sizeof ICs / sizeof *ICs; a++)
        for (size_t b = 0; b < sizeof Ns / sizeof *Ns; b++) {
            const int IC = ICs[a], N = Ns[b], ld = (IC + 31) / 32 * 32 + 32; /* a row stride beyond the padding */
            float *x = tu_uniform((size_t)N * IC, 10 + IC), *wf = tu_uniform((size_t)OC * IC, 20 + IC), *bias = tu_uniform(OC, 30);
            uint16_t *w = malloc(sizeof(uint16_t) * OC * IC), *xb = malloc(sizeof(uint16_t) * N * ld);
            for (int i = 0; i < OC * IC; i++) w[i] = gpt2c_bf16_from_f32(wf[i]);
            gpt2c_cpu_bf16_round_rows(NULL, xb, ld, x, N, IC);
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
            /* each vector path: the portable path's bits */
            const struct {
                const char *name;
                int on;
                void (*gemv)(float *, const uint16_t *, int, const uint16_t *, const float *, int, int, int, int, int);
            } paths[] = {{"vdpbf16ps", dp, gpt2c_cpu_bf16_gemv_avx512bf16},
                         {"AVX-512F", f512, gpt2c_cpu_bf16_gemv_avx512f},
                         {"AVX2", f256, gpt2c_cpu_bf16_gemv_avx2}};
            for (size_t v = 0; v < sizeof paths / sizeof *paths; v++) {
                if (!paths[v].on) continue;
                memset(q, 0, sizeof(float) * (size_t)N * OC);
                paths[v].gemv(q, xb, ld, w, bias, N, IC, OC, o0, o1);
                CHECK_MSG(ndiff(p, q, (size_t)N * OC) == 0, "%s gemv N=%d IC=%d: %zu outputs differ", paths[v].name, N, IC,
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
        float *x = tu_uniform((size_t)N * IC, 41), *wf = tu_uniform((size_t)OC * IC, 42), *bias = tu_uniform(OC, 43);
        uint16_t *w = malloc(sizeof(uint16_t) * OC * IC);
        for (int i = 0; i < OC * IC; i++) w[i] = gpt2c_bf16_from_f32(wf[i]);
        const gpt2c_tensor wt = {GPT2C_FMT_BF16, OC, IC, w, NULL, NULL, 0};
        float *got = calloc((size_t)N * OC, sizeof(float)), *want = calloc((size_t)N * OC, sizeof(float));
        for (int o0 = 0; o0 < OC; o0 += 64) /* in stage-sized chunks, as inference calls it */
            k->matmul_infer_range(got, x, &wt, bias, N, IC, OC, GPT2C_ACT_NONE, o0, o0 + 64 < OC ? o0 + 64 : OC);
        if (N < GPT2C_BF16_GEMM_ROWS) {
            const int ld = (IC + 31) / 32 * 32;
            uint16_t *xb = malloc(sizeof(uint16_t) * N * ld);
            gpt2c_cpu_bf16_round_rows(NULL, xb, ld, x, N, IC);
            gpt2c_cpu_bf16_gemv_portable(want, xb, ld, w, bias, N, IC, OC, 0, OC);
            free(xb);
        } else {
            const gemm_operand a = {x, GPT2C_FMT_F32, IC, 1}, b = {w, GPT2C_FMT_BF16, 1, IC};
            gpt2c_cpu_gemm_bf16_with(gpt2c_cpu_gemm_bf16_kernel(GPT2C_ISA_SCALAR), N, OC, IC, a, b, want, OC, bias, 0);
        }
        if (N >= GPT2C_BF16_GEMM_ROWS && tu_bf16_gemm_on_amx(N)) { /* another order of the pair adds (lib/bf16_order_bound.h) */
            const double e = tu_bf16_order_err(N, OC, IC, x, IC, 1, wf, 1, IC, bias, NULL, got, want, OC);
            CHECK_MSG(e <= 1, "matmul_infer_range bf16 N=%d on AMX tiles: %.3g of the order bound", N, e);
            memcpy(want, got, sizeof(float) * N * OC);
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

/* GPT2C_ACT_IN_BF16: the input rounded once by the caller, in either form
 * of kernels/bf16_rows.h (the table's own through the op table, both
 * through the cpu range matmul), gives the bits of the fp32 input rounded by
 * the kernel, on both paths (few rows: the padded copy for the
 * matrix-vector product; many: the GEMM's bf16 operand, or the swapped rows
 * read in place), with and without the GELU epilogue, in ranges of any
 * width, for an odd and an even IC. */
static void test_range_in_bf16(void) {
    const gpt2c_kernels *k;
    CHECK_OK(gpt2c_kernels_get("cpu", &k));
    CHECK(k->infer_bf16_input == GPT2C_BF16_IN_ROWS || k->infer_bf16_input == GPT2C_BF16_IN_F32_SWAPPED);
    printf("  cpu table's bf16 input form: %s\n", k->infer_bf16_input == GPT2C_BF16_IN_ROWS ? "bf16 rows" : "swapped fp32 rows");
    const int OC = 300;
    const int Ns[] = {3, GPT2C_BF16_GEMM_ROWS, 45};
    const int steps[] = {64, 128, 256};
    for (int ic = 0; ic < 2; ic++)
        for (int t = 0; t < 3; t++) {
            const int IC = ic ? 78 : 77, N = Ns[t], step = steps[t];
            float *x = tu_uniform((size_t)N * IC, 51), *wf = tu_uniform((size_t)OC * IC, 52), *bias = tu_uniform(OC, 53);
            x[5] = NAN, x[IC + 2] = INFINITY; /* kept through both roundings alike */
            uint16_t *w = malloc(sizeof(uint16_t) * OC * IC);
            for (int i = 0; i < OC * IC; i++) w[i] = gpt2c_bf16_from_f32(wf[i]);
            const gpt2c_tensor wt = {GPT2C_FMT_BF16, OC, IC, w, NULL, NULL, 0};
            float *got = calloc((size_t)N * OC, sizeof(float)), *want = calloc((size_t)N * OC, sizeof(float));
            for (int form = 0; form <= 2; form++) { /* 0: the table's form through the op table */
                const int f = form ? form : k->infer_bf16_input;
                void *xb = malloc(gpt2c_bf16_in_row_bytes(f, IC) * N);
                gpt2c_bf16_in_rows(xb, x, (size_t)N, IC, f);
                for (int act = 0; act < 2; act++) {
                    k->matmul_infer_range(want, x, &wt, bias, N, IC, OC, act, 0, OC);
                    memset(got, 0, sizeof(float) * N * OC);
                    for (int o0 = 0; o0 < OC; o0 += step) {
                        const int o1 = o0 + step < OC ? o0 + step : OC;
                        if (form)
                            gpt2c_cpu_matmul_bf16_range(got, xb, f, w, bias, N, IC, OC, act, o0, o1);
                        else
                            k->matmul_infer_range(got, xb, &wt, bias, N, IC, OC, act | GPT2C_ACT_IN_BF16, o0, o1);
                    }
                    CHECK_MSG(ndiff(got, want, (size_t)N * OC) == 0, "bf16 input form %d N=%d IC=%d act=%d: %zu outputs differ",
                              form, N, IC, act, ndiff(got, want, (size_t)N * OC));
                }
                free(xb);
            }
            free(x), free(wf), free(bias), free(w), free(got), free(want);
        }
}

/* max |a - b| / max |b| over the real vocabulary of n rows (stride Vp) */
static double rows_rel(const float *a, const float *b, int n, int V, int Vp) {
    double d = 0, ref = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < V; i++) {
            const double x = a[(size_t)r * Vp + i], y = b[(size_t)r * Vp + i];
            if (!(fabs(x - y) <= d)) d = fabs(x - y);
            if (fabs(y) > ref) ref = fabs(y);
        }
    return d / (ref > 0 ? ref : 1);
}

/* A bf16 model's prefill (40 rows in one pass: the GEMMs on rounded-once
 * inputs, the LM head on every row) against the same tokens decoded one at a
 * time (the matrix-vector path, its own summation order) and against the fp32
 * model: within the bf16 logits tolerance of test_bf16_model (1e-2 of the
 * largest logit), and bit for bit the same on 1 and 2 threads. */
static void test_prefill_vs_decode(void) {
    gpt2c_config cfg = {.max_seq_len = 64, .vocab_size = 203, .padded_vocab_size = 0, .num_layers = 2,
                        .num_heads = 3, .channels = 96};
    gpt2c_model *m32 = NULL, *m = NULL;
    CHECK_OK(gpt2c_config_check(&cfg, "tiny"));
    CHECK_OK(gpt2c_model_create(&cfg, &m32));
    CHECK_OK(gpt2c_model_create(&cfg, &m));
    if (!m32 || !m) return;
    gpt2c_model_init_random(m32, 11);
    gpt2c_model_init_random(m, 11);
    CHECK_OK(gpt2c_model_set_precision(m, GPT2C_FMT_BF16));
    const int T = 40, V = cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    int32_t tok[40];
    for (int i = 0; i < T; i++) tok[i] = (i * 53 + 7) % V;
    float *pre = malloc(sizeof(float) * T * Vp), *pre1 = malloc(sizeof(float) * T * Vp);
    float *dec = malloc(sizeof(float) * T * Vp), *f32 = malloc(sizeof(float) * T * Vp);
    gpt2c_infer *s = NULL;
    CHECK_OK(gpt2c_infer_create(m32, 1, T, 0, &s));
    if (s) CHECK_OK(gpt2c_infer_prefill(s, 0, tok, T, f32));
    gpt2c_infer_free(s);
    s = NULL;
    CHECK_OK(gpt2c_infer_create(m, 2, T, 0, &s));
    if (!s) return;
    gpt2c_model_set_threads(m, 2);
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, T, pre));
    gpt2c_model_set_threads(m, 1);
    CHECK_OK(gpt2c_infer_prefill(s, 1, tok, T, pre1));
    CHECK_MSG(ndiff(pre, pre1, (size_t)T * Vp) == 0, "bf16 prefill: 1 and 2 threads differ");
    gpt2c_infer_reset(s, 0);
    gpt2c_model_set_threads(m, 2);
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, 1, dec)); /* one row: the decode path */
    for (int t = 1; t < T; t++) {
        const int seq = 0;
        CHECK_OK(gpt2c_infer_decode_some(s, &seq, 1, tok + t, dec + (size_t)t * Vp));
    }
    const double e_dec = rows_rel(pre, dec, T, V, Vp), e_f32 = rows_rel(pre, f32, T, V, Vp);
    printf("  bf16 prefill (40 rows) vs bf16 decode: %.2e, vs fp32 prefill: %.2e (tolerance 1e-2)\n", e_dec, e_f32);
    CHECK_MSG(e_dec <= 1e-2, "bf16 prefill vs decode logits: rel err %.3g > 1e-2", e_dec);
    CHECK_MSG(e_f32 <= 1e-2, "bf16 prefill vs fp32 logits: rel err %.3g > 1e-2", e_f32);
    CHECK_MSG(e_f32 > 0 && e_dec > 0, "bf16 prefill equals fp32 or decode exactly: bf16 GEMM path not in effect?");
    gpt2c_infer_free(s);
    gpt2c_model_free(m32), gpt2c_model_free(m);
    free(pre), free(pre1), free(dec), free(f32);
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
    test_round_rows();
    test_in_rows();
    test_gemv();
    test_range();
    test_range_in_bf16();
    test_prefill_vs_decode();
    test_copies();
    return tu_finish("test_bf16_infer");
}
