/* One GPT-2 transformer block as the ordered list of its stages: the model
 * description that training forward (src/model/gpt2_forward.c) and
 * inference (src/infer/infer_forward.c) both walk, so the op order is written
 * once.  Each executor maps the buffer roles below to its own memory
 * (training: per-layer activation slabs kept for backward; inference: a few
 * rows of scratch reused by every layer) and runs each stage with its own
 * form of the op (whole-batch ops, or chunked range ops inside one parallel
 * region).  Around the blocks: the encoder before (token + position
 * embedding, then layer 0's ln1) and the LM head after (on lnf).
 *
 * Shapes: widths are in units of C (channels); rows are the executor's. */
#ifndef GPT2C_MODEL_GPT2_BLOCK_H
#define GPT2C_MODEL_GPT2_BLOCK_H

#include "gpt2c/profile.h"

typedef enum {
    GPT2C_STAGE_MATMUL,             /* out = in @ w^T + b: (rows, ic*C) -> (rows, oc*C) */
    GPT2C_STAGE_ATTENTION,          /* causal multi-head attention: qkv (rows, 3C) -> (rows, C) */
    GPT2C_STAGE_GELU,               /* out = gelu(in), elementwise (rows, ic*C); an executor may fuse it into the
                                     * matmul before it (that matmul's out is then this stage's out) */
    GPT2C_STAGE_RESIDUAL_LAYERNORM, /* res_out = res_in + in; out = layernorm(res_out) with (w, b) */
} gpt2c_stage_kind;

/* Buffer roles of one block.  X: the residual stream into the block; LN1:
 * its layernorm (made by the stage before the block); X2: the stream after
 * attention; Y: out of the block; LN_NEXT: Y's layernorm with the next
 * block's ln1 weights (the final lnf after the last block). */
typedef enum {
    GPT2C_BUF_X, GPT2C_BUF_LN1, GPT2C_BUF_QKV, GPT2C_BUF_ATTY, GPT2C_BUF_PROJ, GPT2C_BUF_X2, GPT2C_BUF_LN2,
    GPT2C_BUF_FCH, GPT2C_BUF_FCH_GELU, GPT2C_BUF_Y, GPT2C_BUF_LN_NEXT, GPT2C_NUM_BUFS
} gpt2c_block_buf;

/* a layernorm weight id meaning: the next block's ln1 (lnf after the last) */
#define GPT2C_P_NEXT_LN (-1)

typedef struct {
    gpt2c_stage_kind kind;
    gpt2c_op op;        /* the profiler's op kind */
    int w, b;           /* parameter ids (GPT2C_P_*): matmul weight and bias, layernorm weight and bias */
    int ic, oc;         /* matmul: input and output widths / C; gelu: width / C */
    gpt2c_block_buf in, out;
    gpt2c_block_buf res_in, res_out; /* residual_layernorm only */
} gpt2c_block_stage;

enum { GPT2C_BLOCK_NSTAGES = 8 };
extern const gpt2c_block_stage gpt2c_block_stages[GPT2C_BLOCK_NSTAGES];

/* The layernorm weight and bias ids a residual_layernorm stage of block l
 * uses, and the layer they are taken from (the next block's ln1, or lnf). */
void gpt2c_block_ln_params(const gpt2c_block_stage *st, int l, int L, int *w, int *b, int *layer);

#endif
