/* Magnitude (L1) pruning of GPT-2's linear weights and the masks that keep
 * pruned weights at zero through further training.
 *
 * Targets: the four linear weights of every block (attn.c_attn, attn.c_proj,
 * mlp.c_fc, mlp.c_proj); never embeddings, biases or layernorms.
 *
 *   scope global:  the round(S * N) smallest |w| over all N target weights of
 *                  the model are zeroed (torch.nn.utils.prune.global_unstructured
 *                  with L1Unstructured);
 *   scope layer:   each weight matrix on its own (prune.l1_unstructured per module);
 *   pattern 2:4:   in every group of 4 consecutive weights along the input
 *                  dimension the 2 smallest |w| are zeroed (sparsity 0.5).
 * Ties (equal |w|) are pruned in slab order (lower index first); round() is
 * Python's (half to even), as PyTorch computes the count.
 *
 * Pruned weights are stored as exact zeros in an ordinary dense checkpoint:
 * the matmuls stay dense (no sparse kernel). */
#ifndef GPT2C_PRUNE_H
#define GPT2C_PRUNE_H

#include <stddef.h>

#include "gpt2c/model.h"

typedef enum { GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_LAYER } gpt2c_prune_scope;
typedef enum { GPT2C_PRUNE_UNSTRUCTURED, GPT2C_PRUNE_2_4 } gpt2c_prune_pattern;

/* Is tensor id (GPT2C_P_*) a prunable linear weight? */
int gpt2c_prune_is_target(int id);

/* Prunes m's target weights in place (host view, uploaded after).  sparsity in
 * [0, 1); with 2:4 it must be 0.5.  *zeros (may be NULL) gets the number of
 * target weights that are zero afterwards. */
gpt2c_status gpt2c_prune_model(gpt2c_model *m, double sparsity, gpt2c_prune_scope scope, gpt2c_prune_pattern pattern,
                               size_t *zeros);

/* Prunes m's LoRA adapters (gpt2c/lora.h) instead: the targets are every A
 * (r, in) and B (out, r) matrix; global: one threshold over all of them,
 * layer: each matrix on its own; 2:4 groups run along each matrix's input
 * dimension (in for A, r for B: the rank must be a multiple of 4).  *zeros
 * and *numel (may be NULL) get the zeros among the adapter weights after, and
 * their number. */
gpt2c_status gpt2c_prune_lora(gpt2c_model *m, double sparsity, gpt2c_prune_scope scope, gpt2c_prune_pattern pattern,
                              size_t *zeros, size_t *numel);

/* Zeros among the target weights of m: per tensor and layer (zeros of
 * gpt2c_param_slice(m, ..., id, layer)) or all of them (id -1). */
gpt2c_status gpt2c_prune_count_zeros(const gpt2c_model *m, int id, int layer, size_t *zeros, size_t *numel);

/* The set of target weights that are zero now: re-applied after every
 * optimizer step (train --keep-sparsity) they stay exactly zero. */
typedef struct gpt2c_sparsity_mask gpt2c_sparsity_mask;
/* Fails (GPT2C_ERR_ARG) when no target weight is zero: nothing to keep. */
gpt2c_status gpt2c_sparsity_mask_from_zeros(const gpt2c_model *m, gpt2c_sparsity_mask **out);
size_t gpt2c_sparsity_mask_count(const gpt2c_sparsity_mask *mk);
/* Sets the masked weights of m to zero (m must have the layout the mask was made from). */
gpt2c_status gpt2c_sparsity_mask_apply(gpt2c_model *m, const gpt2c_sparsity_mask *mk);
void gpt2c_sparsity_mask_free(gpt2c_sparsity_mask *mk);

#endif
