/* Quantized prefill (gpt2c_qmatmul_prefill_range: many activation rows, a
 * range of a weight's rows dequantized and multiplied by a GEMM) against
 * dequantize-then-reference, on random and ragged shapes, split into output
 * ranges as the inference stages split them:
 *   bf16 path (where AVX512_BF16 runs): bit for bit the reference bf16 GEMM
 *     (gpt2c_ref_gemm_bf16: operands rounded to bf16, pairs summed in fp32)
 *     of the dequantized fp32 weights (GELU: within 1e-5 of the GELU of it);
 *     and against the exact product in double within the bf16 bound:
 *     |got - exact| <= 8e-3 * sum |w x| (each operand rounded by at most
 *     2^-8 relative, so each product by 2^-7 + 2^-16) -- and not exactly it
 *     (it is the rounded path); where the bf16 GEMM runs on AMX tiles
 *     (kernels/cpu/gemm_bf16_amx.h: another order of a pair's two adds),
 *     within 2 (IC+2) 2^-24 sum |w x| of that reference instead of its bits
 *     (GELU: 1.2 times that, plus the 1e-5);
 *     with the input rows already rounded to bf16
 *     (GPT2C_ACT_IN_BF16), the same bits; its no-memory fallback, the same bits.
 *   fp32 path (set_bf16_prefill(0)): exactly the dequantized weights,
 *     |got - exact| <= 2e-6 * sum |w x|. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "gpt2c/quant.h"
#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/cpu/bf16_engine.h"
#include "kernels/ref/ref_gemm_bf16.h"
#include "lib/quant_case.h"
#include "testutil.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static double gelu(double y) { return 0.5 * y * (1.0 + tanh(0.7978845608028654 * (y + 0.044715 * y * y * y))); }

/* every output range of `step` rows (the last ragged) through the prefill path; 0 if a range was refused */
static int run_ranges(float *got, const void *x, int in_bf16, const gpt2c_tensor *t, const float *bias, int N, int act,
                      int step) {
    for (int o0 = 0; o0 < t->rows; o0 += step)
        if (!gpt2c_qmatmul_prefill_range(got, x, in_bf16, t, bias, N, act, o0, o0 + step < t->rows ? o0 + step : (int)t->rows))
            return 0;
    return 1;
}

