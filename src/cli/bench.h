/* `gpt2c bench <what>`: one file per benchmark (bench_<what>.c). */
#ifndef GPT2C_CLI_BENCH_H
#define GPT2C_CLI_BENCH_H

int bench_train(int argc, char **argv);    /* training step time (bench_train.c) */
int bench_forward(int argc, char **argv);  /* forward-only time (bench_train.c) */
int bench_gemm(int argc, char **argv);     /* GEMM kernels on the GPT-2 shapes (bench_gemm.c) */
int bench_peak(int argc, char **argv);     /* machine FMA peak and bandwidth (bench_peak.c) */
int bench_generate(int argc, char **argv); /* prefill and decode tok/s (bench_generate.c) */
int bench_attention(int argc, char **argv); /* fused vs unfused attention over the KV cache (bench_attention.c) */

/* fp32 FMA peak (GFLOP/s) of the ISA in effect on `threads` threads, from
 * `gpt2c bench peak`'s cache (measured once if absent); 0 if unavailable. */
double bench_peak_gflops(int threads);
/* The bf16 GEMM's ceiling: the vdpbf16ps peak where the ISA in effect is
 * avx512 and the CPU has AVX512_BF16, else the fp32 FMA peak (emulation). */
double bench_peak_bf16_gflops(int threads);

#endif
