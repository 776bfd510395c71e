/* What an optimizer update leaves in the gradient slab (train/adamw.c): all
 * zero (grads_zero), or zero but for the matmul weights' gradients
 * (gpt2c_param_is_matmul_weight), which the next backward overwrites (grads_stale). */
#ifndef GPT2C_TESTS_GRADS_FRESH_H
#define GPT2C_TESTS_GRADS_FRESH_H

#include <stdlib.h>

#include "model/model_internal.h"

/* gradients of the slab g (on the host) that break that: non-zero outside the
 * stale tensors (all of the slab when the model says neither) */
static inline size_t tu_grads_not_fresh(const gpt2c_model *m, const float *g) {
    if (!gpt2c_grads_fresh(m)) return m->slab_floats;
    unsigned char *kept = calloc(m->slab_floats, 1);
    if (!kept) return m->slab_floats;
    for (int id = 0; m->grads_stale && id < GPT2C_NUM_PARAM_TENSORS; id++)
        if (gpt2c_param_is_matmul_weight(id)) {
            const size_t off = m->info[id].byte_offset / sizeof(float);
            for (size_t i = 0; i < m->info[id].numel; i++) kept[off + i] = 1;
        }
    size_t bad = 0;
    for (size_t i = 0; i < m->slab_floats; i++) bad += !kept[i] && g[i] != 0.0f;
    free(kept);
    return bad;
}

#endif
