/* The GEMM autotune's trust test and its outcome (gemm_tune.c,
 * gemm_tune_steady.c).  A tune timed while the machine is loaded (a
 * neighbour on a shared VM, another process) picks a blocking by noise, so
 * its result is kept only when the timings look steady; otherwise the
 * cache-size guess stays in effect and the tune says why. */
#ifndef GPT2C_GEMM_TUNE_H
#define GPT2C_GEMM_TUNE_H

#include <stddef.h>

#include "gpt2c/cpu.h"

/* Thresholds of gpt2c_gemm_tune_steady. */
#define GPT2C_GEMM_TUNE_BURST_SPREAD 1.10 /* slowest peak burst within 10% of the fastest */
#define GPT2C_GEMM_TUNE_PEAK_FRAC 0.85    /* median burst >= 85% of the cached peak (when there is one) */
#define GPT2C_GEMM_TUNE_TIME_SPREAD 1.15  /* the winner's re-timings within 15% of each other */
#define GPT2C_GEMM_TUNE_PROBE_SPREAD 1.10 /* slowest in-L2 GEMM probe within 10% of the fastest */

/* 1 if a tune's timings can be trusted: the peak bursts taken before, during
 * and after it (`bursts`, n of them, GFLOP/s) agree with each other, their
 * median reaches the cached peak's fraction (cached_peak <= 0: unknown, not
 * checked), the in-L2 GEMM probes taken beside them (`probes`, np of them,
 * GFLOP/s) agree with each other, and the winning blocking's timings
 * (`win_t`, nw of them, seconds) agree.  Else 0, with the reason (one line)
 * in `why`.  The probes see a slowdown the FMA bursts do not: one that hits
 * code using the caches (gemm_probe.c). */
int gpt2c_gemm_tune_steady(const double *bursts, int n, double cached_peak, const double *probes, int np,
                           const double *win_t, int nw, char *why, size_t why_n);

/* GFLOP/s of the fp32 micro-kernel on a product kept in L2, all `threads`
 * at once for about `seconds` (gemm_probe.c); 0 if it cannot run. */
double gpt2c_cpu_gemm_probe_gflops(gpt2c_isa isa, int threads, double seconds);
/* The same for the bf16 GEMM's pair engine on `isa` (gpt2c_cpu_gemm_bf16_kernel:
 * vdpbf16ps, or FMAs on expanded panels) on packed panels kept in L2; 0 where
 * the bf16 GEMMs run on AMX tiles (gpt2c_cpu_bf16_amx_hw), whose rate it is not. */
double gpt2c_cpu_gemm_bf16_probe_gflops(gpt2c_isa isa, int threads, double seconds);

/* What the last autotune of a precision (bf16: 1, fp32: 0) did, one line:
 * "cached autotune", "autotuned now (steady: ...)", "refused: <why>; the
 * cache-size blocking is kept", "not tuned (...)"; "" before any. */
const char *gpt2c_cpu_gemm_tune_note(int bf16);

/* The GEMM cache's other per-CPU entries (gemm.json; bf16_engine.c): number
 * fields `names` of entry k in section sec.  get: 1 if all n are there (v
 * set); put replaces the entry.  Without jansson nothing is kept. */
int gpt2c_cpu_gemm_cache_get(const char *sec, const char *k, const char *const *names, double *v, int n);
void gpt2c_cpu_gemm_cache_put(const char *sec, const char *k, const char *const *names, const double *v, int n);

#endif
