/* libFuzzer: decode(encode(x)) == x for any bytes, with and without special
 * tokens, and the parallel encoder agrees with the serial one.
 * Vocabulary: $GPT2C_VOCAB, else ../shared/data/gpt2-tokenizer. Run e.g.
 *   GPT2C_VOCAB=/work/shared/data/gpt2-tokenizer ./fuzz_tokenizer -max_total_time=20 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/tokenizer.h"

static gpt2c_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = getenv("GPT2C_VOCAB");
    if (!dir) dir = "../shared/data/gpt2-tokenizer";
    if (gpt2c_tokenizer_load(dir, &tok) != GPT2C_OK) {
        fprintf(stderr, "fuzz_tokenizer: %s (set GPT2C_VOCAB to a vocabulary directory)\n", gpt2c_errmsg());
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int special = size && (data[0] & 1);
    int32_t *ids, *ids2;
    size_t n, n2, nb;
    char *back;
    if (gpt2c_tokenizer_encode(tok, (const char *)data, size, special, &ids, &n) != GPT2C_OK) abort();
    if (gpt2c_tokenizer_decode(tok, ids, n, &back, &nb) != GPT2C_OK) abort();
    if (nb != size || memcmp(back, data, size) != 0) abort();
    free(back);
    if (gpt2c_tokenizer_encode_parallel(tok, (const char *)data, size, special, 3, &ids2, &n2) != GPT2C_OK) abort();
    if (n2 != n || (n && memcmp(ids, ids2, n * sizeof *ids) != 0)) abort();
    free(ids);
    free(ids2);
    return 0;
}
