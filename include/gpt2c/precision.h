/* The model's compute precision: fp32 (the default) or bf16 (mixed precision).
 *
 * bf16 keeps the fp32 parameter slab as the master weights (gradients and
 * AdamW moments stay fp32 too) and adds a bf16 copy of the matmul weights:
 * the qkv, attention projection, MLP fc and projection of every layer and the
 * tied wte as the LM head.  The model's matmuls then take those copies as
 * bf16 weight views (gpt2c/format.h): in the cpu backend every GEMM of a
 * linear layer (forward, data gradient, weight gradient) runs on bf16
 * operands -- fp32 activations and gradients rounded to bf16 (nearest even)
 * as they are packed -- with fp32 accumulation.  Embedding lookups,
 * layernorm statistics, attention's softmax, GELU, the loss and every
 * reduction stay fp32.  The optimizer step refreshes the copies from the
 * updated master weights.
 *
 * Inference can give the fp32 copies of those weights back to the OS
 * (gpt2c_model_release_fp32_weights): half the bytes resident. */
#ifndef GPT2C_PRECISION_H
#define GPT2C_PRECISION_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/format.h"
#include "gpt2c/model.h"

/* Parses "fp32" / "f32" or "bf16"; returns 0, or -1 for anything else. */
int gpt2c_precision_parse(const char *s, gpt2c_format *out);
/* "fp32" or "bf16". */
const char *gpt2c_precision_name(gpt2c_format p);

/* GPT2C_OK when backend (a name, "cpu", "blas", ...) can compute in p; else
 * fails naming the backend and the reason (no bf16 GEMM: blas, cuda, ref). */
gpt2c_status gpt2c_precision_check_backend(gpt2c_format p, const char *backend);

/* Sets the precision (GPT2C_FMT_F32 or GPT2C_FMT_BF16).  bf16 allocates the
 * bf16 copies and fills them from the current master weights; fp32 frees
 * them.  Fails (naming the precision and the reason) on a backend without
 * bf16 GEMMs (blas, cuda), on a quantized model, or once the fp32 weights
 * were released. */
gpt2c_status gpt2c_model_set_precision(gpt2c_model *m, gpt2c_format p);
/* GPT2C_FMT_BF16 when the model computes in bf16, else GPT2C_FMT_F32. */
gpt2c_format gpt2c_model_precision(const gpt2c_model *m);
/* 1 for the tensors that have a bf16 copy (the matmul weights). */
int gpt2c_precision_has_copy(int id);

/* The view of parameter id's layer that the matmuls take: its bf16 copy in
 * bf16 precision (for a matmul weight), else the fp32 slab's view. */
gpt2c_tensor gpt2c_model_weight(const gpt2c_model *m, int id, int layer);

/* Refills the bf16 copies from the fp32 master weights: all of them
 * (all != 0), or only the trainable tensors (after an optimizer step).  A
 * no-op in fp32.  gpt2c_model_update calls it; so does gpt2c_model_forward
 * when the master weights were written since (gpt2c_model_params_upload,
 * gpt2c_model_init_random mark them). */
void gpt2c_model_refresh_bf16(gpt2c_model *m, int all);

/* The bf16 copy of tensor id (all its layers, numel elements, in the fp32
 * slice's order) for whoever refreshes it in place (the fused AdamW update);
 * NULL when there is none (fp32 precision, not a matmul weight, or the fp32
 * masters were given back). */
uint16_t *gpt2c_model_bf16_copy(gpt2c_model *m, int id);
/* 0 where GPT2C_BF16_PANELS=0 asks bf16 training to keep no data-gradient
 * panels of its weights (A/B runs; `bench gemm` follows it too), else 1 */
int gpt2c_bf16_panels_wanted(void);

/* Inference in bf16: gives the fp32 master copies of the matmul weights back
 * to the OS (they read as zeros afterwards); inference reads the bf16 copies
 * (the token embedding included).  Training and gpt2c_model_forward refuse
 * the model afterwards.  A no-op in fp32. */
void gpt2c_model_release_fp32_weights(gpt2c_model *m);

/* Bytes of the weights inference reads: bf16 copies at 2 bytes, the rest
 * (biases, layernorms, wpe) at 4; in fp32 all at 4. */
size_t gpt2c_model_weight_bytes(const gpt2c_model *m);

#endif
