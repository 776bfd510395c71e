/* Decoding: ids -> the bytes of their tokens, concatenated. */
#include <stdlib.h>

#include "tokenizer/tok_internal.h"

gpt2c_status gpt2c_tokenizer_token_bytes(const gpt2c_tokenizer *t, int32_t id, const char **p, size_t *len) {
    if (id < 0 || id >= t->n_vocab)
        return gpt2c_fail(GPT2C_ERR_RANGE, "tokenizer: token id %d out of range [0, %d)", id, t->n_vocab);
    *p = t->blob + t->off[id];
    *len = t->len[id];
    return GPT2C_OK;
}

gpt2c_status gpt2c_tokenizer_decode(const gpt2c_tokenizer *t, const int32_t *ids, size_t n, char **bytes,
                                    size_t *nbytes) {
    *bytes = NULL;
    *nbytes = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return gpt2c_fail(GPT2C_ERR_RANGE, "tokenizer: token id %d (position %zu) out of range [0, %d)", ids[i],
                              i, t->n_vocab);
        total += t->len[ids[i]];
    }
    char *out = malloc(total + 1);
    if (!out) return gpt2c_fail(GPT2C_ERR_NOMEM, "tokenizer: cannot allocate %zu bytes to decode", total);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(out + o, t->blob + t->off[ids[i]], t->len[ids[i]]);
        o += t->len[ids[i]];
    }
    out[o] = 0;
    *bytes = out;
    *nbytes = o;
    return GPT2C_OK;
}
