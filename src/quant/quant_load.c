/* Loading a quantized GPT-2 safetensors file (layout in quant_model.c).
 * Every tensor's dtype and shape is checked against the config and the
 * format: a failure names the file and the tensor. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/quant.h"
#include "gpt2c/quant_model.h"
#include "quant/quant_arena.h"
#include "model/model_internal.h"

static gpt2c_status want_tensor(const gpt2c_st_file *f, const char *path, const char *name, gpt2c_dtype dt, int nd,
                                const int64_t *shape, const gpt2c_st_tensor **out) {
    const gpt2c_st_tensor *t = gpt2c_st_find(f, name);
    if (!t) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: missing tensor '%s'", path, name);
    if (t->dtype != dt)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' has dtype %s, expected %s", path, name,
                          gpt2c_dtype_name(t->dtype), gpt2c_dtype_name(dt));
    int ok = t->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = t->shape[i] == shape[i];
    if (!ok)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' has the wrong shape for its format (expected %lld x %lld)",
                          path, name, (long long)shape[0], (long long)(nd > 1 ? shape[1] : 1));
    *out = t;
    return GPT2C_OK;
}

/* "q8/32" -> format, block */
static int parse_fmt_block(const char *s, gpt2c_format *f, int *block) {
    char name[16];
    const char *slash = strchr(s, '/');
    if (!slash || slash - s >= (long)sizeof name) return 0;
    memcpy(name, s, (size_t)(slash - s));
    name[slash - s] = 0;
    char *end;
    errno = 0;
    long b = strtol(slash + 1, &end, 10);
    if (errno || *end || b <= 0 || b > (1 << 20) || gpt2c_format_parse(name, f) != 0) return 0;
    *block = (int)b;
    return 1;
}

static gpt2c_status load_quantized(const gpt2c_st_file *f, const char *path, const char *name, const char *spec,
                                   gpt2c_tensor *t, int64_t file_rows) {
    gpt2c_format wf;
    int wb;
    if (!parse_fmt_block(spec, &wf, &wb) || !gpt2c_format_is_quantized(wf))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': unknown quantized format '%s' (q8/B, q4/B or nf4/B)",
                          path, name, spec);
    char what[400];
    snprintf(what, sizeof what, "%s: tensor '%s'", path, name);
    GPT2C_TRY(gpt2c_quant_check(wf, t->rows, t->cols, wb, what));
    const int64_t rows = t->rows, cols = t->cols, nsc = file_rows * (cols / wb);
    const int64_t cshape[2] = {file_rows, wf == GPT2C_FMT_Q8 ? cols : cols / 2};
    const gpt2c_st_tensor *codes, *sc = NULL, *c8 = NULL, *a2 = NULL, *off = NULL;
    GPT2C_TRY(want_tensor(f, path, name, wf == GPT2C_FMT_Q8 ? GPT2C_DT_I8 : GPT2C_DT_U8, 2, cshape, &codes));
    char sub[400];
    snprintf(sub, sizeof sub, "%s.absmax_q", name);
    const int dq = wf == GPT2C_FMT_NF4 && gpt2c_st_find(f, sub);
    if (dq) {
        const int64_t n1 = nsc, nb = (nsc + 255) / 256, one = 1;
        GPT2C_TRY(want_tensor(f, path, sub, GPT2C_DT_U8, 1, &n1, &c8));
        snprintf(sub, sizeof sub, "%s.absmax2", name);
        GPT2C_TRY(want_tensor(f, path, sub, GPT2C_DT_F32, 1, &nb, &a2));
        snprintf(sub, sizeof sub, "%s.absmax_offset", name);
        GPT2C_TRY(want_tensor(f, path, sub, GPT2C_DT_F32, 1, &one, &off));
    } else {
        const int64_t sshape[2] = {file_rows, cols / wb};
        snprintf(sub, sizeof sub, "%s.scales", name);
        GPT2C_TRY(want_tensor(f, path, sub, GPT2C_DT_F32, 2, sshape, &sc));
    }
    t->fmt = wf, t->block = wb, t->aux = NULL;
    const size_t cbytes = gpt2c_quant_code_bytes(wf, rows, cols, wb), ns = gpt2c_quant_nscales(wf, rows, cols, wb);
    t->data = calloc(cbytes, 1);
    t->scales = calloc(ns, sizeof(float));
    if (!t->data || !t->scales) {
        free(t->data), free(t->scales);
        t->data = NULL, t->scales = NULL, t->fmt = GPT2C_FMT_F32;
        return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", what);
    }
    memcpy(t->data, codes->data, codes->nbytes); /* pad rows (wte's Vp - V) stay zero */
    if (dq) {
        float *absmax2 = malloc(a2->nbytes), offset;
        if (!absmax2) return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", what);
        memcpy(absmax2, a2->data, a2->nbytes);
        memcpy(&offset, off->data, sizeof offset);
        gpt2c_nf4_dq_unpack(c8->data, absmax2, offset, (size_t)nsc, t->scales);
        free(absmax2);
    } else {
        memcpy(t->scales, sc->data, sc->nbytes);
    }
    return GPT2C_OK;
}

