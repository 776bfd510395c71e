/* gpt2c_model_load: format detection, and GPT-2 from safetensors (Hugging Face
 * save_pretrained files with or without the "transformer." prefix, and our own
 * files, which add config metadata and optionally AdamW state). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/fileio.h"
#include "gpt2c/io.h"
#include "gpt2c/quant_model.h"
#include "io/io_internal.h"
#include "model/model_internal.h"

gpt2c_file_format gpt2c_detect_format(const char *path) {
    unsigned char b[9];
    FILE *f = fopen(path, "rb");
    if (!f) return GPT2C_FMT_UNKNOWN;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (n >= 4) {
        int32_t magic;
        memcpy(&magic, b, 4);
        if (magic == 20240326) return GPT2C_FMT_LLMC;
        if (magic == 20240520) return GPT2C_FMT_SHARD;
    }
    if (n >= 9 && b[8] == '{') return GPT2C_FMT_SAFETENSORS;
    return GPT2C_FMT_UNKNOWN;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int allow_nonfinite; /* process-wide, set by --allow-nonfinite */

void gpt2c_model_load_allow_nonfinite(int allow) { allow_nonfinite = allow != 0; }

/* The first NaN or Inf in a slab (params, or AdamW moments), named by tensor. */
static gpt2c_status check_finite(const gpt2c_model *m, const char *path, const float *slab, const char *what) {
    if (!slab) return GPT2C_OK;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        const gpt2c_param_info *pi = &m->info[id];
        const float *p = gpt2c_param_slice(m, (float *)slab, id, 0); /* the tensor, all layers */
        size_t bad = pi->numel;
        for (size_t i = 0; i < pi->numel; i++)
            if (!isfinite(p[i])) {
                bad = i;
                break;
            }
        if (bad == pi->numel) continue;
        const size_t per = (size_t)pi->rows * pi->cols;
        char name[200];
        gpt2c_param_hf_name(pi, pi->per_layer ? (int)(bad / per) : 0, name, sizeof name);
        return gpt2c_fail(GPT2C_ERR_FORMAT,
                          "%s: %stensor '%s' holds a non-finite value (%g at element %zu): refused (non-finite "
                          "values load only when allowed)",
                          path, what, name, (double)p[bad], pi->per_layer ? bad % per : bad);
    }
    return GPT2C_OK;
}

static gpt2c_status load_any(const char *path, gpt2c_model **out);

gpt2c_status gpt2c_model_load(const char *path, gpt2c_model **out) {
    GPT2C_TRY(load_any(path, out));
    if (allow_nonfinite) return GPT2C_OK;
    gpt2c_model *m = *out;
    const float *slabs[3] = {m->params_mem, m->m_mem, m->v_mem};
    const char *what[3] = {"", "AdamW first moments of ", "AdamW second moments of "};
    gpt2c_status st = GPT2C_OK;
    for (int i = 0; i < 3 && st == GPT2C_OK; i++) {
        if (!slabs[i]) continue;
        const float *host = NULL;
        if ((st = gpt2c_model_slab_to_host(m, slabs[i], &host)) != GPT2C_OK) break;
        st = check_finite(m, path, host, what[i]);
        gpt2c_model_slab_host_free(slabs[i], host);
    }
    if (st != GPT2C_OK) {
        gpt2c_model_free(m);
        *out = NULL;
    }
    return st;
}

static gpt2c_status load_any(const char *path, gpt2c_model **out) {
    *out = NULL;
    if (gpt2c_is_dir(path)) return gpt2c_io_load_dir(path, out);
    switch (gpt2c_detect_format(path)) {
    case GPT2C_FMT_LLMC: return gpt2c_io_load_llmc(path, out);
    case GPT2C_FMT_SHARD:
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: this is a token shard (magic 20240520), not a model checkpoint", path);
    case GPT2C_FMT_SAFETENSORS: return gpt2c_io_load_safetensors(path, out);
    case GPT2C_FMT_UNKNOWN: break;
    }
    /* unrecognised: let the reader the name suggests explain what is wrong */
    if (ends_with(path, ".bin")) return gpt2c_io_load_llmc(path, out);
    return gpt2c_io_load_safetensors(path, out);
}

