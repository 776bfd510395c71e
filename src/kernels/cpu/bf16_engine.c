/* The bf16 matmuls' arithmetic, vdpbf16ps or fp32 FMAs (bf16_engine.h). */
#include "kernels/cpu/bf16_engine.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "gpt2c/peak.h"
#include "kernels/cpu/gemm_tune.h"

#ifndef GPT2C_BUILD_TYPE
#define GPT2C_BUILD_TYPE "unknown"
#endif

static int g_use = -1;
static char g_note[200];

int gpt2c_cpu_bf16_prefer_dp(double dp_gflops, double fma_gflops) { return dp_gflops > 0 && dp_gflops >= fma_gflops; }

const char *gpt2c_cpu_bf16_engine_note(void) { return g_note; }

/* One core's vdpbf16ps and FMA rates: bursts alternated, the fastest of each. */
static void measure(double *dp, double *fma) {
    *dp = *fma = 0;
    for (int r = 0; r < 3; r++) {
        const double d = gpt2c_peak_burst_gflops(GPT2C_ISA_AVX512, 1, 1, 0.02);
        const double f = gpt2c_peak_burst_gflops(GPT2C_ISA_AVX512, 0, 1, 0.02);
        if (d > *dp) *dp = d;
        if (f > *fma) *fma = f;
    }
}

static int decide(void) {
    if (gpt2c_cpu_best_isa() != GPT2C_ISA_AVX512 || !gpt2c_cpu_has_avx512bf16()) {
        snprintf(g_note, sizeof g_note, "fp32 FMAs (no AVX512_BF16 on this CPU)");
        return 0;
    }
    const char *e = getenv("GPT2C_BF16_ENGINE");
    if (e && (strcmp(e, "vdpbf16ps") == 0 || strcmp(e, "fma") == 0)) {
        snprintf(g_note, sizeof g_note, "%s (GPT2C_BF16_ENGINE)", e[0] == 'v' ? "vdpbf16ps" : "fp32 FMAs");
        return e[0] == 'v';
    }
    const int bad_env = e && e[0] && strcmp(e, "auto") != 0;
    static const char *const names[2] = {"vdpbf16ps_gflops", "fma_gflops"};
    char k[256];
    snprintf(k, sizeof k, "%s|build=%s", gpt2c_cpu_signature(), GPT2C_BUILD_TYPE);
    double v[2];
    const int cached = gpt2c_cpu_gemm_cache_get("bf16_engine", k, names, v, 2);
    if (!cached) {
        measure(&v[0], &v[1]);
        if (v[0] > 0 && v[1] > 0) gpt2c_cpu_gemm_cache_put("bf16_engine", k, names, v, 2);
    }
    const int dp = gpt2c_cpu_bf16_prefer_dp(v[0], v[1]);
    snprintf(g_note, sizeof g_note, "%s: vdpbf16ps %.1f GFLOP/s against fp32 FMAs %.1f on one core (%s)%s",
             dp ? "vdpbf16ps" : "fp32 FMAs", v[0], v[1], cached ? "cached" : "measured now",
             bad_env ? "; GPT2C_BF16_ENGINE ignored: not vdpbf16ps, fma or auto" : "");
    return dp;
}

int gpt2c_cpu_bf16_use_dp(void) {
    const int u = __atomic_load_n(&g_use, __ATOMIC_ACQUIRE);
    if (u >= 0) return u;
#pragma omp critical(gpt2c_bf16_engine)
    {
        if (__atomic_load_n(&g_use, __ATOMIC_ACQUIRE) < 0) __atomic_store_n(&g_use, decide(), __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&g_use, __ATOMIC_ACQUIRE);
}
