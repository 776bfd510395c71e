/* The cpu backend's inference kernels, shared between the dispatcher
 * (cpu_infer.c: scalar + OpenMP fallback) and the AVX-512 versions
 * (cpu_infer_avx512.c, compiled with -mavx512f, called only after a CPUID check). */
#ifndef GPT2C_CPU_INFER_H
#define GPT2C_CPU_INFER_H

#include <stddef.h>

void gpt2c_cpu_infer_matmul_avx512(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC,
                             int act, int o0, int o1);
/* Returns 0 when it cannot take the shape (then the caller falls back). */
int gpt2c_cpu_infer_attention_avx512(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                               const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1);

#endif