/* Strict decimal int in [lo, hi]. */
static int parse_int(const char *s, long lo, long hi, int *out) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

/* config.json beside a checkpoint file (dir/model.safetensors -> dir/config.json): 1 found, 0 none. */
static int config_beside(const char *path, char *out, size_t n) {
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(out, n, "%.*s/config.json", (int)(slash - path), path);
    else
        snprintf(out, n, "config.json");
    FILE *probe = fopen(out, "rb");
    if (!probe) return 0;
    fclose(probe);
    return 1;
}

const gpt2c_st_tensor *gpt2c_st_set_find(const gpt2c_st_set *s, const char *name) {
    for (int i = 0; i < s->n; i++) {
        const gpt2c_st_tensor *t = gpt2c_st_find(s->files[i], name);
        if (t) return t;
    }
    return NULL;
}

gpt2c_status gpt2c_st_set_config(const gpt2c_st_set *s, const char *config_json, gpt2c_config *cfg,
                                 const char **prefix, const char **heads_from) {
    const char *path = s->path;
    memset(cfg, 0, sizeof *cfg);
    const char *pre = gpt2c_st_set_find(s, "transformer.wte.weight") ? "transformer." : "";
    char name[256], wpe_name[256];
    snprintf(name, sizeof name, "%swte.weight", pre);
    const gpt2c_st_tensor *wte = gpt2c_st_set_find(s, name);
    if (!wte)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: no tensor 'wte.weight' or 'transformer.wte.weight': not a GPT-2 checkpoint",
                          path);
    if (wte->ndim != 2 || wte->shape[0] > INT_MAX || wte->shape[1] > INT_MAX)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' must be 2-D (vocab, embd)", path, name);
    cfg->vocab_size = (int)wte->shape[0];
    cfg->channels = (int)wte->shape[1];
    snprintf(wpe_name, sizeof wpe_name, "%swpe.weight", pre);
    const gpt2c_st_tensor *wpe = gpt2c_st_set_find(s, wpe_name);
    if (!wpe) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: missing tensor '%s'", path, wpe_name);
    if (wpe->ndim != 2 || wpe->shape[1] != cfg->channels || wpe->shape[0] > INT_MAX)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' must be 2-D (positions, %d)", path, wpe_name, cfg->channels);
    cfg->max_seq_len = (int)wpe->shape[0];
    /* layers: one past the largest N among "<prefix>h.N." names */
    size_t plen = strlen(pre);
    for (int k = 0; k < s->n; k++)
        for (int i = 0; i < gpt2c_st_count(s->files[k]); i++) {
            const char *t = gpt2c_st_get(s->files[k], i)->name;
            if (strncmp(t, pre, plen) != 0 || strncmp(t + plen, "h.", 2) != 0) continue;
            char *end;
            errno = 0;
            long layer = strtol(t + plen + 2, &end, 10);
            if (errno || end == t + plen + 2 || *end != '.' || layer < 0 || layer >= 4096)
                return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': cannot read its layer number (0..4095)", path, t);
            if (layer + 1 > cfg->num_layers) cfg->num_layers = (int)layer + 1;
        }
    if (cfg->num_layers == 0) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: no transformer layers (tensors %sh.N.*)", path, pre);
    /* heads: config.json, else our metadata, else head size 64; config.json must agree with the tensors */
    const char *nh = s->n ? gpt2c_st_meta(s->files[0], "n_head") : NULL;
    int meta_heads = 0;
    if (nh && !parse_int(nh, 1, 65536, &meta_heads))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: __metadata__ n_head '%s' is not a positive integer", path, nh);
    int config_heads = 0;
    if (config_json) {
        gpt2c_hf_config hc;
        GPT2C_TRY(gpt2c_hf_config_read(config_json, &hc));
        char layers[300];
        snprintf(layers, sizeof layers, "%sh.", pre);
        GPT2C_TRY(gpt2c_hf_config_check(&hc, cfg, config_json, name, wpe_name, layers));
        if (meta_heads && hc.cfg.num_heads && meta_heads != hc.cfg.num_heads)
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: n_head %d disagrees with __metadata__ n_head %d of %s", config_json,
                              hc.cfg.num_heads, meta_heads, path);
        config_heads = hc.cfg.num_heads;
    }
    if (config_heads) {
        cfg->num_heads = config_heads;
        *heads_from = "config.json";
    } else if (meta_heads) {
        cfg->num_heads = meta_heads;
        *heads_from = "metadata";
    } else if (cfg->channels % 64 == 0) {
        cfg->num_heads = cfg->channels / 64;
        *heads_from = "head size 64 rule";
    } else {
        return gpt2c_fail(GPT2C_ERR_FORMAT,
                          "%s: cannot tell the number of heads: no n_head in __metadata__ or in a config.json "
                          "beside it, and n_embd %d is not a multiple of 64",
                          path, cfg->channels);
    }
    const char *vp = s->n ? gpt2c_st_meta(s->files[0], "padded_vocab_size") : NULL;
    if (vp && !parse_int(vp, cfg->vocab_size, INT_MAX, &cfg->padded_vocab_size))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: __metadata__ padded_vocab_size '%s' is invalid (vocab is %d)", path, vp,
                          cfg->vocab_size);
    if (gpt2c_config_check(cfg, path) != GPT2C_OK) return GPT2C_ERR_FORMAT;
    *prefix = pre;
    return GPT2C_OK;
}

