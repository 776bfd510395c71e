/* QLoRA: the frozen base's quantized weights in the training forward and
 * backward (src/train/qlora_matmul.c).  Internal to src/model and src/train. */
#ifndef GPT2C_QLORA_H
#define GPT2C_QLORA_H

#include "gpt2c/format.h"
#include "gpt2c/model.h"

/* Parameter id's layer as training multiplies by it: the quantized view when m
 * is a QLoRA base (adapters on a quantized model), else the fp32 slab's view. */
gpt2c_tensor gpt2c_qlora_weight(const gpt2c_model *m, int id, int layer);
/* The same, else gpt2c_model_weight (the bf16 copy in bf16 precision). */
gpt2c_tensor gpt2c_qlora_model_weight(const gpt2c_model *m, int id, int layer);
/* The quantized token embedding of a QLoRA base, or NULL. */
const gpt2c_tensor *gpt2c_qlora_wte(const gpt2c_model *m);
/* out (N, OC) = inp (N, IC) w^T + bias, w block-quantized: the fused
 * dequantizing kernel over chunks of outputs, on the model's threads. */
void gpt2c_qlora_matmul_forward(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int IC,
                                int OC);
/* dinp (N, IC) = dout (N, OC) w, w block-quantized: w is dequantized a block
 * of rows at a time (a few MiB at most) and each block's product accumulated. */
void gpt2c_qlora_matmul_dinp(float *dinp, const float *dout, const gpt2c_tensor *w, int N, int IC, int OC);
/* encoded (B*T, C) = wte[token] (dequantized rows) + wpe[t] */
void gpt2c_qlora_encoder_forward(float *encoded, const int32_t *tokens, const gpt2c_tensor *wte, const float *wpe, int B,
                                 int T, int C);

#endif
