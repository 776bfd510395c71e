/* PEFT adapter directories (gpt2c/lora.h): what PeftModel.save_pretrained
 * writes for a LoRA on transformers' GPT2LMHeadModel, and what
 * PeftModel.from_pretrained loads:
 *
 *   adapter_config.json          peft_type LORA, r, lora_alpha, target_modules, fan_in_fan_out, ...
 *   adapter_model.safetensors    base_model.model.transformer.h.{i}.attn.c_attn.lora_A.weight (r, in), ...
 *   gpt2c_optimizer.safetensors  gpt2c only (train --resume): AdamW moments and step, ignored by PEFT
 *
 * Loading checks everything against the base before touching the model: the
 * config's keys and types, rank and shapes of every tensor, no tensor for a
 * layer or module the config does not name, none missing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpt2c/io.h"
#include "gpt2c/lora.h"
#include "model/model_internal.h"
#include "io/io_internal.h"

#define ADAPTER_CONFIG "adapter_config.json"
#define ADAPTER_MODEL "adapter_model.safetensors"
#define ADAPTER_OPT "gpt2c_optimizer.safetensors"
#define OPT_M "gpt2c.lora.adamw.m"
#define OPT_V "gpt2c.lora.adamw.v"
#define OPT_STEP "gpt2c.lora.opt_step"



int gpt2c_peft_is_adapter_dir(const char *dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s/" ADAPTER_CONFIG, dir);
    struct stat sb;
    return gpt2c_is_dir(dir) && stat(p, &sb) == 0;
}

#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>

/* the module path of a site inside a GPT-2 block */
static const char *site_module(int s) {
    static const char *const mod[GPT2C_LORA_NUM_SITES] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
    return mod[s];
}

static void tensor_name(char *buf, size_t n, int layer, int site, char ab) {
    snprintf(buf, n, "base_model.model.transformer.h.%d.%s.lora_%c.weight", layer, site_module(site), ab);
}

static gpt2c_status write_config(const gpt2c_lora *l, const char *dir, const char *base_model) {
    const gpt2c_lora_cfg *c = gpt2c_lora_config(l);
    json_t *root = json_object();
    json_t *targets = json_array();
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++)
        if (c->targets >> s & 1) json_array_append_new(targets, json_string(gpt2c_lora_site_name(s)));
    json_object_set_new(root, "peft_type", json_string("LORA"));
    json_object_set_new(root, "task_type", json_string("CAUSAL_LM"));
    json_object_set_new(root, "base_model_name_or_path", base_model ? json_string(base_model) : json_null());
    json_object_set_new(root, "r", json_integer(c->rank));
    json_object_set_new(root, "lora_alpha", json_real(c->alpha));
    json_object_set_new(root, "lora_dropout", json_real(c->dropout));
    json_object_set_new(root, "target_modules", targets);
    json_object_set_new(root, "fan_in_fan_out", json_true()); /* GPT-2's Conv1D stores weights (in, out) */
    json_object_set_new(root, "bias", json_string("none"));
    json_object_set_new(root, "init_lora_weights", json_true());
    json_object_set_new(root, "use_rslora", json_false());
    json_object_set_new(root, "use_dora", json_false());
    json_object_set_new(root, "inference_mode", json_true());
    json_object_set_new(root, "modules_to_save", json_null());
    json_object_set_new(root, "layers_to_transform", json_null());
    json_object_set_new(root, "rank_pattern", json_object());
    json_object_set_new(root, "alpha_pattern", json_object());
    char path[4096];
    snprintf(path, sizeof path, "%s/" ADAPTER_CONFIG, dir);
    return gpt2c_io_json_write(root, path);
}

