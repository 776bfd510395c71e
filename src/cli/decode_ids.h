/* The token-id list `gpt2c decode` reads: whitespace-separated decimal ids,
 * each in [0, vocab).  Kept apart from the command so the fuzzer can drive it. */
#ifndef GPT2C_CLI_DECODE_IDS_H
#define GPT2C_CLI_DECODE_IDS_H

#include <stddef.h>
#include <stdint.h>

/* Parses text[0..n) (NUL-terminated at text[n]).  Returns 0 with a malloc'd
 * *ids (n_ids entries), or 1 with a one-line reason in err (no allocation kept).
 * `what` names the source in messages ("stdin"), `vocab` the vocabulary. */
int cli_decode_ids(const char *text, size_t n, int vocab_size, const char *what, const char *vocab, int32_t **ids,
                   size_t *n_ids, char *err, size_t errlen);

#endif
