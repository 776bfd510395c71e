/* LoRA adapters on GPT-2's linear layers (src/train/lora*.c), as PEFT defines them:
 *
 *   y = x W^T + b + scale * dropout(x) A^T B^T,   A (r, in), B (out, r), scale = alpha / r
 *
 * A starts Kaiming-uniform (a = sqrt(5), as nn.Linear: U(-1/sqrt(in), 1/sqrt(in))), B at zero,
 * so a fresh adapter leaves the model's output unchanged.  Attached to a model
 * (gpt2c_lora_attach), the base is frozen: no base gradient, no AdamW moments
 * for it, and the activation slab keeps only what the backward through the
 * frozen base and the adapters needs (model/acts.c).  Forward, backward,
 * zero_grad and gpt2c_model_update run the adapters with the base, so
 * gpt2c_train_step (and so train, profile, bench train) trains them unchanged.
 *
 * A quantized base (m->qw, QLoRA) stays quantized: its forward runs the fused
 * dequantizing kernel and the data gradient dequantizes a block of rows at a
 * time (src/train/qlora_matmul.c); no fp32 copy of a quantized weight is made.
 *
 * Sites ("target modules"), PEFT's names for GPT-2's Conv1D layers:
 *   c_attn (C -> 3C), attn.c_proj (C -> C), c_fc (C -> 4C), mlp.c_proj (4C -> C). */
#ifndef GPT2C_LORA_H
#define GPT2C_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/io.h"
#include "gpt2c/model.h"
#include "gpt2c/train.h"

enum { GPT2C_LORA_C_ATTN, GPT2C_LORA_ATTN_C_PROJ, GPT2C_LORA_C_FC, GPT2C_LORA_MLP_C_PROJ, GPT2C_LORA_NUM_SITES };

typedef struct gpt2c_lora_cfg {
    int rank;         /* r >= 1 */
    float alpha;      /* scale = alpha / r */
    float dropout;    /* on the adapter's input while training, [0, 1) */
    unsigned targets; /* bit s: site s has an adapter */
} gpt2c_lora_cfg;

typedef struct gpt2c_lora gpt2c_lora;

/* PEFT's module name of site s ("c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"). */
const char *gpt2c_lora_site_name(int site);
/* The parameter tensor (GPT2C_P_*) a site adapts, and the site of a parameter tensor (-1: none). */
int gpt2c_lora_site_param(int site);
int gpt2c_lora_site_of_param(int id);
/* "c_attn,attn.c_proj,c_fc,mlp.c_proj" (any subset; "c_proj" is both projections, as PEFT's suffix match;
 * "all" is every site) -> bit mask.  An unknown name fails naming it. */
gpt2c_status gpt2c_lora_parse_targets(const char *list, unsigned *targets);
/* Comma-separated site names of a mask, into buf. */
void gpt2c_lora_targets_str(unsigned targets, char *buf, size_t n);

/* Creates adapters on m (host backends; fails if m already has some), initialised as PEFT (seeded), and
 * freezes every base tensor. */
gpt2c_status gpt2c_lora_attach(gpt2c_model *m, const gpt2c_lora_cfg *cfg, uint64_t seed);
/* Removes m's adapters (the base stays frozen); a no-op without adapters. */
void gpt2c_lora_detach(gpt2c_model *m);
/* m's adapters, or NULL. */
gpt2c_lora *gpt2c_model_lora(const gpt2c_model *m);
const gpt2c_lora_cfg *gpt2c_lora_config(const gpt2c_lora *l);
float gpt2c_lora_scale(const gpt2c_lora *l);
/* Number of adapter parameters (all A and B). */
size_t gpt2c_lora_num_params(const gpt2c_lora *l);
/* A (r, in) or B (out, r) of one site's layer, in the parameter, gradient or moment slab (what:
 * 0 params, 1 grads, 2 AdamW m, 3 AdamW v); NULL for a site without adapters. */
