/* libFuzzer target: tokenizer files.  Input: one flag byte (even: OpenAI's
 * encoder.json + vocab.bpe, odd: Hugging Face's vocab.json + merges.txt), then
 * the JSON file, a "\n@@\n" separator, then the merges file.  A vocabulary that
 * loads must encode a text and decode its ids back to the same bytes. */
#include <stdint.h>

#include "fuzz_util.h"
#include "gpt2c/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int hf = data[0] & 1;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    const uint8_t *sep = memmem(p, n, "\n@@\n", 4);
    size_t njson = sep ? (size_t)(sep - p) : n;
    const uint8_t *merges = sep ? sep + 4 : p + n;
    size_t nmerges = sep ? n - njson - 4 : 0;
    unlink(fuzz_path("encoder.json"));
    unlink(fuzz_path("vocab.bpe"));
    unlink(fuzz_path("vocab.json"));
    unlink(fuzz_path("merges.txt"));
    fuzz_write(fuzz_path(hf ? "vocab.json" : "encoder.json"), p, njson);
    fuzz_write(fuzz_path(hf ? "merges.txt" : "vocab.bpe"), merges, nmerges);
    gpt2c_tokenizer *tok = NULL;
    if (gpt2c_tokenizer_load(fuzz_dir(), &tok) != GPT2C_OK) return 0;
    static const char text[] = "Hello, world! It's 2024 \xe2\x80\x94 caf\xc3\xa9 \n\n  tabs\tand <|endoftext|> too";
    int32_t *ids = NULL;
    size_t nids = 0;
    if (gpt2c_tokenizer_encode(tok, text, sizeof text - 1, 0, &ids, &nids) == GPT2C_OK) {
        char *out = NULL;
        size_t nout = 0;
        if (gpt2c_tokenizer_decode(tok, ids, nids, &out, &nout) == GPT2C_OK &&
            (nout != sizeof text - 1 || memcmp(out, text, nout) != 0))
            abort(); /* byte-level BPE must round-trip */
        free(out);
    }
    free(ids);
    gpt2c_tokenizer_free(tok);
    return 0;
}
