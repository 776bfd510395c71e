/* Block-quantized weights (q8, q4, nf4): pack, unpack, and the fused
 * dequantize-and-multiply kernels.  The formats themselves are listed in
 * gpt2c/format.h; this is what each one means, bit for bit.
 *
 * A weight W (rows = out features, cols = in features) is quantized row by
 * row in blocks of `block` consecutive elements along cols (block divides cols;
 * block 0 means the format's default).  Every block has one fp32 scale; the
 * scales are row-major, rows * cols / block of them.
 *
 *   q8   llama.cpp's Q8_0 with an fp32 scale: d = absmax / 127,
 *        code = roundf(x * (1/d)) in [-127, 127] (int8), value = code * d.
 *        Block a multiple of 32.
 *   q4   llama.cpp's Q4_0 with an fp32 scale: m = the element of largest |x|
 *        (the first one on ties), d = m / -8, code = min(15, (int)(x/d + 8.5))
 *        in [0, 15], value = (code - 8) * d.  Packing in groups of 32: byte j
 *        of a group holds element j in its low nibble and element j + 16 in its
 *        high nibble (16 bytes per 32 elements).  Block a multiple of 32.
 *   nf4  bitsandbytes' NF4 (QLoRA NormalFloat4): scale = absmax of the block,
 *        code = the index of the nearest of the 16 NF4 values to
 *        clamp(x * (1/absmax), -1, 1) (ties to the lower index: bitsandbytes'
 *        bucketize against the fp32 midpoints), value = NF4[code] * absmax.
 *        Two codes per byte, the first element in the HIGH nibble.  Block a
 *        multiple of 64 (bitsandbytes' default is 64).
 *
 * nf4 double quantization (bitsandbytes' compress_statistics): the fp32
 * absmax values a[i] get offset = mean(a) (summed in double, rounded to fp32),
 * then (a[i] - offset) is quantized with bitsandbytes' blockwise 8-bit
 * quantizer in blocks of 256: per block absmax2 = max|.|, code8 = the entry
 * of bitsandbytes' signed dynamic map nearest to the 65536-point grid value
 * closest to (a - offset) * (1/absmax2), as its CPU library does (quant_dq.c).  Dequantized scale = dynamic[code8] * absmax2 + offset.  In memory a double-quantized tensor carries the expanded fp32
 * scales (gpt2c_tensor.scales); files carry the 8-bit codes. */
#ifndef GPT2C_QUANT_H
#define GPT2C_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/format.h"
#include "gpt2c/status.h"

enum { GPT2C_NF4_DQ_BLOCK = 256 };

/* bitsandbytes' NF4 values, ascending (code i -> gpt2c_nf4_code[i]). */
extern const float gpt2c_nf4_code[16];
/* round(127 * gpt2c_nf4_code[i]): the values the int8-activation decode kernel multiplies (times absmax / 127). */
extern const int8_t gpt2c_nf4_code_i8[16];
/* bitsandbytes' signed 8-bit dynamic map (create_dynamic_map(signed=True)), ascending. */
const float *gpt2c_dynamic_map(void);

/* The block a tensor uses (its own, or the format's default when 0). */
int gpt2c_quant_block(gpt2c_format f, int block);
/* Checks that format f can quantize a (rows, cols) tensor with this block
 * (block 0 = default); the message names `what` (a tensor name). */
gpt2c_status gpt2c_quant_check(gpt2c_format f, int64_t rows, int64_t cols, int block, const char *what);
/* Bytes of the codes, and number of scales, of a (rows, cols) tensor. */
size_t gpt2c_quant_code_bytes(gpt2c_format f, int64_t rows, int64_t cols, int block);
size_t gpt2c_quant_nscales(gpt2c_format f, int64_t rows, int64_t cols, int block);

/* Quantizes w (rows, cols) into codes and scales (sizes above); the shape must
 * have passed gpt2c_quant_check. */
void gpt2c_quant_pack(gpt2c_format f, int block, const float *w, int64_t rows, int64_t cols, void *codes,
                      float *scales);
/* Dequantizes row r of t into out (t->cols floats). */
void gpt2c_quant_unpack_row(const gpt2c_tensor *t, int64_t r, float *out);
/* Rows [r0, r1) of t into dst ((r1 - r0) * cols floats), vectorised: the
 * same values as gpt2c_quant_unpack_row.  Only where gpt2c_cpu_isa() is AVX-512. */
void gpt2c_quant_unpack_rows_avx512(const gpt2c_tensor *t, int64_t r0, int64_t r1, float *dst);
/* The same rows rounded to bf16 ((r1 - r0) * cols values; nearest even, as
 * the bf16 GEMM rounds an fp32 operand). Only where gpt2c_cpu_isa() is AVX-512. */
