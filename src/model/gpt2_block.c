/* The stages of one GPT-2 block (gpt2_block.h): pre-norm attention, then the
 * MLP, each closed by a residual add fused with the next layernorm. */
#include "model/gpt2_block.h"

#include "gpt2c/model.h"

#define MM(op, w, b, ic, oc, in, out) {GPT2C_STAGE_MATMUL, GPT2C_OP_##op, GPT2C_P_##w, GPT2C_P_##b, ic, oc, GPT2C_BUF_##in, GPT2C_BUF_##out, 0, 0}
#define RESLN(w, b, in, res_in, res_out, out) \
    {GPT2C_STAGE_RESIDUAL_LAYERNORM, GPT2C_OP_RESIDUAL_LAYERNORM, w, b, 1, 1, GPT2C_BUF_##in, GPT2C_BUF_##out, GPT2C_BUF_##res_in, GPT2C_BUF_##res_out}

const gpt2c_block_stage gpt2c_block_stages[GPT2C_BLOCK_NSTAGES] = {
    MM(MATMUL_QKV, QKVW, QKVB, 1, 3, LN1, QKV),
    {GPT2C_STAGE_ATTENTION, GPT2C_OP_ATTENTION, -1, -1, 3, 1, GPT2C_BUF_QKV, GPT2C_BUF_ATTY, 0, 0},
    MM(MATMUL_ATTPROJ, ATTPROJW, ATTPROJB, 1, 1, ATTY, PROJ),
    RESLN(GPT2C_P_LN2W, GPT2C_P_LN2B, PROJ, X, X2, LN2),
    MM(MATMUL_FC, FCW, FCB, 1, 4, LN2, FCH),
    {GPT2C_STAGE_GELU, GPT2C_OP_GELU, -1, -1, 4, 4, GPT2C_BUF_FCH, GPT2C_BUF_FCH_GELU, 0, 0},
    MM(MATMUL_FCPROJ, FCPROJW, FCPROJB, 4, 1, FCH_GELU, PROJ),
    RESLN(GPT2C_P_NEXT_LN, GPT2C_P_NEXT_LN, PROJ, X2, Y, LN_NEXT),
};

void gpt2c_block_ln_params(const gpt2c_block_stage *st, int l, int L, int *w, int *b, int *layer) {
    if (st->w != GPT2C_P_NEXT_LN) {
        *w = st->w, *b = st->b, *layer = l;
    } else if (l + 1 < L) {
        *w = GPT2C_P_LN1W, *b = GPT2C_P_LN1B, *layer = l + 1;
    } else {
        *w = GPT2C_P_LNFW, *b = GPT2C_P_LNFB, *layer = 0;
    }
}
