/* The cpu backend's bf16 inference matmul (a range of outputs, as
 * matmul_infer_range): bf16 weights, the fp32 input rounded to bf16 (nearest
 * even, kernels/bf16.h), fp32 accumulation.
 *
 * Many rows (prefill, N >= GPT2C_BF16_GEMM_ROWS): the bf16 GEMM of
 * gemm_bf16.h on the range's weight rows (its arithmetic and bits).
 * Few rows (decode): a matrix-vector product reading each weight row once
 * per group of 4 input rows.  Its arithmetic, the same on every path: each
 * output is a dot product over 16 lanes; lane j takes the pairs p = 16c + j
 * (elements 2p and 2p+1, zero past IC) in order of c, per pair
 *     acc += x[2p+1] w[2p+1];   acc += x[2p] w[2p]
 * (each product exact in fp32, each add rounded: one vdpbf16ps lane), then
 * the lanes are summed by halves (j + 8, + 4, + 2, + 1) and the bias added.
 * The AVX512_BF16 path (vdpbf16ps), the AVX-512F one (FMAs) and the portable
 * one (every other CPU) give the same bits, except that vdpbf16ps flushes
 * denormals. */
#ifndef GPT2C_CPU_INFER_BF16_H
#define GPT2C_CPU_INFER_BF16_H

#include <stdint.h>

#include "kernels/cpu/gemm_bf16.h"

enum { GPT2C_BF16_GEMM_ROWS = 16 };

/* dst (N rows of ld >= IC rounded up to 32 bf16) = x (N, IC) rounded to bf16,
 * each row padded with zeros to the multiple of 32; with the vector rounding
 * of the bf16 GEMM kernel kk where it has one (same bits), else per element. */
void gpt2c_cpu_bf16_round_rows(const gemm_bf16_isa_kernel *kk, uint16_t *dst, int ld, const float *x, int N, int IC);

/* out[n*OC + o] = bias[o] + dot(xb row n, w row o) for o in [o0, o1), n < N,
 * xb as gpt2c_cpu_bf16_round_rows writes it (row stride ld), w (OC, IC) bf16. */
void gpt2c_cpu_bf16_gemv_portable(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N,
                                  int IC, int OC, int o0, int o1);
#if defined(__x86_64__)
/* The same with vdpbf16ps (call only when gpt2c_cpu_has_avx512bf16()). */
void gpt2c_cpu_bf16_gemv_avx512bf16(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N,
                                    int IC, int OC, int o0, int o1);
/* The same on AVX-512F alone, by FMAs (call only when the AVX-512 ISA runs):
 * without it a CPU lacking AVX512_BF16 took the scalar loop (Cascade Lake:
 * bf16 decode at 0.26x fp32's speed). */
void gpt2c_cpu_bf16_gemv_avx512f(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N,
                                 int IC, int OC, int o0, int o1);
/* The same on AVX2 + FMA (call only when the CPU has them): without it an
 * AVX2 CPU took the scalar loop (bf16 decode at 0.4x fp32's speed). */
void gpt2c_cpu_bf16_gemv_avx2(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N,
                              int IC, int OC, int o0, int o1);
#endif

/* The range matmul: out[n*OC + o] (o in [o0, o1)) = bias[o] + inp row n . w row o
 * (bf16 operands, fp32 accumulation, as above); act GPT2C_ACT_GELU applies the
 * cpu backend's gelu_forward to the range.  inp: N rows of IC fp32 values
 * (in_form 0), or the rows already rounded in a form of kernels/bf16_rows.h
 * (kernels.h's GPT2C_ACT_IN_BF16: the same results, the rounding done once
 * per matmul by the caller; swapped fp32 rows are read in place by the
 * fp32-panel GEMM, with no packing of the input per range). */
void gpt2c_cpu_matmul_bf16_range(float *out, const void *inp, int in_form, const uint16_t *w, const float *bias, int N,
                                 int IC, int OC, int act, int o0, int o1);

#endif
