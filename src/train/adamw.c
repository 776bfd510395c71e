/* The optimizer step: global grad-norm clipping and AdamW, one kernel call
 * per trainable tensor.  Frozen tensors (gpt2c_model_set_trainable) have no
 * gradient, no moments work and do not count in the norm.  The update leaves
 * the gradients fresh for the next backward: zeroed as it goes, but for the
 * matmul weights', which that backward overwrites (model_internal.h's
 * grads_stale), so they are neither zeroed here nor read back there. */
#include <math.h>

#include "gpt2c/lora.h"
#include "gpt2c/model.h"
#include "gpt2c/precision.h"
#include "kernels/kernels.h"
#include "model/costs.h"
#include "model/model_internal.h"

#define OP(op, layer, cost, call) GPT2C_PROF_OP(m->prof, op, layer, (cost).flops, (cost).bytes, call)

/* Sum of squares of the trainable gradients.  All trainable: one pass over
 * the slab (the pad rows of wte always have zero gradient and slab padding is
 * zero, so it is the norm of the real gradient); else tensor by tensor. */
static double grad_sumsq(gpt2c_model *m) {
    const gpt2c_kernels *k = m->k;
    double ss = m->lora ? gpt2c_lora_grad_sumsq(m->lora) : 0;
    if (!m->grads_mem) return ss; /* everything frozen (LoRA) */
    if (m->num_frozen == 0) {
        OP(GPT2C_OP_GRAD_NORM, -1, cost_sumsq((double)m->slab_floats), ss += k->sumsq(m->grads_mem, m->slab_floats));
        return ss;
    }
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        if (!m->trainable[id]) continue;
        const size_t n = m->info[id].numel;
        OP(GPT2C_OP_GRAD_NORM, -1, cost_sumsq((double)n), ss += k->sumsq(gpt2c_param_slice(m, m->grads_mem, id, 0), n));
    }
    return ss;
}

gpt2c_status gpt2c_model_update(gpt2c_model *m, const gpt2c_adamw_cfg *o, float lr, float *norm_out) {
    if (!m->grads_mem && !m->lora) return gpt2c_fail(GPT2C_ERR_ARG, "update: no gradients (run backward first)");
    if (m->grads_stale) gpt2c_model_zero_grad_slab(m); /* no backward since the last update: no gradient, not its stale one */
    /* moments for the base only when some base tensor trains (not under LoRA) */
    if (m->num_frozen < GPT2C_NUM_PARAM_TENSORS) GPT2C_TRY(gpt2c_model_alloc_optimizer(m));
    gpt2c_threads_use(m->threads);
    const gpt2c_kernels *k = m->k;
    const double ss = grad_sumsq(m);
    if (k->device_check) GPT2C_TRY(k->device_check()); /* a device failure is not a divergence */
    float norm = (float)sqrt(ss);
    if (norm_out) *norm_out = norm;
    if (!isfinite(norm)) return gpt2c_fail(GPT2C_ERR_RANGE, "update: gradient norm is %f (diverged)", norm);
    /* as torch.nn.utils.clip_grad_norm_: scale by clip / (norm + 1e-6) when that is < 1 */
    float scale = 1.0f;
    if (o->grad_clip > 0) {
        float coef = o->grad_clip / (norm + 1e-6f);
        if (coef < 1.0f) scale = coef;
    }
    m->opt_step++;
    /* bf16 precision: the update writes the weights' bf16 copies as it goes
     * (the same bits as gpt2c_model_refresh_bf16, without its second pass) */
    const int fused_bf16 = k->adamw_zero_grad && k->adamw_zero_grad_bf16;
    if (fused_bf16) GPT2C_TRY(gpt2c_model_alloc_bf16_panels(m)); /* the data-gradient panels, where the backend reads them */
    int stale = 0; /* some gradient left for the next backward to overwrite */
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        if (!m->trainable[id]) continue;
        const gpt2c_param_info *pi = &m->info[id];
        float wd = (pi->decay || o->decay_all) ? o->weight_decay : 0.0f;
        const size_t n = pi->numel;
        float *p = gpt2c_param_slice(m, m->params_mem, id, 0), *g = gpt2c_param_slice(m, m->grads_mem, id, 0);
        float *mm = gpt2c_param_slice(m, m->m_mem, id, 0), *v = gpt2c_param_slice(m, m->v_mem, id, 0);
        uint16_t *pb = fused_bf16 ? gpt2c_model_bf16_copy(m, id) : NULL;
        /* not zeroed: a gradient the next backward overwrites, where the rest are zeroed as they go
         * (not with quantized weights, whose backward writes no weight gradient) */
        const int keep = k->adamw_zero_grad && gpt2c_param_is_matmul_weight(id) && (!pb || k->adamw_bf16) && !m->qw;
        stale |= keep;
        const int panels = pb && gpt2c_model_bf16_panels(m, id, 0) != NULL;
        if (pb && keep && panels && k->adamw_bf16_panels) { /* both copies in one pass, a layer at a time */
            const size_t ln = (size_t)pi->rows * pi->cols;
            for (size_t l = 0; l < n / ln; l++)
                OP(GPT2C_OP_ADAMW, -1, cost_adamw_bf16_panels((double)ln),
                   k->adamw_bf16_panels(p + l * ln, g + l * ln, mm + l * ln, v + l * ln, pb + l * ln,
                                        gpt2c_model_bf16_panels(m, id, (int)l), (int)pi->rows, (int)pi->cols,
                                        m->panels_width[id], lr, o->beta1, o->beta2, o->eps, wd, scale, m->opt_step));
            continue;
        }
        if (panels) m->bf16_stale = 1; /* updated below without them: remade from the copies at the next forward */
        if (pb && keep)
            OP(GPT2C_OP_ADAMW, -1, cost_adamw_bf16((double)n),
               k->adamw_bf16(p, g, mm, v, pb, n, lr, o->beta1, o->beta2, o->eps, wd, scale, m->opt_step));
        else if (pb)
            OP(GPT2C_OP_ADAMW, -1, cost_adamw_zero_grad_bf16((double)n),
               k->adamw_zero_grad_bf16(p, g, mm, v, pb, n, lr, o->beta1, o->beta2, o->eps, wd, scale, m->opt_step));
        else if (k->adamw_zero_grad && !keep)
            OP(GPT2C_OP_ADAMW, -1, cost_adamw_zero_grad((double)n),
               k->adamw_zero_grad(p, g, mm, v, n, lr, o->beta1, o->beta2, o->eps, wd, scale, m->opt_step));
        else
            OP(GPT2C_OP_ADAMW, -1, cost_adamw((double)n),
               k->adamw(p, g, mm, v, n, lr, o->beta1, o->beta2, o->eps, wd, scale, m->opt_step));
    }
    if (m->lora)
        OP(GPT2C_OP_ADAMW, -1, cost_adamw((double)gpt2c_lora_num_params(m->lora)),
           gpt2c_lora_adamw(m->lora, o, lr, scale, gpt2c_lora_opt_step(m->lora) + 1));
    if (!m->grads_mem) return GPT2C_OK;
    /* the slab's padding is never written and frozen tensors' gradients stay
     * zero, so zeroing every trainable tensor (but the kept ones) zeroes the slab */
    if (k->adamw_zero_grad) m->grads_zero = !stale, m->grads_stale = stale;
    else gpt2c_model_zero_grad(m);
    if (!fused_bf16) gpt2c_model_refresh_bf16(m, 0); /* bf16 precision: the copies follow the updated weights */
    return k->device_check ? k->device_check() : GPT2C_OK;
}
