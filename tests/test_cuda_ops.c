/* Every cuda op against its ref op, on random shapes including ragged ones
 * (T not a multiple of the tiles, C not a multiple of 32, odd head sizes,
 * unaligned bias, V < Vp), then a tiny model trained one step on both.
 * Needs a CUDA device: without one (or in a build without CUDA) it exits 77
 * ("no CUDA device: skipped"), so ctest reports it skipped, not passed.
 * GPT2C_FAKE_DEVICE=1 runs it on tests/fake_device.h instead (ref on fake
 * device memory): a self-test of this harness that needs no GPU. */
#include <stdint.h>

#include "fake_device.h"
#include "gpt2c/model.h"
#include "kernels/kernels.h"
#include "testutil.h"
#include "model/model_internal.h"

static const gpt2c_kernels *K, *R;
static gpt2c_rng rng;

static float *rnd(size_t n, float mean, float scale) {
    float *x = malloc(n * sizeof(float) + 64);
    for (size_t i = 0; i < n; i++) x[i] = mean + scale * gpt2c_rng_normal(&rng);
    return x;
}
static int32_t *rnd_ids(size_t n, int V) {
    int32_t *x = malloc(n * sizeof(int32_t) + 64);
    for (size_t i = 0; i < n; i++) x[i] = (int32_t)(gpt2c_rng_u64(&rng) % (uint64_t)V);
    return x;
}
static float *dup(const float *x, size_t n) {
    float *y = malloc(n * sizeof(float) + 64);
    memcpy(y, x, n * sizeof(float));
    return y;
}
/* device copy of host data (bytes), or a zeroed buffer when h is NULL */
static void *up(const void *h, size_t bytes) {
    void *d = K->dev_alloc(bytes ? bytes : 4, "test buffer");
    if (!d) {
        fprintf(stderr, "dev_alloc: %s\n", gpt2c_errmsg());
        exit(1);
    }
    if (h && bytes) CHECK_OK(K->memcpy_h2d(d, h, bytes));
    return d;
}
static float *down(const void *d, size_t n) {
    float *h = malloc(n * sizeof(float) + 64);
    CHECK_OK(K->memcpy_d2h(h, d, n * sizeof(float)));
    CHECK_OK(K->device_check());
    return h;
}
/* compares a device result with the host reference, relative to the reference's scale */
static void cmp(const char *what, const char *shape, const void *dev_got, const float *want, size_t n, double tol) {
    float *got = down(dev_got, n);
    double e = tu_max_rel_err(got, want, n, 1e-6);
    CHECK_MSG(e <= tol, "%s %s: max rel err %.3g > %.3g", what, shape, e, tol);
    free(got);
}

typedef struct {
    int B, T, C, NH;
} shape;

static void test_encoder(const shape *s, const char *tag) {
    const int B = s->B, T = s->T, C = s->C, V = 7, N = B * T; /* tiny vocab: many repeated tokens */
    int32_t *tok = rnd_ids(N, V);
    float *wte = rnd(V * C, 0, 1), *wpe = rnd(T * C, 0, 1), *out = rnd(N * C, 0, 1);
    int32_t *dtok = up(tok, N * 4);
    float *dwte_w = up(wte, V * C * 4), *dwpe_w = up(wpe, T * C * 4), *dout = up(NULL, N * C * 4);
    R->encoder_forward(out, tok, wte, wpe, B, T, C);
    K->encoder_forward(dout, dtok, dwte_w, dwpe_w, B, T, C);
    cmp("encoder_forward", tag, dout, out, N * C, 0);
    /* backward accumulates into nonzero grads */
    float *g = rnd(N * C, 0, 1), *dwte = rnd(V * C, 0, 1), *dwpe = rnd(T * C, 0, 1);
    float *dg = up(g, N * C * 4), *ddwte = up(dwte, V * C * 4), *ddwpe = up(dwpe, T * C * 4);
    R->encoder_backward(dwte, dwpe, g, tok, B, T, C);
    K->encoder_backward(ddwte, ddwpe, dg, dtok, B, T, C);
    cmp("encoder_backward dwte", tag, ddwte, dwte, V * C, 1e-6);
    cmp("encoder_backward dwpe", tag, ddwpe, dwpe, T * C, 1e-6);
    void *ptrs[] = {dtok, dwte_w, dwpe_w, dout, dg, ddwte, ddwpe};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) K->dev_free(ptrs[i]);
    free(tok), free(wte), free(wpe), free(out), free(g), free(dwte), free(dwpe);
}

