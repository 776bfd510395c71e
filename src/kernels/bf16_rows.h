/* The input of a prefill matmul on bf16 weights, rounded to bf16 once per
 * matmul (kernels.h's GPT2C_ACT_IN_BF16) in the form the backend's table
 * asks for (gpt2c_kernels.infer_bf16_input):
 *
 *   GPT2C_BF16_IN_ROWS         rows of IC bf16 values (uint16_t, stride IC);
 *   GPT2C_BF16_IN_F32_SWAPPED  rows of IC rounded up to even fp32 values, each
 *                              the bf16 value of that element, each pair
 *                              (2p, 2p+1) stored as (2p+1, 2p); an odd IC's
 *                              last element gets a zero partner in front.
 *
 * The second is the order in which the cpu backend's bf16 GEMM runs its pair
 * adds on CPUs without AVX512_BF16 (gemm_bf16.h, fp32 panels), so the GEMM
 * reads it in place instead of packing and expanding the input once per
 * range of outputs.  Both hold the same values: x rounded to nearest even,
 * NaN kept quiet (kernels/bf16.h). */
#ifndef GPT2C_KERNELS_BF16_ROWS_H
#define GPT2C_KERNELS_BF16_ROWS_H

#include <stddef.h>

enum { GPT2C_BF16_IN_ROWS = 1, GPT2C_BF16_IN_F32_SWAPPED = 2 };

/* Bytes of one row of IC values in `form`. */
size_t gpt2c_bf16_in_row_bytes(int form, int IC);

/* dst (rows of gpt2c_bf16_in_row_bytes each) = src (rows, IC fp32) in `form`. */
void gpt2c_bf16_in_rows(void *dst, const float *src, size_t rows, int IC, int form);

#endif
