/* Helpers for the file-based fuzz targets: one scratch folder per process,
 * and writing the input (or part of it) to a file there. */
#ifndef GPT2C_FUZZ_UTIL_H
#define GPT2C_FUZZ_UTIL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir_path[256];

static inline int fuzz_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static inline void fuzz_cleanup(void) { nftw(fuzz_dir_path, fuzz_rm, 8, FTW_DEPTH | FTW_PHYS); }

/* Removed at exit (a crash leaves it for inspection). */
static inline const char *fuzz_dir(void) {
    if (!fuzz_dir_path[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/gpt2c_fuzz_XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(fuzz_dir_path)) abort();
        atexit(fuzz_cleanup);
    }
    return fuzz_dir_path;
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
