/* The op table built from ops.h's one list: every host backend's table is
 * complete after the registry fills it; an unknown backend is refused by
 * name; a weight in a format a backend does not take goes to ref, which
 * decodes it (bf16, q8, and through src/quant q4, nf4) and gives the same numbers as the decoded fp32
 * weight (cpu's inference matmul takes q8 / q4 / nf4 itself: the same within summation order); a NULL weight gradient skips the weight-gradient GEMM. */
#include <math.h>
#include <stdint.h>

#include "gpt2c/core.h"
#include "gpt2c/dtype.h"
#include "gpt2c/quant.h"
#include "kernels/kernels.h"
#include "testutil.h"

static void check_complete(const char *name) {
    const gpt2c_kernels *k = NULL;
    if (gpt2c_kernels_get(name, &k) != GPT2C_OK) {
        printf("  %s: not available (%s)\n", name, gpt2c_errmsg());
        return;
    }
    CHECK(strcmp(k->name, name) == 0);
    long i = 0;
#define ENTRY_SET(ret, op, params, args)                                                                              \
    CHECK_MSG(k->op != NULL, "%s: entry %ld (%s) is NULL after the registry filled it", name, i, #op);                \
    i++;
    GPT2C_OPS_COMPUTE(ENTRY_SET)
#undef ENTRY_SET
    /* every table takes f32 weights */
    CHECK(GPT2C_KERNELS_TAKES(k, matmul_forward, GPT2C_FMT_F32));
    CHECK(GPT2C_KERNELS_TAKES(k, matmul_infer_range, GPT2C_FMT_F32));
}

static float *rnd(size_t n, uint64_t seed) {
    float *x = malloc(sizeof(float) * n);
    gpt2c_rng r;
    gpt2c_rng_seed(&r, seed, 0);
    for (size_t i = 0; i < n; i++) x[i] = gpt2c_rng_normal(&r);
    return x;
}

/* out with weight view W on table KERNELS_FOR(k), against ref on the decoded fp32 weight: bitwise
 * (tol 0), or within tol (relative to the largest output) where the backend computes in that format
 * (bf16 GEMMs round the activations too; test_gemm_bf16 checks them bitwise against their oracle) */
static int same(const float *a, const float *b, size_t n, double tol) {
    return tol == 0 ? memcmp(a, b, sizeof(float) * n) == 0 : tu_max_rel_err(a, b, n, 1e-6) <= tol;
}
static void check_typed(const gpt2c_kernels *k, const gpt2c_tensor *W, const float *wf, const char *what, double tol) {
    const int N = 3, IC = (int)W->cols, OC = (int)W->rows;
    const gpt2c_kernels *ref = gpt2c_kernels_ref();
    float *x = rnd((size_t)N * IC, 7), *b = rnd((size_t)OC, 8);
    float *o1 = calloc((size_t)N * OC, 4), *o2 = calloc((size_t)N * OC, 4);
    const gpt2c_tensor F = gpt2c_tensor_f32((float *)wf, OC, IC);
    ref->matmul_forward(o1, x, &F, b, N, IC, OC);
    GPT2C_KERNELS_FOR(k, matmul_forward, W)->matmul_forward(o2, x, W, b, N, IC, OC);
    CHECK_MSG(same(o2, o1, (size_t)N * OC, tol), "%s: matmul_forward differs from ref on the decoded weight", what);
    ref->matmul_infer_range(o1, x, &F, b, N, IC, OC, GPT2C_ACT_GELU, 0, OC);
    const gpt2c_kernels *kin = GPT2C_KERNELS_FOR(k, matmul_infer_range, W);
    kin->matmul_infer_range(o2, x, W, b, N, IC, OC, GPT2C_ACT_GELU, 0, OC);
    if (kin == ref) /* ref on the encoded weight = ref on the decoded one, bit for bit */
        CHECK_MSG(memcmp(o1, o2, sizeof(float) * N * OC) == 0, "%s: matmul_infer_range differs", what);
    else /* a fused dequantize-and-multiply kernel (src/quant): same weights, its own summation order;
          * bf16 (kernels/cpu/infer_bf16.h): the inputs rounded too, as in the GEMMs */
        CHECK_MSG(tu_max_rel_err(o2, o1, (size_t)N * OC, 1e-6) < (W->fmt == GPT2C_FMT_BF16 ? tol : 1e-5),
                  "%s: matmul_infer_range differs", what);
    float *dx1 = calloc((size_t)N * IC, 4), *dx2 = calloc((size_t)N * IC, 4), *d = rnd((size_t)N * OC, 9);
    ref->matmul_backward(dx1, NULL, NULL, d, x, &F, N, IC, OC, 1);
    GPT2C_KERNELS_FOR(k, matmul_backward, W)->matmul_backward(dx2, NULL, NULL, d, x, W, N, IC, OC, 1);
    CHECK_MSG(same(dx2, dx1, (size_t)N * IC, tol), "%s: matmul_backward dinp differs", what);
    free(x), free(b), free(o1), free(o2), free(dx1), free(dx2), free(d);
}

int main(void) {
    check_complete("ref");
    check_complete("cpu");
    check_complete("blas");
    CHECK(gpt2c_kernels_known("cuda") && gpt2c_kernels_known("cpu") && !gpt2c_kernels_known("tpu"));
    const gpt2c_kernels *k = NULL;
    CHECK_FAILS(gpt2c_kernels_get("tpu", &k), GPT2C_ERR_ARG);
    CHECK_MSG(strstr(gpt2c_errmsg(), "unknown backend 'tpu'") && !strstr(gpt2c_errmsg(), "--"), "%s", gpt2c_errmsg());

    /* a host table with a hole is filled; first_null names the hole in a device table */
    const gpt2c_kernels *cpu = NULL;
    CHECK_OK(gpt2c_kernels_get("cpu", &cpu));
    gpt2c_kernels holey = *cpu;
    CHECK(gpt2c_kernels_first_null(&holey) < 0 || holey.dev_alloc == NULL);
    holey.zero = NULL;
    CHECK(gpt2c_kernels_first_null(&holey) >= 0);

    /* typed weights: the cpu backend runs bf16 GEMMs for bf16 weights in matmul_forward / backward
     * and matmul_infer_range (inputs rounded to bf16: within 2^-8 relative per term); q8 goes
     * to ref except in matmul_infer_range */
    const int OC = 37, IC = 64;
    float *w = rnd((size_t)OC * IC, 3);
    uint16_t *wb = malloc(sizeof(uint16_t) * OC * IC);
    float *wbf = malloc(sizeof(float) * OC * IC);
    for (int i = 0; i < OC * IC; i++) wb[i] = gpt2c_f32_to_bf16(w[i]);
    gpt2c_dtype_to_f32(GPT2C_DT_BF16, wb, wbf, (size_t)OC * IC);
    const gpt2c_tensor Wb = {GPT2C_FMT_BF16, OC, IC, wb, NULL, NULL, 0};
    CHECK(GPT2C_KERNELS_TAKES(cpu, matmul_forward, GPT2C_FMT_BF16));
    CHECK(GPT2C_KERNELS_TAKES(cpu, matmul_backward, GPT2C_FMT_BF16));
    CHECK(GPT2C_KERNELS_TAKES(cpu, matmul_infer_range, GPT2C_FMT_BF16));
    check_typed(cpu, &Wb, wbf, "bf16", 3e-2);

    int8_t *wq = malloc((size_t)OC * IC);
    float *sc = malloc(sizeof(float) * OC * IC / 32), *wqf = malloc(sizeof(float) * OC * IC);
    for (int blk = 0; blk < OC * IC / 32; blk++) {
        float amax = 0;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(w[blk * 32 + i]));
        sc[blk] = amax / 127;
        for (int i = 0; i < 32; i++) {
            wq[blk * 32 + i] = (int8_t)lrintf(w[blk * 32 + i] / sc[blk]);
            wqf[blk * 32 + i] = wq[blk * 32 + i] * sc[blk];
        }
    }
    const gpt2c_tensor Wq = {GPT2C_FMT_Q8, OC, IC, wq, sc, NULL, 0};
    /* the cpu backend takes q8 in matmul_infer_range (src/quant); with fp32 activations it computes with
     * exactly the decoded weights (the int8-activation decode kernels are tested in test_quant_matmul) */
    CHECK(GPT2C_KERNELS_TAKES(cpu, matmul_infer_range, GPT2C_FMT_Q8));
    gpt2c_qmatmul_set_int8_act(0);
    float row[64];
    CHECK(gpt2c_tensor_row_f32(&Wq, 5, row) == 0 && memcmp(row, wqf + 5 * IC, sizeof row) == 0);
    CHECK(gpt2c_tensor_row_f32(&Wq, OC, row) == -1);
    check_typed(cpu, &Wq, wqf, "q8", 0);
    free(w), free(wb), free(wbf), free(wq), free(sc), free(wqf);
    return tu_finish("test_op_table");
}
