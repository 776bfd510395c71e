/* libFuzzer target: bpe-train on arbitrary text (pre-tokenizer, pair counts,
 * merges, vocab.json/merges.txt writer); the vocabulary it writes must load
 * and round-trip the same text exactly. */
#include <stdint.h>

#include "fuzz_util.h"
#include "gpt2c/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    gpt2c_bpe_trainer *t = NULL;
    if (gpt2c_bpe_trainer_new(&t) != GPT2C_OK) return 0;
    gpt2c_bpe_stats stats;
    const char *dir = fuzz_dir();
    gpt2c_status st = gpt2c_bpe_trainer_feed(t, (const char *)data, size);
    if (st == GPT2C_OK) st = gpt2c_bpe_trainer_train(t, 300, dir, &stats);
    gpt2c_bpe_trainer_free(t);
    if (st != GPT2C_OK) return 0;
    gpt2c_tokenizer *tok = NULL;
    if (gpt2c_tokenizer_load(dir, &tok) != GPT2C_OK) abort(); /* what we write, we must read */
    int32_t *ids = NULL;
    size_t nids = 0;
    if (gpt2c_tokenizer_encode(tok, (const char *)data, size, 0, &ids, &nids) == GPT2C_OK) {
        char *out = NULL;
        size_t nout = 0;
        if (gpt2c_tokenizer_decode(tok, ids, nids, &out, &nout) != GPT2C_OK || nout != size ||
            (size && memcmp(out, data, size) != 0))
            abort();
        free(out);
    }
    free(ids);
    gpt2c_tokenizer_free(tok);
    return 0;
}