/* An fp32 tensor into its slab slice (HF layout, as gpt2c_model_save writes it). */
static gpt2c_status load_f32(const gpt2c_st_file *f, const char *path, gpt2c_model *m, int id, int layer,
                             const char *name) {
    const gpt2c_param_info *pi = &m->info[id];
    int64_t shape[2];
    int nd = 2;
    if (id == GPT2C_P_WTE)
        shape[0] = m->cfg.vocab_size, shape[1] = pi->cols;
    else if (pi->hf_transposed)
        shape[0] = pi->cols, shape[1] = pi->rows;
    else if (id == GPT2C_P_WPE || pi->ndim == 2)
        shape[0] = pi->rows, shape[1] = pi->cols;
    else
        nd = 1, shape[0] = pi->cols;
    const gpt2c_st_tensor *t;
    GPT2C_TRY(want_tensor(f, path, name, GPT2C_DT_F32, nd, shape, &t));
    float *dst = gpt2c_param_slice(m, m->params_mem, id, layer);
    const size_t n = (size_t)shape[0] * (size_t)(nd == 2 ? shape[1] : 1);
    if (!pi->hf_transposed) {
        gpt2c_dtype_to_f32(GPT2C_DT_F32, t->data, dst, n);
        return GPT2C_OK;
    }
    float *tmp = malloc(n * sizeof(float));
    if (!tmp) return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    gpt2c_dtype_to_f32(GPT2C_DT_F32, t->data, tmp, n);
    const int R = pi->rows, K = pi->cols;
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) dst[(size_t)r * K + k] = tmp[(size_t)k * R + r];
    free(tmp);
    return GPT2C_OK;
}

gpt2c_status gpt2c_quant_load(const gpt2c_st_file *f, const char *path, gpt2c_model **out) {
    *out = NULL;
    const char *fs = gpt2c_st_meta(f, GPT2C_QUANT_META_FORMAT);
    gpt2c_format fmt;
    if (!fs || gpt2c_format_parse(fs, &fmt) != 0 || !gpt2c_format_is_quantized(fmt))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: __metadata__ %s '%s' is not a quantized format (q8, q4, nf4)", path,
                          GPT2C_QUANT_META_FORMAT, fs ? fs : "(none)");
    gpt2c_config cfg;
    const char *prefix = "", *heads_from = "";
    GPT2C_TRY(gpt2c_st_gpt2_config(f, path, &cfg, &prefix, &heads_from));
    gpt2c_model *m;
    GPT2C_TRY(gpt2c_model_create(&cfg, &m));
    gpt2c_qweights *q = calloc(1, sizeof *q);
    gpt2c_status st = q ? GPT2C_OK : gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    if (q) {
        m->qw = q;
        q->fmt = fmt;
        const char *b = gpt2c_st_meta(f, "gpt2c.quant.block"), *dq = gpt2c_st_meta(f, "gpt2c.quant.double_quant");
        q->block = b ? atoi(b) : gpt2c_quant_block(fmt, 0);
        q->double_quant = dq && strcmp(dq, "1") == 0;
    }
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS && st == GPT2C_OK; id++) {
        const gpt2c_param_info *pi = &m->info[id];
        const int layers = pi->per_layer ? cfg.num_layers : 1;
        const int linear = id == GPT2C_P_QKVW || id == GPT2C_P_ATTPROJW || id == GPT2C_P_FCW ||
                           id == GPT2C_P_FCPROJW || id == GPT2C_P_WTE;
        if (linear) {
            q->layers[id] = layers;
            if (!(q->t[id] = calloc((size_t)layers, sizeof(gpt2c_tensor)))) {
                st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
        }
        for (int l = 0; l < layers && st == GPT2C_OK; l++) {
            char hf[200], name[256], key[300];
            gpt2c_param_hf_name(pi, l, hf, sizeof hf);
            snprintf(name, sizeof name, "%s%s", prefix, hf);
            snprintf(key, sizeof key, "gpt2c.quant:%s", name);
            const char *spec = gpt2c_st_meta(f, key);
            if (linear) {
                const int64_t rows = id == GPT2C_P_WTE ? cfg.padded_vocab_size : pi->rows;
                q->t[id][l] = gpt2c_tensor_f32(gpt2c_param_slice(m, m->params_mem, id, l), rows, pi->cols);
                if (spec) {
                    st = load_quantized(f, path, name, spec, &q->t[id][l], id == GPT2C_P_WTE ? cfg.vocab_size : rows);
                    continue;
                }
            } else if (spec) {
                st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' is marked quantized but only linear weights can be",
                                path, name);
                break;
            }
            st = load_f32(f, path, m, id, l, name);
        }
    }
    if (st != GPT2C_OK) {
        gpt2c_model_free(m);
        return st;
    }
    gpt2c_qweights_pack_arena(q);
    gpt2c_quant_release_fp32(m);
    *out = m;
    return GPT2C_OK;
}
