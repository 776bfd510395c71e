/* GPT-2 backward: the forward's ops in reverse.  Parameter gradients
 * accumulate (+=) into m->grads, but for the matmul weights' on fresh
 * gradients, which their weight-gradient GEMM overwrites (model_internal.h's
 * grads_stale); activation gradients reuse a few buffers. */
#include "gpt2c/lora.h"
#include "gpt2c/model.h"
#include "gpt2c/precision.h"
#include "kernels/kernels.h"
#include "model/acts.h"
#include "model/costs.h"
#include "model/model_internal.h"
#include "train/qlora.h"

#define OP(op, layer, cost, call) GPT2C_PROF_OP(m->prof, op, layer, (cost).flops, (cost).bytes, call)
/* one layer's parameter, its gradient, and a weight's typed view */
#define P(id, l) gpt2c_param_slice(m, m->params_mem, GPT2C_P_##id, l)
#define G(id, l) (m->trainable[GPT2C_P_##id] ? gpt2c_param_slice(m, m->grads_mem, GPT2C_P_##id, l) : NULL) /* NULL: frozen */
#define W(id, l) gpt2c_qlora_model_weight(m, GPT2C_P_##id, l) /* bf16 copy in bf16 precision; a QLoRA base's quantized view */
/* a matmul's backward on k, or on ref when k does not take the weight's format;
 * through a QLoRA base's quantized (frozen) weight only the data gradient;
 * dw overwritten on fresh gradients (dw_acc, below) */
#define MATMUL_BWD(dinp, dw, db, dout, inp, w, N, IC, OC)                                                              \
    (gpt2c_format_is_quantized((w).fmt)                                                                                \
         ? gpt2c_qlora_matmul_dinp(dinp, dout, &(w), N, IC, OC)                                                        \
         : GPT2C_KERNELS_FOR(k, matmul_backward, &(w))->matmul_backward(dinp, dw, db, dout, inp, &(w), N, IC, OC,      \
                                                                        dw_acc))
