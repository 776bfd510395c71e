/* The cpu backend's fp32 GEMM against OpenBLAS's sgemm on GPT-2 124M's
 * linear layers (forward, dinp, dweight at N rows), one thread, the two
 * alternated call by call (which one goes first flips every round), so a
 * shared machine's slow phases hit both alike; min and median GFLOP/s over
 * the rounds and ours/OpenBLAS time.  Built by bench/gemm_blas_ab.sh. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cpu/gemm.h"
#include "lib/bench_util.h"

int main(int argc, char **argv) {
    const int N = argc > 1 ? atoi(argv[1]) : 1024, R = argc > 2 ? atoi(argv[2]) : 20;
    if (N <= 0 || R <= 0 || R > 1000) return fprintf(stderr, "usage: gemm_blas_ab [N rows] [rounds <= 1000]\n"), 2;
    omp_set_num_threads(1);
    double *t[2] = {malloc(sizeof(double) * R), malloc(sizeof(double) * R)};
    printf("| IC | OC | op | ours GFLOP/s min / med | OpenBLAS min / med | ours / OpenBLAS time, med |\n|---|---|---|---|---|---|\n");
    for (int s = 0; s < 4; s++) {
        const int IC = gpt2_linear_shapes[s][0], OC = gpt2_linear_shapes[s][1];
        bench_layer L;
        if (!bench_layer_alloc(&L, N, IC, OC)) return fprintf(stderr, "gemm_blas_ab: out of memory\n"), 1;
        float *X = L.X, *W = L.W, *D = L.D, *O = L.O, *dX = L.dX, *dW = L.dW;
        for (int op = 0; op < 3; op++) {
            for (int r = -1; r < R; r++) /* round -1: warm-up, not kept */
                for (int w = 0; w < 2; w++) {
                    const int ours = (r + w) % 2 == 0;
                    const double t0 = now();
                    if (ours)
                        bench_layer_gemm(&L, (gemm_linear_op)op);
                    else if (op == 0)
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1, X, IC, W, IC, 0, O, OC);
                    else if (op == 1)
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1, D, OC, W, IC, 0, dX, IC);
                    else
                        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1, D, OC, X, IC, 1, dW, IC);
                    if (r >= 0) t[!ours][r] = now() - t0;
                }
            qsort(t[0], R, sizeof(double), cmp_d);
            qsort(t[1], R, sizeof(double), cmp_d);
            const double gf = 2.0 * N * IC * OC / 1e9;
            printf("| %d | %d | %s | %.1f / %.1f | %.1f / %.1f | %.2f |\n", IC, OC, gpt2_linear_ops[op], gf / t[0][0],
                   gf / t[0][R / 2], gf / t[1][0], gf / t[1][R / 2], t[0][R / 2] / t[1][R / 2]);
        }
        bench_layer_free(&L);
    }
    free(t[0]), free(t[1]);
    return 0;
}
