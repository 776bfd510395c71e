/* libFuzzer target: the llm.c token shard parser on arbitrary bytes; on
 * success every token of the payload is read (ASan catches overruns). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint16_t *tok = NULL;
    size_t n = 0;
    if (gpt2c_shard_parse("fuzz.bin", data, size, &tok, &n) != GPT2C_OK) return 0;
    volatile unsigned sum = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t t;
        memcpy(&t, tok + i, sizeof t);
        sum += t;
    }
    (void)sum;
    return 0;
}
