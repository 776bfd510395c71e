/* The cpu backend's inference kernels, shared between the dispatcher
 * (cpu_infer.c: scalar + OpenMP fallback) and the AVX-512 versions
 * (cpu_infer_avx512.c, compiled with -mavx512f, called only after a CPUID check). */
#ifndef GPT2C_CPU_INFER_H
#define GPT2C_CPU_INFER_H

#include <stddef.h>
#include <stdint.h>

void gpt2c_cpu_infer_matmul_avx512(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC,
                             int act, int o0, int o1);
/* Attention over the KV cache on AVX2 + FMA (attention_kv_avx2.c: two passes
 * per query in fp32; call only when the CPU has them); 0 without memory for
 * its score row (then the caller falls back). */
int gpt2c_cpu_attention_kv_avx2(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                                const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1);
int gpt2c_cpu_attention_kv_bf16_avx2(float *out, const float *q, size_t qstride, const uint16_t *kc, const uint16_t *vc,
                                     const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1);
/* From this many rows an fp32 inference matmul runs the fp32 GEMM (its
 * packing is amortized over the rows), below it the dot-product kernels;
 * on AVX-512 and on AVX2 alike. */
enum { GPT2C_CPU_INFER_GEMM_ROWS = 24 };
/* The few-row (decode) matmul on AVX2 + FMA (cpu_infer_avx2.c; call only when the CPU has them). */
void gpt2c_cpu_infer_matmul_avx2(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC,
                                 int act, int o0, int o1);
/* Attention over the KV cache.  Both return 0 when they cannot take the shape
 * (then the caller falls back).  The flash kernel (flash_infer_avx512.c:
 * online softmax over key tiles, a few KiB of scratch, any context) is the
 * cpu table's; the two-pass one (scores of a 4-query block over all its keys
 * in a per-thread buffer, contexts up to 4096) stays for `bench attention`. */
int gpt2c_cpu_flash_attention_avx512(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                                     const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1);
/* The flash kernel over a bf16 cache (the same loop, keys and values widened as loaded). */
int gpt2c_cpu_flash_attention_bf16_avx512(float *out, const float *q, size_t qstride, const uint16_t *kc,
                                          const uint16_t *vc, const int *pos, int B, int Tq, int ctx, int C, int NH,
                                          long t0, long t1);
/* The KV-cache write (ops.h kv_write / kv_write_bf16: heads [h0, h1) of each
 * sequence; bf16: kc and vc hold bf16) with 16 x 16 register transposes of the keys. */
void gpt2c_cpu_kv_write_avx512(void *kc, void *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C,
                               int NH, int h0, int h1, int bf16);
int gpt2c_cpu_infer_attention_avx512(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                               const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1);

#endif
