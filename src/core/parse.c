#include "gpt2c/parse.h"

#include <stddef.h>

int gpt2c_parse_u64(const char *s, uint64_t hi, uint64_t *out) {
    if (!s || !*s) return 0;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        const unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return 0; /* v*10 + d would overflow */
        v = v * 10 + d;
    }
    if (v > hi) return 0;
    *out = v;
    return 1;
}

int gpt2c_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    if (!s) return 0;
    const int neg = *s == '-';
    uint64_t mag;
    if (!gpt2c_parse_u64(s + neg, (uint64_t)INT64_MAX + (uint64_t)neg, &mag)) return 0;
    /* -(2^63) is representable: convert through the magnitude without overflow */
    const int64_t v = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    if (v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int gpt2c_parse_int(const char *s, int lo, int hi, int *out) {
    int64_t v;
    if (!gpt2c_parse_i64(s, lo, hi, &v)) return 0;
    *out = (int)v;
    return 1;
}
