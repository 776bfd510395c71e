/* Helpers for the file-based fuzz targets: one scratch folder per process,
 * and writing the input (or part of it) to a file there. */
#ifndef GPT2C_FUZZ_UTIL_H
#define GPT2C_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline const char *fuzz_dir(void) {
    static char dir[256];
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/gpt2c_fuzz_XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir)) abort();
    }
    return dir;
}

/* dir/name; the returned buffer is one of 4 rotating static buffers. */
static inline const char *fuzz_path(const char *name) {
    static char bufs[4][512];
    static int k;
    char *b = bufs[k++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%s", fuzz_dir(), name);
    return b;
}

static inline void fuzz_write(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(p, 1, n, f) != n) abort();
    fclose(f);
}

#endif
