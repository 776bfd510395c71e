/* GPT-2 laid out on P x P regions of the mesh (src/wse/gpt2_map.c).
 *
 * In a region, PE (row r, column c) holds tile (r, c) of every weight W (OC x IC):
 * output block r, input block c.  The residual stream's channel block c lives
 * on the diagonal PE (c, c).  A linear layer: the diagonal broadcasts its block
 * down its column, every PE multiplies its tile, rows reduce into the diagonal
 * (which adds the bias).  Layernorm: the same column broadcast, then two row
 * allreduces (mean, then variance: the two-pass form of ref).  Attention: each
 * diagonal PE holds q, k, v and the KV cache of its channels; a head spread
 * over several PEs reduces its partial scores into its first PE (row transfer
 * + column chain), which takes the softmax and sends the probabilities back.
 * The embedding/head region holds wte as tiles (vocab block r, channel block c):
 * a token's row is gathered down each column to the diagonal, and the LM head
 * is the same tiled GEMM reducing into the east column, then an argmax up it. */
#ifndef GPT2C_WSE_GPT2_MAP_H
#define GPT2C_WSE_GPT2_MAP_H

#include "wse/wse_internal.h"

typedef struct {
    int x0, y0;
    int l0, nl; /* layers held */
    int emb;    /* holds wte, wpe, lnf: embedding and head */
    /* offsets in floats, identical on all PEs of a role */
    uint32_t o_xin, o_y, o_st;                 /* all PEs */
    uint32_t (*ow)[8];                         /* all PEs, per layer: qkvw projw fcw fcprojw ln1w ln1b ln2w ln2b */
    uint32_t o_wte, o_lnf[2];                  /* all PEs (emb) */
    uint32_t (*ob)[6];                         /* diagonal, per layer: qkvb projb fcb fcprojb kcache vcache */
    uint32_t o_res, o_qkv, o_att, o_sc, o_wpe; /* diagonal */
    uint32_t o_relay;                          /* relay PEs of the attention funnel */
} wse_region;

typedef struct {
    wse_mesh *m;
    const gpt2c_model *model;
    const gpt2c_wse_run_cfg *cfg;
    int P, C, Cb, NH, hs, L, V, Vp, Vb, ctx, Tq, Tl, nhl;
    int nreg;
    wse_region *reg;
    int *reg_of_layer; /* region index per layer */
    int emb_reg, head_reg;
    int phase; /* 0 prefill, 1 decode */
    int cur_reg; /* region whose diagonal holds the residual stream */
    float *logits;     /* seq x Vp (values) */
    int32_t *argmax;   /* last argmax per token of a chunk */
    double flops_total;
} wse_gpt2;

gpt2c_status gpt2c_wse_gpt2_layout(wse_gpt2 *g);
/* Tq tokens at positions pos.. through the model: fills g->logits rows pos.. (values)
 * and g->argmax[0..Tq) (values; pseudo tokens in none mode) */
gpt2c_status gpt2c_wse_gpt2_embed(wse_gpt2 *g, const int32_t *tok, int pos, int Tq);
gpt2c_status gpt2c_wse_gpt2_layer(wse_gpt2 *g, int l, int pos, int Tq);
gpt2c_status gpt2c_wse_gpt2_head(wse_gpt2 *g, int pos, int Tq, int want_logits);
void gpt2c_wse_gpt2_free(wse_gpt2 *g);

#endif
