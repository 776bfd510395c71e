/* Internal: the per-ISA fused dequantize-and-multiply kernels behind
 * gpt2c_qmatmul_range (src/quant/qmatmul.c). */
#ifndef GPT2C_QMATMUL_IMPL_H
#define GPT2C_QMATMUL_IMPL_H

#include <math.h>

#include "gpt2c/format.h"

/* Largest row length the tiled kernels take (their per-thread buffer holds
 * QMM_TILE_O dequantized rows); longer rows go through the row-at-a-time path. */
enum { QMM_MAX_IC = 8192, QMM_TILE_O = 4, QMM_TILE_N = 4, QMM_VNNI_ROWS = 3, QMM_VNNI_MAX_ROWS = 8 };

void gpt2c_qmatmul_avx512(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                          int o0, int o1);
/* q8 / q4 with the activations quantized to int8 per block of 32 (AVX-512
 * VNNI), rows of a multiple of 64 <= QMM_MAX_IC: q4 rows of a multiple of 128
 * for up to QMM_VNNI_MAX_ROWS activation rows (decode, batch <= 8), the others
 * up to QMM_VNNI_ROWS (more go through the fp32 tile, measured faster there). */
int gpt2c_qmatmul_vnni_takes(const gpt2c_tensor *w, int N);
void gpt2c_qmatmul_avx512_vnni(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                               int o0, int o1);
/* q4 / nf4 with fp32 activations through a 16-entry register lookup
 * (qmatmul_lut_avx512.c), for up to QMM_VNNI_ROWS rows of a multiple of 64 <= QMM_MAX_IC. */
int gpt2c_qmatmul_lut4_takes(const gpt2c_tensor *w, int N);
void gpt2c_qmatmul_lut4_avx512(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                               int o0, int o1);
/* Row r of a q4 / nf4 tensor dequantized in order (the same values as gpt2c_quant_unpack_row). */
void gpt2c_quant_unpack4_row_avx512(const gpt2c_tensor *w, int64_t r, float *dst);
void gpt2c_qmatmul_avx2(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                        int o0, int o1);

/* The epilogue every kernel shares: bias, then GELU (tanh form) when asked. */
static inline float qmm_epilogue(float acc, const float *bias, int o, int act) {
    float y = acc + (bias ? bias[o] : 0.0f);
    if (act == 1) y = 0.5f * y * (1.0f + tanhf(0.7978845608028654f * (y + 0.044715f * y * y * y)));
    return y;
}

#endif
