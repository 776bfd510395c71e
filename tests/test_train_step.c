/* The one training step (gpt2c_train_step): the same numbers as its stages
 * called by hand; the reduce stage called once per step (after arm, before
 * the update); frozen tensors (gpt2c_model_set_trainable) keep their values,
 * get no gradient and no moments, while every trainable tensor ends bit for
 * bit where a run with nothing frozen puts it (no clipping, so the norm does
 * not couple them). */
#include <stdint.h>

#include "gpt2c/core.h"
#include "gpt2c/model.h"
#include "gpt2c/precision.h"
#include "gpt2c/quant_model.h"
#include "gpt2c/train.h"
#include "testutil.h"
#include "grads_fresh.h"
#include "model/model_internal.h"

enum { B = 2, T = 8 };
static int32_t g_tok[B * T + 1];

static gpt2c_status next_batch(void *ctx, const int32_t **inputs, const int32_t **targets) {
    (void)ctx;
    *inputs = g_tok;
    *targets = g_tok + 1;
    return GPT2C_OK;
}

static gpt2c_model *make(void) {
    gpt2c_config cfg = {16, 60, 0, 2, 2, 32};
    gpt2c_model *m = NULL;
    CHECK_OK(gpt2c_model_create(&cfg, &m));
    if (!m) return NULL;
    CHECK_OK(gpt2c_model_set_backend(m, "cpu"));
    gpt2c_model_init_random(m, 7);
    return m;
}

static int arms, reduces, order_ok = 1;
static void dp_arm(void *ctx, gpt2c_model *m) {
    (void)ctx;
    (void)m;
    arms++;
}
static gpt2c_status dp_reduce(void *ctx, gpt2c_model *m, double *loss) {
    (void)ctx;
    (void)loss;
    if (arms != reduces + 1 || m->grads_zero) order_ok = 0; /* after the armed backward, before the update */
    reduces++;
    return GPT2C_OK;
}
static gpt2c_status dp_mean(void *ctx, double *v) {
    (void)ctx;
    (void)v;
    return GPT2C_OK;
}

