/* The read accessors of the opaque gpt2c_model (gpt2c/model.h). */
#include "model/model_internal.h"

const gpt2c_config *gpt2c_model_config(const gpt2c_model *m) { return &m->cfg; }
size_t gpt2c_model_num_params(const gpt2c_model *m) { return m->num_params; }
const gpt2c_param_info *gpt2c_model_param_info(const gpt2c_model *m, int id) {
    return id >= 0 && id < GPT2C_NUM_PARAM_TENSORS ? &m->info[id] : NULL;
}
const struct gpt2c_qweights *gpt2c_model_qweights(const gpt2c_model *m) { return m->qw; }
int gpt2c_model_has_optimizer(const gpt2c_model *m) { return m->m_mem != NULL; }
int gpt2c_model_opt_step(const gpt2c_model *m) { return m->opt_step; }
void gpt2c_model_set_profiler(gpt2c_model *m, gpt2c_profiler *p) { m->prof = p; }
