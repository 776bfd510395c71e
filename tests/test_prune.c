/* gpt2c_prune_model against PyTorch (tests/fixtures/prune, written by
 * tools/reference/prune_fixtures.py: torch.nn.utils.prune.global_unstructured
 * with L1Unstructured, l1_unstructured per module, and a numpy 2:4), the
 * bad-input refusals, and the sparsity mask that train --keep-sparsity uses. */
#include <math.h>

#include "gpt2c/io.h"
#include "gpt2c/prune.h"
#include "testutil.h"
#include "model/model_internal.h"

static gpt2c_model *load(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/prune/%s", GPT2C_FIXTURES, name);
    gpt2c_model *m = NULL;
    if (gpt2c_model_load(path, &m) != GPT2C_OK) {
        fprintf(stderr, "load %s: %s\n", path, gpt2c_errmsg());
        return NULL;
    }
    return m;
}

/* Every parameter equal (0.0 == -0.0), so the masks agree and nothing else moved. */
static size_t count_diffs(const gpt2c_model *a, const gpt2c_model *b) {
    size_t d = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        const float *x = gpt2c_param_slice(a, a->params_mem, id, 0), *y = gpt2c_param_slice(b, b->params_mem, id, 0);
        for (size_t i = 0; i < a->info[id].numel; i++) d += !(x[i] == y[i]);
    }
    return d;
}

static void check_case(const char *expected, double s, gpt2c_prune_scope scope, gpt2c_prune_pattern pat,
                       size_t want_zeros) {
    gpt2c_model *m = load("base.safetensors"), *ref = load(expected);
    CHECK(m && ref);
    if (!m || !ref) return;
    size_t zeros = 0;
    CHECK_OK(gpt2c_prune_model(m, s, scope, pat, &zeros));
    CHECK_MSG(zeros == want_zeros, "%s: %zu zeros, PyTorch %zu", expected, zeros, want_zeros);
    const size_t d = count_diffs(m, ref);
    CHECK_MSG(d == 0, "%s: %zu parameters differ from PyTorch's", expected, d);
    printf("  %s: %zu zeros, %zu parameters differ\n", expected, zeros, d);
    gpt2c_model_free(m);
    gpt2c_model_free(ref);
}

int main(void) {
#ifndef GPT2C_HAVE_JANSSON
    tu_skip("built without jansson: the safetensors fixtures cannot be read");
#endif

    /* 6144 linear weights: global round(0.6 * 6144) = 3686; per matrix round(0.7 n) */
    check_case("pruned_global_0.6.safetensors", 0.6, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_UNSTRUCTURED, 3686);
    check_case("pruned_layer_0.7.safetensors", 0.7, GPT2C_PRUNE_LAYER, GPT2C_PRUNE_UNSTRUCTURED, 4302);
    check_case("pruned_2of4.safetensors", 0.5, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_2_4, 3072);

    gpt2c_model *m = load("base.safetensors"), *base = load("base.safetensors");
    CHECK(m && base);
    if (!m || !base) return tu_finish("test_prune");
    /* bad input: nothing changes */
    CHECK_FAILS(gpt2c_prune_model(m, 1.0, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_UNSTRUCTURED, NULL), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_prune_model(m, -0.1, GPT2C_PRUNE_LAYER, GPT2C_PRUNE_UNSTRUCTURED, NULL), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_prune_model(m, NAN, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_UNSTRUCTURED, NULL), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_prune_model(m, 0.3, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_2_4, NULL), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_prune_model(m, 0.5, (gpt2c_prune_scope)7, GPT2C_PRUNE_UNSTRUCTURED, NULL), GPT2C_ERR_ARG);
    CHECK(count_diffs(m, base) == 0);
    /* sparsity 0 prunes nothing */
    size_t zeros = 1;
    CHECK_OK(gpt2c_prune_model(m, 0.0, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_UNSTRUCTURED, &zeros));
    CHECK(zeros == 0 && count_diffs(m, base) == 0);

    /* the mask: refused with no zeros; after pruning it holds exactly the zeros */
    gpt2c_sparsity_mask *mk = NULL;
    CHECK_FAILS(gpt2c_sparsity_mask_from_zeros(m, &mk), GPT2C_ERR_ARG);
    CHECK(mk == NULL);
    CHECK_OK(gpt2c_prune_model(m, 0.8, GPT2C_PRUNE_LAYER, GPT2C_PRUNE_UNSTRUCTURED, &zeros));
    CHECK_OK(gpt2c_sparsity_mask_from_zeros(m, &mk));
    CHECK(mk && gpt2c_sparsity_mask_count(mk) == zeros);
    size_t per_zeros = 0, per_numel = 0;
    CHECK_OK(gpt2c_prune_count_zeros(m, GPT2C_P_FCW, 1, &per_zeros, &per_numel));
    CHECK_MSG(per_numel == 1024 && per_zeros == 819, "h.1 c_fc: %zu of %zu zero (want round(0.8 * 1024) = 819)",
              per_zeros, per_numel);
    if (mk) {
        /* move every parameter (as an update would), then re-apply: the pruned are exactly zero again */
        for (size_t i = 0; i < m->slab_floats; i++) m->params_mem[i] += 0.25f;
        CHECK_OK(gpt2c_sparsity_mask_apply(m, mk));
        size_t after = 0;
        CHECK_OK(gpt2c_prune_count_zeros(m, -1, -1, &after, NULL));
        CHECK_MSG(after == zeros, "%zu zeros after re-applying the mask, %zu before", after, zeros);
        /* what the mask does not cover moved: biases, layernorms, embeddings */
        CHECK(m->params.t[GPT2C_P_WTE][0] != base->params.t[GPT2C_P_WTE][0]);
        CHECK(m->params.t[GPT2C_P_QKVB][0] == base->params.t[GPT2C_P_QKVB][0] + 0.25f);
        gpt2c_sparsity_mask_free(mk);
    }
    gpt2c_model_free(m);
    gpt2c_model_free(base);
    return tu_finish("test_prune");
}
