/* The fused dequantize-and-multiply kernels (every ISA this CPU runs) against
 * dequantize-then-multiply in double precision, on random and ragged shapes,
 * split into output ranges as the inference stages split them. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt2c/cpu.h"
#include "gpt2c/quant.h"
#include "lib/quant_case.h"
#include "testutil.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static int run_case(gpt2c_format f, int block, int N, int IC, int OC, int act, int with_bias) {
    quant_case c = quant_case_new(f, block, N, IC, OC, with_bias, frand);
    gpt2c_tensor t = c.t;
    const float *x = c.x, *bias = c.bias;
    const double *mag = c.mag;
    float *want = malloc(sizeof(float) * N * OC), *got = malloc(sizeof(float) * N * OC);
    for (int i = 0; i < N * OC; i++) {
        const double y = c.exact[i];
        want[i] = (float)(act ? 0.5 * y * (1.0 + tanh(0.7978845608028654 * (y + 0.044715 * y * y * y))) : y);
    }
    int fails = 0;
    const char *isas[] = {"scalar", "avx2", "avx512"};
    for (int isa = 0; isa < 3; isa++) {
        if (!gpt2c_cpu_has_isa((gpt2c_isa)isa)) continue;
        gpt2c_cpu_force_isa(isas[isa]);
        for (int i = 0; i < N * OC; i++) got[i] = NAN;
        /* ranges of 5 outputs: ragged against the 4-row tiles */
        for (int o0 = 0; o0 < OC; o0 += 5)
            gpt2c_qmatmul_range(got, x, &t, with_bias ? bias : NULL, N, act, o0, o0 + 5 < OC ? o0 + 5 : OC);
        double worst = 0;
        for (int i = 0; i < N * OC; i++) {
            double e = fabs((double)got[i] - want[i]) / mag[i];
            if (!(e <= worst)) worst = e;
        }
        if (!(worst < 2e-6)) {
            fprintf(stderr, "%s %s block %d N=%d IC=%d OC=%d act=%d: relative error %.3g\n", isas[isa],
                    gpt2c_format_get(f)->name, block, N, IC, OC, act, worst);
            fails++;
        }
    }
    gpt2c_cpu_force_isa("auto");
    /* int8 activations (AVX-512 VNNI; q8 up to 3 rows, q4 / nf4 rows of a multiple of 128 up to 8): against
     * the same scheme in plain C, and, loosely, against the fp32 result (activation rounding: ~0.4% per
     * element; nf4 also rounds its 16 values to multiples of 1 / 127) */
    if (gpt2c_qmatmul_set_int8_act(1)) {
        float *oracle = malloc(sizeof(float) * N * OC);
        gpt2c_qmatmul_range_int8_scalar(oracle, x, &t, with_bias ? bias : NULL, N, act, 0, OC);
        for (int i = 0; i < N * OC; i++) got[i] = NAN;
        for (int o0 = 0; o0 < OC; o0 += 5)
            gpt2c_qmatmul_range(got, x, &t, with_bias ? bias : NULL, N, act, o0, o0 + 5 < OC ? o0 + 5 : OC);
        double worst = 0, worst_f32 = 0;
        for (int i = 0; i < N * OC; i++) {
            double e = fabs((double)got[i] - oracle[i]) / mag[i], e2 = fabs((double)got[i] - want[i]) / mag[i];
            if (!(e <= worst)) worst = e;
            if (!(e2 <= worst_f32)) worst_f32 = e2;
        }
        /* the int8 kernel takes up to 3 rows of a multiple of 64 (q4 by 128: up to 8), up to 8192 long; the rest stays fp32 */
        const int by128 = f != GPT2C_FMT_Q8 && IC % 128 == 0 && N <= 8; /* q4 / nf4 */
        const int int8_path = IC <= 8192 && IC % 64 == 0 && (by128 || (f != GPT2C_FMT_NF4 && N <= 3));
        if (int8_path ? !(worst < 2e-6) || !(worst_f32 < 2e-2) : !(worst_f32 < 2e-6)) {
            fprintf(stderr, "int8 activations %s block %d N=%d IC=%d OC=%d: %.3g against its oracle, %.3g against fp32\n",
                    gpt2c_format_get(f)->name, block, N, IC, OC, worst, worst_f32);
            fails++;
        }
        gpt2c_qmatmul_set_int8_act(0);
        free(oracle);
    }
    quant_case_free(&c);
    free(want), free(got);
    return fails;
}

int main(void) {
    gpt2c_qmatmul_set_int8_act(0); /* the fp32-activation kernels first; int8 ones per case below */
    const gpt2c_format fmts[] = {GPT2C_FMT_Q8, GPT2C_FMT_Q4, GPT2C_FMT_NF4};
    const int shapes[][3] = {{1, 64, 7}, {2, 128, 9}, {3, 192, 4}, {4, 64, 8}, {5, 256, 13},
                             {8, 128, 17}, {11, 320, 6}, {1, 8448, 3}, {6, 8448, 5}, {1, 384, 7}, {3, 768, 5},
                             {2, 1280, 3}, {8, 768, 37}, {5, 384, 21}, {7, 256, 6}};
    for (int fi = 0; fi < 3; fi++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int variant = 0; variant < 2; variant++) {
                const gpt2c_format f = fmts[fi];
                const int base = (int)gpt2c_format_get(f)->block, block = variant ? 2 * base : 0;
                if (shapes[s][1] % gpt2c_quant_block(f, block)) continue;
                CHECK_OK(gpt2c_quant_check(f, shapes[s][2], shapes[s][1], block, "test"));
                CHECK(run_case(f, block, shapes[s][0], shapes[s][1], shapes[s][2], variant, variant) == 0);
            }
    /* shapes the formats refuse */
    CHECK_FAILS(gpt2c_quant_check(GPT2C_FMT_Q8, 4, 48, 0, "h.0.mlp.c_fc.weight"), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_quant_check(GPT2C_FMT_NF4, 4, 96, 0, "h.0.mlp.c_fc.weight"), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_quant_check(GPT2C_FMT_Q4, 4, 64, 48, "h.0.mlp.c_fc.weight"), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_quant_check(GPT2C_FMT_F32, 4, 64, 0, "wte"), GPT2C_ERR_ARG);
    return tu_finish("test_quant_matmul");
}
