/* Reading the PyTorch reference fixtures (reference.safetensors files written
 * by the scripts in tools/reference/) in the model tests: one named F32 tensor, and the
 * worst relative error of a model's gradient slab against the fixture's
 * grad.<prefix><HF name> tensors.  Shared by test_reference, test_bf16_model
 * and test_distill.  Include after testutil.h. */
#ifndef GPT2C_TESTS_FIXTURE_F32_H
#define GPT2C_TESTS_FIXTURE_F32_H

#include "gpt2c/io.h"
#include "model/model_internal.h"
#include "testutil.h"

/* The F32 tensor `name` of n elements (pointing into the open file), or NULL
 * with a message on stderr when it is missing or of another type or size. */
static inline const float *tu_fixture_f32(gpt2c_st_file *f, const char *name, size_t n) {
    const gpt2c_st_tensor *t = gpt2c_st_find(f, name);
    if (!t || t->dtype != GPT2C_DT_F32 || t->nbytes != n * sizeof(float)) {
        fprintf(stderr, "fixture tensor %s missing or not F32[%zu]\n", name, n);
        return NULL;
    }
    return (const float *)t->data;
}

/* The largest tu_max_rel_err of any parameter's gradient against the
 * fixture's "grad.<prefix><HF name>" (HF Conv1D layout, so the transposed
 * weights are compared transposed); INFINITY when a tensor is missing.
 * worst_name (may be NULL) receives the worst tensor's fixture name.  On a
 * device backend the slab is read through a downloaded copy. */
static inline double tu_worst_grad_err(const gpt2c_model *m, gpt2c_st_file *ref, const char *prefix, char *worst_name,
                                       size_t worst_size) {
    double worst = 0;
    const float *grads = NULL;
    if (gpt2c_model_slab_to_host(m, m->grads_mem, &grads) != GPT2C_OK || !grads) return INFINITY;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        const gpt2c_param_info *pi = &m->info[id];
        for (int l = 0; l < (pi->per_layer ? m->cfg.num_layers : 1); l++) {
            char hf[128], name[192];
            gpt2c_param_hf_name(pi, l, hf, sizeof hf);
            snprintf(name, sizeof name, "grad.%s%s", prefix, hf);
            const int rows = id == GPT2C_P_WTE ? m->cfg.vocab_size : pi->rows, cols = pi->cols;
            const size_t n = (size_t)rows * cols;
            const float *want = tu_fixture_f32(ref, name, n);
            if (!want) {
                gpt2c_model_slab_host_free(m->grads_mem, grads);
                return INFINITY;
            }
            const float *ours = gpt2c_param_slice(m, (float *)grads, id, l);
            float *cmp = malloc(n * sizeof(float));
            for (int r = 0; r < rows; r++) /* HF Conv1D stores (in, out): transpose ours */
                for (int c = 0; c < cols; c++)
                    cmp[pi->hf_transposed ? (size_t)c * rows + r : (size_t)r * cols + c] = ours[(size_t)r * cols + c];
            const double e = tu_max_rel_err(cmp, want, n, 1e-12);
            free(cmp);
            if (e > worst) {
                worst = e;
                if (worst_name) snprintf(worst_name, worst_size, "%s", name);
            }
        }
    }
    gpt2c_model_slab_host_free(m->grads_mem, grads);
    return worst;
}

#endif