static void test_layernorm(const shape *s, const char *tag) {
    const int N = s->B * s->T, C = s->C;
    const size_t NC = (size_t)N * C;
    float *x = rnd(NC, 3, 2), *x2 = rnd(NC, -1, 1), *w = rnd(C, 1, 0.3f), *b = rnd(C, 0, 0.3f);
    float *out = rnd(NC, 0, 1), *mean = rnd(N, 0, 1), *rstd = rnd(N, 0, 1), *res = rnd(NC, 0, 1);
    float *dx = up(x, NC * 4), *dx2 = up(x2, NC * 4), *dw = up(w, C * 4), *db = up(b, C * 4);
    float *dout = up(NULL, NC * 4), *dmean = up(NULL, N * 4), *drstd = up(NULL, N * 4), *dres = up(NULL, NC * 4);
    R->layernorm_forward(out, mean, rstd, x, w, b, N, C);
    K->layernorm_forward(dout, dmean, drstd, dx, dw, db, N, C);
    cmp("layernorm_forward out", tag, dout, out, NC, 1e-6);
    cmp("layernorm_forward mean", tag, dmean, mean, N, 1e-6);
    cmp("layernorm_forward rstd", tag, drstd, rstd, N, 1e-6);
    /* backward: all three outputs accumulate */
    float *g = rnd(NC, 0, 1), *gx = rnd(NC, 0, 1), *gw = rnd(C, 0, 1), *gb = rnd(C, 0, 1);
    float *dg = up(g, NC * 4), *dgx = up(gx, NC * 4), *dgw = up(gw, C * 4), *dgb = up(gb, C * 4);
    R->layernorm_backward(gx, gw, gb, g, x, w, mean, rstd, N, C);
    K->layernorm_backward(dgx, dgw, dgb, dg, dx, dw, dmean, drstd, N, C);
    cmp("layernorm_backward dinp", tag, dgx, gx, NC, 1e-5);
    cmp("layernorm_backward dw", tag, dgw, gw, C, 1e-5);
    cmp("layernorm_backward db", tag, dgb, gb, C, 1e-5);
    /* deterministic: the same call twice gives the same bits */
    float *again = up(gw, C * 4), *againx = up(gx, NC * 4), *againb = up(gb, C * 4);
    float *first = down(dgw, C);
    K->zero(again, C);
    K->zero(dgw, C);
    K->layernorm_backward(againx, again, againb, dg, dx, dw, dmean, drstd, N, C);
    K->layernorm_backward(dgx, dgw, dgb, dg, dx, dw, dmean, drstd, N, C);
    float *a1 = down(again, C), *a2 = down(dgw, C);
    CHECK_MSG(memcmp(a1, a2, C * 4) == 0, "layernorm_backward %s: not deterministic", tag);
    free(first), free(a1), free(a2);
    /* fused residual + layernorm */
    R->residual_layernorm_forward(res, out, mean, rstd, x, x2, w, b, N, C);
    K->residual_layernorm_forward(dres, dout, dmean, drstd, dx, dx2, dw, db, N, C);
    cmp("residual_layernorm residual", tag, dres, res, NC, 0);
    cmp("residual_layernorm out", tag, dout, out, NC, 1e-6);
    cmp("residual_layernorm rstd", tag, drstd, rstd, N, 1e-6);
    void *ptrs[] = {dx, dx2, dw, db, dout, dmean, drstd, dres, dg, dgx, dgw, dgb, again, againx, againb};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) K->dev_free(ptrs[i]);
    free(x), free(x2), free(w), free(b), free(out), free(mean), free(rstd), free(res), free(g), free(gx), free(gw),
        free(gb);
}

