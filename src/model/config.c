#include <stdio.h>
#include <string.h>

#include "gpt2c/model.h"

int gpt2c_pad_vocab(int v) { return (v + 127) / 128 * 128; }

gpt2c_status gpt2c_config_preset(const char *name, gpt2c_config *cfg) {
    static const struct {
        const char *name, *alias;
        int L, NH, C;
    } presets[] = {
        {"gpt2", "d12", 12, 12, 768},
        {"gpt2-medium", "d24", 24, 16, 1024},
        {"gpt2-large", "d36", 36, 20, 1280},
        {"gpt2-xl", "d48", 48, 25, 1600},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(name, presets[i].name) == 0 || strcmp(name, presets[i].alias) == 0) {
            cfg->max_seq_len = 1024;
            cfg->vocab_size = 50257;
            cfg->padded_vocab_size = 50304;
            cfg->num_layers = presets[i].L;
            cfg->num_heads = presets[i].NH;
            cfg->channels = presets[i].C;
            return GPT2C_OK;
        }
    return gpt2c_fail(GPT2C_ERR_ARG, "unknown model '%s' (gpt2, gpt2-medium, gpt2-large, gpt2-xl, or a checkpoint path)", name);
}

gpt2c_status gpt2c_config_check(gpt2c_config *c, const char *what) {
    if (c->num_layers <= 0 || c->num_heads <= 0 || c->channels <= 0 || c->max_seq_len <= 0 || c->vocab_size <= 0)
        return gpt2c_fail(GPT2C_ERR_ARG,
                          "%s: sizes must be positive (layers=%d heads=%d embd=%d ctx=%d vocab=%d)", what,
                          c->num_layers, c->num_heads, c->channels, c->max_seq_len, c->vocab_size);
    if (c->channels % c->num_heads != 0)
        return gpt2c_fail(GPT2C_ERR_ARG, "%s: embd %d is not divisible by heads %d", what, c->channels, c->num_heads);
    /* keep every slab index inside size_t and every per-tensor count inside int range */
    if (c->num_layers > 4096 || c->channels > 65536 || c->max_seq_len > 1 << 20 || c->vocab_size > 1 << 24)
        return gpt2c_fail(GPT2C_ERR_ARG, "%s: sizes too large (layers=%d embd=%d ctx=%d vocab=%d)", what,
                          c->num_layers, c->channels, c->max_seq_len, c->vocab_size);
    if (c->padded_vocab_size == 0) c->padded_vocab_size = gpt2c_pad_vocab(c->vocab_size);
    if (c->padded_vocab_size < c->vocab_size)
        return gpt2c_fail(GPT2C_ERR_ARG, "%s: padded vocab %d is smaller than vocab %d", what, c->padded_vocab_size,
                          c->vocab_size);
    return GPT2C_OK;
}
