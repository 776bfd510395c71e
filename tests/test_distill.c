/* Distillation against PyTorch (fixtures written by
 * tools/reference/distill_fixtures.py):
 *   - the loss of single positions and its gradient w.r.t. the student's
 *     logits, for several temperatures and alphas (and large logits);
 *   - a tiny student distilled from a tiny teacher: the batch's mean loss,
 *     the gradient of every student parameter, and the losses of 3 AdamW
 *     steps run through gpt2c_train_step (the trainer's step);
 *   - alpha 0 is exactly train's cross-entropy; bad configurations fail.
 *
 * Tolerances (relative: max |ours - ref| / max |ref|):
 *   per-position loss 1e-5, its gradient 1e-5 (float32 exponentials, double sums)
 *   batch loss 1e-5, parameter gradients 1e-4, AdamW-step losses 1e-4
 *   (the teacher runs through the inference path, the student through the
 *   training path, both fp32: test_reference's tolerances). */
#include "gpt2c/distill.h"
#include "gpt2c/io.h"
#include "gpt2c/train.h"
#include "model/model_internal.h"
#include "testutil.h"
#include "lib/fixture_f32.h"

#define TOL_ROW 1e-5
#define TOL_LOSS 1e-5
#define TOL_GRAD 1e-4
#define TOL_STEPS 1e-4

static void check_rows(void) {
    gpt2c_st_file *f;
    CHECK_OK(gpt2c_st_open(GPT2C_FIXTURES "/distill/rows.safetensors", &f));
    if (!f) return;
    const int ncases = atoi(gpt2c_st_meta(f, "cases"));
    CHECK(ncases >= 6);
    for (int k = 0; k < ncases; k++) {
        char name[64];
        snprintf(name, sizeof name, "case%d.s", k);
        const gpt2c_st_tensor *st = gpt2c_st_find(f, name);
        CHECK(st && st->ndim == 2);
        if (!st) continue;
        const int R = (int)st->shape[0], V = (int)st->shape[1];
        snprintf(name, sizeof name, "case%d", k);
        const char *meta = gpt2c_st_meta(f, name);
        float tau = 0, alpha = 0;
        CHECK(meta && sscanf(strstr(meta, "\"tau\""), "\"tau\": %f", &tau) == 1 &&
              sscanf(strstr(meta, "\"alpha\""), "\"alpha\": %f", &alpha) == 1);
#define T_(suffix, n) (snprintf(name, sizeof name, "case%d." suffix, k), tu_fixture_f32(f, name, n))
        const float *s = T_("s", (size_t)R * V), *t = T_("t", (size_t)R * V), *loss = T_("loss", (size_t)R);
        const float *grad = T_("grad", (size_t)R * V);
#undef T_
        snprintf(name, sizeof name, "case%d.y", k);
        const gpt2c_st_tensor *yt = gpt2c_st_find(f, name);
        CHECK(s && t && loss && grad && yt && yt->dtype == GPT2C_DT_I32);
        if (!s || !t || !loss || !grad || !yt) continue;
        const int32_t *y = (const int32_t *)yt->data;
        float *row = malloc(sizeof(float) * V), *trow = malloc(sizeof(float) * V), *scr = malloc(sizeof(float) * V);
        double worst_loss = 0, worst_grad = 0;
        for (int r = 0; r < R; r++) {
            memcpy(row, s + (size_t)r * V, sizeof(float) * V);
            memcpy(trow, t + (size_t)r * V, sizeof(float) * V);
            const float l = gpt2c_distill_row(row, trow, scr, y[r], V, tau, alpha, NULL, NULL);
            row[y[r]] -= 1.0f; /* the row holds g + onehot(target) */
            const double el = fabs(l - loss[r]) / fmax(fabs(loss[r]), 1e-6);
            const double eg = tu_max_rel_err(row, grad + (size_t)r * V, (size_t)V, 1e-12);
            worst_loss = fmax(worst_loss, el);
            worst_grad = fmax(worst_grad, eg);
        }
        CHECK_MSG(worst_loss <= TOL_ROW, "case %d (tau %g alpha %g): loss rel err %.3g", k, tau, alpha, worst_loss);
        CHECK_MSG(worst_grad <= TOL_ROW, "case %d (tau %g alpha %g): grad rel err %.3g", k, tau, alpha, worst_grad);
        printf("  rows case %d: tau %-4g alpha %-4g V %d: loss %.2e  dloss/dlogits %.2e\n", k, tau, alpha, V,
               worst_loss, worst_grad);
        free(row);
        free(trow);
        free(scr);
    }
    gpt2c_st_close(f);
}

