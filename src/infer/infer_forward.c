/* The forward pass of inference: the same op sequence as gpt2_forward.c, but
 * on a few rows at a time against a KV cache.  Prefill: one sequence, n rows
 * (one GEMM pass per weight); decode: every sequence, one row each (each
 * weight streamed once per step).  Shapes: R rows, C channels, Vp padded vocab. */
#include <string.h>

#include "infer/infer_state.h"
#include "kernels/kernels.h"
#include "model/costs.h"

#define OP(op, layer, cost, call) GPT2C_PROF_OP(m->prof, op, layer, (cost).flops, (cost).bytes, call)

gpt2c_status gpt2c_infer_rows(gpt2c_infer *s, int seq, const int32_t *tokens, int n, float *all_logits) {
    const gpt2c_model *m = s->m;
    const gpt2c_config *c = &m->cfg;
    const gpt2c_kernels *k = m->k;
    float *const *p = m->params.t;
    const int C = c->channels, L = c->num_layers, NH = c->num_heads, Vp = c->padded_vocab_size;
    /* nb sequences of Tq rows each, starting at sequence b0 */
    const int decode = seq < 0, nb = decode ? s->B : 1, Tq = decode ? 1 : n, b0 = decode ? 0 : seq;
    int *pos = s->rpos;
    for (int b = 0; b < nb; b++) pos[b] = s->pos[b0 + b];
    const size_t seq_off = (size_t)b0 * C * s->ctx; /* sequence b0's slice of one layer's cache */

    /* x (n,C) = wte[token] + wpe[position]: each sequence's rows are consecutive positions */
    for (int b = 0; b < nb; b++)
        OP(GPT2C_OP_ENCODER, -1, cost_encoder_fwd(Tq, C),
           k->encoder_forward(s->x + (size_t)b * Tq * C, tokens + (size_t)b * Tq, p[GPT2C_P_WTE],
                              p[GPT2C_P_WPE] + (size_t)pos[b] * C, 1, Tq, C));
    OP(GPT2C_OP_LAYERNORM, 0, cost_layernorm_fwd(n, C),
       k->layernorm_forward(s->ln, s->mean, s->rstd, s->x, p[GPT2C_P_LN1W], p[GPT2C_P_LN1B], n, C));

    float *x = s->x, *xn = s->x2; /* residual stream in, and out of the current block */
    for (int l = 0; l < L; l++) {
        const int last = l == L - 1;
        const float *next_w = last ? p[GPT2C_P_LNFW] : p[GPT2C_P_LN1W] + (size_t)(l + 1) * C;
        const float *next_b = last ? p[GPT2C_P_LNFB] : p[GPT2C_P_LN1B] + (size_t)(l + 1) * C;
        float *kc = s->kc + (size_t)l * s->layer_cache + seq_off, *vc = s->vc + (size_t)l * s->layer_cache + seq_off;
        double pairs = 0; /* (query, key) pairs of this attention, for the profiler */
        for (int b = 0; b < nb; b++) pairs += (double)Tq * pos[b] + (double)Tq * (Tq + 1) / 2;

        OP(GPT2C_OP_MATMUL_QKV, l, cost_matmul_fwd(n, C, 3 * C),
           k->matmul_infer_forward(s->qkv, s->ln, p[GPT2C_P_QKVW] + (size_t)l * 3 * C * C,
                                   p[GPT2C_P_QKVB] + (size_t)l * 3 * C, n, C, 3 * C, GPT2C_ACT_NONE));
        OP(GPT2C_OP_ATTENTION, l, ((op_cost){pairs * NH * (4.0 * C / NH + 5), 4.0 * (n * 4.0 * C + 2 * pairs * C)}),
           {
               k->kv_write(kc, vc, s->qkv, pos, nb, Tq, s->ctx, C, NH);
               k->attention_kv_forward(s->atty, s->qkv, (size_t)3 * C, kc, vc, pos, nb, Tq, s->ctx, C, NH);
           });
        OP(GPT2C_OP_MATMUL_ATTPROJ, l, cost_matmul_fwd(n, C, C),
           k->matmul_infer_forward(s->proj, s->atty, p[GPT2C_P_ATTPROJW] + (size_t)l * C * C,
                                   p[GPT2C_P_ATTPROJB] + (size_t)l * C, n, C, C, GPT2C_ACT_NONE));
        OP(GPT2C_OP_RESIDUAL_LAYERNORM, l, cost_residual_layernorm_fwd(n, C),
           k->residual_layernorm_forward(xn, s->ln, s->mean, s->rstd, x, s->proj, p[GPT2C_P_LN2W] + (size_t)l * C,
                                         p[GPT2C_P_LN2B] + (size_t)l * C, n, C));
        OP(GPT2C_OP_MATMUL_FC, l, cost_matmul_fwd(n, C, 4 * C),
           k->matmul_infer_forward(s->fch, s->ln, p[GPT2C_P_FCW] + (size_t)l * 4 * C * C,
                                   p[GPT2C_P_FCB] + (size_t)l * 4 * C, n, C, 4 * C, GPT2C_ACT_GELU));
        OP(GPT2C_OP_MATMUL_FCPROJ, l, cost_matmul_fwd(n, 4 * C, C),
           k->matmul_infer_forward(s->proj, s->fch, p[GPT2C_P_FCPROJW] + (size_t)l * 4 * C * C,
                                   p[GPT2C_P_FCPROJB] + (size_t)l * C, n, 4 * C, C, GPT2C_ACT_NONE));
        OP(GPT2C_OP_RESIDUAL_LAYERNORM, l, cost_residual_layernorm_fwd(n, C),
           k->residual_layernorm_forward(x, s->ln, s->mean, s->rstd, xn, s->proj, next_w, next_b, n, C));
    }
    /* s->ln holds lnf (n,C).  The LM head runs on the rows whose logits are
     * wanted: all of them, or the last of each sequence. */
    const float *wte = p[GPT2C_P_WTE];
    if (all_logits) {
        OP(GPT2C_OP_MATMUL_LMHEAD, -1, cost_matmul_fwd(n, C, Vp),
           k->matmul_infer_forward(all_logits, s->ln, wte, NULL, n, C, Vp, GPT2C_ACT_NONE));
        for (int b = 0; b < nb; b++)
            memcpy(s->logits + (size_t)(b0 + b) * Vp, all_logits + ((size_t)b * Tq + Tq - 1) * Vp, sizeof(float) * Vp);
    } else if (decode) {
        OP(GPT2C_OP_MATMUL_LMHEAD, -1, cost_matmul_fwd(n, C, Vp),
           k->matmul_infer_forward(s->logits, s->ln, wte, NULL, n, C, Vp, GPT2C_ACT_NONE));
    } else {
        OP(GPT2C_OP_MATMUL_LMHEAD, -1, cost_matmul_fwd(1, C, Vp),
           k->matmul_infer_forward(s->logits + (size_t)seq * Vp, s->ln + (size_t)(n - 1) * C, wte, NULL, 1, C, Vp,
                                   GPT2C_ACT_NONE));
    }
    for (int b = 0; b < nb; b++) s->pos[b0 + b] += Tq;
    return GPT2C_OK;
}

