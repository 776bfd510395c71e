/* A GPT-2 with block-quantized linear weights (src/quant/quant_model.c,
 * quant_load.c): the attention qkv and projection, MLP fc and projection of
 * every layer, and the tied token embedding / LM head (q8 when the others are
 * q4 or nf4).  Biases, layernorms and wpe stay fp32 in the model's slab.
 *
 * The quantized weights hang off gpt2c_model.qw; the slab slices of those
 * weights are given back to the OS (gpt2c_quant_release_fp32) unless gpt2c_quant_dequantize_params fills them (eval: the loss of
 * a quantized model is that of its dequantized weights). */
#ifndef GPT2C_QUANT_MODEL_H
#define GPT2C_QUANT_MODEL_H

#include "gpt2c/format.h"
#include "gpt2c/io.h"
#include "gpt2c/model.h"

#define GPT2C_QUANT_META_FORMAT "gpt2c.quant.format"

/* The double-quantized form of an nf4 tensor's scales (gpt2c_tensor.aux of
 * a tensor gpt2c_quantize_model made; one allocation): what the file holds. */
typedef struct gpt2c_nf4_dq {
    float offset;
    size_t n;         /* scales */
    uint8_t *codes8;  /* (n) */
    float *absmax2;   /* (ceil(n / 256)) */
} gpt2c_nf4_dq;

typedef struct gpt2c_qweights {
    gpt2c_format fmt;  /* the format chosen (q8, q4, nf4) */
    int block;         /* its block */
    int double_quant;  /* nf4 scales double-quantized (in the file; expanded in memory) */
    int layers[GPT2C_NUM_PARAM_TENSORS];
    gpt2c_tensor *t[GPT2C_NUM_PARAM_TENSORS]; /* per linear weight: one view per layer (F32 = kept) */
    void *arena;        /* non-NULL: every quantized tensor's codes and scales live in this mapping */
    size_t arena_bytes; /* (src/quant/quant_arena.c: 2 MiB pages, decode order) */
} gpt2c_qweights;

/* Quantizes m's linear weights (fp32 in its slab) to f with this block (0:
 * default); double_quant applies to nf4; keep: comma-separated tensor names
 * (HF names like "h.0.mlp.c_fc.weight", or a suffix like "c_fc" or "wte")
 * left fp32.  Fails if m is already quantized. */
gpt2c_status gpt2c_quantize_model(gpt2c_model *m, gpt2c_format f, int block, int double_quant, const char *keep);
/* Writes the quantized model (layout in quant_model.c).  Atomic. */
gpt2c_status gpt2c_quant_save(const gpt2c_model *m, const char *path);
/* Loads a file gpt2c_quant_save wrote (gpt2c_model_load calls it when the
 * metadata has gpt2c.quant.format). */
gpt2c_status gpt2c_quant_load(const gpt2c_st_file *f, const char *path, gpt2c_model **out);
/* Fills the slab slices of the quantized weights with their dequantized values. */
gpt2c_status gpt2c_quant_dequantize_params(gpt2c_model *m);
/* Gives the memory of the fp32 slab slices of the quantized weights back to
 * the OS (Linux: madvise DONTNEED; elsewhere a no-op): they read as zeros
 * afterwards, until gpt2c_quant_dequantize_params refills them. */
void gpt2c_quant_release_fp32(gpt2c_model *m);
/* The quantized view of parameter id's layer, or NULL when it is fp32. */
const gpt2c_tensor *gpt2c_qweight(const gpt2c_model *m, int id, int layer);
/* Bytes of the weights inference reads: quantized codes + scales, fp32 for the rest. */
size_t gpt2c_quant_weight_bytes(const gpt2c_model *m);
void gpt2c_qweights_free(gpt2c_qweights *q);

#endif