typedef struct {
    const int32_t *tokens, *targets;
} fixed_batch;

static gpt2c_status fixed_next(void *ctx, const int32_t **in, const int32_t **tg) {
    const fixed_batch *b = ctx;
    *in = b->tokens;
    *tg = b->targets;
    return GPT2C_OK;
}

static void check_model(const char *backend) {
    gpt2c_st_file *ref;
    CHECK_OK(gpt2c_st_open(GPT2C_FIXTURES "/distill/reference.safetensors", &ref));
    if (!ref) return;
    const gpt2c_st_tensor *tok = gpt2c_st_find(ref, "tokens"), *tgt = gpt2c_st_find(ref, "targets");
    CHECK(tok && tgt && tok->ndim == 2);
    if (!tok || !tgt) return;
    const int B = (int)tok->shape[0], T = (int)tok->shape[1];
    const int32_t *tokens = (const int32_t *)tok->data, *targets = (const int32_t *)tgt->data;
    const float tau = (float)atof(gpt2c_st_meta(ref, "tau")), alpha = (float)atof(gpt2c_st_meta(ref, "alpha"));
    gpt2c_model *teacher = NULL, *student = NULL;
    CHECK_OK(gpt2c_model_load(GPT2C_FIXTURES "/distill/teacher.safetensors", &teacher));
    CHECK_OK(gpt2c_model_load(GPT2C_FIXTURES "/distill/student.safetensors", &student));
    if (!teacher || !student) return;
    CHECK_OK(gpt2c_model_set_backend(student, backend));
    CHECK_OK(gpt2c_model_set_backend(teacher, backend));
    /* chunks of 5 positions: sequences of 12 take 3 teacher forwards through its KV cache */
    const gpt2c_distill_cfg dc = {tau, alpha, 5};
    gpt2c_distill *d = NULL;
    CHECK_OK(gpt2c_distill_create(teacher, &student->cfg, T, &dc, &d));
    if (!d) return;
    float loss = 0;
    CHECK_OK(gpt2c_model_forward_loss(student, tokens, targets, B, T, gpt2c_distill_loss(d), &loss));
    const float want = tu_fixture_f32(ref, "loss", 1)[0];
    const double el = fabs(loss - want) / fabs(want);
    CHECK_MSG(el <= TOL_LOSS, "%s: loss %.7f vs PyTorch %.7f", backend, loss, want);
    CHECK_OK(gpt2c_model_alloc_grads(student));
    gpt2c_model_zero_grad(student);
    CHECK_OK(gpt2c_model_backward(student, 1.0f));
    char worst[192] = "";
    const double eg = tu_worst_grad_err(student, ref, "transformer.", worst, sizeof worst);
    CHECK_MSG(eg <= TOL_GRAD, "%s: gradient rel err %.3g (%s)", backend, eg, worst);
    printf("  tiny student (%s): loss %.6f (rel err %.2e), gradients %.2e (worst %s)\n", backend, loss, el, eg, worst);

    /* 3 AdamW steps through the trainer's step, the loss in the batch source */
    const float *ref_losses = tu_fixture_f32(ref, "train_losses", 3);
    CHECK(ref_losses != NULL);
    fixed_batch fb = {tokens, targets};
    const gpt2c_batch_source src = {fixed_next, &fb, gpt2c_distill_loss(d)};
    gpt2c_step_cfg sc = {.B = B, .T = T, .accum = 1, .lr = (float)atof(gpt2c_st_meta(ref, "lr")),
                         .adamw = {(float)atof(gpt2c_st_meta(ref, "beta1")), (float)atof(gpt2c_st_meta(ref, "beta2")),
                                   (float)atof(gpt2c_st_meta(ref, "eps")), 0.0f, 0.0f, 0}};
    CHECK_OK(gpt2c_model_alloc_optimizer(student));
    double worst_step = 0;
    for (int step = 0; step < 3 && ref_losses; step++) {
        gpt2c_step_stats st;
        sc.step = step;
        CHECK_OK(gpt2c_train_step(student, &sc, &src, &st));
        worst_step = fmax(worst_step, fabs(st.loss - ref_losses[step]) / fabs(ref_losses[step]));
    }
    CHECK_MSG(worst_step <= TOL_STEPS, "%s: AdamW-step losses rel err %.3g", backend, worst_step);
    printf("  tiny student (%s): 3 AdamW steps, losses rel err %.2e (PyTorch %.5f %.5f %.5f)\n", backend, worst_step,
           ref_losses ? ref_losses[0] : 0, ref_losses ? ref_losses[1] : 0, ref_losses ? ref_losses[2] : 0);
    double kl, ce;
    gpt2c_distill_take_terms(d, &kl, &ce);
    CHECK(kl > 0 && ce > 0);
    gpt2c_distill_free(d);
    gpt2c_model_free(student);
    gpt2c_model_free(teacher);
    gpt2c_st_close(ref);
}

