/* bf16 training's data-gradient panels (ops.h's bf16_panels; kernels/cpu/
 * gemm_bf16.h's gpt2c_cpu_gemm_bf16_paneled_b), bitwise:
 *   - the GEMM reading W from its panels gives the bits of the GEMM packing
 *     W's row-major bf16 copy, and of the oracle (ref_gemm_bf16), over K
 *     blocks, row and column cuts, A packed once or sliced over K, 1 and 2
 *     threads, on this CPU's panel width and the portable kernel's;
 *   - it refuses (returns 0) a width that is not the CPU's, N not a multiple
 *     of it, or an odd K;
 *   - the cpu backend's fused AdamW gives the bits of its AdamW (p, m, v, the
 *     row-major copy) and ref's panel layout, as does its panel writer, with
 *     the copies on or off 64-byte lines, NaN and infinity included, in its
 *     AVX-512 form and its staged one (GPT2C_ADAMW_STAGED=1);
 *   - a bf16 model trained 3 steps with the panels ends with the bits of one
 *     trained without them (GPT2C_BF16_PANELS=0), and its panels match its
 *     row-major copies. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"
#include "gpt2c/model.h"
#include "gpt2c/precision.h"
#include "kernels/bf16.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "kernels/ref/ref_gemm_bf16.h"
#include "model/model_internal.h"
#include "testutil.h"

static int same_bits(const void *a, const void *b, size_t bytes) { return memcmp(a, b, bytes) == 0; }

/* dinp (N,IC) = D (N,OC) W (OC,IC) from W's panels against the packed GEMM and the oracle */
static void dinp_case(gpt2c_isa isa, int width, gemm_bf16_blocking bl, int nth, int N, int IC, int OC, int bf16_d) {
    float *D = tu_uniform((size_t)N * OC, 11), *W = tu_uniform((size_t)OC * IC, 12);
    uint16_t *Wb = malloc(sizeof(uint16_t) * (size_t)OC * IC), *Db = malloc(sizeof(uint16_t) * (size_t)N * OC);
    for (size_t i = 0; i < (size_t)OC * IC; i++) Wb[i] = gpt2c_bf16_from_f32(W[i]);
    for (size_t i = 0; i < (size_t)N * OC; i++) Db[i] = gpt2c_bf16_from_f32(D[i]);
    float *Wr = malloc(sizeof(float) * (size_t)OC * IC), *Dr = malloc(sizeof(float) * (size_t)N * OC);
    for (size_t i = 0; i < (size_t)OC * IC; i++) Wr[i] = gpt2c_bf16_to_f32(Wb[i]);
    for (size_t i = 0; i < (size_t)N * OC; i++) Dr[i] = bf16_d ? gpt2c_bf16_to_f32(Db[i]) : D[i];
    uint32_t *P = aligned_alloc(64, ((size_t)OC * IC / 2 * 4 + 63) / 64 * 64);
    gpt2c_ref_bf16_panels(P, Wb, OC, IC, width);
    float *got = calloc((size_t)N * IC, 4), *packed = calloc((size_t)N * IC, 4), *want = calloc((size_t)N * IC, 4);
    const gemm_bf16_blocking keep = gpt2c_cpu_gemm_bf16_get_blocking();
    const int keep_nth = omp_get_max_threads();
    gpt2c_cpu_gemm_bf16_set_blocking(bl);
    omp_set_num_threads(nth);
    const gemm_operand d = bf16_d ? (gemm_operand){Db, GPT2C_FMT_BF16, OC, 1} : (gemm_operand){D, GPT2C_FMT_F32, OC, 1};
    const gemm_operand w = {Wb, GPT2C_FMT_BF16, IC, 1};
    const int ran = gpt2c_cpu_gemm_bf16_paneled_b(isa, N, IC, OC, d, P, width, got, IC, NULL, 0);
    gpt2c_cpu_gemm_bf16(isa, N, IC, OC, d, w, packed, IC, NULL, 0);
    omp_set_num_threads(keep_nth);
    gpt2c_cpu_gemm_bf16_set_blocking(keep);
    gpt2c_ref_gemm_bf16(N, IC, OC, Dr, OC, 1, Wr, IC, 1, want, IC, NULL, 0);
    char what[160];
    snprintf(what, sizeof what, "%s width %d N=%d IC=%d OC=%d (%s dout) kc %d mc %d nc %d, %d threads",
             gpt2c_isa_name(isa), width, N, IC, OC, bf16_d ? "bf16" : "fp32", bl.kc, bl.mc, bl.nc, nth);
    CHECK_MSG(ran, "paneled GEMM ran: %s", what);
    CHECK_MSG(same_bits(got, packed, sizeof(float) * N * IC), "paneled = packed: %s", what);
    CHECK_MSG(same_bits(got, want, sizeof(float) * N * IC), "paneled = oracle: %s", what);
    free(D), free(W), free(Wb), free(Db), free(Wr), free(Dr), free(P), free(got), free(packed), free(want);
}

