/* The measures of gpt2c/stage_metrics.h. */
#include "gpt2c/stage_metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"
#include "gpt2c/infer.h"
#include "gpt2c/quant_model.h"
#include "model/acts.h"
#include "model/model_internal.h"

gpt2c_status gpt2c_measure_train_bytes(gpt2c_model *m, int B, int T, gpt2c_train_bytes *out) {
    if (m->qw)
        return gpt2c_fail(GPT2C_ERR_ARG, "training memory: the model is quantized (a full fine-tuning needs fp32 "
                                         "weights)");
    GPT2C_TRY(gpt2c_model_prepare(m, B, T));
    GPT2C_TRY(gpt2c_acts_plan_backward(m->acts, m));
    const size_t slab = m->slab_floats * sizeof(float);
    gpt2c_train_bytes r = {slab, slab, 2 * slab, m->acts->bytes + m->acts->bbytes, 0};
    r.total = r.params + r.grads + r.moments + r.acts;
    *out = r;
    return GPT2C_OK;
}

gpt2c_status gpt2c_measure_infer_bytes(const gpt2c_model *m, int batch, int ctx, size_t *out) {
    /* weights: quantized ones at their size (their fp32 slices are given back), the rest fp32 */
    const gpt2c_model_bytes mb = gpt2c_model_memory(m); /* adapters (LoRA) count with the weights */
    const size_t weights = mb.params + mb.quantized + mb.lora_params;
    size_t state = 0;
    if (batch > 0) {
        gpt2c_infer *s;
        GPT2C_TRY(gpt2c_infer_create(m, batch, ctx, 0, &s));
        state = gpt2c_infer_bytes(s);
        gpt2c_infer_free(s);
    }
    *out = weights + state;
    return GPT2C_OK;
}

/* the next validation sequence's inputs (val opened with B = 1) */
static gpt2c_status next_seq(gpt2c_dataloader *val, const int32_t **inputs, const int32_t **targets) {
    GPT2C_TRY(gpt2c_dataloader_next(val));
    *inputs = val->inputs;
    if (targets) *targets = val->targets;
    return GPT2C_OK;
}

gpt2c_status gpt2c_measure_speed(const gpt2c_model *m, const gpt2c_stage_bench *b, gpt2c_dataloader *val,
                                 gpt2c_speed_trial *out) {
    if (b->seq > val->T || b->prompt > val->T)
        return gpt2c_fail(GPT2C_ERR_ARG, "speed: sequences of %d tokens, the validation loader gives %d", b->seq, val->T);
    gpt2c_speed_trial r = {0};
    int32_t *rows = malloc(sizeof(int32_t) * (size_t)b->fwd_batch * b->seq);
    if (!rows) return gpt2c_fail(GPT2C_ERR_NOMEM, "speed: out of memory");
    gpt2c_status st = gpt2c_dataloader_reset(val);
    for (int i = 0; st == GPT2C_OK && i < b->fwd_batch; i++) {
        const int32_t *in;
        st = next_seq(val, &in, NULL);
        if (st == GPT2C_OK) memcpy(rows + (size_t)i * b->seq, in, sizeof(int32_t) * b->seq);
    }
    /* forward: one prefill per sequence of the batch, all in the state planned for the batch */
    gpt2c_infer *s = NULL;
    if (st == GPT2C_OK) st = gpt2c_infer_create(m, b->fwd_batch, b->seq, 0, &s);
    const double min_ms = b->min_ms > 0 ? b->min_ms : 0;
    if (st == GPT2C_OK) { /* repeated until min_ms have passed: the mean of the repetitions */
        const uint64_t t0 = gpt2c_now_ns();
        int reps = 0;
        do {
            gpt2c_infer_reset(s, -1);
            for (int i = 0; st == GPT2C_OK && i < b->fwd_batch; i++)
                st = gpt2c_infer_prefill(s, i, rows + (size_t)i * b->seq, b->seq, NULL);
            reps++;
        } while (st == GPT2C_OK && (double)(gpt2c_now_ns() - t0) * 1e-6 < min_ms);
        r.fwd_ms = (double)(gpt2c_now_ns() - t0) * 1e-6 / reps;
        r.fwd_tok_s = (double)b->fwd_batch * b->seq / (r.fwd_ms * 1e-3);
    }
    gpt2c_infer_free(s);
    s = NULL;
    /* generation: greedy, a fixed number of new tokens (no stop id) */
    gpt2c_sampler *smp = NULL;
    if (st == GPT2C_OK) st = gpt2c_infer_create(m, 1, b->prompt + b->gen_tokens, 0, &s);
    gpt2c_sampling sp = gpt2c_sampling_default();
    sp.temperature = 0;
    if (st == GPT2C_OK) st = gpt2c_sampler_create(&sp, gpt2c_model_config(m)->vocab_size, 1, &smp);
    if (st == GPT2C_OK) {
        double ms = 0;
        int reps = 0, generated = 0;
        do {
            gpt2c_gen_stats gs;
            st = gpt2c_generate(s, smp, rows, b->prompt, b->gen_tokens, -1, NULL, NULL, &gs);
            ms += (double)(gs.prefill_ns + gs.decode_ns) * 1e-6;
            generated += gs.generated;
            reps++;
        } while (st == GPT2C_OK && ms < min_ms);
        r.gen_ms = ms / reps;
        r.gen_tok_s = generated / (ms * 1e-3);
    }
    gpt2c_sampler_free(smp);
    gpt2c_infer_free(s);
    free(rows);
    if (st == GPT2C_OK) *out = r;
    return st;
}

gpt2c_status gpt2c_measure_perplexity(const gpt2c_model *m, const gpt2c_stage_bench *b, gpt2c_dataloader *val,
                                      double *ppl) {
    const int T = b->seq, V = gpt2c_model_config(m)->vocab_size, Vp = gpt2c_model_config(m)->padded_vocab_size;
    if (val->B != 1 || val->T != T)
        return gpt2c_fail(GPT2C_ERR_ARG, "perplexity: the validation loader must give 1 x %d batches", T);
    gpt2c_infer *s;
    GPT2C_TRY(gpt2c_infer_create(m, 1, T, 0, &s));
    float *logits = gpt2c_alloc((size_t)T * Vp * sizeof(float), "perplexity logits");
    gpt2c_status st = logits ? gpt2c_dataloader_reset(val) : GPT2C_ERR_NOMEM;
    double nll = 0;
    long long n = 0;
    for (int i = 0; st == GPT2C_OK && i < b->ppl_seqs; i++) {
        const int32_t *in, *tg;
        st = next_seq(val, &in, &tg);
        if (st == GPT2C_OK) {
            gpt2c_infer_reset(s, 0);
            st = gpt2c_infer_prefill(s, 0, in, T, logits);
        }
        for (int t = 0; st == GPT2C_OK && t < T; t++) { /* -log softmax(row)[target], in double */
            const float *row = logits + (size_t)t * Vp;
            double mx = row[0], z = 0;
            for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
            for (int v = 0; v < V; v++) z += exp(row[v] - mx);
            nll += log(z) + mx - row[tg[t]];
            n++;
        }
    }
    gpt2c_free(logits);
    gpt2c_infer_free(s);
    if (st == GPT2C_OK) *ppl = exp(nll / (double)n);
    return st;
}
