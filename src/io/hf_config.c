/* config.json of a Hugging Face GPT-2 model directory: the one place that
 * reads it (every key typed and range-checked, what gpt2c does not implement
 * refused by name) and writes it, with generation_config.json beside it.
 *
 * A size key that is absent is left 0: the tensors then say it (transformers
 * would take GPT2Config's default, which a model of another size contradicts). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/fileio.h"
#include "gpt2c/io.h"
#include "io/io_internal.h"

#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>

gpt2c_status gpt2c_io_json_read(const char *path, json_t **root) {
    void *buf;
    size_t size;
    GPT2C_TRY(gpt2c_read_file(path, &buf, &size));
    json_error_t jerr;
    *root = json_loadb(buf, size, JSON_REJECT_DUPLICATES, &jerr);
    free(buf);
    if (!*root) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: not valid JSON: %s (line %d)", path, jerr.text, jerr.line);
    return GPT2C_OK;
}

static const char *json_type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* Integer key in [lo, hi]; absent keeps *out (the default). */
static gpt2c_status get_int(const char *path, json_t *root, const char *key, long long lo, long long hi, int *out) {
    json_t *v = json_object_get(root, key);
    if (!v) return GPT2C_OK;
    if (!json_is_integer(v))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: %s must be an integer, got %s", path, key, json_type_name(v));
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: %s %lld is out of range [%lld, %lld]", path, key, x, lo, hi);
    *out = (int)x;
    return GPT2C_OK;
}

/* Token id: integer >= 0, or null / absent (-1). */
static gpt2c_status get_token_id(const char *path, json_t *root, const char *key, int *out) {
    json_t *v = json_object_get(root, key);
    *out = -1;
    if (!v || json_is_null(v)) return GPT2C_OK;
    return get_int(path, root, key, 0, 1 << 24, out);
}

/* Boolean key that must have the value gpt2c implements (absent = HF's default = want). */
static gpt2c_status require_bool(const char *path, json_t *root, const char *key, int want, const char *why) {
    json_t *v = json_object_get(root, key);
    if (!v) return GPT2C_OK;
    if (!json_is_boolean(v))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: %s must be true or false, got %s", path, key, json_type_name(v));
    if (json_is_true(v) != want)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: %s = %s is not implemented by gpt2c (%s)", path, key,
                          want ? "false" : "true", why);
    return GPT2C_OK;
}

static gpt2c_status parse_config(const char *path, json_t *root, gpt2c_hf_config *hc) {
    if (!json_is_object(root)) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: expected a JSON object", path);
    gpt2c_config *c = &hc->cfg;
    json_t *v = json_object_get(root, "model_type");
    if (v && (!json_is_string(v) || strcmp(json_string_value(v), "gpt2") != 0))
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: model_type %s%s%s is not gpt2", path, json_is_string(v) ? "'" : "",
                          json_is_string(v) ? json_string_value(v) : json_type_name(v), json_is_string(v) ? "'" : "");
    GPT2C_TRY(get_int(path, root, "n_layer", 1, 4096, &c->num_layers));
    GPT2C_TRY(get_int(path, root, "n_head", 1, 65536, &c->num_heads));
    GPT2C_TRY(get_int(path, root, "n_embd", 1, 65536, &c->channels));
    GPT2C_TRY(get_int(path, root, "n_positions", 1, 1 << 20, &c->max_seq_len));
    GPT2C_TRY(get_int(path, root, "vocab_size", 1, 1 << 24, &c->vocab_size));
    v = json_object_get(root, "n_inner");
    if (v && !json_is_null(v)) GPT2C_TRY(get_int(path, root, "n_inner", 1, 1 << 30, &hc->n_inner));
    v = json_object_get(root, "layer_norm_epsilon");
    if (v) {
        if (!json_is_number(v))
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: layer_norm_epsilon must be a number, got %s", path,
                              json_type_name(v));
        hc->layer_norm_epsilon = json_number_value(v);
        if (fabs(hc->layer_norm_epsilon - 1e-5) > 1e-12)
            return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                              "%s: layer_norm_epsilon %g is not implemented by gpt2c (its layernorm uses 1e-05)", path,
                              hc->layer_norm_epsilon);
    }
    v = json_object_get(root, "activation_function");
    if (v) {
        if (!json_is_string(v))
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: activation_function must be a string, got %s", path,
                              json_type_name(v));
        const char *a = json_string_value(v);
        /* gelu_new and gelu_pytorch_tanh are the same tanh approximation gpt2c computes */
        if (strcmp(a, "gelu_new") != 0 && strcmp(a, "gelu_pytorch_tanh") != 0)
            return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                              "%s: activation_function '%s' is not implemented by gpt2c (gelu_new or gelu_pytorch_tanh)",
                              path, a);
    }
    GPT2C_TRY(require_bool(path, root, "scale_attn_weights", 1, "attention is always scaled by 1/sqrt(head size)"));
    GPT2C_TRY(require_bool(path, root, "scale_attn_by_inverse_layer_idx", 0, "no per-layer attention scaling"));
    GPT2C_TRY(require_bool(path, root, "reorder_and_upcast_attn", 0, "no reordered attention"));
    GPT2C_TRY(require_bool(path, root, "add_cross_attention", 0, "decoder-only, no cross-attention"));
    GPT2C_TRY(require_bool(path, root, "tie_word_embeddings", 1, "lm_head is always wte"));
    GPT2C_TRY(get_token_id(path, root, "bos_token_id", &hc->bos_token_id));
    GPT2C_TRY(get_token_id(path, root, "eos_token_id", &hc->eos_token_id));
    return GPT2C_OK;
}
#endif