/* alpha 0: the loss and gradients are train's cross-entropy (up to rounding) */
static void check_alpha0(void) {
    gpt2c_model *teacher = NULL, *a = NULL, *b = NULL;
    CHECK_OK(gpt2c_model_load(GPT2C_FIXTURES "/distill/teacher.safetensors", &teacher));
    CHECK_OK(gpt2c_model_load(GPT2C_FIXTURES "/distill/student.safetensors", &a));
    CHECK_OK(gpt2c_model_load(GPT2C_FIXTURES "/distill/student.safetensors", &b));
    if (!teacher || !a || !b) return;
    int32_t tok[2 * 8], tgt[2 * 8];
    for (int i = 0; i < 16; i++) {
        tok[i] = (i * 31 + 7) % 97;
        tgt[i] = (i * 17 + 3) % 97;
    }
    const gpt2c_distill_cfg dc = {3.0f, 0.0f, 0};
    gpt2c_distill *d = NULL;
    CHECK_OK(gpt2c_distill_create(teacher, &a->cfg, 8, &dc, &d));
    float la = 0, lb = 0;
    CHECK_OK(gpt2c_model_forward(a, tok, tgt, 2, 8, &la));
    CHECK_OK(gpt2c_model_backward(a, 1.0f));
    CHECK_OK(gpt2c_model_forward_loss(b, tok, tgt, 2, 8, gpt2c_distill_loss(d), &lb));
    CHECK_OK(gpt2c_model_backward(b, 1.0f));
    CHECK_MSG(fabs(la - lb) <= 1e-6 * fabs(la), "alpha 0: loss %.7f vs cross-entropy %.7f", lb, la);
    const double e = tu_max_rel_err(b->grads_mem, a->grads_mem, a->slab_floats, 1e-12);
    CHECK_MSG(e <= 1e-5, "alpha 0: gradients differ from cross-entropy's by %.3g", e);
    printf("  alpha 0: loss %.6f = cross-entropy %.6f, gradients rel err %.2e\n", lb, la, e);
    gpt2c_distill_free(d);
    gpt2c_model_free(a);
    gpt2c_model_free(b);
    gpt2c_model_free(teacher);
}

static void check_bad(void) {
    gpt2c_model *teacher = NULL;
    CHECK_OK(gpt2c_model_load(GPT2C_FIXTURES "/distill/teacher.safetensors", &teacher));
    if (!teacher) return;
    gpt2c_config other = teacher->cfg;
    other.vocab_size = 96;
    other.padded_vocab_size = 128;
    gpt2c_distill *d = NULL;
    const gpt2c_distill_cfg ok = {2.0f, 0.5f, 0};
    CHECK_FAILS(gpt2c_distill_create(teacher, &other, 8, &ok, &d), GPT2C_ERR_ARG);
    CHECK(strstr(gpt2c_errmsg(), "vocabularies differ") != NULL);
    CHECK_FAILS(gpt2c_distill_create(teacher, &teacher->cfg, 17, &ok, &d), GPT2C_ERR_ARG); /* context 16 */
    const gpt2c_distill_cfg bad[] = {{0.0f, 0.5f, 0}, {-1.0f, 0.5f, 0}, {NAN, 0.5f, 0}, {INFINITY, 0.5f, 0},
                                     {2.0f, -0.1f, 0}, {2.0f, 1.5f, 0}, {2.0f, NAN, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_FAILS(gpt2c_distill_create(teacher, &teacher->cfg, 8, &bad[i], &d), GPT2C_ERR_ARG);
        CHECK(d == NULL);
    }
    gpt2c_model_free(teacher);
}

int main(void) {
#ifndef GPT2C_HAVE_JANSSON
    tu_skip("built without jansson (the distillation fixtures are safetensors)");
#endif
    check_rows();
    check_model("ref");
    check_model("cpu");
    check_alpha0();
    check_bad();
    return tu_finish("test_distill");
}