static gpt2c_status check_ids(const gpt2c_infer *s, const int32_t *ids, int n, const char *what) {
    const int V = s->m->cfg.vocab_size;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return gpt2c_fail(GPT2C_ERR_RANGE, "%s: token id %d at position %d is outside the vocabulary [0, %d)", what,
                              ids[i], i, V);
    return GPT2C_OK;
}

gpt2c_status gpt2c_infer_prefill(gpt2c_infer *s, int seq, const int32_t *tokens, int n, float *all_logits) {
    if (seq < 0 || seq >= s->B) return gpt2c_fail(GPT2C_ERR_RANGE, "prefill: sequence %d outside [0, %d)", seq, s->B);
    if (n <= 0) return gpt2c_fail(GPT2C_ERR_ARG, "prompt: empty (need at least one token)");
    if (s->pos[seq] + n > s->ctx)
        return gpt2c_fail(GPT2C_ERR_RANGE, "prompt: %d tokens after %d already cached exceed the context of %d", n,
                          s->pos[seq], s->ctx);
    GPT2C_TRY(check_ids(s, tokens, n, "prompt"));
    const size_t Vp = (size_t)s->m->cfg.padded_vocab_size;
    for (int done = 0; done < n; done += s->chunk) {
        const int rows = n - done < s->chunk ? n - done : s->chunk;
        memcpy(s->tok, tokens + done, sizeof(int32_t) * rows);
        GPT2C_TRY(gpt2c_infer_rows(s, seq, s->tok, rows, all_logits ? all_logits + (size_t)done * Vp : NULL));
    }
    return GPT2C_OK;
}

gpt2c_status gpt2c_infer_decode(gpt2c_infer *s, const int32_t *tokens) {
    for (int b = 0; b < s->B; b++)
        if (s->pos[b] >= s->ctx)
            return gpt2c_fail(GPT2C_ERR_RANGE, "decode: sequence %d has filled the context of %d tokens", b, s->ctx);
    GPT2C_TRY(check_ids(s, tokens, s->B, "decode"));
    memcpy(s->tok, tokens, sizeof(int32_t) * s->B);
    return gpt2c_infer_rows(s, -1, s->tok, s->B, NULL);
}