gpt2c_status gpt2c_st_gpt2_config(const gpt2c_st_file *f, const char *path, gpt2c_config *cfg, const char **prefix,
                                  const char **heads_from) {
    gpt2c_st_file *files[1] = {(gpt2c_st_file *)f};
    gpt2c_st_set s = {files, 1, path};
    char cj[4096];
    return gpt2c_st_set_config(&s, config_beside(path, cj, sizeof cj) ? cj : NULL, cfg, prefix, heads_from);
}

/* Copies one HF tensor into its slab slice, checking shape and dtype. tmp holds rows*cols floats. */
static gpt2c_status load_slice(const gpt2c_st_set *f, const char *path, const gpt2c_model *m, int id, int layer,
                               const char *prefix, float *tmp) {
    const gpt2c_param_info *pi = &m->info[id];
    char hf[200], name[256];
    gpt2c_param_hf_name(pi, layer, hf, sizeof hf);
    snprintf(name, sizeof name, "%s%s", prefix, hf);
    const gpt2c_st_tensor *t = gpt2c_st_set_find(f, name);
    if (!t) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: missing tensor '%s'", path, name);
    int64_t want[2];
    int nd;
    if (id == GPT2C_P_WTE) { /* the file has V rows; our pad rows stay zero */
        nd = 2, want[0] = m->cfg.vocab_size, want[1] = pi->cols;
    } else if (id == GPT2C_P_WPE || pi->ndim == 2) {
        nd = 2, want[0] = pi->hf_transposed ? pi->cols : pi->rows, want[1] = pi->hf_transposed ? pi->rows : pi->cols;
    } else {
        nd = 1, want[0] = pi->cols;
    }
    if (t->ndim != nd || t->shape[0] != want[0] || (nd == 2 && t->shape[1] != want[1])) {
        char got[160], exp[64];
        shape_str(got, sizeof got, t->ndim, t->shape);
        shape_str(exp, sizeof exp, nd, want);
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %s", path, name, got, exp);
    }
    if (t->dtype != GPT2C_DT_F32 && t->dtype != GPT2C_DT_F16 && t->dtype != GPT2C_DT_BF16)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s (F32, F16 or BF16 expected)", path, name,
                          gpt2c_dtype_name(t->dtype));
    float *dst = gpt2c_param_slice(m, m->params_mem, id, layer);
    size_t n = (size_t)(want[0] * (nd == 2 ? want[1] : 1));
    if (!pi->hf_transposed) {
        gpt2c_dtype_to_f32(t->dtype, t->data, dst, n);
        return GPT2C_OK;
    }
    /* HF Conv1D stores (in, out) = (cols, rows); we keep (out, in) */
    gpt2c_dtype_to_f32(t->dtype, t->data, tmp, n);
    const int R = pi->rows, K = pi->cols;
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) dst[(size_t)r * K + k] = tmp[(size_t)k * R + r];
    return GPT2C_OK;
}

