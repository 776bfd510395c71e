/* The bf16 matmuls' arithmetic, vdpbf16ps or fp32 FMAs (bf16_engine.h). */
#include "kernels/cpu/bf16_engine.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "gpt2c/peak.h"
#include "gpt2c/core.h"
#include "kernels/bf16.h"
#include "kernels/cpu/amx.h"
#include "kernels/cpu/gemm_tune.h"

#ifndef GPT2C_BUILD_TYPE
#define GPT2C_BUILD_TYPE "unknown"
#endif

static int g_use = -1;
static char g_note[200];

/* GPT2C_BF16_ENGINE, read by both decisions (the pair engine's, AMX's) */
typedef enum { ENV_AUTO, ENV_VDP, ENV_FMA, ENV_AMX, ENV_AMX_EMU, ENV_BAD } engine_env;
static engine_env read_env(void) {
    const char *e = getenv("GPT2C_BF16_ENGINE");
    if (!e || !e[0] || strcmp(e, "auto") == 0) return ENV_AUTO;
    if (strcmp(e, "vdpbf16ps") == 0) return ENV_VDP;
    if (strcmp(e, "fma") == 0) return ENV_FMA;
    if (strcmp(e, "amx") == 0) return ENV_AMX;
    if (strcmp(e, "amx-emulated") == 0) return ENV_AMX_EMU;
    return ENV_BAD;
}

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
    const engine_env e = read_env();
    if (e == ENV_VDP || e == ENV_FMA) {
        snprintf(g_note, sizeof g_note, "%s (GPT2C_BF16_ENGINE)", e == ENV_VDP ? "vdpbf16ps" : "fp32 FMAs");
        return e == ENV_VDP;
    }
    const int bad_env = e == ENV_BAD;
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
             bad_env ? "; GPT2C_BF16_ENGINE ignored: not vdpbf16ps, fma, amx, amx-emulated or auto" : "");
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

/* ---- AMX ---- */
int gpt2c_cpu_bf16_prefer_amx(double amx_gflops, double pair_gflops) { return amx_gflops > 0 && amx_gflops >= pair_gflops; }

static const gpt2c_amx_tiles *g_amx;
static int g_amx_decided;
static char g_amx_note[240];

const char *gpt2c_cpu_bf16_amx_note(void) { return g_amx_note; }

/* GFLOP/s of the bf16 GEMM of a GPT-2 linear layer's forward (A fp32 256 x
 * 768, W bf16 768 x 768), on tiles t or (t NULL) the pair engine kk: the
 * fastest of three after a warm-up, all threads. */
static double gemm_rate(const gpt2c_amx_tiles *t, const gemm_bf16_isa_kernel *kk) {
    enum { M = 256, N = 768, K = 768 };
    float *A = malloc(sizeof(float) * M * K), *C = malloc(sizeof(float) * M * N);
    uint16_t *W = malloc(sizeof(uint16_t) * N * K);
    double best = 0;
    if (A && C && W) {
        for (int i = 0; i < M * K; i++) A[i] = (float)((long)i * 7919 % 2001 - 1000) * 1e-3f;
        for (int i = 0; i < N * K; i++) W[i] = gpt2c_bf16_from_f32((float)((long)i * 104729 % 2001 - 1000) * 1e-3f);
        const gemm_operand a = {A, GPT2C_FMT_F32, K, 1}, b = {W, GPT2C_FMT_BF16, 1, K};
        for (int r = 0; r < 4; r++) {
            const uint64_t t0 = gpt2c_now_ns();
            if (t) gpt2c_cpu_gemm_bf16_amx(t, kk, M, N, K, a, b, C, N, NULL, 0);
            else gpt2c_cpu_gemm_bf16_with(kk, M, N, K, a, b, C, N, NULL, 0);
            const double s = (double)(gpt2c_now_ns() - t0) * 1e-9, g = s > 0 ? 2.0 * M * N * K / s * 1e-9 : 0;
            if (r > 0 && g > best) best = g;
        }
    }
    free(A), free(C), free(W);
    return best;
}

