/* Hugging Face model directories (tests/fixtures/hf_dir*, written by
 * tools/reference/make_hf_dirs.py with transformers' save_pretrained):
 * - hf_dir (config.json + model.safetensors) and hf_dir_sharded (an index and
 *   five shards) load and reproduce transformers' logits (rel 1e-5, ref backend);
 * - a directory gpt2c writes loads back with the same logits, and its
 *   config.json reads back with the model's sizes;
 * - every disagreement between config.json and the tensors, every key of the
 *   wrong type and every feature gpt2c does not implement is a one-line error
 *   naming the key (and for sizes the tensor's shape); broken indexes too. */
#include <stdint.h>
#include <sys/stat.h>

#include "io_testutil.h"

typedef struct {
    int B, T, V;
    int32_t *tokens;
    float *logits;
} reference;

static int load_reference(const char *dir, reference *r) {
    gpt2c_st_file *f = NULL;
    CHECK_OK(gpt2c_st_open(io_path(dir, "reference.safetensors"), &f));
    if (!f) return 0;
    const gpt2c_st_tensor *lt = gpt2c_st_find(f, "logits"), *tt = gpt2c_st_find(f, "tokens");
    int ok = lt && tt && lt->ndim == 3 && tt->dtype == GPT2C_DT_I32;
    CHECK(ok);
    if (ok) {
        r->B = (int)lt->shape[0], r->T = (int)lt->shape[1], r->V = (int)lt->shape[2];
        size_t n = (size_t)r->B * r->T;
        r->tokens = malloc(n * sizeof(int32_t));
        r->logits = malloc(n * r->V * sizeof(float));
        memcpy(r->tokens, tt->data, n * sizeof(int32_t));
        CHECK_OK(gpt2c_st_read_f32(f, "logits", r->logits, n * r->V));
    }
    gpt2c_st_close(f);
    return ok;
}

static void check_logits(const char *path, const reference *r) {
    gpt2c_model *m = NULL;
    CHECK_OK(gpt2c_model_load(path, &m));
    if (!m) return;
    CHECK(gpt2c_model_config(m)->vocab_size == r->V && gpt2c_model_config(m)->num_heads == 2 && gpt2c_model_config(m)->num_layers == 2);
    CHECK_OK(gpt2c_model_set_backend(m, "ref"));
    CHECK_OK(gpt2c_model_prepare(m, r->B, r->T));
    CHECK_OK(gpt2c_model_forward(m, r->tokens, NULL, r->B, r->T, NULL));
    const float *lg = gpt2c_model_logits(m);
    size_t rows = (size_t)r->B * r->T, Vp = (size_t)gpt2c_model_config(m)->padded_vocab_size;
    float *got = malloc(rows * r->V * sizeof(float));
    for (size_t i = 0; i < rows; i++) memcpy(got + i * r->V, lg + i * Vp, r->V * sizeof(float));
    double err = tu_max_rel_err(got, r->logits, rows * r->V, 1e-30);
    printf("  %-64s logits rel err %.3g (tol 1e-5)\n", path, err);
    CHECK_MSG(err <= 1e-5, "%s: logits rel err %.3g", path, err);
    free(got);
    gpt2c_model_free(m);
}

static void copy(const char *from, const char *to) {
    size_t n;
    unsigned char *b = io_slurp(from, &n);
    CHECK_MSG(b != NULL, "cannot read %s", from);
    if (b) io_spit(to, b, n);
    free(b);
}

/* The fixture's config.json with the first occurrence of `from` replaced by `to`. */
static void write_config(const char *src_dir, const char *dir, const char *from, const char *to) {
    size_t n;
    char *b = (char *)io_slurp(io_path(src_dir, "config.json"), &n);
    if (!b) return;
    b[n] = 0;
    char *at = strstr(b, from);
    CHECK_MSG(at != NULL, "config.json has no '%s'", from);
    FILE *f = fopen(io_path(dir, "config.json"), "wb");
    if (at) {
        fwrite(b, 1, (size_t)(at - b), f);
        fputs(to, f);
        fputs(at + strlen(from), f);
    }
    fclose(f);
    free(b);
}

/* A config.json edit that must be refused with a message naming every string given. */
#define CHECK_CONFIG_REFUSED(from, to, want, ...)                                                   \
    do {                                                                                            \
        write_config(src, bad, from, to);                                                           \
        gpt2c_model *m_ = NULL;                                                                     \
        CHECK_FAILS_NAMING(gpt2c_model_load(bad, &m_), want, "config.json", __VA_ARGS__);            \
        printf("  refused (%s -> %s): %s\n", from, to, gpt2c_errmsg());                              \
        gpt2c_model_free(m_);                                                                       \
    } while (0)

