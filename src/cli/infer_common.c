#include "cli/infer_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpt2c/io.h"

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

gpt2c_status cli_open_model(const char *name_or_path, const char *backend, uint64_t seed, gpt2c_model **out) {
    *out = NULL;
    gpt2c_model *m = NULL;
    gpt2c_config cfg;
    int is_path = is_file(name_or_path) || gpt2c_is_dir(name_or_path);
    if (!is_path && gpt2c_config_preset(name_or_path, &cfg) == GPT2C_OK) {
        GPT2C_TRY(gpt2c_config_check(&cfg, "--model"));
        GPT2C_TRY(gpt2c_model_create(&cfg, &m));
        gpt2c_model_init_random(m, seed);
    } else {
        if (!is_path)
            return gpt2c_fail(GPT2C_ERR_ARG,
                              "--model: '%s' is neither a checkpoint (file or directory) nor a model name (gpt2, gpt2-medium, "
                              "gpt2-large, gpt2-xl)",
                              name_or_path);
        GPT2C_TRY(gpt2c_model_load(name_or_path, &m));
    }
    gpt2c_status st = gpt2c_model_set_backend(m, backend);
    if (st != GPT2C_OK) {
        gpt2c_model_free(m);
        return st;
    }
    *out = m;
    return GPT2C_OK;
}

const char *cli_find_vocab(const char *given) {
    if (given) return given;
    static char buf[4096];
    const char *env = getenv("GPT2C_DATA");
    const char *cands[3] = {NULL, "../shared/data/gpt2-tokenizer", "../../shared/data/gpt2-tokenizer"};
    if (env) {
        snprintf(buf, sizeof buf, "%s/gpt2-tokenizer", env);
        cands[0] = buf;
    }
    for (int i = 0; i < 3; i++)
        if (cands[i] && cli_is_tokenizer_dir(cands[i])) return cands[i];
    return NULL;
}

int cli_is_tokenizer_dir(const char *dir) {
    static const char *const pairs[2][2] = {{"vocab.json", "merges.txt"}, {"encoder.json", "vocab.bpe"}};
    for (int i = 0; i < 2; i++) {
        char a[4200], b[4200];
        snprintf(a, sizeof a, "%s/%s", dir, pairs[i][0]);
        snprintf(b, sizeof b, "%s/%s", dir, pairs[i][1]);
        if (is_file(a) && is_file(b)) return 1;
    }
    return 0;
}
