/* The training loop: schedule, gradient accumulation, clipping, AdamW,
 * periodic validation.  It prints nothing: progress goes to a callback and
 * checkpoints to a hook, both supplied by the caller.
 *
 * Step semantics are llm.c's: at each step with step % eval_every == 0 the
 * validation loss is computed BEFORE that step's update (and once more after
 * the last step); the train loss reported for step i is the loss of the
 * batch(es) seen at step i, before update i. */
#ifndef GPT2C_TRAIN_H
#define GPT2C_TRAIN_H

#include "gpt2c/data.h"
#include "gpt2c/model.h"

typedef enum { GPT2C_SCHED_CONSTANT, GPT2C_SCHED_COSINE } gpt2c_schedule;

typedef struct gpt2c_train_event {
    int step, steps; /* 0-based step index, total */
    int is_eval;
    float loss, lr, norm; /* train step */
    float val_loss;       /* eval */
    double ms, tok_s;     /* train step wall time (data + fwd + bwd + update) */
} gpt2c_train_event;

/* Data parallelism, supplied by src/dist (MPI) or any other transport; the
 * trainer itself knows no MPI.  Each of nranks processes runs the same loop
 * on its slice of every global batch (gpt2c_dataloader_open_part); the
 * backward of the step's last micro-batch is scaled by 1/(accum*nranks) so
 * that summing gradients over ranks gives the global mean. */
typedef struct gpt2c_train_dp {
    int rank, nranks;
    void *ctx;
    /* before the last backward of a step: start reducing gradients as they
     * become final (may set m->on_grads_final); may be NULL */
    void (*arm)(void *ctx, gpt2c_model *m);
    /* after the last backward: gradients summed over ranks (on every rank,
     * or this rank's shard where update needs no more); *loss (this rank's
     * mean) becomes the mean over ranks */
    gpt2c_status (*reduce)(void *ctx, gpt2c_model *m, double *loss);
    /* the optimizer step; NULL: gpt2c_model_update (every rank updates a full copy) */
    gpt2c_status (*update)(void *ctx, gpt2c_model *m, const gpt2c_adamw_cfg *o, float lr, float *norm);
    /* *v (this rank's value) becomes the mean over ranks: validation loss */
    gpt2c_status (*mean)(void *ctx, double *v);
} gpt2c_train_dp;

typedef struct gpt2c_train_cfg {
    int B, T, steps, accum; /* B: rows per process (the global batch is B x accum x dp->nranks) */
    float lr;
    gpt2c_schedule schedule;
    int warmup;
    float min_lr_frac;
    gpt2c_adamw_cfg adamw;
    int eval_every, eval_batches; /* eval_every 0 = never */
    int save_every;               /* call on_checkpoint every N steps (0 = only at the end) */
    void (*on_event)(const gpt2c_train_event *ev, void *user);
    /* called with the number of completed steps; a failure stops training */
    gpt2c_status (*on_checkpoint)(gpt2c_model *m, int steps_done, const gpt2c_dataloader *train, void *user);
    void *user;               /* for on_event and on_checkpoint */
    gpt2c_step_hooks hooks;   /* step / phase marks (a profile session's), all NULL: none */
    const gpt2c_train_dp *dp; /* NULL: one process */
    /* train --keep-sparsity: these weights are set back to zero after every
     * update (gpt2c/prune.h); NULL: none */
    const struct gpt2c_sparsity_mask *keep_zero;
    /* the training loss in place of cross-entropy (gpt2c/distill.h); NULL:
     * cross-entropy.  Validation stays the model's cross-entropy. */
    const gpt2c_loss *loss;
} gpt2c_train_cfg;

/* ---- one training step: the same code for the trainer, `profile` and `bench train` ----
 *
 *   zero_grad -> accum x (data, forward, backward) -> reduce -> update
 *
 * reduce is dp->reduce (gradients summed over ranks, started per layer during
 * the last backward through dp->arm), a no-op without dp; update is
 * dp->update (sharded) or gpt2c_model_update (AdamW, src/train/adamw.c).
 * A non-finite loss stops the step before the update (the weights stay as
 * they were), a non-finite gradient norm after it: both GPT2C_ERR_RANGE. */

/* Where a step's micro-batches come from: fills *inputs and *targets (B*T
 * ids each, valid until the next call). */
typedef struct gpt2c_batch_source {
    gpt2c_status (*next)(void *ctx, const int32_t **inputs, const int32_t **targets);
    void *ctx;
    /* the loss its batches train on (distillation); NULL: cross-entropy */
    const gpt2c_loss *loss;
} gpt2c_batch_source;

typedef struct gpt2c_step_cfg {
    int B, T, accum;            /* rows per micro-batch and process, sequence, micro-batches */
    float lr;                   /* this step's learning rate */
    gpt2c_adamw_cfg adamw;
    const gpt2c_train_dp *dp;   /* NULL: one process (reduce is a no-op) */
    gpt2c_step_hooks hooks;     /* phase marks; phase NULL: m->prof's phase is set directly */
    int step;                   /* the step's index, for messages */
} gpt2c_step_cfg;

typedef struct gpt2c_step_stats {
    float loss;  /* mean over micro-batches (and ranks) */
    float norm;  /* gradient norm before clipping */
    /* wall time of each stage (data loading is counted apart from forward) */
    double data_ms, forward_ms, backward_ms, reduce_ms, update_ms, total_ms;
} gpt2c_step_stats;

gpt2c_status gpt2c_train_step(gpt2c_model *m, const gpt2c_step_cfg *c, const gpt2c_batch_source *src,
                              gpt2c_step_stats *out);

/* Learning rate at 0-based step: linear warmup over `warmup` steps, then
 * constant or cosine decay to lr * min_lr_frac at the last step. */
float gpt2c_lr_at(const gpt2c_train_cfg *cfg, int step);

/* Trains from step `start_step` (0, or the steps a resumed checkpoint had
 * done) to cfg->steps.  val may be NULL. */
gpt2c_status gpt2c_train(gpt2c_model *m, gpt2c_dataloader *train, gpt2c_dataloader *val, const gpt2c_train_cfg *cfg,
                         int start_step);

/* Mean loss over `nbatches` batches from the start of dl (0 = one full
 * sequential pass over all shards).  A data-parallel loader gives this
 * process's slice of each batch: the caller averages over ranks. */
gpt2c_status gpt2c_evaluate(gpt2c_model *m, gpt2c_dataloader *dl, int nbatches, float *mean_loss, int *batches_done);

#endif
