/* GPT-2 forward: the encoder, the block's stages (gpt2_block.h) per layer, the
 * LM head; each op one call into the kernel table, in a profiler scope.  Shapes: N = B*T rows, C channels, L layers, Vp padded vocab. */
#include <string.h>

#include "gpt2c/lora.h"
#include "gpt2c/model.h"
#include "gpt2c/precision.h"
#include "kernels/kernels.h"
#include "model/acts.h"
#include "model/costs.h"
#include "model/gpt2_block.h"
#include "model/memspace.h"
#include "model/model_internal.h"
#include "train/qlora.h"

#define OP(op, layer, cost, call) GPT2C_PROF_OP(m->prof, op, layer, (cost).flops, (cost).bytes, call)
/* one layer's parameter (or the tensor, for non-layer ones), and a weight's typed view */
#define P(id, l) gpt2c_param_slice(m, m->params_mem, GPT2C_P_##id, l)
#define W(id, l) gpt2c_qlora_model_weight(m, GPT2C_P_##id, l) /* bf16 copy in bf16 precision; a QLoRA base's quantized view */
/* a matmul on k, or on ref when k does not take the weight's format; a QLoRA
 * base's quantized weight through the fused dequantizing kernel */
#define MATMUL(out, inp, w, bias, N, IC, OC)                                                                           \
    (gpt2c_format_is_quantized((w).fmt)                                                                                \
         ? gpt2c_qlora_matmul_forward(out, inp, &(w), bias, N, IC, OC)                                                 \
         : GPT2C_KERNELS_FOR(k, matmul_forward, &(w))->matmul_forward(out, inp, &(w), bias, N, IC, OC))
/* then the weight's LoRA adapter, if any: out += scale * dropout(inp) A^T B^T */
#define LORA(id, l, out, inp, N)                                                                                       \
    (m->lora && gpt2c_lora_site_of_param(id) >= 0 ? gpt2c_lora_forward(m, gpt2c_lora_site_of_param(id), l, out, inp, N) \
                                                  : (void)0)

gpt2c_status gpt2c_model_prepare(gpt2c_model *m, int B, int T) {
    if (B <= 0 || T <= 0)
        return gpt2c_fail(GPT2C_ERR_ARG, "batch size and sequence length must be positive (got B=%d, T=%d)", B, T);
    if (T > m->cfg.max_seq_len)
        return gpt2c_fail(GPT2C_ERR_ARG, "sequence length %d is longer than the model's context of %d", T,
                          m->cfg.max_seq_len);
    if (m->acts && m->B == B && m->T == T) return GPT2C_OK;
    gpt2c_acts_free(m->acts);
    m->acts = NULL;
    m->B = B;
    m->T = T;
    return gpt2c_acts_plan(&m->acts, m, B, T);
}

static gpt2c_status check_ids(const int32_t *ids, size_t n, int V, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return gpt2c_fail(GPT2C_ERR_RANGE, "%s: token id %d at position %zu is outside the vocabulary [0, %d)", what,
                              ids[i], i, V);
    return GPT2C_OK;
}

gpt2c_status gpt2c_model_forward(gpt2c_model *m, const int32_t *tokens, const int32_t *targets, int B, int T,
                                 float *loss) {
    return gpt2c_model_forward_loss(m, tokens, targets, B, T, NULL, loss);
}