static void bad_configs(const char *src, const char *scratch) {
    char bad[400];
    snprintf(bad, sizeof bad, "%s/bad", scratch);
    CHECK(mkdir(bad, 0777) == 0);
    copy(io_path(src, "model.safetensors"), io_path(bad, "model.safetensors"));
    /* sizes that disagree with the tensors: key, config value, tensor shape */
    CHECK_CONFIG_REFUSED("\"n_embd\": 16", "\"n_embd\": 32", GPT2C_ERR_FORMAT, "n_embd 32", "[48, 16]");
    CHECK_CONFIG_REFUSED("\"vocab_size\": 48", "\"vocab_size\": 50", GPT2C_ERR_FORMAT, "vocab_size 50", "[48, 16]");
    CHECK_CONFIG_REFUSED("\"n_positions\": 24", "\"n_positions\": 32", GPT2C_ERR_FORMAT, "n_positions 32", "[24, 16]");
    CHECK_CONFIG_REFUSED("\"n_layer\": 2", "\"n_layer\": 3", GPT2C_ERR_FORMAT, "n_layer 3", "2 layers");
    CHECK_CONFIG_REFUSED("\"n_head\": 2", "\"n_head\": 3", GPT2C_ERR_FORMAT, "n_head 3 does not divide n_embd 16", "[48, 16]");
    /* wrong JSON types */
    CHECK_CONFIG_REFUSED("\"n_head\": 2", "\"n_head\": \"2\"", GPT2C_ERR_FORMAT, "n_head must be an integer, got a string");
    CHECK_CONFIG_REFUSED("\"n_layer\": 2", "\"n_layer\": 2.5", GPT2C_ERR_FORMAT, "n_layer must be an integer");
    CHECK_CONFIG_REFUSED("\"n_embd\": 16", "\"n_embd\": -16", GPT2C_ERR_FORMAT, "n_embd -16 is out of range");
    CHECK_CONFIG_REFUSED("\"layer_norm_epsilon\": 1e-05", "\"layer_norm_epsilon\": \"1e-5\"", GPT2C_ERR_FORMAT,
                         "layer_norm_epsilon must be a number");
    CHECK_CONFIG_REFUSED("\"scale_attn_weights\": true", "\"scale_attn_weights\": 1", GPT2C_ERR_FORMAT,
                         "scale_attn_weights must be true or false");
    CHECK_CONFIG_REFUSED("{", "[", GPT2C_ERR_FORMAT, "not valid JSON");
    /* what gpt2c does not implement */
    CHECK_CONFIG_REFUSED("\"gelu_new\"", "\"relu\"", GPT2C_ERR_UNSUPPORTED, "activation_function 'relu'");
    CHECK_CONFIG_REFUSED("\"scale_attn_by_inverse_layer_idx\": false", "\"scale_attn_by_inverse_layer_idx\": true",
                         GPT2C_ERR_UNSUPPORTED, "scale_attn_by_inverse_layer_idx = true");
    CHECK_CONFIG_REFUSED("\"reorder_and_upcast_attn\": false", "\"reorder_and_upcast_attn\": true",
                         GPT2C_ERR_UNSUPPORTED, "reorder_and_upcast_attn = true");
    CHECK_CONFIG_REFUSED("\"layer_norm_epsilon\": 1e-05", "\"layer_norm_epsilon\": 1e-06", GPT2C_ERR_UNSUPPORTED,
                         "layer_norm_epsilon 1e-06");
    CHECK_CONFIG_REFUSED("\"n_inner\": null", "\"n_inner\": 32", GPT2C_ERR_UNSUPPORTED, "n_inner 32");
    CHECK_CONFIG_REFUSED("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false", GPT2C_ERR_UNSUPPORTED,
                         "tie_word_embeddings");
    CHECK_CONFIG_REFUSED("\"model_type\": \"gpt2\"", "\"model_type\": \"llama\"", GPT2C_ERR_UNSUPPORTED,
                         "model_type 'llama'");
    /* the file itself, with a wrong config.json beside it, is checked the same way */
    write_config(src, bad, "\"n_embd\": 16", "\"n_embd\": 8");
    gpt2c_model *m = NULL;
    CHECK_FAILS_NAMING(gpt2c_model_load(io_path(bad, "model.safetensors"), &m), GPT2C_ERR_FORMAT, "n_embd 8");
    /* without config.json a directory is its model.safetensors: here the head count is unknown */
    unlink(io_path(bad, "config.json"));
    CHECK_FAILS_NAMING(gpt2c_model_load(bad, &m), GPT2C_ERR_FORMAT, "number of heads");
    unlink(io_path(bad, "model.safetensors"));
    CHECK_FAILS_NAMING(gpt2c_model_load(bad, &m), GPT2C_ERR_FORMAT, bad, "no model.safetensors");
    io_spit(io_path(bad, "pytorch_model.bin"), "PK", 2);
    CHECK_FAILS_NAMING(gpt2c_model_load(bad, &m), GPT2C_ERR_UNSUPPORTED, "pytorch_model.bin");
}