static void test_matmul(int N, int IC, int OC, const char *tag) {
    float *x = rnd((size_t)N * IC, 0, 1), *w = rnd((size_t)OC * IC, 0, 0.1f), *bias = rnd(OC + 1, 0, 1);
    float *out = rnd((size_t)N * OC, 0, 1);
    float *dx = up(x, (size_t)N * IC * 4), *dw = up(w, (size_t)OC * IC * 4), *dbias = up(bias, (OC + 1) * 4);
    float *dout = up(NULL, (size_t)N * OC * 4);
    const gpt2c_tensor W = gpt2c_tensor_f32(w, OC, IC), DW = gpt2c_tensor_f32(dw, OC, IC);
    R->matmul_forward(out, x, &W, bias, N, IC, OC);
    K->matmul_forward(dout, dx, &DW, dbias, N, IC, OC);
    cmp("matmul_forward bias", tag, dout, out, (size_t)N * OC, 1e-5);
    R->matmul_forward(out, x, &W, NULL, N, IC, OC);
    K->matmul_forward(dout, dx, &DW, NULL, N, IC, OC);
    cmp("matmul_forward nobias", tag, dout, out, (size_t)N * OC, 1e-5);
    R->matmul_forward(out, x, &W, bias + 1, N, IC, OC); /* a bias only 4-byte aligned */
    K->matmul_forward(dout, dx, &DW, dbias + 1, N, IC, OC);
    cmp("matmul_forward unaligned bias", tag, dout, out, (size_t)N * OC, 1e-5);
    /* backward: dinp overwritten, dw and dbias accumulate */
    float *g = rnd((size_t)N * OC, 0, 1), *gx = rnd((size_t)N * IC, 0, 1), *gw = rnd((size_t)OC * IC, 0, 1),
          *gb = rnd(OC, 0, 1);
    float *dg = up(g, (size_t)N * OC * 4), *dgx = up(gx, (size_t)N * IC * 4), *dgw = up(gw, (size_t)OC * IC * 4),
          *dgb = up(gb, OC * 4);
    R->matmul_backward(gx, gw, gb, g, x, &W, N, IC, OC, 1);
    K->matmul_backward(dgx, dgw, dgb, dg, dx, &DW, N, IC, OC, 1);
    cmp("matmul_backward dinp", tag, dgx, gx, (size_t)N * IC, 1e-5);
    cmp("matmul_backward dw", tag, dgw, gw, (size_t)OC * IC, 1e-5);
    cmp("matmul_backward dbias", tag, dgb, gb, OC, 1e-5);
    R->matmul_backward(NULL, gw, NULL, g, x, &W, N, IC, OC, 1); /* the LM head's call: no dinp... */
    K->matmul_backward(NULL, dgw, NULL, dg, dx, &DW, N, IC, OC, 1);
    cmp("matmul_backward dw (no dinp, no dbias)", tag, dgw, gw, (size_t)OC * IC, 1e-5);
    void *ptrs[] = {dx, dw, dbias, dout, dg, dgx, dgw, dgb};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) K->dev_free(ptrs[i]);
    free(x), free(w), free(bias), free(out), free(g), free(gx), free(gw), free(gb);
}