gpt2c_status gpt2c_hf_config_read(const char *path, gpt2c_hf_config *hc) {
    memset(hc, 0, sizeof *hc);
    hc->layer_norm_epsilon = 1e-5;
    hc->bos_token_id = hc->eos_token_id = -1;
#ifdef GPT2C_HAVE_JANSSON
    json_t *root;
    GPT2C_TRY(gpt2c_io_json_read(path, &root));
    gpt2c_status st = parse_config(path, root, hc);
    json_decref(root);
    return st;
#else
    return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: reading config.json needs jansson (rebuild with libjansson-dev)", path);
#endif
}

gpt2c_status gpt2c_hf_config_check(const gpt2c_hf_config *hc, const gpt2c_config *t, const char *path,
                                   const char *wte, const char *wpe, const char *layers) {
    const gpt2c_config *c = &hc->cfg;
    if ((c->vocab_size && c->vocab_size != t->vocab_size) || (c->channels && c->channels != t->channels)) {
        int vocab = c->vocab_size && c->vocab_size != t->vocab_size;
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: %s %d disagrees with tensor '%s' of shape [%d, %d]", path,
                          vocab ? "vocab_size" : "n_embd", vocab ? c->vocab_size : c->channels, wte, t->vocab_size,
                          t->channels);
    }
    if (c->max_seq_len && c->max_seq_len != t->max_seq_len)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: n_positions %d disagrees with tensor '%s' of shape [%d, %d]", path,
                          c->max_seq_len, wpe, t->max_seq_len, t->channels);
    if (c->num_layers && c->num_layers != t->num_layers)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: n_layer %d disagrees with the tensors: %s0..%d (%d layers)", path,
                          c->num_layers, layers, t->num_layers - 1, t->num_layers);
    if (c->num_heads && t->channels % c->num_heads != 0)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: n_head %d does not divide n_embd %d (tensor '%s' of shape [%d, %d])",
                          path, c->num_heads, t->channels, wte, t->vocab_size, t->channels);
    if (hc->n_inner && hc->n_inner != 4 * t->channels)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: n_inner %d is not implemented by gpt2c (4 * n_embd = %d)", path,
                          hc->n_inner, 4 * t->channels);
    return GPT2C_OK;
}

#ifdef GPT2C_HAVE_JANSSON
static gpt2c_status write_json(json_t *root, const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return gpt2c_io_json_write(root, path);
}

gpt2c_status gpt2c_io_json_write(json_t *root, const char *path) {
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(root);
    if (!text) return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    gpt2c_atomic a;
    gpt2c_status st = gpt2c_atomic_open(&a, path);
    if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, text, strlen(text));
    if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, "\n", 1);
    if (st == GPT2C_OK)
        st = gpt2c_atomic_commit(&a);
    else
        gpt2c_atomic_abort(&a);
    free(text);
    return st;
}

static json_t *token_id(int id) { return id >= 0 ? json_integer(id) : json_null(); }
#endif

gpt2c_status gpt2c_hf_config_write(const gpt2c_config *c, int eot, const char *dir) {
#ifdef GPT2C_HAVE_JANSSON
    json_t *root = json_object();
    json_object_set_new(root, "architectures", json_pack("[s]", "GPT2LMHeadModel"));
    json_object_set_new(root, "model_type", json_string("gpt2"));
    json_object_set_new(root, "n_layer", json_integer(c->num_layers));
    json_object_set_new(root, "n_head", json_integer(c->num_heads));
    json_object_set_new(root, "n_embd", json_integer(c->channels));
    json_object_set_new(root, "n_positions", json_integer(c->max_seq_len));
    json_object_set_new(root, "n_ctx", json_integer(c->max_seq_len));
    json_object_set_new(root, "vocab_size", json_integer(c->vocab_size));
    json_object_set_new(root, "n_inner", json_null());
    json_object_set_new(root, "activation_function", json_string("gelu_new"));
    json_object_set_new(root, "layer_norm_epsilon", json_real(1e-5));
    /* gpt2c trains without dropout: say so, so that a fine-tune in transformers starts from the same model */
    json_object_set_new(root, "attn_pdrop", json_real(0.0));
    json_object_set_new(root, "embd_pdrop", json_real(0.0));
    json_object_set_new(root, "resid_pdrop", json_real(0.0));
    json_object_set_new(root, "initializer_range", json_real(0.02));
    json_object_set_new(root, "scale_attn_weights", json_true());
    json_object_set_new(root, "scale_attn_by_inverse_layer_idx", json_false());
    json_object_set_new(root, "reorder_and_upcast_attn", json_false());
    json_object_set_new(root, "tie_word_embeddings", json_true());
    json_object_set_new(root, "bos_token_id", token_id(eot));
    json_object_set_new(root, "eos_token_id", token_id(eot));
    json_object_set_new(root, "torch_dtype", json_string("float32"));
    GPT2C_TRY(write_json(root, dir, "config.json"));
    root = json_object();
    json_object_set_new(root, "bos_token_id", token_id(eot));
    json_object_set_new(root, "eos_token_id", token_id(eot));
    return write_json(root, dir, "generation_config.json");
#else
    (void)c, (void)eot;
    return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: writing config.json needs jansson (rebuild with libjansson-dev)", dir);
#endif
}
