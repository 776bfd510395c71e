/* The model against PyTorch + Hugging Face (fixtures written by
 * tools/reference/make_fixtures.py): logits, loss, the gradient of every
 * parameter, and the losses of 10 AdamW steps with grad clipping — for every
 * backend this build has, and again after a round trip through llm.c .bin.
 *
 * Tolerances (relative: max |ours - ref| / max |ref| over the tensor):
 *   logits, loss        1e-5
 *   gradients           1e-4
 *   10 training losses  1e-5,  grad norms 1e-4
 * The ref backend accumulates in double; the fast backends in fp32 with a
 * different summation order, which the same tolerances cover. */
#include <unistd.h>

#include "gpt2c/io.h"
#include "gpt2c/model.h"
#include "kernels/kernels.h"
#include "testutil.h"
#include "grads_fresh.h"
#include "model/model_internal.h"
#include "lib/fixture_f32.h"

#define TOL_LOGITS 1e-5
#define TOL_GRAD 1e-4
#define TOL_STEPS 1e-5

typedef struct {
    gpt2c_st_file *ref;
    int B, T, V;
    int32_t *tokens, *targets;
    char prefix[32]; /* "transformer." or "" as in the fixture's grad names */
} fixture;

static int load_fixture(const char *dir, fixture *fx) {
    char path[1400];
    snprintf(path, sizeof path, "%s/reference.safetensors", dir);
    if (gpt2c_st_open(path, &fx->ref) != GPT2C_OK) {
        fprintf(stderr, "%s\n", gpt2c_errmsg());
        return 0;
    }
    const gpt2c_st_tensor *tok = gpt2c_st_find(fx->ref, "tokens"), *tgt = gpt2c_st_find(fx->ref, "targets");
    if (!tok || !tgt || tok->dtype != GPT2C_DT_I32 || tok->ndim != 2) return 0;
    fx->B = (int)tok->shape[0];
    fx->T = (int)tok->shape[1];
    fx->V = atoi(gpt2c_st_meta(fx->ref, "vocab_size"));
    fx->tokens = (int32_t *)tok->data;
    fx->targets = (int32_t *)tgt->data;
    strcpy(fx->prefix, gpt2c_st_find(fx->ref, "grad.transformer.wte.weight") ? "transformer." : "");
    return 1;
}

static void check_model(gpt2c_model *m, const fixture *fx, const char *label) {
    const int B = fx->B, T = fx->T, V = fx->V, Vp = m->cfg.padded_vocab_size;
    CHECK_OK(gpt2c_model_prepare(m, B, T));
    /* logits */
    CHECK_OK(gpt2c_model_forward(m, fx->tokens, NULL, B, T, NULL));
    const float *ref_logits = tu_fixture_f32(fx->ref, "logits", (size_t)B * T * V);
    CHECK(ref_logits != NULL);
    if (!ref_logits) return;
    float *ours = malloc(sizeof(float) * B * T * V);
    for (int i = 0; i < B * T; i++) memcpy(ours + (size_t)i * V, gpt2c_model_logits(m) + (size_t)i * Vp, sizeof(float) * V);
    double e_logits = tu_max_rel_err(ours, ref_logits, (size_t)B * T * V, 1e-12);
    free(ours);
    CHECK_MSG(e_logits <= TOL_LOGITS, "%s: logits rel err %.3g > %g", label, e_logits, TOL_LOGITS);
    /* loss and gradients */
    float loss;
    CHECK_OK(gpt2c_model_forward(m, fx->tokens, fx->targets, B, T, &loss));
    const float *ref_loss = tu_fixture_f32(fx->ref, "loss", 1);
    double e_loss = fabs(loss - ref_loss[0]) / fabs(ref_loss[0]);
    CHECK_MSG(e_loss <= TOL_LOGITS, "%s: loss %.8f vs %.8f", label, loss, ref_loss[0]);
    CHECK_OK(gpt2c_model_alloc_grads(m));
    gpt2c_model_zero_grad(m);
    CHECK_OK(gpt2c_model_backward(m, 1.0f));
    char worst_name[192] = "";
    double e_grad = tu_worst_grad_err(m, fx->ref, fx->prefix, worst_name, sizeof worst_name);
    CHECK_MSG(e_grad <= TOL_GRAD, "%s: gradient rel err %.3g > %g (%s)", label, e_grad, TOL_GRAD, worst_name);
    printf("  %-28s logits %.2e  loss %.2e  grads %.2e (worst %s)\n", label, e_logits, e_loss, e_grad, worst_name);
}

