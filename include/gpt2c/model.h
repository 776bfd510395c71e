/* GPT-2: config, parameter table, forward, backward, AdamW update.
 *
 * Parameters live in one 64-byte-aligned slab, laid out as llm.c does (each
 * kind stacked over layers, weights as (out, in)); every tensor starts on a
 * 64-byte boundary.  A name table maps each slice to its Hugging Face name.
 * Gradients and AdamW moments are slabs of the same layout; activations are
 * one slab planned for a given (B, T).
 *
 * Memory: every slab lives in the memory of the selected backend.  With a
 * device backend (cuda), params_mem, grads_mem, m_mem, v_mem, params.t[] and
 * grads.t[] are DEVICE pointers; selecting the backend moves the slabs there
 * (the one upload of a checkpoint) and selecting a host backend brings them
 * back.  Host code that reads or writes parameters uses gpt2c_model_params_host
 * (and gpt2c_model_params_upload after writing); on host backends these are
 * free (the host view is params_mem itself). */
#ifndef GPT2C_MODEL_H
#define GPT2C_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/core.h"
#include "gpt2c/format.h"
#include "gpt2c/profile.h"

typedef struct gpt2c_config {
    int max_seq_len;       /* n_positions / context */
    int vocab_size;        /* V: real tokens */
    int padded_vocab_size; /* Vp: V rounded up to a multiple of 128, for compute */
    int num_layers;
    int num_heads;
    int channels;
} gpt2c_config;

/* "gpt2" (124M), "gpt2-medium" (350M), "gpt2-large" (774M), "gpt2-xl" (1558M),
 * or "d<layers>" (llm.c's naming: d12 = gpt2, d24, d36, d48). */
gpt2c_status gpt2c_config_preset(const char *name, gpt2c_config *cfg);
/* Checks sizes are positive and consistent; fills padded_vocab_size if 0. */
gpt2c_status gpt2c_config_check(gpt2c_config *cfg, const char *what);
int gpt2c_pad_vocab(int vocab_size);

enum {
    GPT2C_P_WTE, GPT2C_P_WPE, GPT2C_P_LN1W, GPT2C_P_LN1B, GPT2C_P_QKVW, GPT2C_P_QKVB,
    GPT2C_P_ATTPROJW, GPT2C_P_ATTPROJB, GPT2C_P_LN2W, GPT2C_P_LN2B, GPT2C_P_FCW, GPT2C_P_FCB,
    GPT2C_P_FCPROJW, GPT2C_P_FCPROJB, GPT2C_P_LNFW, GPT2C_P_LNFB, GPT2C_NUM_PARAM_TENSORS
};

typedef struct gpt2c_param_info {
    const char *name;    /* llm.c-style short name: "wte", "qkvw", ... */
    const char *hf_name; /* Hugging Face name, "%d" for the layer: "h.%d.attn.c_attn.weight" */
    int per_layer;       /* stacked over layers */
    int ndim;            /* dims of one layer's slice: 1 or 2 */
    int rows, cols;      /* one layer's slice: (rows, cols) as stored here, (out, in) for weights */
    int hf_transposed;   /* HF Conv1D stores (in, out): transpose on load / save */
    int decay;           /* AdamW weight decay applies (2-D weights) */
    gpt2c_format fmt;    /* format in the parameter slab (f32 today: the master weights) */
    size_t byte_offset;  /* in bytes, from the slab start; 64-byte aligned */
    size_t numel;        /* all layers */
} gpt2c_param_info;

/* The model is opaque outside the library (its fields: src/model/model_internal.h). */
typedef struct gpt2c_model gpt2c_model;
struct gpt2c_kernels;
struct gpt2c_qweights;

/* Read access for callers outside the library. */
const gpt2c_config *gpt2c_model_config(const gpt2c_model *m);
/* Real parameters (no alignment padding; includes the Vp pad rows of wte). */
size_t gpt2c_model_num_params(const gpt2c_model *m);
/* The parameter table's entry for tensor id (GPT2C_P_*). */
const gpt2c_param_info *gpt2c_model_param_info(const gpt2c_model *m, int id);
/* The quantized linear weights (gpt2c/quant_model.h), NULL when all fp32. */
const struct gpt2c_qweights *gpt2c_model_qweights(const gpt2c_model *m);
/* AdamW moments present (loaded or allocated), and the steps they have taken. */
int gpt2c_model_has_optimizer(const gpt2c_model *m);
int gpt2c_model_opt_step(const gpt2c_model *m);
/* The profiler the model's ops record into (NULL: off); a profile session sets
 * it (gpt2c/profile_session.h), a caller switching sessions may too. */