static void test_attention(const shape *s, const char *tag) {
    const int B = s->B, T = s->T, C = s->C, NH = s->NH;
    const size_t n3 = (size_t)B * T * 3 * C, n1 = (size_t)B * T * C;
    float *qkv = rnd(n3, 0, 1), *out = malloc(n1 * 4), *state = malloc(R->attention_state_floats(B, T, NH) * 4);
    float *scratch = malloc(R->attention_scratch_floats(B, T, NH) * 4 + 4);
    float *dqkv_w = up(qkv, n3 * 4), *dout = up(NULL, n1 * 4);
    float *dstate = up(NULL, K->attention_state_floats(B, T, NH) * 4);
    float *dscratch = up(NULL, K->attention_scratch_floats(B, T, NH) * 4);
    R->attention_forward(out, state, qkv, B, T, C, NH);
    K->attention_forward(dout, dstate, dqkv_w, B, T, C, NH);
    cmp("attention_forward", tag, dout, out, n1, 1e-5);
    float *g = rnd(n1, 0, 1), *gq = rnd(n3, 0, 1); /* dqkv starts as garbage: it is overwritten */
    float *dg = up(g, n1 * 4), *dgq = up(gq, n3 * 4);
    R->attention_backward(gq, scratch, g, qkv, out, state, B, T, C, NH);
    K->attention_backward(dgq, dscratch, dg, dqkv_w, dout, dstate, B, T, C, NH);
    cmp("attention_backward dqkv", tag, dgq, gq, n3, 1e-4);
    float *first = down(dgq, n3);
    K->attention_backward(dgq, dscratch, dg, dqkv_w, dout, dstate, B, T, C, NH);
    float *second = down(dgq, n3);
    CHECK_MSG(memcmp(first, second, n3 * 4) == 0, "attention_backward %s: not deterministic", tag);
    void *ptrs[] = {dqkv_w, dout, dstate, dscratch, dg, dgq};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) K->dev_free(ptrs[i]);
    free(qkv), free(out), free(state), free(scratch), free(g), free(gq), free(first), free(second);
}

static void test_pointwise(size_t n, const char *tag) {
    float *x = rnd(n, 0, 2), *y = rnd(n, 0, 1), *out = malloc(n * 4 + 4);
    float *dx = up(x, n * 4), *dy = up(y, n * 4), *dout = up(NULL, n * 4);
    R->gelu_forward(out, x, n);
    K->gelu_forward(dout, dx, n);
    cmp("gelu_forward", tag, dout, out, n, 1e-6);
    float *g = dup(y, n);
    R->gelu_backward(g, x, g, n); /* in place, as the model calls it */
    K->gelu_backward(dy, dx, dy, n);
    cmp("gelu_backward (in place)", tag, dy, g, n, 1e-5); /* float tanh vs ref's double */
    R->residual_forward(out, x, g, n);
    K->residual_forward(dout, dx, dy, n);
    cmp("residual_forward", tag, dout, out, n, 1e-6);
    double want = R->sumsq(x, n), got = K->sumsq(dx, n);
    CHECK_MSG(fabs(got - want) <= 1e-12 * want, "sumsq %s: %.17g vs %.17g", tag, got, want);
    CHECK_MSG(K->sumsq(dx, n) == got, "sumsq %s: not deterministic", tag);
    K->zero(dout, n);
    memset(out, 0, n * 4);
    cmp("zero", tag, dout, out, n, 0);
    /* AdamW, twice (t = 1, 2), with clipping scale and decay */
    float *p = rnd(n, 0, 1), *m = rnd(n, 0, 0.1f), *v = rnd(n, 1, 0.1f);
    for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
    float *dp = up(p, n * 4), *dm = up(m, n * 4), *dv = up(v, n * 4);
    for (int t = 1; t <= 2; t++) {
        R->adamw(p, x, m, v, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, t);
        K->adamw(dp, dx, dm, dv, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, t);
    }
    cmp("adamw p", tag, dp, p, n, 1e-6);
    cmp("adamw m", tag, dm, m, n, 1e-6);
    cmp("adamw v", tag, dv, v, n, 1e-6);
    float *gp = down(dp, n);
    printf("  adamw %s: %s ref\n", tag, memcmp(gp, p, n * 4) == 0 ? "bitwise equal to" : "NOT bitwise equal to");
    void *ptrs[] = {dx, dy, dout, dp, dm, dv};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) K->dev_free(ptrs[i]);
    free(x), free(y), free(out), free(g), free(p), free(m), free(v), free(gp);
}

