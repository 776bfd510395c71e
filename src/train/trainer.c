#include "gpt2c/train.h"

#include "gpt2c/lora.h"
#include "gpt2c/prune.h"

#include <math.h>

#include "gpt2c/core.h"
#include "model/model_internal.h"

float gpt2c_lr_at(const gpt2c_train_cfg *c, int step) {
    if (c->warmup > 0 && step < c->warmup) return c->lr * (float)(step + 1) / (float)c->warmup;
    if (c->schedule == GPT2C_SCHED_CONSTANT) return c->lr;
    const float min_lr = c->lr * c->min_lr_frac;
    const int span = c->steps - c->warmup - 1;
    const double ratio = span > 0 ? (double)(step - c->warmup) / span : 1.0;
    const double coeff = 0.5 * (1.0 + cos(M_PI * (ratio > 1.0 ? 1.0 : ratio)));
    return (float)(min_lr + coeff * (c->lr - min_lr));
}

static void set_phase(gpt2c_model *m, gpt2c_phase ph) {
    if (m->prof) m->prof->phase = ph;
}

static void phase(gpt2c_model *m, const gpt2c_train_cfg *c, gpt2c_phase ph) {
    if (c->hooks.phase) c->hooks.phase(c->hooks.user, ph);
    else set_phase(m, ph);
}

/* the training loader as a step's batch source */
static gpt2c_status loader_next(void *ctx, const int32_t **inputs, const int32_t **targets) {
    gpt2c_dataloader *dl = ctx;
    GPT2C_TRY(gpt2c_dataloader_next(dl));
    *inputs = dl->inputs;
    *targets = dl->targets;
    return GPT2C_OK;
}

static gpt2c_status next_batch(gpt2c_model *m, gpt2c_dataloader *dl) {
    gpt2c_status st = GPT2C_OK;
    GPT2C_PROF_OP(m->prof, GPT2C_OP_DATA_LOAD, -1, 0, 8.0 * dl->B * dl->T, st = gpt2c_dataloader_next(dl));
    return st;
}

gpt2c_status gpt2c_evaluate(gpt2c_model *m, gpt2c_dataloader *dl, int nbatches, float *mean_loss, int *batches_done) {
    GPT2C_TRY(gpt2c_dataloader_reset(dl));
    if (nbatches <= 0) { /* one sequential pass: each shard gives floor((n-1)/(B*T)) batches */
        nbatches = 0;
        const size_t global_rows = (size_t)dl->B * (dl->nranks > 0 ? dl->nranks : 1);
        for (int i = 0; i < dl->nfiles; i++) nbatches += (int)((dl->file_tokens[i] - 1) / (global_rows * dl->T));
    }
    double sum = 0;
    /* no LoRA dropout while evaluating */
    const int was_training = m->lora ? gpt2c_lora_set_training(m->lora, 0) : 0;
    gpt2c_status st = GPT2C_OK;
    for (int i = 0; i < nbatches && st == GPT2C_OK; i++) {
        float loss = 0;
        set_phase(m, GPT2C_PHASE_DATA);
        st = next_batch(m, dl);
        set_phase(m, GPT2C_PHASE_EVAL);
        if (st == GPT2C_OK) st = gpt2c_model_forward(m, dl->inputs, dl->targets, dl->B, dl->T, &loss);
        sum += loss;
    }
    if (m->lora) gpt2c_lora_set_training(m->lora, was_training);
    GPT2C_TRY(st);
    *mean_loss = (float)(sum / nbatches);
    if (batches_done) *batches_done = nbatches;
    return GPT2C_OK;
}

static gpt2c_status eval_event(gpt2c_model *m, gpt2c_dataloader *val, const gpt2c_train_cfg *c, int step) {
    gpt2c_train_event ev = {.step = step, .steps = c->steps, .is_eval = 1};
    phase(m, c, GPT2C_PHASE_EVAL);
    GPT2C_TRY(gpt2c_evaluate(m, val, c->eval_batches, &ev.val_loss, NULL));
    if (c->dp) { /* each rank evaluated its slice of the same batches */
        double v = ev.val_loss;
        phase(m, c, GPT2C_PHASE_COMM);
        GPT2C_TRY(c->dp->mean(c->dp->ctx, &v));
        ev.val_loss = (float)v;
    }
    if (c->on_event) c->on_event(&ev, c->user);
    return GPT2C_OK;
}

gpt2c_status gpt2c_train(gpt2c_model *m, gpt2c_dataloader *train, gpt2c_dataloader *val, const gpt2c_train_cfg *c,
                         int start_step) {
    if (c->accum <= 0) return gpt2c_fail(GPT2C_ERR_ARG, "gradient accumulation: must be >= 1 micro-batch (got %d)", c->accum);
    GPT2C_TRY(gpt2c_model_prepare(m, c->B, c->T));
    GPT2C_TRY(gpt2c_model_alloc_grads(m));
    const gpt2c_train_dp *dp = c->dp;
    if (!dp || !dp->update) GPT2C_TRY(gpt2c_model_alloc_optimizer(m)); /* ZeRO-1 keeps its shard of the moments */
    const int nranks = dp ? dp->nranks : 1;
    const int do_eval = val && c->eval_every > 0;
    const gpt2c_batch_source src = {loader_next, train, c->loss};
    gpt2c_step_cfg sc = {c->B, c->T, c->accum, 0, c->adamw, dp, c->hooks, start_step};
    for (int step = start_step; step < c->steps; step++) {
        if (m->prof) m->prof->step = step;
        if (c->hooks.step_begin) c->hooks.step_begin(c->hooks.user, step);
        if (do_eval && step % c->eval_every == 0) GPT2C_TRY(eval_event(m, val, c, step));

        gpt2c_train_event ev = {.step = step, .steps = c->steps, .lr = gpt2c_lr_at(c, step)};
        gpt2c_step_stats st;
        sc.lr = ev.lr;
        sc.step = step;
        GPT2C_TRY(gpt2c_train_step(m, &sc, &src, &st));
        /* --keep-sparsity: AdamW moved the pruned weights, the mask puts them back to exactly zero */
        if (c->keep_zero) GPT2C_TRY(gpt2c_sparsity_mask_apply(m, c->keep_zero));
        ev.ms = st.total_ms;
        ev.loss = st.loss;
        ev.norm = st.norm;
        ev.tok_s = (double)c->B * c->T * c->accum * nranks / (ev.ms / 1e3);
        if (c->hooks.step_end) c->hooks.step_end(c->hooks.user, step);
        if (c->on_event) c->on_event(&ev, c->user);
        if (c->on_checkpoint && c->save_every > 0 && (step + 1) % c->save_every == 0 && step + 1 < c->steps)
            GPT2C_TRY(c->on_checkpoint(m, step + 1, train, c->user));
    }
    if (do_eval) GPT2C_TRY(eval_event(m, val, c, c->steps));
    if (c->on_checkpoint) GPT2C_TRY(c->on_checkpoint(m, c->steps, train, c->user));
    return GPT2C_OK;
}
