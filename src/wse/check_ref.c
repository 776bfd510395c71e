/* The oracle: GPT-2's forward (the block description, model/gpt2_block.h)
 * with the scalar ref kernels (src/kernels/ref), on the same parameters, for the logits of the prompt and greedy decoding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "wse/wse_result.h"
#include "model/gpt2_block.h"
#include "model/model_internal.h"

/* logits (T, Vp) of tokens (T) */
static gpt2c_status ref_forward(const gpt2c_model *m, const int32_t *tok, int T, float *logits) {
    const gpt2c_config *c = &m->cfg;
    int C = c->channels, L = c->num_layers, NH = c->num_heads, Vp = c->padded_vocab_size;
    size_t TC = (size_t)T * C;
    float *x = malloc(TC * sizeof *x), *ln = malloc(TC * sizeof *ln), *qkv = malloc(3 * TC * sizeof *qkv),
          *att = malloc(TC * sizeof *att), *y = malloc(TC * sizeof *y), *proj = malloc(TC * sizeof *proj),
          *fc = malloc(4 * TC * sizeof *fc),
          *fg = malloc(4 * TC * sizeof *fg), *mean = malloc((size_t)T * sizeof *mean),
          *rstd = malloc((size_t)T * sizeof *rstd),
          *state = malloc(gpt2c_ref_attention_state_floats(1, T, NH) * sizeof(float));
    gpt2c_status st = GPT2C_OK;
    if (!x || !ln || !qkv || !att || !y || !proj || !fc || !fg || !mean || !rstd || !state) {
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for the ref forward");
        goto done;
    }
    float *const *p = m->params.t;
    /* the encoder, the block's stages (model/gpt2_block.h) per layer with the
     * ref kernels (the residual stream x -> x2 -> x, every layernorm into ln),
     * the LM head */
    gpt2c_ref_encoder_forward(x, tok, p[GPT2C_P_WTE], p[GPT2C_P_WPE], 1, T, C);
    gpt2c_ref_layernorm_forward(ln, mean, rstd, x, p[GPT2C_P_LN1W], p[GPT2C_P_LN1B], T, C);
    float *buf[GPT2C_NUM_BUFS];
    buf[GPT2C_BUF_X] = buf[GPT2C_BUF_Y] = x, buf[GPT2C_BUF_X2] = y;
    buf[GPT2C_BUF_LN1] = buf[GPT2C_BUF_LN2] = buf[GPT2C_BUF_LN_NEXT] = ln;
    buf[GPT2C_BUF_QKV] = qkv, buf[GPT2C_BUF_ATTY] = att, buf[GPT2C_BUF_PROJ] = proj;
    buf[GPT2C_BUF_FCH] = fc, buf[GPT2C_BUF_FCH_GELU] = fg;
    for (int l = 0; l < L; l++)
        for (int i = 0; i < GPT2C_BLOCK_NSTAGES; i++) {
            const gpt2c_block_stage *bs = &gpt2c_block_stages[i];
            const int IC = bs->ic * C, OC = bs->oc * C;
            switch (bs->kind) {
            case GPT2C_STAGE_MATMUL: {
                const gpt2c_tensor W = gpt2c_param_view(m, m->params_mem, bs->w, l);
                gpt2c_ref_matmul_forward(buf[bs->out], buf[bs->in], &W, p[bs->b] + (size_t)l * OC, T, IC, OC);
                break;
            }
            case GPT2C_STAGE_ATTENTION: gpt2c_ref_attention_forward(buf[bs->out], state, buf[bs->in], 1, T, C, NH); break;
            case GPT2C_STAGE_GELU: gpt2c_ref_gelu_forward(buf[bs->out], buf[bs->in], (size_t)T * IC); break;
            case GPT2C_STAGE_RESIDUAL_LAYERNORM: {
                int w, b, wl;
                gpt2c_block_ln_params(bs, l, L, &w, &b, &wl);
                gpt2c_ref_residual_layernorm_forward(buf[bs->res_out], buf[bs->out], mean, rstd, buf[bs->res_in],
                                                     buf[bs->in], p[w] + (size_t)wl * C, p[b] + (size_t)wl * C, T, C);
                break;
            }
            }
        }
    const gpt2c_tensor W = gpt2c_param_view(m, m->params_mem, GPT2C_P_WTE, 0);
    gpt2c_ref_matmul_forward(logits, ln, &W, NULL, T, C, Vp);
done:
    free(x); free(ln); free(qkv); free(att); free(y); free(proj); free(fc); free(fg); free(mean); free(rstd); free(state);
    return st;
}

gpt2c_status gpt2c_wse_check_ref(gpt2c_wse_result *r, const gpt2c_model *model, double *max_rel_err,
                                 int *tokens_match) {
    *max_rel_err = -1;
    *tokens_match = -1;
    if (!r->g.logits) return gpt2c_fail(GPT2C_ERR_ARG, "values: none were computed (nothing to check)");
    if (model->k && strcmp(model->k->name, "cuda") == 0)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "wse: the ref check needs host parameters");
    int T = r->cfg.seq, Vp = model->cfg.padded_vocab_size, V = model->cfg.vocab_size, N = r->cfg.decode;
    int Tmax = T + (N > 0 ? N - 1 : 0);
    float *lg = malloc((size_t)Tmax * Vp * sizeof *lg);
    if (!lg) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for the ref logits");
    gpt2c_status st = ref_forward(model, r->prompt, T, lg);
    if (!st) {
        double num = 0, den = 0;
        for (int t = 0; t < T; t++)
            for (int v = 0; v < V; v++) {
                double a = r->g.logits[(size_t)t * Vp + v], b = lg[(size_t)t * Vp + v];
                if (fabs(a - b) > num) num = fabs(a - b);
                if (fabs(b) > den) den = fabs(b);
            }
        *max_rel_err = den > 0 ? num / den : num;
        r->max_rel_err = *max_rel_err;
    }
    if (!st && N > 0) {
        /* greedy decode with the ref forward on the growing sequence */
        int32_t *seq = malloc((size_t)(T + N) * sizeof *seq);
        if (!seq) st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
        else {
            memcpy(seq, r->prompt, (size_t)T * sizeof *seq);
            int match = 1;
            for (int d = 0; d < N && !st; d++) {
                int len = T + d;
                if (d > 0) st = ref_forward(model, seq, len, lg);
                if (st) break;
                const float *row = lg + (size_t)(len - 1) * Vp;
                int best = 0;
                for (int v = 1; v < V; v++) if (row[v] > row[best]) best = v;
                seq[len] = best;
                if (best != r->tokens[d]) match = 0;
            }
            if (!st) *tokens_match = r->tokens_match = match;
            free(seq);
        }
    }
    free(lg);
    return st;
}