gpt2c_status gpt2c_peft_save(const gpt2c_model *m, const char *dir, const char *base_model, const gpt2c_kv *meta,
                             int nmeta, int with_optimizer) {
    const gpt2c_lora *l = gpt2c_model_lora(m);
    if (!l) return gpt2c_fail(GPT2C_ERR_ARG, "%s: the model has no LoRA adapters to save", dir);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return gpt2c_fail(GPT2C_ERR_IO, "%s: cannot create the directory: %s", dir, strerror(errno));
    if (!gpt2c_is_dir(dir)) return gpt2c_fail(GPT2C_ERR_IO, "%s: exists and is not a directory", dir);
    const gpt2c_lora_cfg *c = gpt2c_lora_config(l);
    char path[4096];
    gpt2c_st_writer *w;
    gpt2c_status st;
    /* the optimizer state first: a failure leaves the adapter that was there */
    if (with_optimizer) {
        GPT2C_TRY(gpt2c_st_writer_new(&w));
        int64_t n = (int64_t)gpt2c_lora_num_params(l);
        char step[32];
        snprintf(step, sizeof step, "%d", gpt2c_lora_opt_step(l));
        int s0 = 0; /* the moment slabs start at the first targeted site's A */
        while (!(c->targets >> s0 & 1)) s0++;
        st = gpt2c_st_writer_add(w, OPT_M, GPT2C_DT_F32, 1, &n, gpt2c_lora_A(l, s0, 0, 2));
        if (st == GPT2C_OK) st = gpt2c_st_writer_add(w, OPT_V, GPT2C_DT_F32, 1, &n, gpt2c_lora_A(l, s0, 0, 3));
        if (st == GPT2C_OK) st = gpt2c_st_writer_meta(w, OPT_STEP, step);
        snprintf(path, sizeof path, "%s/" ADAPTER_OPT, dir);
        if (st == GPT2C_OK) st = gpt2c_st_writer_write(w, path);
        gpt2c_st_writer_free(w);
        GPT2C_TRY(st);
    }
    GPT2C_TRY(gpt2c_st_writer_new(&w));
    st = gpt2c_st_writer_meta(w, "format", "pt");
    for (int i = 0; i < nmeta && st == GPT2C_OK; i++) st = gpt2c_st_writer_meta(w, meta[i].key, meta[i].value);
    char names[2][256];
    for (int layer = 0; layer < m->cfg.num_layers && st == GPT2C_OK; layer++)
        for (int s = 0; s < GPT2C_LORA_NUM_SITES && st == GPT2C_OK; s++) {
            if (!(c->targets >> s & 1)) continue;
            const int64_t sa[2] = {c->rank, gpt2c_lora_site_in(l, s)}, sb[2] = {gpt2c_lora_site_out(l, s), c->rank};
            tensor_name(names[0], sizeof names[0], layer, s, 'A');
            tensor_name(names[1], sizeof names[1], layer, s, 'B');
            st = gpt2c_st_writer_add(w, names[0], GPT2C_DT_F32, 2, sa, gpt2c_lora_A(l, s, layer, 0));
            if (st == GPT2C_OK) st = gpt2c_st_writer_add(w, names[1], GPT2C_DT_F32, 2, sb, gpt2c_lora_B(l, s, layer, 0));
        }
    snprintf(path, sizeof path, "%s/" ADAPTER_MODEL, dir);
    if (st == GPT2C_OK) st = gpt2c_st_writer_write(w, path);
    gpt2c_st_writer_free(w);
    GPT2C_TRY(st);
    return write_config(l, dir, base_model);
}

static gpt2c_status bad_key(const char *path, const char *key, const char *want) {
    return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: \"%s\" must be %s", path, key, want);
}

/* a key that gpt2c does not implement: absent, null, false, empty or the given default */
static int is_default(json_t *v) {
    return !v || json_is_null(v) || json_is_false(v) || (json_is_object(v) && json_object_size(v) == 0) ||
           (json_is_array(v) && json_array_size(v) == 0);
}

static gpt2c_status targets_fail(const char *path) {
    char why[512];
    snprintf(why, sizeof why, "%s", gpt2c_errmsg()); /* the message buffer is about to be rewritten */
    return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: target_modules: %s", path, why);
}

