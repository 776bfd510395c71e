/* gemm_split.h: per-thread sums of the cpu GEMMs' packing and micro-kernel time. */
#include <omp.h>

#include "kernels/cpu/gemm_split.h"

#define SLOTS 256 /* OpenMP thread numbers beyond it share the last slot (atomically) */

int gpt2c_gemm_split_on;

/* one cache line per thread slot: no false sharing between the cores that add */
static struct {
    double ns[GEMM_SPLIT_COUNT];
    char pad[64 - GEMM_SPLIT_COUNT * sizeof(double)];
} slots[SLOTS] __attribute__((aligned(64)));

void gpt2c_cpu_gemm_split_enable(int on) { gpt2c_gemm_split_on = on != 0; }

void gpt2c_cpu_gemm_split_add(int what, uint64_t ns) {
    int t = omp_get_thread_num();
    if (t >= SLOTS) t = SLOTS - 1;
    double *d = &slots[t].ns[what];
#pragma omp atomic
    *d += (double)ns;
}

void gpt2c_cpu_gemm_split_read(double out[GEMM_SPLIT_COUNT]) {
    for (int w = 0; w < GEMM_SPLIT_COUNT; w++) out[w] = 0;
    for (int t = 0; t < SLOTS; t++)
        for (int w = 0; w < GEMM_SPLIT_COUNT; w++) {
            double v;
#pragma omp atomic read
            v = slots[t].ns[w];
            out[w] += v;
        }
}
