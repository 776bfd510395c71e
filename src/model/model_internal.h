/* The fields of gpt2c_model, for library code only (callers outside the
 * library use the accessors in gpt2c/model.h). */
#ifndef GPT2C_MODEL_INTERNAL_H
#define GPT2C_MODEL_INTERNAL_H

#include "gpt2c/model.h"

typedef struct gpt2c_params {
    float *t[GPT2C_NUM_PARAM_TENSORS];
} gpt2c_params;

struct gpt2c_kernels;

typedef struct gpt2c_acts gpt2c_acts; /* activation slab (src/model/acts.h) */

struct gpt2c_model {
    gpt2c_config cfg;
    gpt2c_param_info info[GPT2C_NUM_PARAM_TENSORS];
    size_t slab_floats; /* floats in each of params / grads / m / v (with alignment padding) */
    size_t num_params;  /* real parameters (no padding; includes the Vp pad rows of wte) */

    float *params_mem;
    gpt2c_params params;
    float *params_host; /* device backends only: host mirror of params_mem (NULL on host backends) */
    float *grads_mem; /* allocated on first backward */
    gpt2c_params grads;
    float *m_mem, *v_mem; /* AdamW moments, allocated on first update */
    int opt_step;         /* AdamW steps taken so far */
    int grads_zero;       /* grads_mem is known to be all zero (zero_grad is then a no-op); backward clears it */
    /* The update left the matmul weights' gradients (gpt2c_param_is_matmul_weight)
     * as they were instead of zeroing them, every other gradient zero: the
     * next backward overwrites them (matmul_backward's dw_acc 0), which saves
     * writing zeros over them in the update and reading those zeros back in
     * the weight-gradient GEMMs (~2 x 4 bytes per parameter).  Backward clears
     * it.  gpt2c_model_zero_grad leaves them so (nothing to write: backward
     * and update see zeros either way); gpt2c_model_zero_grad_slab writes the
     * zeros.  grads_zero and grads_stale: never both. */
    int grads_stale;
    /* Per tensor: 1 = trained (the default); 0 = frozen: backward computes no
     * gradient for it (its weight-gradient GEMM is skipped), the update no
     * moments and the norm leaves it out.  Set with gpt2c_model_set_trainable. */
    uint8_t trainable[GPT2C_NUM_PARAM_TENSORS];
    int num_frozen;

    const struct gpt2c_kernels *k;
    struct gpt2c_qweights *qw; /* quantized linear weights (gpt2c/quant_model.h), NULL: all fp32 */
    struct gpt2c_lora *lora;   /* LoRA adapters (gpt2c/lora.h), NULL: none */
    int threads;          /* threads the model computes with (gpt2c_model_set_threads); 0: the caller's OpenMP setting */
    gpt2c_profiler *prof; /* NULL: profiling off */
    /* Data parallel (src/dist): backward calls this as parameter gradients
     * become final, so their all-reduce can start while earlier layers still
     * compute: layer == num_layers: the final layernorm; 0 <= layer < L:
     * block `layer`; -1: the embeddings (wte, wpe), last.  NULL: no hook.
     * layer == num_layers + 1 (first, after the LM head's matmul): wte's
     * gradient is final when wte_rows_apart is set, which makes the encoder's
     * backward leave wte's token rows out (the hook's owner adds them, from
     * acts->dres and acts->tokens, once it has reduced the LM head's part). */
    void (*on_grads_final)(void *ctx, int layer);
    void *grads_final_ctx;
    int wte_rows_apart;

    gpt2c_acts *acts;
    int B, T; /* shape the activations are planned for */
    int have_targets;
    float mean_loss;
    /* bf16 precision (gpt2c/precision.h): bf16 copies of the matmul weights at
     * the same element offsets as params_mem (NULL: fp32 precision) */
    uint16_t *bf16_mem;
    int bf16_stale;    /* master weights written since the copies were made */
    /* bf16 training on a backend that reads them (ops.h's bf16_panels): the
     * matmul weights' second bf16 copy, in the panels their data-gradient
     * GEMM reads (so it packs none of them), made at the first update and
     * kept with the row-major copy from then on.  Tensor id's (all layers)
     * at panels_mem + panels_off[id], its panels panels_width[id] wide (0:
     * none).  GPT2C_BF16_PANELS=0 keeps none (A/B runs, tests). */
    uint32_t *panels_mem;
    size_t panels_bytes;
    size_t panels_off[GPT2C_NUM_PARAM_TENSORS];
    int panels_width[GPT2C_NUM_PARAM_TENSORS];
    int fp32_released; /* inference only: the fp32 copies of those weights were given back */
    int kv_cache;      /* gpt2c_kv_cache of inference states made from now on (0: AUTO) */
};

/* bf16 precision on a backend with bf16 attention ops (precision.c): the
 * training forward and backward then run attention's products on bf16 operands */
int gpt2c_model_attention_bf16(const gpt2c_model *m);

/* precision.c: the data-gradient panels above.  alloc makes them (from the
 * row-major copies) where bf16 training's backend reads them, or does
 * nothing; of: layer `layer` of tensor id's, NULL if none; free: drops them
 * (the GEMMs pack from the row-major copies again). */
gpt2c_status gpt2c_model_alloc_bf16_panels(gpt2c_model *m);
uint32_t *gpt2c_model_bf16_panels(const gpt2c_model *m, int id, int layer);
void gpt2c_model_free_bf16_panels(gpt2c_model *m);

/* The matmul weights (wte: the LM head's): the tensors with a bf16 copy in
 * bf16 precision, and those whose gradient a backward's first write (its
 * weight-gradient GEMM; wte's before the embedding's scatter adds to it)
 * overwrites when the gradients are fresh. */
static inline int gpt2c_param_is_matmul_weight(int id) {
    return id == GPT2C_P_WTE || id == GPT2C_P_QKVW || id == GPT2C_P_ATTPROJW || id == GPT2C_P_FCW ||
           id == GPT2C_P_FCPROJW;
}
/* The next backward starts the gradients from nothing: all zero, or zero but
 * for stale matmul-weight gradients it overwrites. */
static inline int gpt2c_grads_fresh(const gpt2c_model *m) { return m->grads_zero || m->grads_stale; }
/* Zeros over the whole gradient slab, stale or not (grads_zero after): for
 * what reads the gradients without a backward first (the update). */
void gpt2c_model_zero_grad_slab(gpt2c_model *m);

#endif
