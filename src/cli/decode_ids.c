#include "cli/decode_ids.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_decode_ids(const char *text, size_t n, int vocab_size, const char *what, const char *vocab, int32_t **ids,
                   size_t *n_ids, char *err, size_t errlen) {
    *ids = NULL;
    *n_ids = 0;
    if (memchr(text, 0, n)) {
        snprintf(err, errlen, "%s: NUL byte in the id list", what);
        return 1;
    }
    int32_t *v = malloc((n / 2 + 1) * sizeof *v); /* every id takes >= 2 bytes but the last */
    if (!v) {
        snprintf(err, errlen, "%s: out of memory for %zu bytes of ids", what, n);
        return 1;
    }
    size_t k = 0;
    for (const char *p = text; *p;) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        const char *e = p;
        while (*e && !isspace((unsigned char)*e)) e++;
        /* strictly decimal: an optional '-', then digits, at most 18 of them */
        const char *d = p + (*p == '-');
        size_t nd = (size_t)(e - d);
        int ok = nd > 0 && nd <= 18; /* < 10^18: no overflow below */
        for (const char *q = d; ok && q < e; q++) ok = *q >= '0' && *q <= '9';
        if (!ok) {
            snprintf(err, errlen, "%s: token #%zu '%.*s' is not an integer id", what, k + 1,
                     (int)(e - p > 32 ? 32 : e - p), p);
            free(v);
            return 1;
        }
        long long x = 0;
        for (const char *q = d; q < e; q++) x = x * 10 + (*q - '0');
        if (*p == '-') x = -x;
        if (x < 0 || x >= vocab_size) {
            snprintf(err, errlen, "%s: token #%zu: id %lld out of range [0, %d) for %s", what, k + 1, x, vocab_size,
                     vocab);
            free(v);
            return 1;
        }
        v[k++] = (int32_t)x;
        p = e;
    }
    *ids = v;
    *n_ids = k;
    return 0;
}
