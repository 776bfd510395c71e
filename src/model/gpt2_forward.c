/* GPT-2 forward: a fixed sequence of ops through the kernel table, each in a
 * profiler scope.  Shapes: N = B*T rows, C channels, L layers, Vp padded vocab. */
#include <string.h>

#include "gpt2c/model.h"
#include "kernels/kernels.h"
#include "model/acts.h"
#include "model/costs.h"
#include "model/memspace.h"

#define OP(op, layer, cost, call) GPT2C_PROF_OP(m->prof, op, layer, (cost).flops, (cost).bytes, call)

gpt2c_status gpt2c_model_prepare(gpt2c_model *m, int B, int T) {
    if (B <= 0 || T <= 0) return gpt2c_fail(GPT2C_ERR_ARG, "--batch/--seq: must be positive (got B=%d, T=%d)", B, T);
    if (T > m->cfg.max_seq_len)
        return gpt2c_fail(GPT2C_ERR_ARG, "--seq: %d is longer than the model's context of %d", T, m->cfg.max_seq_len);
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
    const gpt2c_config *c = &m->cfg;
    if (!m->acts || B > m->B || T > m->T) GPT2C_TRY(gpt2c_model_prepare(m, B, T));
    const int N = B * T, C = c->channels, L = c->num_layers, NH = c->num_heads;
    const int V = c->vocab_size, Vp = c->padded_vocab_size;
    GPT2C_TRY(check_ids(tokens, (size_t)N, V, "input"));
    if (targets) GPT2C_TRY(check_ids(targets, (size_t)N, V, "targets"));

    gpt2c_acts *a = m->acts;
    const gpt2c_kernels *k = m->k;
    float *const *p = m->params.t;
    const size_t sN = a->N, S = a->state_floats; /* planned strides */
    /* the ops read the batch from the backend's memory (one small upload on a device) */
    GPT2C_TRY(gpt2c_mem_upload(k, a->tokens, tokens, sizeof(int32_t) * N));
    if (targets) GPT2C_TRY(gpt2c_mem_upload(k, a->targets, targets, sizeof(int32_t) * N));

    OP(GPT2C_OP_ENCODER, -1, cost_encoder_fwd(N, C),
       k->encoder_forward(a->encoded, a->tokens, p[GPT2C_P_WTE], p[GPT2C_P_WPE], B, T, C));
    OP(GPT2C_OP_LAYERNORM, 0, cost_layernorm_fwd(N, C),
       k->layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, a->encoded, p[GPT2C_P_LN1W], p[GPT2C_P_LN1B], N, C));

    for (int l = 0; l < L; l++) {
        const float *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * sN * C;
        float *ln1 = a->ln1 + l * sN * C, *qkv = a->qkv + l * sN * 3 * C, *atty = a->atty + l * sN * C;
        float *state = a->att_state + l * S, *res2 = a->residual2 + l * sN * C, *ln2 = a->ln2 + l * sN * C;
        float *fch = a->fch + l * sN * 4 * C, *fch_gelu = a->fch_gelu + l * sN * 4 * C;
        float *res3 = a->residual3 + l * sN * C;
        /* the layernorm after this block: next block's ln1, or the final one */
        int last = l == L - 1;
        float *next_ln = last ? a->lnf : a->ln1 + (l + 1) * sN * C;
        float *next_mean = last ? a->lnf_mean : a->ln1_mean + (l + 1) * sN;
        float *next_rstd = last ? a->lnf_rstd : a->ln1_rstd + (l + 1) * sN;
        const float *next_w = last ? p[GPT2C_P_LNFW] : p[GPT2C_P_LN1W] + (l + 1) * C;
        const float *next_b = last ? p[GPT2C_P_LNFB] : p[GPT2C_P_LN1B] + (l + 1) * C;

        OP(GPT2C_OP_MATMUL_QKV, l, cost_matmul_fwd(N, C, 3 * C),
           k->matmul_forward(qkv, ln1, p[GPT2C_P_QKVW] + (size_t)l * 3 * C * C, p[GPT2C_P_QKVB] + l * 3 * C, N, C, 3 * C));
        OP(GPT2C_OP_ATTENTION, l, cost_attention_fwd(B, T, C, NH, S), k->attention_forward(atty, state, qkv, B, T, C, NH));
        OP(GPT2C_OP_MATMUL_ATTPROJ, l, cost_matmul_fwd(N, C, C),
           k->matmul_forward(a->proj, atty, p[GPT2C_P_ATTPROJW] + (size_t)l * C * C, p[GPT2C_P_ATTPROJB] + l * C, N, C, C));
        OP(GPT2C_OP_RESIDUAL_LAYERNORM, l, cost_residual_layernorm_fwd(N, C),
           k->residual_layernorm_forward(res2, ln2, a->ln2_mean + l * sN, a->ln2_rstd + l * sN, residual, a->proj,
                                         p[GPT2C_P_LN2W] + l * C, p[GPT2C_P_LN2B] + l * C, N, C));
        OP(GPT2C_OP_MATMUL_FC, l, cost_matmul_fwd(N, C, 4 * C),
           k->matmul_forward(fch, ln2, p[GPT2C_P_FCW] + (size_t)l * 4 * C * C, p[GPT2C_P_FCB] + l * 4 * C, N, C, 4 * C));
        OP(GPT2C_OP_GELU, l, cost_gelu_fwd((double)N * 4 * C), k->gelu_forward(fch_gelu, fch, (size_t)N * 4 * C));
        OP(GPT2C_OP_MATMUL_FCPROJ, l, cost_matmul_fwd(N, 4 * C, C),
           k->matmul_forward(a->proj, fch_gelu, p[GPT2C_P_FCPROJW] + (size_t)l * 4 * C * C, p[GPT2C_P_FCPROJB] + l * C,
                             N, 4 * C, C));
        OP(GPT2C_OP_RESIDUAL_LAYERNORM, l, cost_residual_layernorm_fwd(N, C),
           k->residual_layernorm_forward(res3, next_ln, next_mean, next_rstd, res2, a->proj, next_w, next_b, N, C));
    }
    OP(GPT2C_OP_MATMUL_LMHEAD, -1, cost_matmul_fwd(N, C, Vp),
       k->matmul_forward(a->logits, a->lnf, p[GPT2C_P_WTE], NULL, N, C, Vp));

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
    OP(GPT2C_OP_SOFTMAX_XENT, -1, cost_xent_fwd(N, V, Vp),
       k->softmax_xent_forward(a->losses, a->logits, a->targets, N, V, Vp));
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