void gpt2c_model_set_profiler(gpt2c_model *m, gpt2c_profiler *p);

/* Creates a model with zeroed parameters and the "cpu" backend. */
gpt2c_status gpt2c_model_create(const gpt2c_config *cfg, gpt2c_model **out);
void gpt2c_model_free(gpt2c_model *m);
/* GPT-2 init: N(0, 0.02) weights and embeddings, residual projections
 * N(0, 0.02/sqrt(2L)), biases 0, layernorm weights 1; pad rows of wte 0.
 * Same numbers for the same seed, whatever the thread count.  On a device
 * backend it fills the host mirror and uploads it (a failed upload is
 * reported by the next forward). */
void gpt2c_model_init_random(gpt2c_model *m, uint64_t seed);
/* Selects the kernels by backend name ("ref", "cpu", "blas", "cuda"), moving
 * the slabs into that backend's memory when it differs (activations are
 * re-planned; the last forward's results are dropped). */
gpt2c_status gpt2c_model_set_backend(gpt2c_model *m, const char *backend);
/* Threads for the model's forward, backward, update and inference (n <= 0:
 * all cores); each entry point uses them whatever the caller's OpenMP
 * setting, profiled or not.  Returns the count in effect. */
int gpt2c_model_set_threads(gpt2c_model *m, int n);
/* The model's thread count (its own, or the caller's OpenMP setting if never set). */
int gpt2c_model_threads(const gpt2c_model *m);

/* The same with a kernel table in hand (tests, custom backends). */
gpt2c_status gpt2c_model_use_kernels(gpt2c_model *m, const struct gpt2c_kernels *k);

/* Host view of the parameter slab (layout as params_mem), current values:
 * params_mem itself on a host backend; on a device backend a host mirror,
 * downloaded now. */
gpt2c_status gpt2c_model_params_host(const gpt2c_model *m, float **host);
/* After writing the host view: sends it to the device (no-op on host backends). */
gpt2c_status gpt2c_model_params_upload(gpt2c_model *m);
/* Read-only host copy of one of m's slabs (params_mem, grads_mem, m_mem,
 * v_mem), for writers: on a host backend *host = slab (nothing allocated); on
 * a device backend a downloaded copy.  Release with gpt2c_model_slab_host_free. */
gpt2c_status gpt2c_model_slab_to_host(const gpt2c_model *m, const float *slab, const float **host);
void gpt2c_model_slab_host_free(const float *slab, const float *host);

/* Plans the activations for batches of (B, T); no allocation happens after. */
gpt2c_status gpt2c_model_prepare(gpt2c_model *m, int B, int T);

/* Forward pass on tokens (B,T).  With targets (B,T) it also computes the
 * mean cross-entropy into *loss (may be NULL) and keeps what backward needs;
 * without targets, gpt2c_model_logits() holds the logits.  Ids are checked. */
gpt2c_status gpt2c_model_forward(gpt2c_model *m, const int32_t *tokens, const int32_t *targets, int B, int T,
                                 float *loss);
/* A loss other than cross-entropy (distillation, src/train/distill.c), for
 * gpt2c_model_forward_loss.  forward gets the batch (host memory) and the
 * logits (N = B*T rows of Vp, host memory: host backends only); it writes
 * each position's loss into losses (N) and replaces each logits row with
 * g + onehot(target), g being the gradient of that position's loss with
 * respect to its logits (pad columns 0): the cross-entropy backward, which
 * subtracts the one-hot, then turns it into g, and backward runs unchanged. */
typedef struct gpt2c_loss {
    gpt2c_status (*forward)(void *ctx, float *losses, float *logits_grad, const int32_t *tokens,
                            const int32_t *targets, int B, int T, int V, int Vp);
    void *ctx;
} gpt2c_loss;
/* gpt2c_model_forward with that loss in place of cross-entropy (loss NULL:
 * cross-entropy); targets are required with a loss. */