static gpt2c_status load_optimizer(const gpt2c_st_set *set, const char *path, gpt2c_model *m) {
    const gpt2c_st_tensor *tm = gpt2c_st_set_find(set, GPT2C_ST_ADAM_M), *tv = gpt2c_st_set_find(set, GPT2C_ST_ADAM_V);
    const gpt2c_st_file *f = set->files[0];
    if (!tm && !tv) return GPT2C_OK;
    if (!tm || !tv)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: optimizer state incomplete: '%s' without '%s'", path,
                          tm ? GPT2C_ST_ADAM_M : GPT2C_ST_ADAM_V, tm ? GPT2C_ST_ADAM_V : GPT2C_ST_ADAM_M);
    const gpt2c_st_tensor *ts[2] = {tm, tv};
    for (int i = 0; i < 2; i++)
        if (ts[i]->dtype != GPT2C_DT_F32 || ts[i]->nbytes != m->slab_floats * sizeof(float))
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' must be F32 with %zu elements (this model's slab)",
                              path, ts[i]->name, m->slab_floats);
    int step = 0;
    const char *s = gpt2c_st_meta(f, GPT2C_ST_OPT_STEP);
    if (s && !parse_int(s, 0, INT_MAX, &step))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: __metadata__ %s '%s' is not a step count", path, GPT2C_ST_OPT_STEP, s);
    GPT2C_TRY(gpt2c_model_alloc_optimizer(m));
    gpt2c_dtype_to_f32(GPT2C_DT_F32, tm->data, m->m_mem, m->slab_floats);
    gpt2c_dtype_to_f32(GPT2C_DT_F32, tv->data, m->v_mem, m->slab_floats);
    m->opt_step = step;
    return GPT2C_OK;
}

/* Before anything is allocated: the parameters the config implies must be
 * backed by tensor data actually present in the files (each element takes at
 * least 2 bytes there), and the zero rows padding wte may at most double it.
 * So a small hostile file (a huge padded vocabulary, 4096 layers named by one
 * empty tensor) is refused at the cost of its own size. */
static gpt2c_status check_sizes_against_files(const gpt2c_st_set *s, const gpt2c_config *cfg, const char *prefix) {
    /* every tensor the config implies, by name first (the clearest message) */
    static const char *const global[] = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};
    static const char *const per_layer[] = {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                                            "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                                            "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"};
    const int nglobal = (int)(sizeof global / sizeof global[0]), nper = (int)(sizeof per_layer / sizeof per_layer[0]);
    for (int l = -1; l < cfg->num_layers; l++)
        for (int i = 0; i < (l < 0 ? nglobal : nper); i++) {
            char name[256];
            if (l < 0) snprintf(name, sizeof name, "%s%s", prefix, global[i]);
            else snprintf(name, sizeof name, "%sh.%d.%s", prefix, l, per_layer[i]);
            const gpt2c_st_tensor *t = gpt2c_st_set_find(s, name);
            if (!t) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: missing tensor '%s'", s->path, name);
            if (t->dtype != GPT2C_DT_F32 && t->dtype != GPT2C_DT_F16 && t->dtype != GPT2C_DT_BF16)
                return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s (F32, F16 or BF16 expected)",
                                  s->path, name, gpt2c_dtype_name(t->dtype));
        }
    /* then by size: the named tensors must hold the elements the config implies */
    uint64_t have = 0;
    for (int k = 0; k < s->n; k++)
        for (int i = 0; i < gpt2c_st_count(s->files[k]); i++) {
            const gpt2c_st_tensor *t = gpt2c_st_get(s->files[k], i);
            if (t->dtype == GPT2C_DT_F32 || t->dtype == GPT2C_DT_F16 || t->dtype == GPT2C_DT_BF16)
                have += t->nbytes / gpt2c_dtype_size(t->dtype);
        }
    const uint64_t pad_rows = (uint64_t)(cfg->padded_vocab_size - cfg->vocab_size);
    if (pad_rows > (uint64_t)(cfg->vocab_size > 128 ? cfg->vocab_size : 128))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: padded vocabulary %d is absurd for a vocabulary of %d (at most %d)",
                          s->path, cfg->padded_vocab_size, cfg->vocab_size,
                          cfg->vocab_size + (cfg->vocab_size > 128 ? cfg->vocab_size : 128));
    const uint64_t need = gpt2c_io_param_count(cfg) - pad_rows * (uint64_t)cfg->channels;
    if (need > have)
        return gpt2c_fail(GPT2C_ERR_FORMAT,
                          "%s: %d layers of %d channels need %llu parameters but the file holds only %llu: tensors are "
                          "missing (refused before allocating)",
                          s->path, cfg->num_layers, cfg->channels, (unsigned long long)need, (unsigned long long)have);
    return GPT2C_OK;
}

