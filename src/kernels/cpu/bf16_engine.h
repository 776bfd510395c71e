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

/* 1: vdpbf16ps; 0: fp32 FMAs.  Decided at the first call (thread-safe). */
int gpt2c_cpu_bf16_use_dp(void);

/* The rule: vdpbf16ps when its FLOP/s reach the FMA loop's (the FMA path
 * also expands its panels, so a tie goes to vdpbf16ps). */
int gpt2c_cpu_bf16_prefer_dp(double dp_gflops, double fma_gflops);

/* One line on the choice, e.g. "fp32 FMAs: vdpbf16ps 70.1 GFLOP/s against
 * FMAs 121.4 on one core (cached)"; "" before the first call. */
const char *gpt2c_cpu_bf16_engine_note(void);

#endif