gpt2c_status gpt2c_model_forward_loss(gpt2c_model *m, const int32_t *tokens, const int32_t *targets, int B, int T,
                                      const gpt2c_loss *loss, float *mean_loss);
/* Logits (B,T,Vp) of the last forward without targets (pad columns undefined).
 * Host memory whatever the backend (a device backend's forward copies them back). */
const float *gpt2c_model_logits(const gpt2c_model *m);
/* Per-position losses (B,T) of the last forward with targets. */
const float *gpt2c_model_losses(const gpt2c_model *m);

/* After it the gradients are zero, for the next backward and update (free
 * when they are known to be already, and right after gpt2c_model_update). */
void gpt2c_model_zero_grad(gpt2c_model *m);
/* Accumulates the gradient of loss_scale * mean loss into grads (loss_scale =
 * 1/accum for gradient accumulation).  Needs a forward with targets. */
gpt2c_status gpt2c_model_backward(gpt2c_model *m, float loss_scale);

typedef struct gpt2c_adamw_cfg {
    float beta1, beta2, eps, weight_decay;
    float grad_clip; /* global norm clip, 0 = off */
    int decay_all;   /* decay every tensor, not only 2-D weights */
} gpt2c_adamw_cfg;

/* Global grad norm, clip, and one AdamW step at learning rate lr.  *norm gets
 * the norm before clipping.  On success the gradients are spent: the next
 * backward starts from zero and the next update sees none, with or without
 * a gpt2c_model_zero_grad in between (which then costs nothing).  Where the
 * backend can, the update zeroes them in AdamW's pass, but for the matmul
 * weights', which it leaves in memory for the next backward to write over. */
gpt2c_status gpt2c_model_update(gpt2c_model *m, const gpt2c_adamw_cfg *opt, float lr, float *norm);
/* Freezes (trainable 0) or unfreezes tensor `id` (GPT2C_P_*) for every layer:
 * LoRA and pruning train a subset.  A frozen tensor's gradient is zero. */
gpt2c_status gpt2c_model_set_trainable(gpt2c_model *m, int id, int trainable);

/* Bytes each of the model's slabs holds now (0: not allocated): for memory tables. */
typedef struct gpt2c_model_bytes {
    size_t params;        /* the parameter slab (fp32 slices of quantized weights given back to the OS not counted) */
    size_t quantized;     /* quantized weights (codes + scales) */
    size_t grads, moments;
    size_t acts, acts_backward;
    size_t lora_params, lora_state, lora_acts; /* adapters: A and B; their gradients + AdamW moments; activations */
    size_t bf16_copies, bf16_panels; /* bf16 precision: the weights' bf16 copies; training's data-gradient panels of them */
} gpt2c_model_bytes;
gpt2c_model_bytes gpt2c_model_memory(const gpt2c_model *m);
/* Of the host slabs streamed whole every step (weights, gradients, AdamW
 * moments, bf16 copies and panels; their bytes into *slab_bytes), the bytes
 * Linux backs with 2 MiB pages; -1 if unknown (no /proc, a device backend). */
long long gpt2c_model_huge_page_bytes(const gpt2c_model *m, size_t *slab_bytes);

/* Allocates the AdamW moments (zeroed) if not yet there. */
gpt2c_status gpt2c_model_alloc_optimizer(gpt2c_model *m);
gpt2c_status gpt2c_model_alloc_grads(gpt2c_model *m);

/* Hugging Face name of tensor `id` at `layer` into buf. */
void gpt2c_param_hf_name(const gpt2c_param_info *pi, int layer, char *buf, size_t n);
/* Pointer to one layer's slice of tensor id in a slab (params, grads, m, v). */
float *gpt2c_param_slice(const gpt2c_model *m, float *slab, int id, int layer);
/* Typed view (format, rows, cols) of one layer's slice of tensor id in a slab:
 * what the op table's matmuls take as their weight. */
gpt2c_tensor gpt2c_param_view(const gpt2c_model *m, float *slab, int id, int layer);

#endif
