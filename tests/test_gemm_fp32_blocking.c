/* The fp32 GEMM's blocking (rows mc and columns nc per unit, K block kc:
 * chosen per CPU from L2 and the autotune, gemm.h) changes speed, never
 * results: for every
 * ISA kernel this CPU runs, the three GEMMs of a linear layer (forward with a
 * bias, dinp, dweight accumulating) on ragged shapes, under several
 * blockings and 1 and 2 threads, give the same bits as under the L2 guess on
 * 1 thread; and those agree with a double-precision product within the
 * bound of an fp32 sum (so a consistently wrong GEMM fails too).  Also: the
 * setter rounds and clamps to valid values, and the autotune's in-L2 probe
 * measures a rate on every ISA. */
#include <math.h>
#include <omp.h>

#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_tune.h"
#include "testutil.h"

/* out (N,OC) = X W^T + bias; dX (N,IC) = D W; dW (OC,IC) += D^T X */
static void layer(gpt2c_isa isa, int N, int IC, int OC, const float *X, const float *W, const float *D, const float *bias,
                  float *out, float *dX, float *dW) {
    gpt2c_cpu_gemm(isa, N, OC, IC, X, IC, 1, W, 1, IC, out, OC, bias, 0);
    gpt2c_cpu_linear_gemm(isa, GEMM_DINP, dX, D, W, N, IC, OC);
    gpt2c_cpu_linear_gemm(isa, GEMM_DW_ACC, dW, D, X, N, IC, OC);
}

static void check_shape(gpt2c_isa isa, int N, int IC, int OC) {
    float *X = tu_uniform((size_t)N * IC, 1), *W = tu_uniform((size_t)OC * IC, 2), *D = tu_uniform((size_t)N * OC, 3), *bias = tu_uniform(OC, 4);
    float *dW0 = tu_uniform((size_t)OC * IC, 5);
    float *out[2], *dX[2], *dW[2];
    for (int v = 0; v < 2; v++) {
        out[v] = malloc(sizeof(float) * N * OC), dX[v] = malloc(sizeof(float) * N * IC);
        dW[v] = malloc(sizeof(float) * OC * IC);
    }
    int gm, gn;
    gpt2c_cpu_gemm_fp32_blocking_from_caches(&gm, &gn);
    omp_set_num_threads(1);
    memcpy(dW[0], dW0, sizeof(float) * OC * IC);
    layer(isa, N, IC, OC, X, W, D, bias, out[0], dX[0], dW[0]);
    /* against double precision: |err| <= (K+1) eps sum |terms| (+ slack) */
    int bad = 0;
    for (int i = 0; i < N && !bad; i++)
        for (int j = 0; j < OC; j++) {
            double s = bias[j], m = fabs(bias[j]);
            for (int k = 0; k < IC; k++) s += (double)X[i * IC + k] * W[j * IC + k], m += fabs((double)X[i * IC + k] * W[j * IC + k]);
            if (fabs(out[0][i * OC + j] - s) > (IC + 2) * 6e-8 * m + 1e-30) bad = 1;
        }
    CHECK_MSG(!bad, "%s fwd N=%d IC=%d OC=%d differs from the double-precision product", gpt2c_isa_name(isa), N, IC, OC);
    static const int bl[][3] = {{96, 128, 256}, {132, 192, 64}, {384, 512, 512}, {1536, 2048, 1024}, {12, 64, 80}, {96, 256, 2048}};
    for (size_t b = 0; b < sizeof bl / sizeof bl[0]; b++)
        for (int t = 1; t <= 2; t++) {
            int m = bl[b][0], n = bl[b][1];
            gpt2c_cpu_gemm_fp32_set_blocking(&m, &n);
            const int kc = gpt2c_cpu_gemm_fp32_set_kc(bl[b][2]);
            omp_set_num_threads(t);
            memcpy(dW[1], dW0, sizeof(float) * OC * IC);
            layer(isa, N, IC, OC, X, W, D, bias, out[1], dX[1], dW[1]);
            CHECK_MSG(memcmp(out[0], out[1], sizeof(float) * N * OC) == 0 && memcmp(dX[0], dX[1], sizeof(float) * N * IC) == 0 &&
                          memcmp(dW[0], dW[1], sizeof(float) * OC * IC) == 0,
                      "%s N=%d IC=%d OC=%d: mc %d nc %d kc %d, %d threads changed the result", gpt2c_isa_name(isa), N, IC, OC, m, n,
                      kc, t);
        }
    gpt2c_cpu_gemm_fp32_blocking_from_caches(&gm, &gn);
    omp_set_num_threads(2);
    free(X), free(W), free(D), free(bias), free(dW0);
    for (int v = 0; v < 2; v++) free(out[v]), free(dX[v]), free(dW[v]);
}

int main(void) {
    setenv("GPT2C_GEMM_AUTOTUNE", "0", 1); /* this test sets the blocking itself */
    int m = 5, n = 3000;
    gpt2c_cpu_gemm_fp32_set_blocking(&m, &n);
    CHECK(m >= 12 && m % 12 == 0 && n % 64 == 0 && n <= 4096);
    CHECK(gpt2c_cpu_gemm_fp32_set_kc(1) == 64 && gpt2c_cpu_gemm_fp32_set_kc(100000) == 2048 && gpt2c_cpu_gemm_fp32_set_kc(250) == 256);
    static const int shapes[][3] = {{1, 1, 1}, {37, 67, 101}, {130, 33, 64}, {9, 600, 515}, {70, 300, 2100}, {13, 1100, 200}};
    for (int i = 0; i < GPT2C_ISA_COUNT; i++) {
        if (!gpt2c_cpu_has_isa((gpt2c_isa)i)) continue;
        printf("  isa %s\n", gpt2c_isa_name((gpt2c_isa)i));
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) check_shape((gpt2c_isa)i, shapes[s][0], shapes[s][1], shapes[s][2]);
        /* the autotune's in-L2 probe (gemm_tune.h) runs this ISA's kernel on 1 and 2 threads */
        for (int t = 1; t <= 2; t++) {
            const double g = gpt2c_cpu_gemm_probe_gflops((gpt2c_isa)i, t, 0.005);
            CHECK_MSG(g > 0 && g < 1e5, "%s: in-L2 probe on %d threads read %g GFLOP/s", gpt2c_isa_name((gpt2c_isa)i), t, g);
        }
    }
    return tu_finish("test_gemm_fp32_blocking");
}
