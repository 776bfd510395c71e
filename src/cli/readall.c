#include "cli/readall.h"

#include <errno.h>
#include <stdlib.h>

int cli_read_stream(FILE *f, char **buf, size_t *n) {
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap + 1);
    if (!b) return -1;
    for (;;) {
        if (len == cap) {
            char *nb = realloc(b, 2 * cap + 1);
            if (!nb) {
                free(b);
                errno = ENOMEM;
                return -1;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        free(b);
        if (!errno) errno = EIO;
        return -1;
    }
    b[len] = 0;
    *buf = b;
    *n = len;
    return 0;
}