/* then the site's LoRA adapter, if any: dA, dB, and its part of dinp */
#define LORA(site, l, dinp, dout, inp, N)                                                                              \
    (m->lora ? gpt2c_lora_backward(m, GPT2C_LORA_##site, l, dinp, dout, inp, N) : (void)0)

void gpt2c_model_zero_grad_slab(gpt2c_model *m) {
    if (!m->grads_mem || m->grads_zero) return;
    gpt2c_threads_use(m->threads);
    OP(GPT2C_OP_ZERO_GRAD, -1, cost_zero((double)m->slab_floats), m->k->zero(m->grads_mem, m->slab_floats));
    m->grads_zero = 1;
    m->grads_stale = 0;
}

void gpt2c_model_zero_grad(gpt2c_model *m) {
    if (m->lora) gpt2c_lora_zero_grad(m->lora); /* small: not tracked */
    /* stale (the update's): the next backward overwrites them, an update
     * first zeroes them, and nothing else reads them */
    if (!m->grads_stale) gpt2c_model_zero_grad_slab(m);
}

gpt2c_status gpt2c_model_backward(gpt2c_model *m, float loss_scale) {
    if (!m->acts || !m->have_targets)
        return gpt2c_fail(GPT2C_ERR_ARG, "backward: needs a forward pass with targets first");
    if (!m->grads_mem) { /* none when everything is frozen (LoRA) */
        GPT2C_TRY(gpt2c_model_alloc_grads(m));
    }
    gpt2c_threads_use(m->threads);
    GPT2C_TRY(gpt2c_acts_plan_backward(m->acts, m));
    /* the first backward on fresh gradients writes the matmul weights' (each
     * tensor's first writer is its weight-gradient GEMM), later ones add */
    const int dw_acc = !gpt2c_grads_fresh(m);
    m->grads_zero = m->grads_stale = 0;
    const gpt2c_config *c = &m->cfg;
    gpt2c_acts *a = m->acts;
    const gpt2c_kernels *k = m->k;
    /* the last forward's shape: backward runs on what forward saw */
    const int B = m->B, T = m->T, N = B * T, C = c->channels, L = c->num_layers, NH = c->num_heads;
    const int V = c->vocab_size, Vp = c->padded_vocab_size;
    const size_t sN = a->N, S = a->state_floats;

    /* loss = loss_scale * mean over N positions */
    const gpt2c_tensor wte = W(WTE, 0);
    if (wte.fmt == GPT2C_FMT_BF16 && k->softmax_xent_backward_bf16 && k->matmul_backward_dout_bf16) {
        /* bf16 precision: the LM head's GEMMs round dlogits to bf16 as they
         * pack them, so they are stored rounded (in place, rows 2*Vp words
         * apart): half the bytes, no conversion in either GEMM; same numbers */
        OP(GPT2C_OP_SOFTMAX_XENT, -1, cost_xent_bwd_bf16(N, V, Vp),
           k->softmax_xent_backward_bf16(a->logits, a->targets, loss_scale / (float)N, N, V, Vp));
        OP(GPT2C_OP_MATMUL_LMHEAD, -1, cost_matmul_bwd_dout_bf16(N, C, Vp, wte.fmt, dw_acc),
           k->matmul_backward_dout_bf16(a->dbuf, G(WTE, 0), (const uint16_t *)a->logits, 2L * Vp, a->lnf, &wte, N, C,
                                        Vp, dw_acc));
    } else {
        OP(GPT2C_OP_SOFTMAX_XENT, -1, cost_xent_bwd(N, V, Vp),
           k->softmax_xent_backward(a->logits, a->targets, loss_scale / (float)N, N, V, Vp));
        OP(GPT2C_OP_MATMUL_LMHEAD, -1, cost_matmul_bwd(N, C, Vp, wte.fmt, dw_acc),
           MATMUL_BWD(a->dbuf, G(WTE, 0), NULL, a->logits, a->lnf, wte, N, C, Vp));
    }
    if (m->on_grads_final) m->on_grads_final(m->grads_final_ctx, L + 1); /* the LM head's part of wte's */
    /* final layernorm: its input gradient starts the residual stream's (cleared first) */
    OP(GPT2C_OP_LAYERNORM, -1, cost_layernorm_bwd(N, C),
       (k->zero(a->dres, (size_t)N * C),
        k->layernorm_backward(a->dres, G(LNFW, 0), G(LNFB, 0), a->dbuf, a->residual3 + (L - 1) * sN * C, P(LNFW, 0),
                              a->lnf_mean, a->lnf_rstd, N, C)));
    if (m->on_grads_final) m->on_grads_final(m->grads_final_ctx, L);

    for (int l = L - 1; l >= 0; l--) {
        const float *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * sN * C;
        const float *ln1 = a->ln1 + l * a->ln1_ls, *qkv = a->qkv + l * sN * 3 * C, *atty = a->atty + l * sN * C;
        const float *state = a->att_state + l * S, *res2 = a->residual2 + l * sN * C, *ln2 = a->ln2 + l * a->ln2_ls;
        const float *fch = a->fch + l * sN * 4 * C, *fch_gelu = a->fch_gelu + l * a->fchg_ls;
        const gpt2c_tensor qkvw = W(QKVW, l), attprojw = W(ATTPROJW, l), fcw = W(FCW, l), fcprojw = W(FCPROJW, l);

        /* residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))): dres flows to both */
        OP(GPT2C_OP_MATMUL_FCPROJ, l, cost_matmul_bwd(N, 4 * C, C, fcprojw.fmt, dw_acc),
           (MATMUL_BWD(a->d4c, G(FCPROJW, l), G(FCPROJB, l), a->dres, fch_gelu, fcprojw, N, 4 * C, C),
            LORA(MLP_C_PROJ, l, a->d4c, a->dres, fch_gelu, N)));
        OP(GPT2C_OP_GELU, l, cost_gelu_bwd((double)N * 4 * C), k->gelu_backward(a->d4c, fch, a->d4c, (size_t)N * 4 * C));
        OP(GPT2C_OP_MATMUL_FC, l, cost_matmul_bwd(N, C, 4 * C, fcw.fmt, dw_acc),
           (MATMUL_BWD(a->dbuf, G(FCW, l), G(FCB, l), a->d4c, ln2, fcw, N, C, 4 * C),
            LORA(C_FC, l, a->dbuf, a->d4c, ln2, N)));
        OP(GPT2C_OP_LAYERNORM, l, cost_layernorm_bwd(N, C),
           k->layernorm_backward(a->dres, G(LN2W, l), G(LN2B, l), a->dbuf, res2, P(LN2W, l), a->ln2_mean + l * sN,
                                 a->ln2_rstd + l * sN, N, C));
        /* residual2 = residual + attproj(attention(qkv(ln1(residual)))) */
        OP(GPT2C_OP_MATMUL_ATTPROJ, l, cost_matmul_bwd(N, C, C, attprojw.fmt, dw_acc),
           (MATMUL_BWD(a->dbuf, G(ATTPROJW, l), G(ATTPROJB, l), a->dres, atty, attprojw, N, C, C),
            LORA(ATTN_C_PROJ, l, a->dbuf, a->dres, atty, N)));
        OP(GPT2C_OP_ATTENTION, l, cost_attention_bwd(B, T, C, NH, S),
           (gpt2c_model_attention_bf16(m) ? k->attention_backward_bf16 : k->attention_backward)(
               a->dqkv, a->att_scratch, a->dbuf, qkv, atty, state, B, T, C, NH));
        OP(GPT2C_OP_MATMUL_QKV, l, cost_matmul_bwd(N, C, 3 * C, qkvw.fmt, dw_acc),
           (MATMUL_BWD(a->dbuf, G(QKVW, l), G(QKVB, l), a->dqkv, ln1, qkvw, N, C, 3 * C),
            LORA(C_ATTN, l, a->dbuf, a->dqkv, ln1, N)));
        OP(GPT2C_OP_LAYERNORM, l, cost_layernorm_bwd(N, C),
           k->layernorm_backward(a->dres, G(LN1W, l), G(LN1B, l), a->dbuf, residual, P(LN1W, l), a->ln1_mean + l * sN,
                                 a->ln1_rstd + l * sN, N, C));
        if (m->on_grads_final) m->on_grads_final(m->grads_final_ctx, l);
    }
    OP(GPT2C_OP_ENCODER, -1, cost_encoder_bwd(N, C),
       k->encoder_backward(m->wte_rows_apart ? NULL : G(WTE, 0), G(WPE, 0), a->dres, a->tokens, B, T, C));
    if (m->on_grads_final) m->on_grads_final(m->grads_final_ctx, -1);
    m->have_targets = 0; /* the logits buffer now holds gradients */
    return k->device_check ? k->device_check() : GPT2C_OK;
}
