/* gpt2c_cpu_fma_peak_gflops (gpt2c/cpu.h): times the FMA loops on all threads at once. */
#include <omp.h>

#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "kernels/cpu/peak.h"

/* portable fallback: 8 chains of multiply-adds (the compiler may vectorise them for the baseline ISA) */
static double fma_loop_scalar(long iters) {
    float a[8];
    for (int i = 0; i < 8; i++) a[i] = (float)i;
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 8; i++) a[i] = a[i] * 0.999999f + 1e-7f;
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

static double run_loop(gpt2c_isa isa, long iters, double *flops_per_iter) {
#if defined(__x86_64__) || defined(_M_X64)
    if (isa == GPT2C_ISA_AVX512) {
        *flops_per_iter = 12.0 * 32;
        return cpu_fma_loop_avx512(iters);
    }
    if (isa == GPT2C_ISA_AVX2) {
        *flops_per_iter = 12.0 * 16;
        return cpu_fma_loop_avx2(iters);
    }
#endif
    (void)isa;
    *flops_per_iter = 16;
    return fma_loop_scalar(iters);
}

double gpt2c_cpu_fma_peak_gflops(gpt2c_isa isa, int threads, double seconds) {
    if (threads <= 0) threads = omp_get_max_threads();
    if (!gpt2c_cpu_has_isa(isa)) return 0;
    double fpi = 0, sink = 0;
    long iters = 1 << 16;
    for (;;) { /* calibrate on one thread */
        uint64_t t0 = gpt2c_now_ns();
        sink += run_loop(isa, iters, &fpi);
        double dt = (gpt2c_now_ns() - t0) * 1e-9;
        if (dt > seconds / 4 || iters > (1L << 40)) {
            iters = (long)(iters * (seconds / 3) / (dt > 1e-9 ? dt : 1e-9)) + 1;
            break;
        }
        iters *= 4;
    }
    double best = 0;
    run_loop(isa, 0, &fpi); /* flops per iteration, outside the parallel region */
    for (int rep = 0; rep < 3; rep++) {
        uint64_t t0 = gpt2c_now_ns();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        {
            double f;
            sink += run_loop(isa, iters, &f);
        }
        double dt = (gpt2c_now_ns() - t0) * 1e-9;
        double g = fpi * iters * threads / dt * 1e-9;
        if (g > best) best = g;
    }
    return sink == 12345.678 ? best + 1e-9 : best; /* keep sink live */
}