static void test_xent(int N, int V, int Vp, const char *tag) {
    const size_t n = (size_t)N * Vp;
    float *lg = rnd(n, 0, 3), *loss = malloc(N * 4 + 4);
    int32_t *tg = rnd_ids(N, V);
    float *dlg = up(lg, n * 4), *dloss = up(NULL, N * 4);
    int32_t *dtg = up(tg, N * 4);
    R->softmax_xent_forward(loss, lg, tg, N, V, Vp);
    K->softmax_xent_forward(dloss, dlg, dtg, N, V, Vp);
    cmp("softmax_xent_forward losses", tag, dloss, loss, N, 1e-6);
    cmp("softmax_xent_forward probs", tag, dlg, lg, n, 1e-6);
    R->softmax_xent_backward(lg, tg, 1.0f / N, N, V, Vp);
    K->softmax_xent_backward(dlg, dtg, 1.0f / N, N, V, Vp);
    cmp("softmax_xent_backward", tag, dlg, lg, n, 1e-6);
    K->dev_free(dlg), K->dev_free(dloss), K->dev_free(dtg);
    free(lg), free(loss), free(tg);
}

/* A tiny model on ref and on cuda: logits, loss, every gradient and the
 * norm must agree tightly on the same parameters.  After an AdamW step they
 * legitimately drift: a gradient element near 0 can change sign between the
 * two, and step 1 moves it by +-lr either way, so parameters are compared
 * to within a few lr, and the next loss loosely. */
static void test_model(int L, int C, int NH, int V, int B, int T) {
    gpt2c_config cfg = {.max_seq_len = T + 3, .vocab_size = V, .num_layers = L, .num_heads = NH, .channels = C};
    gpt2c_model *a, *b;
    CHECK_OK(gpt2c_model_create(&cfg, &a));
    CHECK_OK(gpt2c_model_create(&cfg, &b));
    CHECK_OK(gpt2c_model_set_backend(a, "ref"));
    gpt2c_model_init_random(a, 5);
    gpt2c_model_init_random(b, 5);
    CHECK_OK(gpt2c_model_use_kernels(b, K)); /* the one upload */
    int32_t *x = rnd_ids((size_t)B * T, V), *y = rnd_ids((size_t)B * T, V);
    char tag[64];
    snprintf(tag, sizeof tag, "(model L%d C%d NH%d T%d)", L, C, NH, T);

    CHECK_OK(gpt2c_model_forward(b, x, NULL, B, T, NULL)); /* inference: logits come back */
    CHECK_OK(gpt2c_model_forward(a, x, NULL, B, T, NULL));
    double e = tu_max_rel_err(gpt2c_model_logits(b), gpt2c_model_logits(a), (size_t)B * T * a->cfg.padded_vocab_size, 1e-6);
    CHECK_MSG(e <= 1e-4, "logits %s: max rel err %.3g", tag, e);

    gpt2c_adamw_cfg opt = {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1.0f};
    const float lr = 1e-3f;
    float la = 0, lb = 0, na = 0, nb = 0;
    CHECK_OK(gpt2c_model_forward(a, x, y, B, T, &la));
    CHECK_OK(gpt2c_model_forward(b, x, y, B, T, &lb));
    CHECK_MSG(fabsf(la - lb) <= 1e-5f * fabsf(la), "loss %s: ref %.7f cuda %.7f", tag, la, lb);
    CHECK_OK(gpt2c_model_backward(a, 1.0f));
    CHECK_OK(gpt2c_model_backward(b, 1.0f));
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
        cmp(a->info[id].name, tag, b->grads.t[id], a->grads.t[id], a->info[id].numel, 1e-4);
    CHECK_OK(gpt2c_model_update(a, &opt, lr, &na));
    CHECK_OK(gpt2c_model_update(b, &opt, lr, &nb));
    CHECK_MSG(fabsf(na - nb) <= 1e-4f * na, "grad norm %s: ref %g cuda %g", tag, na, nb);
    float *hb;
    CHECK_OK(gpt2c_model_params_host(b, &hb));
    double maxd = 0;
    for (size_t i = 0; i < a->slab_floats; i++) maxd = fmax(maxd, fabs((double)hb[i] - a->params_mem[i]));
    CHECK_MSG(maxd <= 2.5 * lr, "params after a step %s: max abs diff %.3g > 2.5 lr", tag, maxd);
    CHECK_OK(gpt2c_model_forward(a, x, y, B, T, &la));
    CHECK_OK(gpt2c_model_forward(b, x, y, B, T, &lb));
    CHECK_MSG(fabsf(la - lb) <= 1e-3f * fabsf(la), "loss after a step %s: ref %.7f cuda %.7f", tag, la, lb);
    gpt2c_model_free(a);
    gpt2c_model_free(b);
    free(x), free(y);
}

