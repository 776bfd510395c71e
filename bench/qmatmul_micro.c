/* The fused dequantize-and-multiply kernels alone (gpt2c_qmatmul_range), one
 * thread, timed in thread CPU time (so a shared machine's preemption does not
 * count; its cache and memory contention still does): best of REPS passes over
 * an (OC, IC) weight in 64-row ranges, as the inference stages call it.
 * Built and run by bench/qmatmul_micro.sh.
 * Usage: qmatmul_micro N IC OC REPS   (N activation rows: 1 = decode)
 * HUGE=1 in the environment: the codes in 2 MiB pages (madvise), as gpt2c keeps a model's (src/quant/quant_arena.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "gpt2c/quant.h"

/* the codes: malloc, or with HUGE=1 2 MiB-aligned and advised into 2 MiB pages */
static void *codes_alloc(size_t bytes) {
    const char *e = getenv("HUGE");
    if (!e || strcmp(e, "1") != 0) return malloc(bytes);
    const size_t huge = (size_t)2 << 20, rounded = (bytes + huge - 1) / huge * huge;
    void *p = aligned_alloc(huge, rounded);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const int N = argc > 1 ? atoi(argv[1]) : 1, IC = argc > 2 ? atoi(argv[2]) : 768;
    const int OC = argc > 3 ? atoi(argv[3]) : 4096, reps = argc > 4 ? atoi(argv[4]) : 200;
    const gpt2c_format fmts[] = {GPT2C_FMT_Q8, GPT2C_FMT_Q4, GPT2C_FMT_NF4};
    float *W = malloc(sizeof(float) * (size_t)IC * OC), *x = malloc(sizeof(float) * (size_t)N * IC);
    float *out = malloc(sizeof(float) * (size_t)N * OC);
    if (!W || !x || !out) return 1;
    for (size_t i = 0; i < (size_t)IC * OC; i++) W[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < (size_t)N * IC; i++) x[i] = (float)((i * 7919) % 100) / 50.0f - 1.0f;
    for (int f = 0; f < 3; f++) {
        if (gpt2c_quant_check(fmts[f], OC, IC, 0, "micro") != GPT2C_OK) continue;
        const size_t cb = gpt2c_quant_code_bytes(fmts[f], OC, IC, 0), ns = gpt2c_quant_nscales(fmts[f], OC, IC, 0);
        void *codes = codes_alloc(cb);
        float *sc = malloc(ns * sizeof(float));
        gpt2c_quant_pack(fmts[f], 0, W, OC, IC, codes, sc);
        gpt2c_tensor t = {fmts[f], OC, IC, codes, sc, NULL, 0};
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            const double t0 = cpu_now();
            for (int o0 = 0; o0 < OC; o0 += 64) gpt2c_qmatmul_range(out, x, &t, NULL, N, 0, o0, o0 + 64 < OC ? o0 + 64 : OC);
            const double dt = cpu_now() - t0;
            if (dt < best) best = dt;
        }
        printf("%-4s N=%d IC=%d OC=%d  %8.3f ms  %6.2f GB/s of codes+scales  %6.2f G weights/s\n",
               gpt2c_format_get(fmts[f])->name, N, IC, OC, best * 1e3, (double)(cb + ns * 4) / best / 1e9,
               (double)IC * OC / best / 1e9);
        free(codes), free(sc);
    }
    free(W), free(x), free(out);
    return 0;
}