static void gemm_checks(gpt2c_isa isa) {
    const int width = gpt2c_cpu_gemm_bf16_panel_width(isa);
    if (!width) {
        printf("%s: no panel width (its bf16 GEMM runs no pair kernel here): skipped\n", gpt2c_isa_name(isa));
        return;
    }
    printf("%s: panels %d wide\n", gpt2c_isa_name(isa), width);
    const gemm_bf16_blocking def = gpt2c_cpu_gemm_bf16_get_blocking();
    const gemm_bf16_blocking small = {16, 24, 64}, mid = {64, 36, 128};
    const gemm_bf16_blocking bls[] = {def, small, mid};
    for (int b = 0; b < 3; b++)
        for (int nth = 1; nth <= 2; nth++) {
            dinp_case(isa, width, bls[b], nth, 5, width, 2, 0);
            dinp_case(isa, width, bls[b], nth, 37, 2 * width, 130, 0);
            dinp_case(isa, width, bls[b], nth, 100, 3 * width, 98, 1);
            dinp_case(isa, width, bls[b], nth, 40, 4 * width, 64, 0); /* the column cut on 2 threads */
        }
    /* A too large to pack once: the GEMM in slices of K */
    gpt2c_cpu_gemm_bf16_set_prepack_max(4096);
    dinp_case(isa, width, small, 2, 61, 4 * width, 200, 0);
    gpt2c_cpu_gemm_bf16_set_prepack_max(0);
    /* where it does not apply: nothing computed, 0 returned */
    float C[4] = {0};
    uint16_t Ab[4] = {0};
    uint32_t P[4] = {0};
    const gemm_operand a = {Ab, GPT2C_FMT_BF16, 2, 1};
    CHECK(!gpt2c_cpu_gemm_bf16_paneled_b(isa, 1, width, 2, a, P, width + 2, C, width, NULL, 0));
    CHECK(!gpt2c_cpu_gemm_bf16_paneled_b(isa, 1, width + 2, 2, a, P, width, C, width + 2, NULL, 0));
    CHECK(!gpt2c_cpu_gemm_bf16_paneled_b(isa, 1, width, 3, a, P, width, C, width, NULL, 0));
}

/* the cpu backend's writer and fused AdamW against ref's: a short row; rows
 * past the staged form's 1024-column chunks with the copy and panels off a
 * 64-byte line (ordinary stores instead of streamed lines), a NaN and an
 * infinity among the gradients; rows past the AVX-512 form's 4096 */
static void op_check(int rows, int cols, int off) {
    const gpt2c_kernels *k;
    CHECK_OK(gpt2c_kernels_get("cpu", &k));
    const int width = k->bf16_panel_width(rows, cols) ? k->bf16_panel_width(rows, cols) : 64;
    const size_t n = (size_t)rows * cols;
    float *p[2] = {0}, *g = tu_uniform(n, 21), *m[2] = {0}, *v[2] = {0};
    uint16_t *pb[2] = {0}, *pb_mem[2] = {0};
    uint32_t *pd[2] = {0}, *pd_mem[2] = {0};
    if (off) g[5] = NAN, g[n - 7] = INFINITY;
    for (int i = 0; i < 2; i++) {
        p[i] = tu_uniform(n, 22), m[i] = tu_uniform(n, 23), v[i] = tu_uniform(n, 24);
        for (size_t j = 0; j < n; j++) v[i][j] = v[i][j] * v[i][j];
        pb_mem[i] = aligned_alloc(64, n * 2 + 64);
        pd_mem[i] = aligned_alloc(64, n * 2 + 64);
        pb[i] = pb_mem[i] + (i == 0 ? off : 0);
        pd[i] = pd_mem[i] + (i == 0 ? off : 0);
    }
    k->adamw_bf16_panels(p[0], g, m[0], v[0], pb[0], pd[0], rows, cols, width, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3);
    /* the backend's own AdamW (within an ulp of ref's, not its bits), then ref's layout */
    k->adamw_bf16(p[1], g, m[1], v[1], pb[1], n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3);
    gpt2c_ref_bf16_panels(pd[1], pb[1], rows, cols, width);
    char what[96];
    snprintf(what, sizeof what, "cpu adamw_bf16_panels %d x %d, copy and panels %d words off a line", rows, cols, off);
    CHECK_MSG(same_bits(p[0], p[1], 4 * n) && same_bits(m[0], m[1], 4 * n) && same_bits(v[0], v[1], 4 * n), "%s", what);
    CHECK_MSG(same_bits(pb[0], pb[1], 2 * n) && same_bits(pd[0], pd[1], 2 * n), "%s", what);
    memset(pd[0], 0, 2 * n);
    k->bf16_panels(pd[0], pb[1], rows, cols, width);
    CHECK_MSG(same_bits(pd[0], pd[1], 2 * n), "cpu bf16_panels as ref's");
    for (int i = 0; i < 2; i++) free(p[i]), free(m[i]), free(v[i]), free(pb_mem[i]), free(pd_mem[i]);
    free(g);
}