/* Profiler scopes get GPU times: every op scope of a forward is closed,
 * non-negative, in order, and inside the host-measured span. */
static void test_profiler(void) {
    gpt2c_device_peaks pk;
    CHECK_OK(K->device_peaks(&pk));
    printf("  device: %s: fp32 %.1f, tf32 %.1f, bf16 %.1f TFLOP/s, %.0f GB/s\n", pk.name, pk.fp32_flops / 1e12,
           pk.tf32_flops / 1e12, pk.bf16_flops / 1e12, pk.mem_bytes_per_s / 1e9);
    if (K == &FAKE) return;
    CHECK(pk.fp32_flops > 1e12 && pk.mem_bytes_per_s > 1e11);
    gpt2c_config cfg = {.max_seq_len = 64, .vocab_size = 500, .num_layers = 2, .num_heads = 4, .channels = 128};
    gpt2c_model *m;
    CHECK_OK(gpt2c_model_create(&cfg, &m));
    gpt2c_model_init_random(m, 1);
    CHECK_OK(gpt2c_model_use_kernels(m, K));
    int32_t *x = rnd_ids(4 * 64, 500);
    gpt2c_profiler prof;
    CHECK_OK(gpt2c_profiler_init(&prof, 1024));
    CHECK_OK(K->prof_attach(&prof));
    m->prof = &prof;
    uint64_t h0 = gpt2c_now_ns();
    CHECK_OK(gpt2c_model_forward(m, x, x, 4, 64, NULL));
    CHECK_OK(K->prof_resolve(&prof));
    uint64_t h1 = gpt2c_now_ns();
    CHECK(prof.n > 10);
    uint64_t gpu_ns = 0;
    for (size_t i = 0; i < prof.n; i++) {
        const gpt2c_prof_event *e = &prof.events[i];
        CHECK_MSG(e->t1_ns >= e->t0_ns && e->t0_ns + 50000 >= h0 && e->t1_ns <= h1 + 50000,
                  "event %zu (%s): [%llu, %llu] outside [%llu, %llu]", i, gpt2c_op_name((gpt2c_op)e->op),
                  (unsigned long long)e->t0_ns, (unsigned long long)e->t1_ns, (unsigned long long)h0,
                  (unsigned long long)h1);
        if (i) CHECK(e->t0_ns + 2000 >= prof.events[i - 1].t1_ns); /* one stream: ops do not overlap */
        gpu_ns += e->t1_ns - e->t0_ns;
    }
    CHECK(gpu_ns > 0);
    printf("  profiler: %zu scopes, %.3f ms of GPU time in a %.3f ms forward\n", prof.n, gpu_ns / 1e6, (h1 - h0) / 1e6);
    K->prof_detach(&prof);
    CHECK(prof.on_begin == NULL && prof.ext == NULL);
    m->prof = NULL;
    gpt2c_profiler_free(&prof);
    gpt2c_model_free(m);
    free(x);
}

