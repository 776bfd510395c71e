/* libFuzzer target: the id list `gpt2c decode` reads from stdin. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/decode_ids.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    int32_t *ids = NULL;
    size_t n = 0;
    char err[512];
    if (cli_decode_ids(text, size, 50257, "stdin", "fuzz", &ids, &n, err, sizeof err) == 0) {
        for (size_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= 50257) abort();
        free(ids);
    } else if (ids || !err[0]) {
        abort();
    }
    free(text);
    return 0;
}
