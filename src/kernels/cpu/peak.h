/* FMA peak loops: each runs `iters` x 12 vector FMAs; returns a value so the work is kept. */
#ifndef GPT2C_CPU_PEAK_H
#define GPT2C_CPU_PEAK_H
double cpu_fma_loop_avx512(long iters); /* 12 x 32 flops per iteration */
double cpu_fma_loop_avx2(long iters);   /* 12 x 16 flops per iteration */
#endif
