/* Distillation loss (gpt2c/distill.h): the teacher's logits are computed a
 * chunk of positions at a time through the inference path and consumed at
 * once; the student's logits rows become the gradient the cross-entropy
 * backward expects (gpt2c_loss). */
#include "gpt2c/distill.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"
#include "gpt2c/infer.h"

struct gpt2c_distill {
    gpt2c_loss loss;
    const gpt2c_model *teacher;
    gpt2c_distill_cfg cfg;
    gpt2c_infer *inf; /* one sequence of up to T positions */
    float *tbuf;      /* (chunk, teacher Vp): one chunk of the teacher's logits */
    float *scratch;   /* (chunk, teacher Vp): the row function's third array */
    int T;
    double kl_sum, ce_sum; /* since the last gpt2c_distill_take_terms */
    long long positions;
};

gpt2c_status gpt2c_distill_check(const gpt2c_distill_cfg *c) {
    if (!(c->temperature > 0) || !isfinite(c->temperature))
        return gpt2c_fail(GPT2C_ERR_ARG, "temperature: must be a finite number > 0 (got %g)", (double)c->temperature);
    if (!(c->alpha >= 0 && c->alpha <= 1))
        return gpt2c_fail(GPT2C_ERR_ARG, "alpha: must be in [0, 1] (got %g)", (double)c->alpha);
    return GPT2C_OK;
}

/* Per position, with p^tau = softmax(x / tau) over the V real ids:
 *   loss = alpha tau^2 KL(pt^tau || ps^tau) + (1 - alpha) (-log ps[y])
 *   dloss/ds_i = alpha tau (ps^tau_i - pt^tau_i) + (1 - alpha) (ps_i - [i == y])
 * (the tau^2 meets a 1/tau from d(s/tau)/ds).  The row gets that plus
 * [i == y]: alpha tau (ps^tau_i - pt^tau_i) + (1 - alpha) ps_i + alpha [i == y].
 * Three exponentials per id, kept (row, t_row, scratch) for the second pass;
 * the KL needs no more: with log pt^tau_i - log ps^tau_i =
 * (t_i - s_i)/tau + (ms - mt)/tau + log zst - log ztt and sum pt^tau = 1,
 *   KL = sum_i pt^tau_i (t_i - s_i) / tau + (ms - mt)/tau + log zst - log ztt. */
float gpt2c_distill_row(float *row, float *t_row, float *scratch, int target, int V, float tau, float alpha,
                        double *kl_out, double *ce_out) {
    const float inv_tau = 1.0f / tau;
    float ms = row[0], mt = t_row[0];
    for (int i = 1; i < V; i++) {
        if (row[i] > ms) ms = row[i];
        if (t_row[i] > mt) mt = t_row[i];
    }
    const float s_target = row[target];
    double zs = 0, zst = 0, ztt = 0, cross = 0; /* sums of exp(s-ms), exp((s-ms)/tau), exp((t-mt)/tau), and of the
                                                  last times (t - s) */
    for (int i = 0; i < V; i++) {
        const float ds = row[i] - ms;
        const float e_s = expf(ds), e_st = tau == 1.0f ? e_s : expf(ds * inv_tau);
        const float e_tt = expf((t_row[i] - mt) * inv_tau);
        zs += e_s;
        zst += e_st;
        ztt += e_tt;
        cross += (double)e_tt * ((double)t_row[i] - row[i]);
        row[i] = e_s;
        t_row[i] = e_tt;
        scratch[i] = e_st;
    }
    const double log_zst = log(zst), log_ztt = log(ztt);
    const double ce = log(zs) + ms - s_target; /* -log ps[y] */
    double kl = cross / ztt * inv_tau + ((double)ms - mt) * inv_tau + log_zst - log_ztt;
    if (kl < 0) kl = 0; /* rounding: KL >= 0 */
    const float a_tau = alpha * tau, hard = (1.0f - alpha) / (float)zs;
    const float inv_zst = (float)(1.0 / zst), inv_ztt = (float)(1.0 / ztt);
    for (int i = 0; i < V; i++) row[i] = a_tau * (scratch[i] * inv_zst - t_row[i] * inv_ztt) + hard * row[i];
    row[target] += alpha;
    if (kl_out) *kl_out = kl;
    if (ce_out) *ce_out = ce;
    return (float)(alpha * (double)tau * tau * kl + (1.0 - alpha) * ce);
}

/* gpt2c_loss.forward: for each sequence, the teacher's logits a chunk of
 * positions at a time (its KV cache carries the earlier chunks), each chunk's
 * rows of the student consumed in parallel (rows are independent). */
