/* gpt2c_model_save: Hugging Face-loadable safetensors ("transformer.<name>",
 * Conv1D weights as (in, out), wte without the pad rows, lm_head left tied),
 * plus our config in __metadata__ so loading needs no config.json, and
 * optionally the AdamW state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/io.h"
#include "io/io_internal.h"
#include "model/model_internal.h"

gpt2c_status gpt2c_st_writer_config_meta(gpt2c_st_writer *w, const gpt2c_config *c) {
    const int vals[6] = {c->num_layers, c->num_heads, c->channels, c->max_seq_len, c->vocab_size, c->padded_vocab_size};
    const char *keys[6] = {"n_layer", "n_head", "n_embd", "n_positions", "vocab_size", "padded_vocab_size"};
    GPT2C_TRY(gpt2c_st_writer_meta(w, "format", "pt"));
    for (int i = 0; i < 6; i++) {
        char num[32];
        snprintf(num, sizeof num, "%d", vals[i]);
        GPT2C_TRY(gpt2c_st_writer_meta(w, keys[i], num));
    }
    return GPT2C_OK;
}

gpt2c_status gpt2c_model_save(const gpt2c_model *m, const char *path, const gpt2c_kv *meta, int nmeta,
                              int with_optimizer) {
    const gpt2c_config *c = &m->cfg;
    if (with_optimizer && (!m->m_mem || !m->v_mem))
        return gpt2c_fail(GPT2C_ERR_ARG, "%s: cannot save optimizer state: the model has none yet", path);
    /* transposed copies of the Conv1D weights must live until the write */
    size_t tsize = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
        if (m->info[id].hf_transposed) tsize += m->info[id].numel;
    float *staging = malloc(tsize * sizeof(float));
    gpt2c_st_writer *w = NULL;
    /* host views of the slabs (copies when the model lives on a GPU) */
    const float *P = NULL, *M = NULL, *V = NULL;
    gpt2c_status st = gpt2c_model_slab_to_host(m, m->params_mem, &P);
    if (st == GPT2C_OK && with_optimizer) st = gpt2c_model_slab_to_host(m, m->m_mem, &M);
    if (st == GPT2C_OK && with_optimizer) st = gpt2c_model_slab_to_host(m, m->v_mem, &V);
    if (st != GPT2C_OK)
        ;
    else if (!staging && tsize)
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    else
        st = gpt2c_st_writer_new(&w);
    float *stage = staging;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS && st == GPT2C_OK; id++) {
        const gpt2c_param_info *pi = &m->info[id];
        int layers = pi->per_layer ? c->num_layers : 1;
        for (int l = 0; l < layers && st == GPT2C_OK; l++) {
            char hf[200], name[256];
            gpt2c_param_hf_name(pi, l, hf, sizeof hf);
            snprintf(name, sizeof name, "transformer.%s", hf);
            const float *src = gpt2c_param_slice(m, (float *)P, id, l);
            int64_t shape[2];
            int nd = 2;
            if (id == GPT2C_P_WTE) {
                shape[0] = c->vocab_size, shape[1] = pi->cols;
            } else if (pi->hf_transposed) {
                const int R = pi->rows, K = pi->cols; /* ours (R, K) = (out, in) -> HF (in, out) */
                for (int r = 0; r < R; r++)
                    for (int k = 0; k < K; k++) stage[(size_t)k * R + r] = src[(size_t)r * K + k];
                src = stage;
                stage += (size_t)R * K;
                shape[0] = K, shape[1] = R;
            } else if (id == GPT2C_P_WPE || pi->ndim == 2) {
                shape[0] = pi->rows, shape[1] = pi->cols;
            } else {
                nd = 1, shape[0] = pi->cols;
            }
            st = gpt2c_st_writer_add(w, name, GPT2C_DT_F32, nd, shape, src);
        }
    }
    if (st == GPT2C_OK && with_optimizer) {
        int64_t n = (int64_t)m->slab_floats;
        st = gpt2c_st_writer_add(w, GPT2C_ST_ADAM_M, GPT2C_DT_F32, 1, &n, M);
        if (st == GPT2C_OK) st = gpt2c_st_writer_add(w, GPT2C_ST_ADAM_V, GPT2C_DT_F32, 1, &n, V);
    }
    char num[32];
    if (st == GPT2C_OK) st = gpt2c_st_writer_config_meta(w, c);
    if (st == GPT2C_OK && with_optimizer) {
        snprintf(num, sizeof num, "%d", m->opt_step);
        st = gpt2c_st_writer_meta(w, GPT2C_ST_OPT_STEP, num);
    }
    for (int i = 0; i < nmeta && st == GPT2C_OK; i++) st = gpt2c_st_writer_meta(w, meta[i].key, meta[i].value);
    if (st == GPT2C_OK) st = gpt2c_st_writer_write(w, path);
    gpt2c_st_writer_free(w);
    free(staging);
    gpt2c_model_slab_host_free(m->params_mem, P);
    gpt2c_model_slab_host_free(m->m_mem, M);
    gpt2c_model_slab_host_free(m->v_mem, V);
    return st;
}
