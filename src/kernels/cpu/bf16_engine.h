/* Which arithmetic the cpu backend's bf16 matmuls run on (the GEMM, the
 * training attention, prefill and decode): vdpbf16ps, or fp32 FMAs on
 * operands expanded from bf16 (gemm_bf16.h: the same adds in the same
 * order, so the same bits, except that vdpbf16ps flushes denormals).
 *
 * Where the CPU has AVX512_BF16 the faster one is chosen by measurement, not
 * assumed: one vdpbf16ps does the multiply-adds of two FMAs, but on AMD Zen
 * 4 it issues as fast as an FMA (2x the FLOP/s) while on an Intel model-207
 * VM (Emerald Rapids) its loop reached about half the FMA loop's FLOP/s (one
 * core: 81.5 against 169.5 GFLOP/s), and bf16 training on it took 1.66x the
 * fp32 step.  Two one-thread peak bursts (thread
 * CPU time, the fastest of three each) decide; the figures are kept in the
 * GEMM cache (gemm.json, section "bf16_engine", per CPU signature and build),
 * so a CPU decides once.  GPT2C_BF16_ENGINE=vdpbf16ps | fma forces a choice
 * (vdpbf16ps only where the CPU has it; another value is ignored, and the
 * note says so). */
#ifndef GPT2C_CPU_BF16_ENGINE_H
#define GPT2C_CPU_BF16_ENGINE_H

#include "kernels/cpu/gemm_bf16_amx.h"

/* 1: vdpbf16ps; 0: fp32 FMAs.  Decided at the first call (thread-safe). */
int gpt2c_cpu_bf16_use_dp(void);

/* The rule: vdpbf16ps when its FLOP/s reach the FMA loop's (the FMA path
 * also expands its panels, so a tie goes to vdpbf16ps). */
int gpt2c_cpu_bf16_prefer_dp(double dp_gflops, double fma_gflops);

/* One line on the choice, e.g. "fp32 FMAs: vdpbf16ps 70.1 GFLOP/s against
 * FMAs 121.4 on one core (cached)"; "" before the first call. */
const char *gpt2c_cpu_bf16_engine_note(void);

/* AMX (amx.h, gemm_bf16_amx.h): the tiles the bf16 GEMM (gpt2c_cpu_gemm_bf16:
 * training's linear layers, prefill's matmuls; not the attention or decode,
 * which keep the engine above) runs on, or NULL.  Where AMX can run, it is
 * used when its GEMM passes a self-check against the pair loop
 * (gpt2c_cpu_gemm_bf16_amx_check) and is measured faster than the engine
 * above on a GPT-2 shape (256 x 768 x 768, all threads; the figures cached
 * in gemm.json, section "bf16_amx").  GPT2C_BF16_ENGINE=amx uses it without
 * the timing (still self-checked); vdpbf16ps or fma turn it off;
 * amx-emulated runs the plain-C tile model on any CPU (slow: tests).
 * Decided at the first call (thread-safe; call it outside parallel regions
 * first: the timing uses all threads). */
const gpt2c_amx_tiles *gpt2c_cpu_bf16_amx(void);
/* The rule: the tiles when their GEMM's rate reaches the pair engine's. */
int gpt2c_cpu_bf16_prefer_amx(double amx_gflops, double pair_gflops);
/* 1 if that is the hardware's tiles (the bf16 roof is then the AMX peak). */
int gpt2c_cpu_bf16_amx_hw(void);
/* One line on the choice, e.g. "AMX tiles: 812.3 GFLOP/s against 151.2
 * (vdpbf16ps) on 256x768x768 (cached)"; "" before the first call. */
const char *gpt2c_cpu_bf16_amx_note(void);

/* The smallest M the bf16 GEMM runs on AMX (fewer rows leave most of each
 * 16-row tile empty). */
#define GPT2C_AMX_MIN_ROWS 16

/* The tiles an M-row bf16 GEMM on `isa` runs on (gpt2c_cpu_gemm_bf16_auto):
 * those chosen above, for M >= GPT2C_AMX_MIN_ROWS, on the AVX-512 path (the
 * C model on any); else NULL.  The one test of the GEMM and of the callers
 * that prepare its input in the form it reads. */
const gpt2c_amx_tiles *gpt2c_cpu_gemm_bf16_amx_tiles(gpt2c_isa isa, int M);

#endif
