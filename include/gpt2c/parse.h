/* Checked decimal parsing for values read from files and metadata: the whole
 * string must be digits (an optional '-' for signed values), no spaces, no
 * '+', no overflow, and inside [lo, hi].  Return 1 on success, 0 otherwise
 * (*out untouched).  Unlike atoi/strtoull, "-1", "12abc", "" and "1e9" fail. */
#ifndef GPT2C_PARSE_H
#define GPT2C_PARSE_H

#include <stdint.h>

int gpt2c_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
int gpt2c_parse_u64(const char *s, uint64_t hi, uint64_t *out);
int gpt2c_parse_int(const char *s, int lo, int hi, int *out);

#endif