static gpt2c_status read_config(const char *path, gpt2c_lora_cfg *c, char *base, size_t nbase) {
    json_t *root;
    GPT2C_TRY(gpt2c_io_json_read(path, &root));
    gpt2c_status st = GPT2C_OK;
    json_t *v;
#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        st = __VA_ARGS__;                                                                                              \
        goto done;                                                                                                     \
    } while (0)
    if (!json_is_object(root)) FAIL(gpt2c_fail(GPT2C_ERR_FORMAT, "%s: not a JSON object", path));
    v = json_object_get(root, "peft_type");
    if (v && (!json_is_string(v) || strcmp(json_string_value(v), "LORA") != 0))
        FAIL(bad_key(path, "peft_type", "\"LORA\" (the only adapter type gpt2c implements)"));
    v = json_object_get(root, "r");
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65536)
        FAIL(bad_key(path, "r", "an integer rank in [1, 65536]"));
    c->rank = (int)json_integer_value(v);
    v = json_object_get(root, "lora_alpha");
    if (!json_is_number(v) || !isfinite(json_number_value(v))) FAIL(bad_key(path, "lora_alpha", "a number"));
    c->alpha = (float)json_number_value(v);
    v = json_object_get(root, "lora_dropout");
    c->dropout = 0;
    if (v && !json_is_null(v)) {
        if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) < 1))
            FAIL(bad_key(path, "lora_dropout", "a number in [0, 1)"));
        c->dropout = (float)json_number_value(v);
    }
    v = json_object_get(root, "target_modules");
    c->targets = 0;
    if (json_is_string(v)) {
        if (gpt2c_lora_parse_targets(json_string_value(v), &c->targets) != GPT2C_OK)
            FAIL(targets_fail(path));
    } else if (json_is_array(v) && json_array_size(v) > 0) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            unsigned t;
            if (!json_is_string(e)) FAIL(bad_key(path, "target_modules", "a list of module names"));
            if (gpt2c_lora_parse_targets(json_string_value(e), &t) != GPT2C_OK) FAIL(targets_fail(path));
            c->targets |= t;
        }
    } else {
        FAIL(bad_key(path, "target_modules", "a non-empty list of module names"));
    }
    static const char *const unsupported[] = {
        "rank_pattern",    "alpha_pattern",     "use_rslora",        "use_dora",     "modules_to_save",
        "layers_to_transform", "layers_pattern", "exclude_modules",  "layer_replication", "target_parameters",
        "trainable_token_indices", "lora_bias", "use_qalora",       "use_bdlora",   "alora_invocation_tokens"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (!is_default(json_object_get(root, unsupported[i])))
            FAIL(gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: \"%s\" is set: gpt2c implements plain LoRA only", path,
                            unsupported[i]));
    v = json_object_get(root, "bias");
    if (v && !json_is_null(v) && (!json_is_string(v) || strcmp(json_string_value(v), "none") != 0))
        FAIL(gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: \"bias\" must be \"none\" (trained biases are not implemented)",
                        path));
    if (base && nbase) {
        base[0] = 0;
        v = json_object_get(root, "base_model_name_or_path");
        if (json_is_string(v)) snprintf(base, nbase, "%s", json_string_value(v));
    }
done:
#undef FAIL
    json_decref(root);
    return st;
}

/* Is `name` an adapter tensor name; which layer, site and matrix? */
static int parse_name(const char *name, int *layer, int *site, char *ab) {
    const char *pre = "base_model.model.transformer.h.";
    size_t np = strlen(pre);
    if (strncmp(name, pre, np) != 0) return 0;
    char *end;
    long li = strtol(name + np, &end, 10);
    if (end == name + np || *end != '.' || li < 0 || li > 1 << 20) return 0;
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++) {
        char want[128];
        for (int k = 0; k < 2; k++) {
            snprintf(want, sizeof want, ".%s.lora_%c.weight", site_module(s), "AB"[k]);
            if (strcmp(end, want) == 0) {
                *layer = (int)li;
                *site = s;
                *ab = "AB"[k];
                return 1;
            }
        }
    }
    return 0;
}

static gpt2c_status check_tensors(const gpt2c_st_file *f, const char *path, const gpt2c_model *m,
                                  const gpt2c_lora_cfg *c) {
    const int L = m->cfg.num_layers;
    for (int i = 0; i < gpt2c_st_count(f); i++) {
        const gpt2c_st_tensor *t = gpt2c_st_get(f, i);
        int layer, site;
        char ab;
        if (!parse_name(t->name, &layer, &site, &ab))
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' is not a LoRA matrix of a GPT-2 block", path, t->name);
        if (layer >= L)
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' is for layer %d, but the base has %d layers", path,
                              t->name, layer, L);
        if (!(c->targets >> site & 1))
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' adapts %s, which target_modules does not name", path,
                              t->name, gpt2c_lora_site_name(site));
    }
    for (int layer = 0; layer < L; layer++)
        for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++) {
            if (!(c->targets >> s & 1)) continue;
            const gpt2c_param_info *pi = &m->info[gpt2c_lora_site_param(s)];
            for (int k = 0; k < 2; k++) {
                char name[256];
                tensor_name(name, sizeof name, layer, s, "AB"[k]);
                const gpt2c_st_tensor *t = gpt2c_st_find(f, name);
                if (!t) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' is missing", path, name);
                const int64_t want0 = k == 0 ? c->rank : pi->rows, want1 = k == 0 ? pi->cols : c->rank;
                if (t->ndim != 2 || t->shape[0] != want0 || t->shape[1] != want1)
                    return gpt2c_fail(GPT2C_ERR_FORMAT,
                                      "%s: tensor '%s' has shape %s(%lld, %lld), but rank %d on this base needs "
                                      "(%lld, %lld)",
                                      path, name, t->ndim == 2 ? "" : "not 2-D ", (long long)t->shape[0],
                                      (long long)(t->ndim > 1 ? t->shape[1] : 0), c->rank, (long long)want0,
                                      (long long)want1);
                if (t->dtype != GPT2C_DT_F32 && t->dtype != GPT2C_DT_BF16 && t->dtype != GPT2C_DT_F16)
                    return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' is not F32, F16 or BF16", path, name);
            }
        }
    return GPT2C_OK;
}