gpt2c_status gpt2c_io_load_set(const gpt2c_st_set *f, const char *config_json, gpt2c_model **out) {
    *out = NULL;
    const char *path = f->path;
    gpt2c_config cfg;
    const char *prefix = "", *heads_from = "";
    gpt2c_model *m = NULL;
    float *tmp = NULL;
    gpt2c_status st = gpt2c_st_set_config(f, config_json, &cfg, &prefix, &heads_from);
    if (st == GPT2C_OK) st = check_sizes_against_files(f, &cfg, prefix);
    if (st == GPT2C_OK && (st = gpt2c_model_create(&cfg, &m)) != GPT2C_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", gpt2c_errmsg());
        gpt2c_fail(st, "%s: %s", path, why);
    }
    if (st == GPT2C_OK && !(tmp = malloc((size_t)16 * cfg.channels * cfg.channels)))
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path); /* 4C*C floats: the largest Conv1D weight */
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS && st == GPT2C_OK; id++) {
        int layers = m->info[id].per_layer ? cfg.num_layers : 1;
        for (int l = 0; l < layers && st == GPT2C_OK; l++) st = load_slice(f, path, m, id, l, prefix, tmp);
    }
    /* a tied lm_head is redundant with wte: ignored, but it must at least fit */
    const char *lm_names[2] = {"lm_head.weight", "transformer.lm_head.weight"};
    for (int i = 0; i < 2 && st == GPT2C_OK; i++) {
        const gpt2c_st_tensor *t = gpt2c_st_set_find(f, lm_names[i]);
        if (t && (t->ndim != 2 || t->shape[0] != cfg.vocab_size || t->shape[1] != cfg.channels))
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' does not have wte's shape [%d, %d]", path, lm_names[i],
                            cfg.vocab_size, cfg.channels);
    }
    if (st == GPT2C_OK) st = load_optimizer(f, path, m);
    free(tmp);
    if (st != GPT2C_OK) {
        gpt2c_model_free(m);
        return st;
    }
    *out = m;
    return GPT2C_OK;
}

gpt2c_status gpt2c_io_load_safetensors(const char *path, gpt2c_model **out) {
    *out = NULL;
    gpt2c_st_file *f;
    GPT2C_TRY(gpt2c_st_open(path, &f));
    if (gpt2c_st_meta(f, GPT2C_QUANT_META_FORMAT)) { /* written by gpt2c quantize */
        gpt2c_status st = gpt2c_quant_load(f, path, out);
        gpt2c_st_close(f);
        return st;
    }
    gpt2c_st_file *files[1] = {f};
    gpt2c_st_set s = {files, 1, path};
    char cj[4096];
    gpt2c_status st = gpt2c_io_load_set(&s, config_beside(path, cj, sizeof cj) ? cj : NULL, out);
    gpt2c_st_close(f);
    return st;
}
