/* GPT-2 backward: the forward's ops in reverse.  Parameter gradients
 * accumulate (+=) into m->grads; activation gradients reuse a few buffers. */
#include "gpt2c/model.h"
#include "kernels/kernels.h"
#include "model/acts.h"
#include "model/costs.h"

#define OP(op, layer, cost, call) GPT2C_PROF_OP(m->prof, op, layer, (cost).flops, (cost).bytes, call)

void gpt2c_model_zero_grad(gpt2c_model *m) {
    if (!m->grads_mem || m->grads_zero) return;
    OP(GPT2C_OP_ZERO_GRAD, -1, cost_zero((double)m->slab_floats), m->k->zero(m->grads_mem, m->slab_floats));
    m->grads_zero = 1;
}

gpt2c_status gpt2c_model_backward(gpt2c_model *m, float loss_scale) {
    if (!m->acts || !m->have_targets)
        return gpt2c_fail(GPT2C_ERR_ARG, "backward: needs a forward pass with targets first");
    if (!m->grads_mem) {
        GPT2C_TRY(gpt2c_model_alloc_grads(m));
    }
    GPT2C_TRY(gpt2c_acts_plan_backward(m->acts, m));
    m->grads_zero = 0;
    const gpt2c_config *c = &m->cfg;
    gpt2c_acts *a = m->acts;
    const gpt2c_kernels *k = m->k;
    float *const *p = m->params.t;
    float *const *g = m->grads.t;
    /* the last forward's shape: backward runs on what forward saw */
    const int B = m->B, T = m->T, N = B * T, C = c->channels, L = c->num_layers, NH = c->num_heads;
    const int V = c->vocab_size, Vp = c->padded_vocab_size;
    const size_t sN = a->N, S = a->state_floats;

    /* loss = loss_scale * mean over N positions */
    OP(GPT2C_OP_SOFTMAX_XENT, -1, cost_xent_bwd(N, V, Vp),
       k->softmax_xent_backward(a->logits, a->targets, loss_scale / (float)N, N, V, Vp));
    OP(GPT2C_OP_MATMUL_LMHEAD, -1, cost_matmul_bwd(N, C, Vp),
       k->matmul_backward(a->dbuf, g[GPT2C_P_WTE], NULL, a->logits, a->lnf, p[GPT2C_P_WTE], N, C, Vp));
    /* final layernorm: its input gradient starts the residual stream's (cleared first) */
    OP(GPT2C_OP_LAYERNORM, -1, cost_layernorm_bwd(N, C),
       (k->zero(a->dres, (size_t)N * C),
        k->layernorm_backward(a->dres, g[GPT2C_P_LNFW], g[GPT2C_P_LNFB], a->dbuf, a->residual3 + (L - 1) * sN * C,
                              p[GPT2C_P_LNFW], a->lnf_mean, a->lnf_rstd, N, C)));
    if (m->on_grads_final) m->on_grads_final(m->grads_final_ctx, L);

    for (int l = L - 1; l >= 0; l--) {
        const float *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * sN * C;
        const float *ln1 = a->ln1 + l * sN * C, *qkv = a->qkv + l * sN * 3 * C, *atty = a->atty + l * sN * C;
        const float *state = a->att_state + l * S, *res2 = a->residual2 + l * sN * C, *ln2 = a->ln2 + l * sN * C;
        const float *fch = a->fch + l * sN * 4 * C, *fch_gelu = a->fch_gelu + l * sN * 4 * C;

        /* residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))): dres flows to both */
        OP(GPT2C_OP_MATMUL_FCPROJ, l, cost_matmul_bwd(N, 4 * C, C),
           k->matmul_backward(a->d4c, g[GPT2C_P_FCPROJW] + (size_t)l * 4 * C * C, g[GPT2C_P_FCPROJB] + l * C, a->dres,
                              fch_gelu, p[GPT2C_P_FCPROJW] + (size_t)l * 4 * C * C, N, 4 * C, C));
        OP(GPT2C_OP_GELU, l, cost_gelu_bwd((double)N * 4 * C), k->gelu_backward(a->d4c, fch, a->d4c, (size_t)N * 4 * C));
        OP(GPT2C_OP_MATMUL_FC, l, cost_matmul_bwd(N, C, 4 * C),
           k->matmul_backward(a->dbuf, g[GPT2C_P_FCW] + (size_t)l * 4 * C * C, g[GPT2C_P_FCB] + l * 4 * C, a->d4c, ln2,
                              p[GPT2C_P_FCW] + (size_t)l * 4 * C * C, N, C, 4 * C));
        OP(GPT2C_OP_LAYERNORM, l, cost_layernorm_bwd(N, C),
           k->layernorm_backward(a->dres, g[GPT2C_P_LN2W] + l * C, g[GPT2C_P_LN2B] + l * C, a->dbuf, res2,
                                 p[GPT2C_P_LN2W] + l * C, a->ln2_mean + l * sN, a->ln2_rstd + l * sN, N, C));
        /* residual2 = residual + attproj(attention(qkv(ln1(residual)))) */
        OP(GPT2C_OP_MATMUL_ATTPROJ, l, cost_matmul_bwd(N, C, C),
           k->matmul_backward(a->dbuf, g[GPT2C_P_ATTPROJW] + (size_t)l * C * C, g[GPT2C_P_ATTPROJB] + l * C, a->dres,
                              atty, p[GPT2C_P_ATTPROJW] + (size_t)l * C * C, N, C, C));
        OP(GPT2C_OP_ATTENTION, l, cost_attention_bwd(B, T, C, NH, S),
           k->attention_backward(a->dqkv, a->att_scratch, a->dbuf, qkv, atty, state, B, T, C, NH));
        OP(GPT2C_OP_MATMUL_QKV, l, cost_matmul_bwd(N, C, 3 * C),
           k->matmul_backward(a->dbuf, g[GPT2C_P_QKVW] + (size_t)l * 3 * C * C, g[GPT2C_P_QKVB] + l * 3 * C, a->dqkv,
                              ln1, p[GPT2C_P_QKVW] + (size_t)l * 3 * C * C, N, C, 3 * C));
        OP(GPT2C_OP_LAYERNORM, l, cost_layernorm_bwd(N, C),
           k->layernorm_backward(a->dres, g[GPT2C_P_LN1W] + l * C, g[GPT2C_P_LN1B] + l * C, a->dbuf, residual,
                                 p[GPT2C_P_LN1W] + l * C, a->ln1_mean + l * sN, a->ln1_rstd + l * sN, N, C));
        if (m->on_grads_final) m->on_grads_final(m->grads_final_ctx, l);
    }
    OP(GPT2C_OP_ENCODER, -1, cost_encoder_bwd(N, C),
       k->encoder_backward(g[GPT2C_P_WTE], g[GPT2C_P_WPE], a->dres, a->tokens, B, T, C));
    if (m->on_grads_final) m->on_grads_final(m->grads_final_ctx, -1);
    m->have_targets = 0; /* the logits buffer now holds gradients */
    return k->device_check ? k->device_check() : GPT2C_OK;
}