gpt2c_status gpt2c_model_forward_loss(gpt2c_model *m, const int32_t *tokens, const int32_t *targets, int B, int T,
                                      const gpt2c_loss *custom, float *loss) {
    const gpt2c_config *c = &m->cfg;
    if (m->fp32_released)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "forward: the fp32 weights were given back for bf16 inference");
    if (m->bf16_mem && m->bf16_stale) gpt2c_model_refresh_bf16(m, 1); /* master weights written since */
    gpt2c_threads_use(m->threads);
    if (!m->acts || B > m->B || T > m->T) GPT2C_TRY(gpt2c_model_prepare(m, B, T));
    const int N = B * T, C = c->channels, L = c->num_layers, NH = c->num_heads;
    const int V = c->vocab_size, Vp = c->padded_vocab_size;
    GPT2C_TRY(check_ids(tokens, (size_t)N, V, "input"));
    if (targets) GPT2C_TRY(check_ids(targets, (size_t)N, V, "targets"));
    if (custom && !targets) return gpt2c_fail(GPT2C_ERR_ARG, "forward: a custom loss needs the targets");

    gpt2c_acts *a = m->acts;
    const gpt2c_kernels *k = m->k;
    const size_t sN = a->N, S = a->state_floats; /* planned strides */
    const int att_bf16 = gpt2c_model_attention_bf16(m);
    /* the ops read the batch from the backend's memory (one small upload on a device) */
    GPT2C_TRY(gpt2c_mem_upload(k, a->tokens, tokens, sizeof(int32_t) * N));
    if (targets) GPT2C_TRY(gpt2c_mem_upload(k, a->targets, targets, sizeof(int32_t) * N));

    const gpt2c_tensor *qwte = gpt2c_qlora_wte(m); /* a QLoRA base's quantized embedding: rows dequantized */
    OP(GPT2C_OP_ENCODER, -1, cost_encoder_fwd(N, C),
       qwte ? gpt2c_qlora_encoder_forward(a->encoded, a->tokens, qwte, P(WPE, 0), B, T, C)
            : k->encoder_forward(a->encoded, a->tokens, P(WTE, 0), P(WPE, 0), B, T, C));
    OP(GPT2C_OP_LAYERNORM, 0, cost_layernorm_fwd(N, C),
       k->layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, a->encoded, P(LN1W, 0), P(LN1B, 0), N, C));

    for (int l = 0; l < L; l++) { /* the block's stages (gpt2_block.h) on this layer's activations */
        float *buf[GPT2C_NUM_BUFS], *mean[GPT2C_NUM_BUFS] = {0}, *rstd[GPT2C_NUM_BUFS] = {0};
        const int last = l == L - 1; /* Y's layernorm: the next block's ln1, or the final one */
        buf[GPT2C_BUF_X] = l == 0 ? a->encoded : a->residual3 + (l - 1) * sN * C;
        buf[GPT2C_BUF_LN1] = a->ln1 + l * a->ln1_ls, mean[GPT2C_BUF_LN1] = a->ln1_mean + l * sN;
        rstd[GPT2C_BUF_LN1] = a->ln1_rstd + l * sN;
        buf[GPT2C_BUF_QKV] = a->qkv + l * sN * 3 * C, buf[GPT2C_BUF_ATTY] = a->atty + l * sN * C;
        buf[GPT2C_BUF_PROJ] = a->proj, buf[GPT2C_BUF_X2] = a->residual2 + l * sN * C;
        buf[GPT2C_BUF_LN2] = a->ln2 + l * a->ln2_ls, mean[GPT2C_BUF_LN2] = a->ln2_mean + l * sN;
        rstd[GPT2C_BUF_LN2] = a->ln2_rstd + l * sN;
        buf[GPT2C_BUF_FCH] = a->fch + l * sN * 4 * C, buf[GPT2C_BUF_FCH_GELU] = a->fch_gelu + l * a->fchg_ls;
        buf[GPT2C_BUF_Y] = a->residual3 + l * sN * C;
        buf[GPT2C_BUF_LN_NEXT] = last ? a->lnf : a->ln1 + (l + 1) * a->ln1_ls;
        mean[GPT2C_BUF_LN_NEXT] = last ? a->lnf_mean : a->ln1_mean + (l + 1) * sN;
        rstd[GPT2C_BUF_LN_NEXT] = last ? a->lnf_rstd : a->ln1_rstd + (l + 1) * sN;
        float *state = a->att_state + l * S;

        for (int i = 0; i < GPT2C_BLOCK_NSTAGES; i++) {
            const gpt2c_block_stage *bs = &gpt2c_block_stages[i];
            const int IC = bs->ic * C, OC = bs->oc * C;
            float *in = buf[bs->in], *out = buf[bs->out];
            switch (bs->kind) {
            case GPT2C_STAGE_MATMUL: {
                const gpt2c_tensor w = gpt2c_qlora_model_weight(m, bs->w, l); /* the bf16 copy in bf16 */
                OP(bs->op, l, cost_matmul_fwd(N, IC, OC, w.fmt),
                   (MATMUL(out, in, w, gpt2c_param_slice(m, m->params_mem, bs->b, l), N, IC, OC),
                    LORA(bs->w, l, out, in, N)));
                break;
            }
            case GPT2C_STAGE_ATTENTION: /* bf16 precision: its products on bf16 operands where the backend has them */
                OP(bs->op, l, cost_attention_fwd(B, T, C, NH, S),
                   (att_bf16 ? k->attention_forward_bf16 : k->attention_forward)(out, state, in, B, T, C, NH));
                break;
            case GPT2C_STAGE_GELU:
                OP(bs->op, l, cost_gelu_fwd((double)N * IC), k->gelu_forward(out, in, (size_t)N * IC));
                break;
            case GPT2C_STAGE_RESIDUAL_LAYERNORM: {
                int w, b, wl;
                gpt2c_block_ln_params(bs, l, L, &w, &b, &wl);
                OP(bs->op, l, cost_residual_layernorm_fwd(N, C),
                   k->residual_layernorm_forward(buf[bs->res_out], out, mean[bs->out], rstd[bs->out], buf[bs->res_in], in,
                                                 gpt2c_param_slice(m, m->params_mem, w, wl),
                                                 gpt2c_param_slice(m, m->params_mem, b, wl), N, C));
                break;
            }
            }
        }
    }
    const gpt2c_tensor wte = W(WTE, 0);
    OP(GPT2C_OP_MATMUL_LMHEAD, -1, cost_matmul_fwd(N, C, Vp, wte.fmt), MATMUL(a->logits, a->lnf, wte, NULL, N, C, Vp));

    m->have_targets = 0;
    if (!targets) {
        if (gpt2c_mem_is_device(k)) { /* logits back to the host, for samplers */
            if (!a->logits_host) a->logits_host = gpt2c_alloc(a->N * Vp * sizeof(float), "logits (host mirror)");
            if (!a->logits_host) return GPT2C_ERR_NOMEM;
            GPT2C_TRY(gpt2c_mem_download(k, a->logits_host, a->logits, (size_t)N * Vp * sizeof(float)));
            GPT2C_TRY(k->device_check());
        }
        return GPT2C_OK;
    }
    if (custom) { /* host memory only: the loss reads and rewrites the logits in place */
        if (gpt2c_mem_is_device(k))
            return gpt2c_fail(GPT2C_ERR_ARG, "a custom loss (distillation) runs on a host backend (cpu, blas, ref), "
                                             "not on a device backend");
        gpt2c_status st = GPT2C_OK; /* profiled as the loss op (a distillation's teacher forward counts in it) */
        OP(GPT2C_OP_SOFTMAX_XENT, -1, cost_xent_fwd(N, V, Vp),
           st = custom->forward(custom->ctx, a->losses, a->logits, tokens, targets, B, T, V, Vp));
        GPT2C_TRY(st);
    } else {
        OP(GPT2C_OP_SOFTMAX_XENT, -1, cost_xent_fwd(N, V, Vp),
           k->softmax_xent_forward(a->losses, a->logits, a->targets, N, V, Vp));
    }
    if (gpt2c_mem_is_device(k)) { /* N floats back: the one sync of a forward */
        GPT2C_TRY(gpt2c_mem_download(k, a->losses_host, a->losses, sizeof(float) * N));
        GPT2C_TRY(k->device_check());
    }
    m->have_targets = 1;
    double sum = 0; /* fixed order: the mean does not depend on threads */
    for (int i = 0; i < N; i++) sum += a->losses_host[i];
    m->mean_loss = (float)(sum / N);
    if (loss) *loss = m->mean_loss;
    return GPT2C_OK;
}

const float *gpt2c_model_logits(const gpt2c_model *m) { return m->acts ? m->acts->logits_host : NULL; }
const float *gpt2c_model_losses(const gpt2c_model *m) { return m->acts ? m->acts->losses_host : NULL; }
