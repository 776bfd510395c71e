/* `gpt2c bench <what>`: one file per benchmark (bench_<what>.c). */
#ifndef GPT2C_CLI_BENCH_H
#define GPT2C_CLI_BENCH_H

int bench_train(int argc, char **argv);    /* training step time (bench_train.c) */
int bench_forward(int argc, char **argv);  /* forward-only time (bench_train.c) */
int bench_gemm(int argc, char **argv);     /* GEMM kernels on the GPT-2 shapes (bench_gemm.c) */
int bench_peak(int argc, char **argv);     /* machine FMA peak and bandwidth (bench_peak.c) */
int bench_generate(int argc, char **argv); /* prefill and decode tok/s (bench_generate.c) */

/* fp32 FMA peak (GFLOP/s) of the ISA in effect on `threads` threads, from
 * `gpt2c bench peak`'s cache (measured once if absent); 0 if unavailable. */
double bench_peak_gflops(int threads);
/* Re-executes the process once with a better OPENBLAS_CORETYPE when the
 * environment's is wrong for this CPU (see gpt2c/cpu.h); prints why. */
void bench_blas_fix_coretype(void);

#endif
