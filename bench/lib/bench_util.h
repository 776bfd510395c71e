/* Helpers shared by the C benchmark programs in bench/ (header-only: each
 * program is built by its script from one .c file). */
#ifndef GPT2C_BENCH_UTIL_H
#define GPT2C_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

#include "kernels/cpu/gemm.h"

/* monotonic seconds */
static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* qsort comparison of doubles, ascending */
static inline int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* n floats, 64-byte aligned, filled with a fixed pattern in [-0.5, 0.5); NULL when out of memory */
static inline float *filled(size_t n) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    for (size_t i = 0; p && i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    return p;
}

/* GPT-2 124M's linear layers (IC, OC) and their three GEMMs, as gemm.h names them */
static const int gpt2_linear_shapes[4][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
static const char *const gpt2_linear_ops[3] = {"fwd", "dinp", "dweight"};

/* One layer's operands at N rows: X (N,IC), W (OC,IC), dout D (N,OC), and the
 * outputs O (N,OC), dX (N,IC), dW (OC,IC) */
typedef struct {
    int N, IC, OC;
    float *X, *W, *D, *O, *dX, *dW;
} bench_layer;

static inline void bench_layer_free(bench_layer *L) {
    free(L->X), free(L->W), free(L->D), free(L->O), free(L->dX), free(L->dW);
}
/* 1 if all were allocated (filled), else 0 (all freed) */
static inline int bench_layer_alloc(bench_layer *L, int N, int IC, int OC) {
    *L = (bench_layer){N, IC, OC, filled((size_t)N * IC), filled((size_t)OC * IC), filled((size_t)N * OC),
                       filled((size_t)N * OC), filled((size_t)N * IC), filled((size_t)OC * IC)};
    if (L->X && L->W && L->D && L->O && L->dX && L->dW) return 1;
    bench_layer_free(L);
    return 0;
}

/* The cpu backend's GEMM `op` of the layer (gemm.h: gpt2c_cpu_linear_gemm) */
static inline void bench_layer_gemm(const bench_layer *L, gemm_linear_op op) {
    gpt2c_cpu_linear_gemm(gpt2c_cpu_isa(), op, op == GEMM_FWD ? L->O : op == GEMM_DINP ? L->dX : L->dW,
                          op == GEMM_FWD ? L->X : L->D, op == GEMM_DW ? L->X : L->W, L->N, L->IC, L->OC);
}

#endif