static gpt2c_status distill_forward(void *ctx, float *losses, float *logits, const int32_t *tokens,
                                    const int32_t *targets, int B, int T, int V, int Vp) {
    gpt2c_distill *d = ctx;
    if (T > d->T)
        return gpt2c_fail(GPT2C_ERR_ARG, "distillation: sequences of %d positions, the teacher was planned for %d", T,
                          d->T);
    const float tau = d->cfg.temperature, alpha = d->cfg.alpha;
    const int chunk = d->cfg.chunk;
    const size_t tVp = (size_t)gpt2c_model_config(d->teacher)->padded_vocab_size;
    double kl_sum = 0, ce_sum = 0;
    for (int b = 0; b < B; b++) {
        gpt2c_infer_reset(d->inf, 0);
        for (int t0 = 0; t0 < T; t0 += chunk) {
            const int n = T - t0 < chunk ? T - t0 : chunk;
            const size_t r0 = (size_t)b * T + t0;
            if (alpha > 0) GPT2C_TRY(gpt2c_infer_prefill(d->inf, 0, tokens + r0, n, d->tbuf));
            double kl_c = 0, ce_c = 0;
            /* alpha 0: no teacher forward (its stand-in is the student itself: KL 0) */
#pragma omp parallel for schedule(static) reduction(+ : kl_c, ce_c)
            for (int r = 0; r < n; r++) {
                float *row = logits + (r0 + r) * Vp;
                float *trow = d->tbuf + (size_t)r * tVp, *scr = d->scratch + (size_t)r * tVp;
                if (alpha == 0) memcpy(trow, row, sizeof(float) * V);
                double kl = 0, ce = 0;
                losses[r0 + r] = gpt2c_distill_row(row, trow, scr, targets[r0 + r], V, tau, alpha, &kl, &ce);
                for (int i = V; i < Vp; i++) row[i] = 0.0f;
                kl_c += kl;
                ce_c += ce;
            }
            kl_sum += kl_c;
            ce_sum += ce_c;
        }
    }
    d->kl_sum += kl_sum;
    d->ce_sum += ce_sum;
    d->positions += (long long)B * T;
    return GPT2C_OK;
}

gpt2c_status gpt2c_distill_create(const gpt2c_model *teacher, const gpt2c_config *student, int T,
                                  const gpt2c_distill_cfg *c, gpt2c_distill **out) {
    *out = NULL;
    GPT2C_TRY(gpt2c_distill_check(c));
    const gpt2c_config *tc = gpt2c_model_config(teacher);
    if (tc->vocab_size != student->vocab_size)
        return gpt2c_fail(GPT2C_ERR_ARG,
                          "teacher and student vocabularies differ (teacher %d ids, student %d): distillation "
                          "compares their distributions id by id",
                          tc->vocab_size, student->vocab_size);
    if (T > tc->max_seq_len)
        return gpt2c_fail(GPT2C_ERR_ARG, "sequence length %d is longer than the teacher's context of %d", T,
                          tc->max_seq_len);
    gpt2c_distill *d = calloc(1, sizeof *d);
    if (!d) return gpt2c_fail(GPT2C_ERR_NOMEM, "distillation: out of memory");
    d->teacher = teacher;
    d->cfg = *c;
    if (d->cfg.chunk <= 0) d->cfg.chunk = 64;
    if (d->cfg.chunk > T) d->cfg.chunk = T;
    d->T = T;
    d->loss = (gpt2c_loss){distill_forward, d};
    gpt2c_status st = gpt2c_infer_create(teacher, 1, T, d->cfg.chunk, &d->inf);
    if (st == GPT2C_OK) {
        d->tbuf = gpt2c_alloc((size_t)d->cfg.chunk * tc->padded_vocab_size * sizeof(float), "teacher logits (one chunk)");
        d->scratch = gpt2c_alloc((size_t)d->cfg.chunk * tc->padded_vocab_size * sizeof(float), "distillation scratch");
        if (!d->tbuf || !d->scratch) st = GPT2C_ERR_NOMEM;
    }
    if (st != GPT2C_OK) {
        gpt2c_distill_free(d);
        return st;
    }
    *out = d;
    return GPT2C_OK;
}

void gpt2c_distill_free(gpt2c_distill *d) {
    if (!d) return;
    gpt2c_infer_free(d->inf);
    gpt2c_free(d->tbuf);
    gpt2c_free(d->scratch);
    free(d);
}

const gpt2c_loss *gpt2c_distill_loss(gpt2c_distill *d) { return &d->loss; }

size_t gpt2c_distill_bytes(const gpt2c_distill *d) {
    return gpt2c_infer_bytes(d->inf) + 2 * (size_t)d->cfg.chunk * gpt2c_model_config(d->teacher)->padded_vocab_size * sizeof(float);
}

void gpt2c_distill_take_terms(gpt2c_distill *d, double *kl, double *ce) {
    const double n = d->positions > 0 ? (double)d->positions : 1;
    if (kl) *kl = d->kl_sum / n;
    if (ce) *ce = d->ce_sum / n;
    d->kl_sum = d->ce_sum = 0;
    d->positions = 0;
}