void gpt2c_quant_unpack_rows_bf16_avx512(const gpt2c_tensor *t, int64_t r0, int64_t r1, uint16_t *dst);
/* Dequantizes the whole tensor into out (rows * cols floats). */
void gpt2c_quant_unpack(const gpt2c_tensor *t, float *out);

/* Double quantization of n nf4 scales (absmax values): codes8 (n bytes),
 * absmax2 (ceil(n / 256) floats) and the offset. */
void gpt2c_nf4_dq_pack(const float *absmax, size_t n, uint8_t *codes8, float *absmax2, float *offset);
/* The inverse: n fp32 scales. */
void gpt2c_nf4_dq_unpack(const uint8_t *codes8, const float *absmax2, float offset, size_t n, float *absmax);

/* out (N, rows of w) = inp (N, cols of w) @ w^T + bias, then the activation
 * (GPT2C_ACT_NONE / GPT2C_ACT_GELU), for the outputs [o0, o1) only: single
 * threaded (the caller splits outputs over threads).  w is q8, q4 or nf4; the
 * weights are dequantized a few rows at a time, in registers or a small
 * per-thread buffer, never as a whole.  The ISA follows gpt2c_cpu_isa(). */
void gpt2c_qmatmul_range(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                         int o0, int o1);
/* On CPUs with AVX-512 VNNI, decode (q8 up to 3 rows; q4 and nf4 rows of a
 * multiple of 128 up to 8) runs with the activations quantized to int8 per
 * block of 32, as llama.cpp's Q8_0 does (da = absmax / 127, round to
 * nearest), and integer dot products (nf4: its 16 values as int8,
 * gpt2c_nf4_code_i8); that is the default there (GPT2C_QUANT_ACT=f32 turns
 * it off).  Everything else keeps the activations fp32 and computes with
 * exactly the dequantized weights.  Returns whether int8 activations are in use; set_ asks for them
 * (granted only where VNNI runs) and returns the same. */
int gpt2c_qmatmul_int8_act(void);
int gpt2c_qmatmul_set_int8_act(int on);
/* Prefill: GPT2C_QMATMUL_PREFILL_ROWS activation rows or more on the cpu
 * backend with AVX-512 (src/quant/qmatmul_prefill.c).  The weight rows of
 * the range [o0, o1) are dequantized into a per-thread buffer (never a whole
 * weight) and multiplied by a GEMM:
 *   bf16 (the default where AVX512_BF16 runs): weights and activations
 *        rounded to bf16 (nearest even), fp32 accumulation: exactly the cpu
 *        bf16 GEMM (gemm_bf16.h) of the dequantized weights;
 *   fp32 (GPT2C_QUANT_ACT=f32 or set_bf16_prefill(0), or no AVX512_BF16):
 *        the fp32 GEMM of exactly the dequantized weights.
 * inp: N rows of IC fp32 (in_form 0), or (only where the bf16 path runs)
 * the rows already rounded, in_form naming their form (kernels/bf16_rows.h:
 * 1 = GPT2C_BF16_IN_ROWS, IC bf16 values; 2 = GPT2C_BF16_IN_F32_SWAPPED, the
 * form the cpu table asks for where its bf16 GEMM runs on FMAs).  Returns 1
 * when it computed the range, 0 when the caller must (too few rows, no
 * AVX-512, no memory).
 * gpt2c_qmatmul_bf16_prefill: whether the bf16 path is in use; set_ asks for
 * it (granted only where AVX512_BF16 runs, or on any AVX-512 CPU with
 * GPT2C_QUANT_BF16_PREFILL=1) and returns the same. */
enum { GPT2C_QMATMUL_PREFILL_ROWS = 16 };
int gpt2c_qmatmul_prefill_range(float *out, const void *inp, int in_form, const gpt2c_tensor *w, const float *bias,
                                int N, int act, int o0, int o1);
int gpt2c_qmatmul_bf16_prefill(void);
int gpt2c_qmatmul_set_bf16_prefill(int on);
/* The bf16 path's fallback when its buffer cannot be allocated (the same
 * sums, one output at a time, no memory at all); exposed for tests. */
void gpt2c_qmatmul_prefill_bf16_unbuffered(float *out, const void *inp, int in_form, const gpt2c_tensor *w,
                                           const float *bias, int N, int act, int o0, int o1);
/* The int8-activation scheme in plain C (its oracle in tests). */
void gpt2c_qmatmul_range_int8_scalar(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N,
                                     int act, int o0, int o1);
/* The scalar version (the oracle in tests): dequantize a row, dot with fp32. */
void gpt2c_qmatmul_range_scalar(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N,
                                int act, int o0, int o1);

#endif