static int run_case(gpt2c_format f, int block, int N, int IC, int OC, int act, int with_bias, int step) {
    const char *name = gpt2c_format_get(f)->name;
    quant_case c = quant_case_new(f, block, N, IC, OC, with_bias, frand);
    const gpt2c_tensor t = c.t;
    const float *x = c.x, *deq = c.deq, *b = with_bias ? c.bias : NULL;
    const double *mag = c.mag;
    float *got = malloc(sizeof(float) * N * OC), *ref = malloc(sizeof(float) * N * OC);
    double *exact = malloc(sizeof(double) * N * OC);
    uint16_t *xb = malloc(sizeof(uint16_t) * N * IC);
    float *xs = malloc(gpt2c_bf16_in_row_bytes(GPT2C_BF16_IN_F32_SWAPPED, IC) * (size_t)N);
    for (int i = 0; i < N * OC; i++) exact[i] = act ? gelu(c.exact[i]) : c.exact[i];
    /* the input already rounded, in both forms (kernels/bf16_rows.h) */
    for (int i = 0; i < N * IC; i++) xb[i] = gpt2c_bf16_from_f32(x[i]);
    gpt2c_bf16_in_rows(xs, x, (size_t)N, IC, GPT2C_BF16_IN_F32_SWAPPED);
    int fails = 0;
    /* on AMX tiles (kernels/cpu/bf16_engine.h) the pair sums run in another
     * order: against the reference within twice the recursive-sum bound */
    const int amx = gpt2c_cpu_bf16_amx() != NULL;
    if (gpt2c_qmatmul_set_bf16_prefill(1)) {
        /* the reference bf16 GEMM of the dequantized weights: out (N, OC) = x (N, IC) deq^T + bias */
        gpt2c_ref_gemm_bf16(N, OC, IC, x, IC, 1, deq, 1, IC, ref, OC, b, 0);
        /* fp32 input rows, then rows already rounded: bf16 rows, swapped fp32 rows (kernels/bf16_rows.h) */
        for (int pass = 0; pass < 3; pass++) {
            for (int i = 0; i < N * OC; i++) got[i] = NAN;
            const void *in = pass == 0 ? (const void *)x : pass == GPT2C_BF16_IN_ROWS ? (const void *)xb : (const void *)xs;
            if (!run_ranges(got, in, pass, &t, b, N, act, step)) {
                fprintf(stderr, "bf16 %s: a range was refused\n", name);
                fails++;
                continue;
            }
            double vs_ref = 0, vs_exact = 0;
            for (int i = 0; i < N * OC; i++) {
                const double r = act ? gelu(ref[i]) : ref[i];
                const double sum_bound = 2.0 * (IC + 2) * 0x1p-24 * mag[i] * 1.01; /* the AMX order's, before GELU */
                const double e = act && amx ? fabs(got[i] - r) / (1.2 * sum_bound + 1e-5 * (fabs(r) + 1e-3)) /* |gelu'| < 1.2 */
                                 : act      ? fabs(got[i] - r) / (fabs(r) + 1e-3)
                                 : amx      ? fabs(got[i] - ref[i]) / sum_bound
                                            : (got[i] == ref[i] ? 0.0 : INFINITY);
                const double e2 = fabs(got[i] - exact[i]) / mag[i];
                if (!(e <= vs_ref)) vs_ref = e;
                if (!(e2 <= vs_exact)) vs_exact = e2;
            }
            if (!(vs_ref <= (amx ? 1.0 : act ? 1e-5 : 0.0)) || !(vs_exact <= 8e-3) || !(vs_exact > 0)) {
                fprintf(stderr,
                        "bf16 %s block %d N=%d IC=%d OC=%d act=%d step %d input %s: %.3g against the bf16 reference GEMM, "
                        "%.3g against the exact product (bound 8e-3, > 0)\n",
                        name, block, N, IC, OC, act, step, pass == 0 ? "fp32" : pass == 1 ? "bf16 rows" : "swapped rows",
                        vs_ref, vs_exact);
                fails++;
            }
        }
    }
    if (N * OC * IC <= 1 << 20) { /* the no-memory fallback: the same bits, no GELU (its own tanhf) */
        gpt2c_ref_gemm_bf16(N, OC, IC, x, IC, 1, deq, 1, IC, ref, OC, b, 0);
        for (int form = 0; form < 3; form++) { /* fp32, bf16 rows, swapped rows */
            const void *in = form == 0 ? (const void *)x : form == GPT2C_BF16_IN_ROWS ? (const void *)xb : (const void *)xs;
            for (int i = 0; i < N * OC; i++) got[i] = NAN;
            for (int o0 = 0; o0 < OC; o0 += step)
                gpt2c_qmatmul_prefill_bf16_unbuffered(got, in, form, &t, b, N, 0, o0, o0 + step < OC ? o0 + step : OC);
            if (memcmp(got, ref, sizeof(float) * N * OC) != 0) {
                fprintf(stderr,
                        "bf16 %s block %d N=%d IC=%d OC=%d input form %d: the unbuffered fallback differs from the bf16 "
                        "reference GEMM\n",
                        name, block, N, IC, OC, form);
                fails++;
            }
        }
    }
    gpt2c_qmatmul_set_bf16_prefill(0);
    for (int i = 0; i < N * OC; i++) got[i] = NAN;
    if (!run_ranges(got, x, 0, &t, b, N, act, step)) {
        fprintf(stderr, "fp32 %s: a range was refused\n", name);
        fails++;
    } else {
        double worst = 0;
        for (int i = 0; i < N * OC; i++) {
            const double e = fabs(got[i] - exact[i]) / mag[i];
            if (!(e <= worst)) worst = e;
        }
        if (!(worst < 2e-6)) {
            fprintf(stderr, "fp32 %s block %d N=%d IC=%d OC=%d act=%d step %d: relative error %.3g\n", name, block, N, IC,
                    OC, act, step, worst);
            fails++;
        }
    }
    /* too few rows: refused (the caller takes the fused kernels) */
    if (gpt2c_qmatmul_prefill_range(got, x, 0, &t, b, GPT2C_QMATMUL_PREFILL_ROWS - 1, act, 0, OC)) {
        fprintf(stderr, "%s: %d rows were not refused\n", name, GPT2C_QMATMUL_PREFILL_ROWS - 1);
        fails++;
    }
    quant_case_free(&c);
    free(got), free(ref), free(exact), free(xb), free(xs);
    return fails;
}

int main(void) {
    if (!gpt2c_cpu_has_isa(GPT2C_ISA_AVX512)) tu_skip("no AVX-512: the quantized prefill path is the fused kernels' (test_quant_matmul)");
    gpt2c_cpu_force_isa("avx512");
    setenv("GPT2C_GEMM_AUTOTUNE", "0", 1); /* any blocking gives the same bits: no autotune here */
    if (!gpt2c_qmatmul_set_bf16_prefill(1)) printf("  no AVX512_BF16: the fp32 prefill path only\n");
    const gpt2c_format fmts[] = {GPT2C_FMT_Q8, GPT2C_FMT_Q4, GPT2C_FMT_NF4};
    /* N, IC, OC, output range: ragged rows (not multiples of the GEMM's 6-row tile), ranges not multiples of
     * its 64-column panel, rows past the lookup kernels' 8192 (q8: dequantized 16 at a time) */
    const int shapes[][4] = {{16, 64, 7, 7},     {17, 128, 70, 64},  {37, 320, 45, 13},   {64, 768, 130, 128},
                             {23, 256, 64, 256}, {40, 1280, 33, 16}, {19, 8448, 9, 5},    {100, 192, 200, 96}};
    for (int fi = 0; fi < 3; fi++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int variant = 0; variant < 2; variant++) {
                const gpt2c_format f = fmts[fi];
                const int base = (int)gpt2c_format_get(f)->block, block = variant ? 2 * base : 0;
                if (shapes[s][1] % gpt2c_quant_block(f, block)) continue;
                CHECK_OK(gpt2c_quant_check(f, shapes[s][2], shapes[s][1], block, "test"));
                CHECK(run_case(f, block, shapes[s][0], shapes[s][1], shapes[s][2], variant, variant, shapes[s][3]) == 0);
            }
    gpt2c_cpu_force_isa("auto");
    return tu_finish("test_quant_prefill");
}