static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* Fresh gradients (model_internal.h's grads_stale): after an update that left
 * the matmul weights' gradients stale, a backward (overwriting them) gives the
 * bits of one on zeroed gradients (accumulating), in fp32 and bf16; a second
 * micro-batch adds to them as before; gpt2c_model_zero_grad writes nothing
 * over them; an update with no backward since the last one sees no gradient,
 * not the stale one; quantizing the weights (whose backward then writes no
 * weight gradient) zeroes them. */
static void test_fresh_grads(gpt2c_format prec) {
    gpt2c_model *a = make(), *z = make();
    if (!a || !z) return;
    CHECK_OK(gpt2c_model_set_precision(a, prec));
    CHECK_OK(gpt2c_model_set_precision(z, prec));
    const gpt2c_adamw_cfg opt = {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
    gpt2c_model *ms[2] = {a, z};
    float loss;
    for (int i = 0; i < 2; i++) {
        CHECK_OK(gpt2c_model_forward(ms[i], g_tok, g_tok + 1, B, T, &loss));
        gpt2c_model_zero_grad(ms[i]);
        CHECK_OK(gpt2c_model_backward(ms[i], 1.0f));
        CHECK_OK(gpt2c_model_update(ms[i], &opt, 1e-2f, NULL));
    }
    CHECK_MSG(a->grads_stale && !a->grads_zero, "%s: the update left no stale gradients", gpt2c_precision_name(prec));
    /* a: zero_grad as a training loop calls it, with nothing to write (the backward overwrites) */
    const float *fcw_g = gpt2c_param_slice(a, a->grads_mem, GPT2C_P_FCW, 0);
    const float g0 = fcw_g[0];
    gpt2c_model_zero_grad(a);
    CHECK_MSG(a->grads_stale && fcw_g[0] == g0 && g0 != 0.0f, "%s: zero_grad wrote over the stale gradients",
              gpt2c_precision_name(prec));
    gpt2c_model_zero_grad_slab(z); /* z: zeroed, so its backward accumulates onto zeros */
    CHECK(z->grads_zero && !z->grads_stale);
    int32_t tok2[B * T + 1]; /* the second micro-batch: the tokens reversed */
    for (int i = 0; i <= B * T; i++) tok2[i] = g_tok[B * T - i];
    for (int micro = 0; micro < 2; micro++) {
        const int32_t *tok = micro ? tok2 : g_tok;
        for (int i = 0; i < 2; i++) {
            CHECK_OK(gpt2c_model_forward(ms[i], tok, tok + 1, B, T, &loss));
            CHECK_OK(gpt2c_model_backward(ms[i], 1.0f));
        }
        CHECK_MSG(same(a->grads_mem, z->grads_mem, a->slab_floats),
                  "%s: micro-batch %d: gradients on stale (overwritten) and zeroed (accumulated) slabs differ",
                  gpt2c_precision_name(prec), micro);
    }
    for (int i = 0; i < 2; i++) CHECK_OK(gpt2c_model_update(ms[i], &opt, 1e-2f, NULL));
    CHECK(same(a->params_mem, z->params_mem, a->slab_floats));
    /* a second update with no backward: as on zero gradients (moments decay, weights decay) */
    gpt2c_model_zero_grad_slab(z);
    for (int i = 0; i < 2; i++) CHECK_OK(gpt2c_model_update(ms[i], &opt, 1e-2f, NULL));
    CHECK_MSG(same(a->params_mem, z->params_mem, a->slab_floats) && same(a->m_mem, z->m_mem, a->slab_floats),
              "%s: an update after an update used the stale gradients", gpt2c_precision_name(prec));
    if (prec == GPT2C_FMT_F32) { /* stale, then quantized: zeroed */
        CHECK_OK(gpt2c_model_forward(a, g_tok, g_tok + 1, B, T, &loss));
        CHECK_OK(gpt2c_model_backward(a, 1.0f));
        CHECK_OK(gpt2c_model_update(a, &opt, 1e-2f, NULL));
        CHECK(a->grads_stale);
        CHECK_OK(gpt2c_quantize_model(a, GPT2C_FMT_Q8, 0, 0, NULL));
        size_t nz = 0;
        for (size_t i = 0; i < a->slab_floats; i++) nz += a->grads_mem[i] != 0.0f;
        CHECK_MSG(a->grads_zero && !a->grads_stale && nz == 0, "quantized after an update: %zu stale gradients kept", nz);
    }
    gpt2c_model_free(a), gpt2c_model_free(z);
}

int main(void) {
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 3, 0);
    for (int i = 0; i <= B * T; i++) g_tok[i] = (int32_t)(gpt2c_rng_u64(&r) % 60);
    const gpt2c_adamw_cfg opt = {0.9f, 0.95f, 1e-8f, 0.1f, 0.0f, 0};
    const gpt2c_batch_source src = {next_batch, NULL, NULL};

    /* 1. the step == its stages by hand (two steps, accum 2) */
    gpt2c_model *a = make(), *b = make();
    if (!a || !b) return tu_finish("test_train_step");
    const gpt2c_step_cfg sc = {B, T, 2, 1e-3f, opt, NULL, {0}, 0};
    for (int s = 0; s < 2; s++) {
        gpt2c_step_stats st;
        CHECK_OK(gpt2c_train_step(a, &sc, &src, &st));
        gpt2c_model_zero_grad(b);
        float l0, l1, norm;
        CHECK_OK(gpt2c_model_forward(b, g_tok, g_tok + 1, B, T, &l0));
        CHECK_OK(gpt2c_model_backward(b, 0.5f));
        CHECK_OK(gpt2c_model_forward(b, g_tok, g_tok + 1, B, T, &l1));
        CHECK_OK(gpt2c_model_backward(b, 0.5f));
        CHECK_OK(gpt2c_model_update(b, &opt, 1e-3f, &norm));
        CHECK(st.loss == (float)(((double)l0 + l1) / 2) && st.norm == norm);
        CHECK(st.total_ms >= 0 && st.forward_ms >= 0 && st.backward_ms >= 0 && st.update_ms >= 0);
    }
    CHECK_MSG(same(a->params_mem, b->params_mem, a->slab_floats), "train_step differs from its stages");

    /* 2. the reduce stage: armed before the last backward, called once per step */
    gpt2c_train_dp dp = {0, 1, NULL, dp_arm, dp_reduce, NULL, dp_mean};
    gpt2c_step_cfg sd = sc;
    sd.dp = &dp;
    CHECK_OK(gpt2c_train_step(a, &sd, &src, NULL));
    CHECK(arms == 1 && reduces == 1 && order_ok);

    /* 3. frozen tensors: untouched, no gradient, no moments; the others as in a full run */
    gpt2c_model *f = make(), *full = make();
    if (!f || !full) return tu_finish("test_train_step");
    const int frozen[] = {GPT2C_P_WTE, GPT2C_P_WPE, GPT2C_P_LN1W, GPT2C_P_QKVW, GPT2C_P_ATTPROJB, GPT2C_P_LNFB};
    for (size_t i = 0; i < sizeof frozen / sizeof frozen[0]; i++) CHECK_OK(gpt2c_model_set_trainable(f, frozen[i], 0));
    CHECK_FAILS(gpt2c_model_set_trainable(f, GPT2C_NUM_PARAM_TENSORS, 0), GPT2C_ERR_ARG);
    CHECK(f->num_frozen == 6);
    float *before = malloc(sizeof(float) * f->slab_floats);
    memcpy(before, f->params_mem, sizeof(float) * f->slab_floats);
    /* one step of each: the same forward, so the trainable tensors' updates match */
    CHECK_OK(gpt2c_train_step(f, &sc, &src, NULL));
    CHECK_OK(gpt2c_train_step(full, &sc, &src, NULL));
    float *after1 = malloc(sizeof(float) * f->slab_floats);
    memcpy(after1, f->params_mem, sizeof(float) * f->slab_floats);
    CHECK_OK(gpt2c_train_step(f, &sc, &src, NULL)); /* and a second: frozen still untouched */
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        const size_t n = f->info[id].numel;
        const float *p = gpt2c_param_slice(f, f->params_mem, id, 0), *p0 = gpt2c_param_slice(f, before, id, 0);
        const float *pf = gpt2c_param_slice(full, full->params_mem, id, 0), *p1 = gpt2c_param_slice(f, after1, id, 0);
        const float *mom = gpt2c_param_slice(f, f->m_mem, id, 0);
        if (!f->trainable[id]) {
            int zero = 1;
            for (size_t i = 0; i < n; i++) zero &= mom[i] == 0.0f;
            CHECK_MSG(same(p, p0, n) && zero, "frozen tensor %s changed or has moments", f->info[id].name);
        } else {
            CHECK_MSG(same(p1, pf, n), "trainable tensor %s differs from the full run", f->info[id].name);
            CHECK_MSG(!same(p, p1, n), "trainable tensor %s did not move in step 2", f->info[id].name);
        }
    }
    /* the update left the matmul weights' gradients for the next backward to
     * overwrite (cpu: adamw_zero_grad and adamw), every other one zero */
    CHECK_MSG(f->grads_stale && !f->grads_zero, "update: matmul weights' gradients not left stale (stale %d, zero %d)",
              f->grads_stale, f->grads_zero);
    CHECK_MSG(tu_grads_not_fresh(f, f->grads_mem) == 0, "gradient slab: %zu gradients outside the stale ones not zero",
              tu_grads_not_fresh(f, f->grads_mem));
    free(before);
    free(after1);
    test_fresh_grads(GPT2C_FMT_F32);
    test_fresh_grads(GPT2C_FMT_BF16);
    gpt2c_model_free(a), gpt2c_model_free(b), gpt2c_model_free(f), gpt2c_model_free(full);
    return tu_finish("test_train_step");
}