#ifdef GPT2C_HAVE_CUDA
#include "kernels/cuda/cuda_ops.h"
/* TF32 matmuls: same results to TF32's 10-bit mantissa */
static void test_tf32(void) {
    if (K == &FAKE) return;
    gpt2c_cuda_set_matmul_tf32(1);
    const int N = 67, IC = 200, OC = 130;
    float *x = rnd((size_t)N * IC, 0, 1), *w = rnd((size_t)OC * IC, 0, 0.1f), *bias = rnd(OC, 0, 1);
    float *out = malloc((size_t)N * OC * 4);
    float *dx = up(x, (size_t)N * IC * 4), *dw = up(w, (size_t)OC * IC * 4), *db = up(bias, OC * 4);
    float *dout = up(NULL, (size_t)N * OC * 4);
    const gpt2c_tensor W = gpt2c_tensor_f32(w, OC, IC), DW = gpt2c_tensor_f32(dw, OC, IC);
    R->matmul_forward(out, x, &W, bias, N, IC, OC);
    K->matmul_forward(dout, dx, &DW, db, N, IC, OC);
    cmp("matmul_forward tf32", "(N=67 IC=200 OC=130)", dout, out, (size_t)N * OC, 5e-3);
    gpt2c_cuda_set_matmul_tf32(0);
    K->dev_free(dx), K->dev_free(dw), K->dev_free(db), K->dev_free(dout);
    free(x), free(w), free(bias), free(out);
}
/* 64-wide heads go to the register-tiled kernels (test_attention above);
 * the row kernels, which take every other head size, check them too */
static void test_attention_rows(const shape *s, const char *tag) {
    if (K == &FAKE || s->C != 64 * s->NH) return;
    char t2[96];
    snprintf(t2, sizeof t2, "%s row kernels", tag);
    gpt2c_cuda_set_attention_tiled(0);
    test_attention(s, t2);
    gpt2c_cuda_set_attention_tiled(1);
}
#else
static void test_tf32(void) {}
static void test_attention_rows(const shape *s, const char *tag) { (void)s, (void)tag; }
#endif

int main(void) {
    CHECK_OK(gpt2c_kernels_get("ref", &R));
    if (getenv("GPT2C_FAKE_DEVICE")) {
        K = &FAKE;
        printf("GPT2C_FAKE_DEVICE: testing the harness on a fake device (ref ops)\n");
    } else if (gpt2c_kernels_get("cuda", &K) != GPT2C_OK) {
        printf("no CUDA device: skipped (%s)\n", gpt2c_errmsg());
        return 77;
    }
    gpt2c_rng_seed(&rng, 2024, 0);
    /* (B, T, C, NH): ragged T around the 8-row and 32-row tiles, odd head sizes, hs up to 128 */
    static const shape shapes[] = {{1, 1, 8, 1},   {2, 7, 24, 3},   {3, 33, 40, 5},  {2, 65, 96, 2},
                                   {1, 130, 256, 2}, {1, 97, 128, 1}, {2, 64, 768, 12}, {1, 257, 192, 3},
                                   /* head sizes 65 and 18: not a multiple of 4 (the attention's scalar rows) */
                                   {2, 45, 130, 2},  {1, 40, 36, 2},
                                   /* 64-wide heads past one and two 64-row tiles */
                                   {2, 100, 128, 2}, {1, 200, 64, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const shape *s = &shapes[i];
        char tag[64];
        snprintf(tag, sizeof tag, "(B=%d T=%d C=%d NH=%d)", s->B, s->T, s->C, s->NH);
        printf("shape %s\n", tag);
        test_encoder(s, tag);
        test_layernorm(s, tag);
        test_matmul(s->B * s->T, s->C, 3 * s->C, tag);
        test_matmul(s->B * s->T, 4 * s->C, s->C, tag);
        test_attention(s, tag);
        test_attention_rows(s, tag);
        test_pointwise((size_t)s->B * s->T * 4 * s->C + 3, tag);
        test_xent(s->B * s->T, 3 * s->C + 5, (3 * s->C + 5 + 127) / 128 * 128, tag);
    }
    test_matmul(5, 3, 7, "(N=5 IC=3 OC=7)");
    test_matmul(1, 1, 1, "(N=1 IC=1 OC=1)");
    test_xent(4, 50257, 50304, "(GPT-2 vocab)");
    test_pointwise((size_t)1 << 22, "(4M)");
    test_model(2, 64, 4, 100, 3, 17);
    test_model(1, 96, 2, 300, 2, 70); /* hs = 48, T past two key tiles */
    test_tf32();
    test_profiler();
    CHECK_MSG(host_ptr_uses == 0, "%d host pointers reached device ops (fake device)", host_ptr_uses);
    return tu_finish("test_cuda_ops");
}