static gpt2c_status fill(gpt2c_model *m, const gpt2c_st_file *f, const gpt2c_lora_cfg *c) {
    gpt2c_lora *l = gpt2c_model_lora(m);
    for (int layer = 0; layer < m->cfg.num_layers; layer++)
        for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++) {
            if (!(c->targets >> s & 1)) continue;
            char name[256];
            const size_t na = (size_t)c->rank * gpt2c_lora_site_in(l, s), nb = (size_t)c->rank * gpt2c_lora_site_out(l, s);
            tensor_name(name, sizeof name, layer, s, 'A');
            GPT2C_TRY(gpt2c_st_read_f32(f, name, gpt2c_lora_A(l, s, layer, 0), na));
            tensor_name(name, sizeof name, layer, s, 'B');
            GPT2C_TRY(gpt2c_st_read_f32(f, name, gpt2c_lora_B(l, s, layer, 0), nb));
        }
    return GPT2C_OK;
}

static gpt2c_status load_optimizer(gpt2c_model *m, const char *path) {
    gpt2c_lora *l = gpt2c_model_lora(m);
    gpt2c_st_file *f;
    GPT2C_TRY(gpt2c_st_open(path, &f));
    const gpt2c_lora_cfg *c = gpt2c_lora_config(l);
    int s0 = 0;
    while (!(c->targets >> s0 & 1)) s0++;
    const size_t n = gpt2c_lora_num_params(l);
    gpt2c_status st = gpt2c_st_read_f32(f, OPT_M, gpt2c_lora_A(l, s0, 0, 2), n);
    if (st == GPT2C_OK) st = gpt2c_st_read_f32(f, OPT_V, gpt2c_lora_A(l, s0, 0, 3), n);
    const char *step = gpt2c_st_meta(f, OPT_STEP);
    char *end = NULL;
    long v = step ? strtol(step, &end, 10) : -1;
    if (st == GPT2C_OK && (!step || *end || v < 0 || v > 1 << 30))
        st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: __metadata__ %s is missing or not a step count", path, OPT_STEP);
    if (st == GPT2C_OK) gpt2c_lora_set_opt_step(l, (int)v);
    gpt2c_st_close(f);
    return st;
}

gpt2c_status gpt2c_peft_load(gpt2c_model *m, const char *dir, int with_optimizer, char *base_model, size_t nbase) {
    if (gpt2c_model_lora(m)) return gpt2c_fail(GPT2C_ERR_ARG, "%s: the model already has LoRA adapters", dir);
    if (!gpt2c_is_dir(dir))
        return gpt2c_fail(GPT2C_ERR_IO, "%s: not a directory (a PEFT adapter is a directory holding %s and %s)", dir,
                          ADAPTER_CONFIG, ADAPTER_MODEL);
    char path[4096];
    snprintf(path, sizeof path, "%s/" ADAPTER_CONFIG, dir);
    gpt2c_lora_cfg c;
    GPT2C_TRY(read_config(path, &c, base_model, nbase));
    snprintf(path, sizeof path, "%s/" ADAPTER_MODEL, dir);
    gpt2c_st_file *f;
    GPT2C_TRY(gpt2c_st_open(path, &f));
    gpt2c_status st = check_tensors(f, path, m, &c);
    if (st == GPT2C_OK) st = gpt2c_lora_attach(m, &c, 0);
    if (st == GPT2C_OK) st = fill(m, f, &c);
    gpt2c_st_close(f);
    if (st == GPT2C_OK && with_optimizer) {
        snprintf(path, sizeof path, "%s/" ADAPTER_OPT, dir);
        struct stat sb;
        if (stat(path, &sb) == 0) st = load_optimizer(m, path);
    }
    if (st != GPT2C_OK) gpt2c_lora_detach(m);
    return st;
}

#else

gpt2c_status gpt2c_peft_save(const gpt2c_model *m, const char *dir, const char *base_model, const gpt2c_kv *meta,
                             int nmeta, int with_optimizer) {
    (void)m, (void)base_model, (void)meta, (void)nmeta, (void)with_optimizer;
    return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: writing a PEFT adapter needs jansson (rebuild with libjansson-dev)",
                      dir);
}

gpt2c_status gpt2c_peft_load(gpt2c_model *m, const char *dir, int with_optimizer, char *base_model, size_t nbase) {
    (void)m, (void)with_optimizer, (void)base_model, (void)nbase;
    return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: reading a PEFT adapter needs jansson (rebuild with libjansson-dev)",
                      dir);
}

#endif