/* An index with `from` replaced by `to`, beside the fixture's shards. */
static void bad_index(const char *src, const char *dir, const char *from, const char *to, gpt2c_status st,
                      const char *want) {
    size_t n;
    char *b = (char *)io_slurp(io_path(src, "model.safetensors.index.json"), &n);
    if (!b) return;
    b[n] = 0;
    char *at = strstr(b, from);
    CHECK_MSG(at != NULL, "index has no '%s'", from);
    if (at) {
        FILE *f = fopen(io_path(dir, "model.safetensors.index.json"), "wb");
        fwrite(b, 1, (size_t)(at - b), f);
        fputs(to, f);
        fputs(at + strlen(from), f);
        fclose(f);
        gpt2c_model *m = NULL;
        CHECK_FAILS_NAMING(gpt2c_model_load(dir, &m), st, want);
        printf("  refused index (%s -> %s): %s\n", from, to, gpt2c_errmsg());
        gpt2c_model_free(m);
    }
    free(b);
}

static void bad_indexes(const char *src, const char *scratch) {
    char dir[400];
    snprintf(dir, sizeof dir, "%s/badidx", scratch);
    CHECK(mkdir(dir, 0777) == 0);
    char shard[64];
    for (int i = 1; i <= 5; i++) {
        snprintf(shard, sizeof shard, "model-%05d-of-00005.safetensors", i);
        copy(io_path(src, shard), io_path(dir, shard));
    }
    copy(io_path(src, "config.json"), io_path(dir, "config.json"));
    /* a tensor placed in the wrong shard, a missing shard, a path out of the directory, no weight_map */
    bad_index(src, dir, "\"transformer.wte.weight\": \"model-00001", "\"transformer.wte.weight\": \"model-00002",
              GPT2C_ERR_FORMAT, "transformer.wte.weight");
    bad_index(src, dir, "-of-00005.safetensors\"", "-of-00006.safetensors\"", GPT2C_ERR_IO, "of-00006.safetensors");
    bad_index(src, dir, "\"model-00001", "\"../model-00001", GPT2C_ERR_FORMAT, "must be a file name");
    bad_index(src, dir, "weight_map", "weights", GPT2C_ERR_FORMAT, "no \"weight_map\"");
}

static void round_trip(const char *src, const char *scratch, const reference *r) {
    gpt2c_model *m = NULL;
    CHECK_OK(gpt2c_model_load(src, &m));
    if (!m) return;
    char out[400];
    snprintf(out, sizeof out, "%s/written", scratch);
    CHECK_OK(gpt2c_model_save_dir(m, out, NULL, 0, 0, NULL));
    gpt2c_hf_config hc;
    CHECK_OK(gpt2c_hf_config_read(io_path(out, "config.json"), &hc));
    CHECK(hc.cfg.num_layers == 2 && hc.cfg.num_heads == 2 && hc.cfg.channels == 16 && hc.cfg.max_seq_len == 24 &&
          hc.cfg.vocab_size == 48 && hc.eos_token_id == -1);
    size_t n;
    unsigned char *g = io_slurp(io_path(out, "generation_config.json"), &n);
    CHECK(g != NULL);
    free(g);
    check_logits(out, r);
    gpt2c_model_free(m);
    /* an existing file where the directory should go */
    io_spit(io_path(scratch, "afile"), "x", 1);
    CHECK_OK(gpt2c_model_load(src, &m));
    if (m) CHECK_FAILS_NAMING(gpt2c_model_save_dir(m, io_path(scratch, "afile"), NULL, 0, 0, NULL), GPT2C_ERR_IO, "afile");
    gpt2c_model_free(m);
}

int main(void) {
#ifndef GPT2C_HAVE_JANSSON
    tu_skip("built without jansson: safetensors and config.json cannot be read");
#endif
    char dir[300], sharded[300], scratch[300];
    snprintf(dir, sizeof dir, "%s/hf_dir", GPT2C_FIXTURES);
    snprintf(sharded, sizeof sharded, "%s/hf_dir_sharded", GPT2C_FIXTURES);
    snprintf(scratch, sizeof scratch, "%.290s", io_scratch("hfdir"));
    reference r = {0};
    if (load_reference(dir, &r)) {
        check_logits(dir, &r);
        check_logits(sharded, &r);
        check_logits(io_path(dir, "model.safetensors"), &r); /* the file, config.json beside it */
        round_trip(sharded, scratch, &r);
    }
    bad_configs(dir, scratch);
    bad_indexes(sharded, scratch);
    free(r.tokens);
    free(r.logits);
    io_rm_rf(scratch);
    return tu_finish("test_io_hf_dir");
}