static void check_training(gpt2c_model *m, const fixture *fx, const char *label) {
    const float *ref_losses = tu_fixture_f32(fx->ref, "train_losses", 10), *ref_norms = tu_fixture_f32(fx->ref, "train_norms", 10);
    CHECK(ref_losses && ref_norms);
    if (!ref_losses || !ref_norms) return;
    gpt2c_adamw_cfg opt = {.beta1 = (float)atof(gpt2c_st_meta(fx->ref, "beta1")),
                           .beta2 = (float)atof(gpt2c_st_meta(fx->ref, "beta2")),
                           .eps = (float)atof(gpt2c_st_meta(fx->ref, "eps")),
                           .weight_decay = (float)atof(gpt2c_st_meta(fx->ref, "weight_decay")),
                           .grad_clip = (float)atof(gpt2c_st_meta(fx->ref, "grad_clip"))};
    const float lr = (float)atof(gpt2c_st_meta(fx->ref, "lr"));
    double worst_loss = 0, worst_norm = 0;
    for (int step = 0; step < 10; step++) {
        float loss, norm;
        CHECK_OK(gpt2c_model_forward(m, fx->tokens, fx->targets, fx->B, fx->T, &loss));
        gpt2c_model_zero_grad(m);
        CHECK_OK(gpt2c_model_backward(m, 1.0f));
        CHECK_OK(gpt2c_model_update(m, &opt, lr, &norm));
        double el = fabs(loss - ref_losses[step]) / fabs(ref_losses[step]);
        double en = fabs(norm - ref_norms[step]) / fabs(ref_norms[step]);
        if (el > worst_loss) worst_loss = el;
        if (en > worst_norm) worst_norm = en;
    }
    /* the update leaves the gradients fresh: zero, but for the matmul weights'
     * the next backward overwrites (that is why the next zero_grad may skip its pass) */
    const float *gh = NULL;
    CHECK_OK(gpt2c_model_slab_to_host(m, m->grads_mem, &gh));
    const size_t nonzero = gh ? tu_grads_not_fresh(m, gh) : m->slab_floats;
    CHECK_MSG(gh && nonzero == 0, "%s: %zu gradients not zero after the update (stale %d)", label, nonzero, m->grads_stale);
    if (gh) gpt2c_model_slab_host_free(m->grads_mem, gh);
    CHECK_MSG(worst_loss <= TOL_STEPS, "%s: 10-step losses rel err %.3g > %g", label, worst_loss, TOL_STEPS);
    CHECK_MSG(worst_norm <= TOL_GRAD, "%s: 10-step grad norms rel err %.3g > %g", label, worst_norm, TOL_GRAD);
    printf("  %-28s 10 AdamW steps: losses %.2e  norms %.2e (final loss %.5f)\n", label, worst_loss, worst_norm,
           ref_losses[9]);
}

static void run_fixture(const char *name, const char *backends) {
    char dir[1024], model_path[1200], bin_path[256];
    snprintf(dir, sizeof dir, "%s/%s", GPT2C_FIXTURES, name);
    snprintf(model_path, sizeof model_path, "%s/model.safetensors", dir);
    fixture fx;
    if (!load_fixture(dir, &fx)) {
        CHECK_MSG(0, "cannot read fixture %s", dir);
        return;
    }
    printf("%s: B=%d T=%d V=%d\n", name, fx.B, fx.T, fx.V);
    char list[64];
    snprintf(list, sizeof list, "%s", backends);
    for (char *be = strtok(list, ","); be; be = strtok(NULL, ",")) {
        char label[96];
        gpt2c_model *m;
        CHECK_OK(gpt2c_model_load(model_path, &m));
        CHECK_OK(gpt2c_model_set_backend(m, be));
        snprintf(label, sizeof label, "%s/%s", name, be);
        check_model(m, &fx, label);
        check_training(m, &fx, label);
        gpt2c_model_free(m);
    }
    /* the same after safetensors -> llm.c .bin -> model */
    gpt2c_model *m;
    CHECK_OK(gpt2c_model_load(model_path, &m));
    snprintf(bin_path, sizeof bin_path, "/tmp/gpt2c_test_reference_%d.bin", (int)getpid());
    CHECK_OK(gpt2c_model_save_llmc(m, bin_path, 3));
    gpt2c_model_free(m);
    CHECK_OK(gpt2c_model_load(bin_path, &m));
    unlink(bin_path);
    CHECK_OK(gpt2c_model_set_backend(m, "ref"));
    char label[96];
    snprintf(label, sizeof label, "%s/ref via llm.c .bin", name);
    check_model(m, &fx, label);
    gpt2c_model_free(m);
    gpt2c_st_close(fx.ref);
}

int main(void) {
#ifndef GPT2C_HAVE_JANSSON
    tu_skip("built without jansson (the reference fixtures are safetensors)");
#endif
    char backends[64] = "ref,cpu";
    const gpt2c_kernels *k;
    if (gpt2c_kernels_get("blas", &k) == GPT2C_OK) strcat(backends, ",blas");
    /* the cuda backend joins where the build has it and a device answers */
    if (gpt2c_kernels_get("cuda", &k) == GPT2C_OK) strcat(backends, ",cuda");
    printf("backends: %s\n", backends);
    run_fixture("ref_tiny", backends);
    run_fixture("ref_small", backends);
    return tu_finish("test_reference");
}
