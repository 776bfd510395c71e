/* One training step (train.h): zero_grad, accum x (data, forward, backward),
 * reduce, update.  The trainer, `gpt2c profile` and `gpt2c bench train` all
 * run this function, so what is profiled and benchmarked is what trains. */
#include "gpt2c/train.h"

#include <math.h>

#include "gpt2c/core.h"
#include "gpt2c/precision.h"
#include "kernels/kernels.h"
#include "model/model_internal.h"

static void mark(gpt2c_model *m, const gpt2c_step_hooks *h, gpt2c_phase ph) {
    if (h->phase) h->phase(h->user, ph);
    else if (m->prof) m->prof->phase = ph;
}

static double ms_since(uint64_t *t) {
    const uint64_t now = gpt2c_now_ns();
    const double ms = (double)(now - *t) * 1e-6;
    *t = now;
    return ms;
}

/* A device backend runs its ops asynchronously: each phase waits for them at
 * its end, so that its time is its own (a host backend has nothing to wait for). */
static gpt2c_status wait_device(const gpt2c_model *m) {
    return m->k && m->k->device_sync ? m->k->device_sync() : GPT2C_OK;
}

gpt2c_status gpt2c_train_step(gpt2c_model *m, const gpt2c_step_cfg *c, const gpt2c_batch_source *src,
                              gpt2c_step_stats *out) {
    if (c->accum <= 0) return gpt2c_fail(GPT2C_ERR_ARG, "gradient accumulation: must be >= 1 micro-batch (got %d)", c->accum);
    const gpt2c_train_dp *dp = c->dp;
    const int nranks = dp ? dp->nranks : 1;
    gpt2c_step_stats st = {0};
    const uint64_t t_start = gpt2c_now_ns();
    uint64_t t = t_start;
    if (!gpt2c_grads_fresh(m)) { /* free (and not marked) when the last update left them zero or stale */
        mark(m, &c->hooks, GPT2C_PHASE_OPTIMIZER);
        gpt2c_model_zero_grad(m);
        GPT2C_TRY(wait_device(m));
        st.update_ms += ms_since(&t);
    }
    double loss_sum = 0;
    for (int micro = 0; micro < c->accum; micro++) {
        const int32_t *inputs = NULL, *targets = NULL;
        float loss = 0;
        mark(m, &c->hooks, GPT2C_PHASE_DATA);
        gpt2c_status s = GPT2C_OK;
        GPT2C_PROF_OP(m->prof, GPT2C_OP_DATA_LOAD, -1, 0, 8.0 * c->B * c->T, s = src->next(src->ctx, &inputs, &targets));
        GPT2C_TRY(s);
        st.data_ms += ms_since(&t);
        mark(m, &c->hooks, GPT2C_PHASE_FORWARD);
        GPT2C_TRY(gpt2c_model_forward_loss(m, inputs, targets, c->B, c->T, src->loss, &loss));
        st.forward_ms += ms_since(&t);
        mark(m, &c->hooks, GPT2C_PHASE_BACKWARD);
        /* the last backward starts the reduce as each layer's gradients become final */
        if (dp && dp->arm && micro == c->accum - 1) dp->arm(dp->ctx, m);
        GPT2C_TRY(gpt2c_model_backward(m, 1.0f / ((float)c->accum * nranks)));
        GPT2C_TRY(wait_device(m));
        st.backward_ms += ms_since(&t);
        loss_sum += loss;
    }
    double loss_mean = loss_sum / c->accum;
    if (dp) { /* reduce: a no-op for one process */
        mark(m, &c->hooks, GPT2C_PHASE_COMM);
        GPT2C_TRY(dp->reduce(dp->ctx, m, &loss_mean));
        st.reduce_ms = ms_since(&t);
    }
    /* a NaN/Inf loss would poison the weights: stop before the update */
    if (!isfinite(loss_mean))
        return gpt2c_fail(GPT2C_ERR_RANGE,
                          "step %d: the loss is %g (non-finite): training stopped before updating the weights; "
                          "nothing is saved (the last checkpoint written is kept)",
                          c->step, loss_mean);
    mark(m, &c->hooks, GPT2C_PHASE_OPTIMIZER);
    if (dp && dp->update) {
        GPT2C_TRY(dp->update(dp->ctx, m, &c->adamw, c->lr, &st.norm));
        gpt2c_model_refresh_bf16(m, 0); /* bf16 precision: the copies follow the gathered weights */
    } else GPT2C_TRY(gpt2c_model_update(m, &c->adamw, c->lr, &st.norm));
    if (!isfinite(st.norm))
        return gpt2c_fail(GPT2C_ERR_RANGE,
                          "step %d: the gradient norm is %g (non-finite): training stopped; nothing is saved (the "
                          "last checkpoint written is kept)",
                          c->step, (double)st.norm);
    GPT2C_TRY(wait_device(m));
    st.update_ms += ms_since(&t);
    st.loss = (float)loss_mean;
    st.total_ms = (double)(t - t_start) * 1e-6;
    if (out) *out = st;
    return GPT2C_OK;
}