float *gpt2c_lora_A(const gpt2c_lora *l, int site, int layer, int what);
float *gpt2c_lora_B(const gpt2c_lora *l, int site, int layer, int what);
/* in / out features of a site for this model */
int gpt2c_lora_site_in(const gpt2c_lora *l, int site);
int gpt2c_lora_site_out(const gpt2c_lora *l, int site);
/* AdamW steps the adapters have taken (restored by gpt2c_peft_load with the optimizer). */
int gpt2c_lora_opt_step(const gpt2c_lora *l);
void gpt2c_lora_set_opt_step(gpt2c_lora *l, int step);
/* Dropout on (training) or off (evaluation; the default).  Returns the previous setting. */
int gpt2c_lora_set_training(gpt2c_lora *l, int on);
/* Seed of the dropout masks: training forward k draws the masks of (seed, k), so a run resumed after
 * forwards_done training forwards (steps x accumulation) continues with the same masks. */
void gpt2c_lora_set_dropout_seed(gpt2c_lora *l, uint64_t seed, uint64_t forwards_done);
/* Bytes held by the adapters: parameters, gradients, AdamW moments, activations (for the memory table). */
typedef struct gpt2c_lora_bytes {
    size_t params, grads, moments, acts;
} gpt2c_lora_bytes;
gpt2c_lora_bytes gpt2c_lora_memory(const gpt2c_lora *l);

/* W += scale * B A in m's fp32 slab for every adapted weight, then detaches the adapters (the merged model
 * computes what base + adapter computed).  Refuses a quantized base. */
gpt2c_status gpt2c_lora_merge(gpt2c_model *m);

/* ---- model hooks (called by src/model; N rows) ---- */
gpt2c_status gpt2c_lora_prepare(gpt2c_lora *l, const gpt2c_model *m, size_t N);
/* out (N, out) += scale * dropout(inp) A^T B^T */
void gpt2c_lora_forward(gpt2c_model *m, int site, int layer, float *out, const float *inp, int N);
/* dA, dB += ...; dinp (N, in) += the adapter's part of the input gradient */
void gpt2c_lora_backward(gpt2c_model *m, int site, int layer, float *dinp, const float *dout, const float *inp, int N);
void gpt2c_lora_zero_grad(gpt2c_lora *l);
double gpt2c_lora_grad_sumsq(const gpt2c_lora *l);
/* AdamW on every adapter (weight decay on A and B, as torch.optim.AdamW over PEFT's trainable parameters),
 * gradients pre-scaled by grad_scale (clipping); leaves the gradients zero. */
void gpt2c_lora_adamw(gpt2c_lora *l, const gpt2c_adamw_cfg *o, float lr, float grad_scale, int step);

/* ---- PEFT adapter directories (src/io/peft_adapter.c) ----
 * DIR/adapter_model.safetensors: base_model.model.transformer.h.{i}.<site>.lora_A.weight (r, in) and
 * .lora_B.weight (out, r), F32; DIR/adapter_config.json: peft_type LORA, task_type CAUSAL_LM, r, lora_alpha,
 * lora_dropout, target_modules, fan_in_fan_out true, bias none, base_model_name_or_path.  with_optimizer adds
 * DIR/gpt2c_optimizer.safetensors (AdamW moments of every adapter tensor, the step count).  Each file is
 * written atomically; meta goes into the adapter file's __metadata__. */
gpt2c_status gpt2c_peft_save(const gpt2c_model *m, const char *dir, const char *base_model, const gpt2c_kv *meta,
                             int nmeta, int with_optimizer);
/* Reads DIR/adapter_config.json and the adapter tensors, checks them against m (rank, shapes, targets, layer
 * count) and attaches them; with_optimizer also restores DIR/gpt2c_optimizer.safetensors when present.
 * base_model (may be NULL) gets base_model_name_or_path (a static buffer's copy). */
gpt2c_status gpt2c_peft_load(gpt2c_model *m, const char *dir, int with_optimizer, char *base_model, size_t nbase);
/* Is DIR a PEFT adapter directory (holds adapter_config.json)? */
int gpt2c_peft_is_adapter_dir(const char *dir);

#endif
