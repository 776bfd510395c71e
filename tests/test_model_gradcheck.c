/* Backward against central finite differences of the forward, on a tiny
 * model with the ref backend; and the cpu backend against ref.  This test
 * needs no fixtures: it checks the model is self-consistent.  The fixture
 * tests (test_reference) check it against PyTorch. */
#include "gpt2c/model.h"
#include "testutil.h"
#include "model/model_internal.h"

static gpt2c_model *tiny_model(void) {
    gpt2c_config c = {.max_seq_len = 8, .vocab_size = 11, .num_layers = 2, .num_heads = 2, .channels = 8};
    gpt2c_model *m;
    if (gpt2c_model_create(&c, &m) != GPT2C_OK) return NULL;
    gpt2c_model_init_random(m, 42);
    /* perturb everything (biases, layernorm params too) so no term hides behind a 0 or a 1 */
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 7, 0);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
        for (size_t i = 0; i < m->info[id].numel; i++) {
            if (id == GPT2C_P_WTE && i >= (size_t)c.vocab_size * c.channels) break; /* pad rows stay 0 */
            m->params.t[id][i] += 0.3f * gpt2c_rng_normal(&r);
        }
    return m;
}

enum { B = 2, T = 5 };

static double loss_at(gpt2c_model *m, const int32_t *x, const int32_t *y) {
    float loss = 0;
    gpt2c_model_forward(m, x, y, B, T, &loss);
    return loss;
}

int main(void) {
    int32_t x[B * T], y[B * T];
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 1, 1);
    for (int i = 0; i < B * T; i++) {
        x[i] = (int32_t)(gpt2c_rng_u64(&r) % 11);
        y[i] = (int32_t)(gpt2c_rng_u64(&r) % 11);
    }
    gpt2c_model *m = tiny_model();
    CHECK(m != NULL);
    CHECK_OK(gpt2c_model_set_backend(m, "ref"));
    CHECK_OK(gpt2c_model_prepare(m, B, T));
    float loss;
    CHECK_OK(gpt2c_model_forward(m, x, y, B, T, &loss));
    CHECK_OK(gpt2c_model_alloc_grads(m));
    gpt2c_model_zero_grad(m);
    CHECK_OK(gpt2c_model_backward(m, 1.0f));

    /* finite differences on a spread of elements of every tensor.  fp32
     * forward with eps = 1e-3: the difference quotient is good to ~1e-4
     * absolute; the tolerance below is 2e-3 absolute + 2% relative. */
    int checked = 0, bad = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        size_t n = m->info[id].numel;
        for (int s = 0; s < 6; s++) {
            size_t i = (size_t)((s * 2654435761u) % n);
            if (id == GPT2C_P_WTE) i %= 11 * 8;
            float *p = &m->params.t[id][i];
            const float save = *p, eps = 1e-3f;
            *p = save + eps;
            double lp = loss_at(m, x, y);
            *p = save - eps;
            double lm = loss_at(m, x, y);
            *p = save;
            double fd = (lp - lm) / (2 * eps), an = m->grads.t[id][i];
            checked++;
            if (fabs(fd - an) > 2e-3 + 0.02 * fabs(fd)) {
                bad++;
                fprintf(stderr, "grad mismatch %s[%zu]: analytic %.6g, finite difference %.6g\n", m->info[id].name, i,
                        an, fd);
            }
        }
    }
    CHECK_MSG(bad == 0, "%d of %d gradients disagree with finite differences", bad, checked);
    printf("finite differences: %d gradients checked, loss %.5f\n", checked, loss);

    /* pad logits never leak: the loss is the same whatever is in the pad rows of wte */
    for (size_t i = (size_t)11 * 8; i < m->info[GPT2C_P_WTE].numel; i++) m->params.t[GPT2C_P_WTE][i] = 100.0f;
    CHECK(fabs(loss_at(m, x, y) - loss) < 1e-6);
    for (size_t i = (size_t)11 * 8; i < m->info[GPT2C_P_WTE].numel; i++) m->params.t[GPT2C_P_WTE][i] = 0.0f;

    /* out-of-range ids are refused */
    int32_t badx[B * T];
    memcpy(badx, x, sizeof x);
    badx[3] = 11;
    CHECK_FAILS(gpt2c_model_forward(m, badx, y, B, T, NULL), GPT2C_ERR_RANGE);
    CHECK_FAILS(gpt2c_model_prepare(m, B, 9), GPT2C_ERR_ARG);
    gpt2c_model_free(m);
    return tu_finish("test_model_gradcheck");
}
