/* The activation slab: everything forward keeps for backward, planned once
 * for (B, T).  Per-layer tensors are strided by the planned N = B*T, so a
 * forward on a smaller batch reuses the same slab.  Backward's buffers are a
 * second slab, allocated at the first backward (inference never pays). */
#ifndef GPT2C_ACTS_H
#define GPT2C_ACTS_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/model.h"
#include "model/model_internal.h"

struct gpt2c_acts {
    const struct gpt2c_kernels *mem_k; /* the backend whose memory holds the slabs */
    void *mem;
    size_t bytes; /* of the slab; pieces start 64-byte aligned */
    size_t N;           /* planned B*T: the stride of per-layer tensors */
    size_t state_floats; /* per-layer attention state */
    /* per-layer strides (floats) of ln1, ln2 and fch_gelu: N*C (N*4C), or 0
     * when no backward reads them (a frozen weight's input, as under LoRA):
     * then every layer writes the same one-layer buffer */
    size_t ln1_ls, ln2_ls, fchg_ls;
    float *encoded;                    /* (N,C) */
    float *ln1, *ln1_mean, *ln1_rstd;  /* (L,N,C), (L,N), (L,N) */
    float *qkv;                        /* (L,N,3C) */
    float *atty;                       /* (L,N,C) attention output */
    float *att_state;                  /* (L,state_floats) */
    float *residual2;                  /* (L,N,C) after attention */
    float *ln2, *ln2_mean, *ln2_rstd;  /* (L,N,C), (L,N), (L,N) */
    float *fch, *fch_gelu;             /* (L,N,4C) */
    float *residual3;                  /* (L,N,C) after the MLP */
    float *lnf, *lnf_mean, *lnf_rstd;  /* (N,C), (N), (N) */
    float *logits;                     /* (N,Vp): logits, then probs, then dlogits in place */
    float *losses;                     /* (N) */
    float *proj;                       /* (N,C) scratch: attproj / fcproj outputs */
    int32_t *tokens, *targets;         /* (N) copies of the batch, in backend memory */
    /* host views: the same pointers on host backends; on a device backend,
     * host mirrors filled by forward (logits_host allocated on first need) */
    float *losses_host, *logits_host;

    /* backward slab */
    void *bmem;
    size_t bbytes;
    float *dres;        /* (N,C) gradient of the residual stream */
    float *dbuf;        /* (N,C) gradient of a layernorm output / attention output */
    float *dqkv;        /* (N,3C) */
    float *d4c;         /* (N,4C) gradient of fch_gelu, then of fch (in place) */
    float *att_scratch; /* backend's attention backward scratch */
};

gpt2c_status gpt2c_acts_plan(gpt2c_acts **out, const gpt2c_model *m, int B, int T);
gpt2c_status gpt2c_acts_plan_backward(gpt2c_acts *a, const gpt2c_model *m);
void gpt2c_acts_free(gpt2c_acts *a);
/* Frees m's activations (the next forward plans them again): what they keep
 * depends on which tensors train (gpt2c_model_set_trainable, LoRA). */
void gpt2c_acts_drop(gpt2c_model *m);

#endif