static void op_checks(void) {
    op_check(6, 128, 0);
    op_check(10, 1088, 3);
    op_check(4, 4160, 0); /* rows in two chunks of the AVX-512 form */
    /* the staged form (GPT2C_ADAMW_STAGED=1), which the AVX-512 one replaced, stays the same bits */
    setenv("GPT2C_ADAMW_STAGED", "1", 1);
    op_check(10, 1088, 0);
    unsetenv("GPT2C_ADAMW_STAGED");
}

static int32_t g_tok[4 * 16 + 1];

/* 3 bf16 steps of a small model (channels 64), with or without panels */
static gpt2c_model *train3(int panels) {
    gpt2c_config cfg = {16, 60, 0, 2, 2, 64};
    gpt2c_model *m = NULL;
    CHECK_OK(gpt2c_model_create(&cfg, &m));
    if (!m) return NULL;
    CHECK_OK(gpt2c_model_set_backend(m, "cpu"));
    gpt2c_model_init_random(m, 7);
    CHECK_OK(gpt2c_model_set_precision(m, GPT2C_FMT_BF16));
    if (!panels) setenv("GPT2C_BF16_PANELS", "0", 1);
    const gpt2c_adamw_cfg opt = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0}; /* clipped: the norm's path too */
    for (int s = 0; s < 3; s++) {
        float loss;
        CHECK_OK(gpt2c_model_forward(m, g_tok, g_tok + 1, 4, 16, &loss));
        CHECK_OK(gpt2c_model_backward(m, 1.0f));
        CHECK_OK(gpt2c_model_update(m, &opt, 1e-2f, NULL));
    }
    unsetenv("GPT2C_BF16_PANELS");
    return m;
}

static void model_checks(void) {
    for (int i = 0; i < 4 * 16 + 1; i++) g_tok[i] = (i * 7 + 3) % 60;
    gpt2c_model *a = train3(1), *b = train3(0);
    if (!a || !b) return;
    CHECK_MSG(b->panels_mem == NULL, "GPT2C_BF16_PANELS=0 keeps none");
    if (!a->panels_mem) printf("model: this CPU's bf16 GEMM reads no panels: the two runs are the same path\n");
    CHECK_MSG(same_bits(a->params_mem, b->params_mem, a->slab_floats * sizeof(float)),
              "3 bf16 steps with panels = without, bitwise");
    int checked = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS && a->panels_mem; id++) {
        const gpt2c_param_info *pi = &a->info[id];
        if (!a->panels_width[id]) continue;
        uint32_t *want = malloc(pi->rows * pi->cols * 2);
        const int layers = pi->per_layer ? a->cfg.num_layers : 1;
        for (int l = 0; l < layers; l++) {
            const gpt2c_tensor t = gpt2c_model_weight(a, id, l);
            CHECK(t.aux == gpt2c_model_bf16_panels(a, id, l));
            gpt2c_ref_bf16_panels(want, t.data, (int)pi->rows, (int)pi->cols, a->panels_width[id]);
            CHECK_MSG(same_bits(want, t.aux, pi->rows * pi->cols * 2), "tensor %d layer %d: panels follow the copy", id, l);
            checked++;
        }
        free(want);
    }
    if (a->panels_mem) {
        printf("model: %d weight matrices' panels checked\n", checked);
        CHECK(checked > 0);
    }
    gpt2c_model_free(a);
    gpt2c_model_free(b);
}

int main(void) {
    gemm_checks(gpt2c_cpu_best_isa());
    gemm_checks(GPT2C_ISA_SCALAR);
    op_checks();
    model_checks();
    return tu_finish("test_gemm_bf16_panels");
}
