/* Where an fp32 GEMM loses against the FMA peak: in the micro-kernel, or in
 * the memory hierarchy around it.  For each of GPT-2 124M's linear-layer
 * GEMMs (forward, dinp, dweight at N rows), one thread, rounds of
 *   FMA burst | reference GEMM | the shape's GEMM | reference GEMM
 * where the reference is the same micro-kernel on operands that stay in L2
 * (96 x 256 x 256, A and B rows in place: no packing, no misses).  Per round:
 *   kernel    = reference / FMA burst   (the micro-kernel's own efficiency)
 *   hierarchy = shape / reference       (what blocking, packing and misses cost)
 * their product is the shape's % of peak.  Ratios of neighbours in time: a
 * shared VM's slow phases (an SMT sibling busy moved all three 2x within
 * seconds on Cascade Lake) hit them alike, so the medians of the ratios are
 * steadier than any rate (third argument "trace": the FMA bursts and the
 * reference alternated R times, to see such phases).  Then the footprint series: the reference grown
 * one dimension at a time (A and B rows in place, as dinp's), each against
 * its neighbouring references, to show where the hierarchy starts to cost.
 * Built by bench/gemm_hierarchy.sh. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt2c/peak.h"
#include "kernels/cpu/gemm.h"
#include "lib/bench_util.h"

enum { RM = 96, RN = 256, RK = 256, REF_REPS = 200 };
static float *ra, *rb, *rc;

/* GFLOP/s of REF_REPS reference GEMMs */
static double reference(void) {
    const double t0 = now();
    for (int i = 0; i < REF_REPS; i++)
        gpt2c_cpu_gemm(gpt2c_cpu_isa(), RM, RN, RK, ra, RK, 1, rb, RN, 1, rc, RN, NULL, 0);
    return 2.0 * RM * RN * RK * REF_REPS / (now() - t0) / 1e9;
}

int main(int argc, char **argv) {
    const int N = argc > 1 ? atoi(argv[1]) : 1024, R = argc > 2 ? atoi(argv[2]) : 9;
    if (N <= 0 || R <= 0 || R > 1000)
        return fprintf(stderr, "usage: gemm_hierarchy [N rows] [rounds <= 1000] [trace]\n"), 2;
    omp_set_num_threads(1);
    ra = filled((size_t)RM * RK), rb = filled((size_t)RK * RN), rc = filled((size_t)RM * RN);
    if (argc > 3 && argv[3][0] == 't') { /* trace: R pairs of FMA burst and reference burst, as they come */
        printf("| t (s) | FMA burst GFLOP/s | in-L2 reference GEMM GFLOP/s | reference / FMA |\n|---|---|---|---|\n");
        const double start = now();
        for (int r = 0; r < R; r++) {
            const double fma = gpt2c_peak_burst_gflops(gpt2c_cpu_isa(), 0, 1, 0.02), ref = reference();
            printf("| %.2f | %.1f | %.1f | %.2f |\n", now() - start, fma, ref, ref / fma);
        }
        return 0;
    }
    double *kern = malloc(sizeof(double) * R), *hier = malloc(sizeof(double) * R), *peak = malloc(sizeof(double) * R);
    if (!ra || !rb || !rc || !kern || !hier || !peak) return fprintf(stderr, "gemm_hierarchy: out of memory\n"), 1;
    printf("| IC | OC | op | %% of peak, med | kernel: in-L2 reference / FMA burst, med (min-max) | hierarchy: shape / "
           "reference, med (min-max) |\n|---|---|---|---|---|---|\n");
    for (int s = 0; s < 4; s++) {
        const int IC = gpt2_linear_shapes[s][0], OC = gpt2_linear_shapes[s][1];
        bench_layer L;
        if (!bench_layer_alloc(&L, N, IC, OC)) return fprintf(stderr, "gemm_hierarchy: out of memory\n"), 1;
        for (int op = 0; op < 3; op++) {
            for (int r = -1; r < R; r++) { /* round -1: warm-up, not kept */
                const double fma = gpt2c_peak_burst_gflops(gpt2c_cpu_isa(), 0, 1, 0.02), ref0 = reference();
                const double t0 = now();
                bench_layer_gemm(&L, (gemm_linear_op)op);
                const double g = 2.0 * N * IC * OC / (now() - t0) / 1e9, ref = (ref0 + reference()) / 2;
                if (r < 0) continue;
                kern[r] = ref / fma, hier[r] = g / ref, peak[r] = g / fma;
            }
            qsort(kern, R, sizeof(double), cmp_d);
            qsort(hier, R, sizeof(double), cmp_d);
            qsort(peak, R, sizeof(double), cmp_d);
            printf("| %d | %d | %s | %.1f | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) |\n", IC, OC, gpt2_linear_ops[op], 100 * peak[R / 2],
                   100 * kern[R / 2], 100 * kern[0], 100 * kern[R - 1], 100 * hier[R / 2], 100 * hier[0], 100 * hier[R - 1]);
            fflush(stdout);
        }
        bench_layer_free(&L);
    }
    /* footprint series: M x N x K */
    static const int series[][3] = {{96, 256, 256},   {384, 256, 256},  {1024, 256, 256}, {96, 768, 256},
                                    {96, 2304, 256},  {96, 256, 768},   {96, 256, 2304},  {384, 512, 256},
                                    {384, 512, 768},  {1024, 512, 768}, {1024, 2304, 768}};
    float *A = filled((size_t)1024 * 2304), *B = filled((size_t)2304 * 2304), *C = filled((size_t)1024 * 2304);
    if (!A || !B || !C) return fprintf(stderr, "gemm_hierarchy: out of memory\n"), 1;
    printf("\n| M x N x K (A, B rows in place) | shape / reference, med (min-max) |\n|---|---|\n");
    for (size_t s = 0; s < sizeof series / sizeof *series; s++) {
        const int M = series[s][0], Nn = series[s][1], K = series[s][2];
        const double flop = 2.0 * M * Nn * K;
        const int reps = (int)(2e8 / flop) + 1; /* ~1-2 ms at this CPU's rate: neighbours in time */
        for (int r = -1; r < R; r++) {
            const double ref0 = reference(), t0 = now();
            for (int i = 0; i < reps; i++) gpt2c_cpu_gemm(gpt2c_cpu_isa(), M, Nn, K, A, K, 1, B, Nn, 1, C, Nn, NULL, 0);
            const double g = flop * reps / (now() - t0) / 1e9, ref = (ref0 + reference()) / 2;
            if (r >= 0) hier[r] = g / ref;
        }
        qsort(hier, R, sizeof(double), cmp_d);
        printf("| %d x %d x %d | %.1f (%.1f-%.1f) |\n", M, Nn, K, 100 * hier[R / 2], 100 * hier[0], 100 * hier[R - 1]);
        fflush(stdout);
    }
    free(A), free(B), free(C);
    free(kern), free(hier), free(peak), free(ra), free(rb), free(rc);
    return 0;
}