static const gpt2c_amx_tiles *decide_amx(void) {
    const engine_env e = read_env();
    const gemm_bf16_isa_kernel *kk = gpt2c_cpu_gemm_bf16_kernel(gpt2c_cpu_best_isa());
    if (e == ENV_AMX_EMU) {
        snprintf(g_amx_note, sizeof g_amx_note, "AMX tiles emulated in C (GPT2C_BF16_ENGINE=amx-emulated: slow, for tests)");
        return &gpt2c_amx_tiles_emulated;
    }
    const char *why = "";
    if (gpt2c_cpu_best_isa() != GPT2C_ISA_AVX512 || !gpt2c_cpu_amx_usable(&why)) {
        snprintf(g_amx_note, sizeof g_amx_note, "no AMX: %s%s", gpt2c_cpu_best_isa() != GPT2C_ISA_AVX512 ? "no AVX-512" : why,
                 e == ENV_AMX ? " (GPT2C_BF16_ENGINE=amx ignored)" : "");
        return NULL;
    }
    if (e == ENV_VDP || e == ENV_FMA) {
        snprintf(g_amx_note, sizeof g_amx_note, "AMX not used (GPT2C_BF16_ENGINE=%s)", e == ENV_VDP ? "vdpbf16ps" : "fma");
        return NULL;
    }
#ifdef GPT2C_HAVE_AMX_KERNEL
    const gpt2c_amx_tiles *t = &gpt2c_amx_tiles_hw;
    double worst = 0;
    if (!gpt2c_cpu_gemm_bf16_amx_check(t, kk, &worst)) {
        snprintf(g_amx_note, sizeof g_amx_note,
                 "AMX not used: its GEMM failed the self-check against the pair loop (worst error %.3g of the bound)", worst);
        return NULL;
    }
    if (e == ENV_AMX) {
        snprintf(g_amx_note, sizeof g_amx_note, "AMX tiles (GPT2C_BF16_ENGINE=amx; self-check passed)");
        return t;
    }
    static const char *const names[2] = {"amx_gflops", "pair_gflops"};
    char k[256];
    snprintf(k, sizeof k, "%s|threads=%d|build=%s", gpt2c_cpu_signature(), omp_get_max_threads(), GPT2C_BUILD_TYPE);
    double v[2];
    const int cached = gpt2c_cpu_gemm_cache_get("bf16_amx", k, names, v, 2);
    if (!cached) {
        v[0] = gemm_rate(t, kk);
        v[1] = gemm_rate(NULL, kk);
        if (v[0] > 0 && v[1] > 0) gpt2c_cpu_gemm_cache_put("bf16_amx", k, names, v, 2);
    }
    const int use = gpt2c_cpu_bf16_prefer_amx(v[0], v[1]);
    snprintf(g_amx_note, sizeof g_amx_note, "%s: AMX tiles %.1f GFLOP/s against %.1f (%s) on 256x768x768 (%s)",
             use ? "AMX tiles" : "AMX not used", v[0], v[1], kk->name, cached ? "cached" : "measured now");
    return use ? t : NULL;
#else
    (void)kk;
    return NULL; /* gpt2c_cpu_amx_usable said no: this build has no AMX kernel */
#endif
}

const gpt2c_amx_tiles *gpt2c_cpu_bf16_amx(void) {
    if (!__atomic_load_n(&g_amx_decided, __ATOMIC_ACQUIRE)) {
#pragma omp critical(gpt2c_bf16_amx)
        {
            if (!__atomic_load_n(&g_amx_decided, __ATOMIC_ACQUIRE)) {
                g_amx = decide_amx();
                __atomic_store_n(&g_amx_decided, 1, __ATOMIC_RELEASE);
            }
        }
    }
    return g_amx;
}

const gpt2c_amx_tiles *gpt2c_cpu_gemm_bf16_amx_tiles(gpt2c_isa isa, int M) {
    const gpt2c_amx_tiles *t = M >= GPT2C_AMX_MIN_ROWS ? gpt2c_cpu_bf16_amx() : NULL;
    return t && (isa == GPT2C_ISA_AVX512 || t == &gpt2c_amx_tiles_emulated) ? t : NULL;
}

int gpt2c_cpu_bf16_amx_hw(void) {
    const gpt2c_amx_tiles *t = gpt2c_cpu_bf16_amx();
    return t && t != &gpt2c_amx_tiles_emulated;
}
