#include "cli/model_arg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/infer_common.h"
#include "gpt2c/io.h"
#include "gpt2c/tokenizer.h"

/* --vocab N, or --vocab DIR: the size of the tokenizer in DIR. */
static int vocab_size_of(const char *cmd, const char *spec, int *out) {
    char *end;
    long v = strtol(spec, &end, 10);
    if (end != spec && *end == 0) {
        if (v < 1 || v > (1 << 24)) return cli_error(cmd, "--vocab: %ld is out of range [1, 16777216]", v);
        *out = (int)v;
        return 0;
    }
    gpt2c_tokenizer *tok;
    if (gpt2c_tokenizer_load(spec, &tok) != GPT2C_OK)
        return cli_error(cmd, "--vocab: expected a number or a tokenizer directory: %s", gpt2c_errmsg());
    *out = gpt2c_tokenizer_vocab_size(tok);
    gpt2c_tokenizer_free(tok);
    return 0;
}

const char *model_arg_vocab_dir(const model_arg *ma) {
    if (ma->vocab && gpt2c_is_dir(ma->vocab)) return ma->vocab;
    if (ma->model && gpt2c_is_dir(ma->model) && cli_is_tokenizer_dir(ma->model)) return ma->model;
    return NULL;
}

int model_arg_make(const char *cmd, const model_arg *ma, uint64_t seed, gpt2c_model **out, int *loaded) {
    const char *spec = ma->model ? ma->model : "gpt2";
    struct stat sb;
    int vocab = 0;
    *loaded = 0;
    if (ma->vocab && vocab_size_of(cmd, ma->vocab, &vocab)) return 1;
    if (stat(spec, &sb) == 0) {
        if (gpt2c_model_load(spec, out) != GPT2C_OK) return cli_fail_status(cmd);
        const gpt2c_config c = *gpt2c_model_config(*out);
        /* size options may restate a checkpoint's sizes but not change them */
        if ((ma->layers && ma->layers != c.num_layers) || (ma->heads && ma->heads != c.num_heads) ||
            (ma->embd && ma->embd != c.channels) || (ma->ctx && ma->ctx != c.max_seq_len) ||
            (vocab && vocab != c.vocab_size)) {
            gpt2c_model_free(*out);
            *out = NULL;
            return cli_error(cmd, "%s: the size options contradict the checkpoint (it has layers=%d heads=%d embd=%d ctx=%d vocab=%d)",
                             spec, c.num_layers, c.num_heads, c.channels, c.max_seq_len, c.vocab_size);
        }
        *loaded = 1;
        return 0;
    }
    gpt2c_config cfg;
    if (gpt2c_config_preset(spec, &cfg) != GPT2C_OK) {
        if (strchr(spec, '/') || strchr(spec, '.'))
            return cli_error(cmd, "--model: %s: no such checkpoint file", spec);
        return cli_fail_option(cmd, "--model");
    }
    if (ma->layers) cfg.num_layers = ma->layers;
    if (ma->heads) cfg.num_heads = ma->heads;
    if (ma->embd) cfg.channels = ma->embd;
    if (ma->ctx) cfg.max_seq_len = ma->ctx;
    if (vocab) {
        cfg.vocab_size = vocab;
        cfg.padded_vocab_size = 0; /* recomputed: a multiple of 128 */
    }
    if (gpt2c_model_create(&cfg, out) != GPT2C_OK) return cli_fail_status(cmd);
    gpt2c_model_init_random(*out, seed);
    return 0;
}
