/* Helpers for the checkpoint I/O tests: a scratch directory, file bytes, a tiny model. */
#ifndef GPT2C_IO_TESTUTIL_H
#define GPT2C_IO_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpt2c/io.h"
#include "testutil.h"

/* Check a call fails with status `want` and a message naming every given string. */
#define CHECK_FAILS_NAMING(expr, want, ...)                                                                     \
    do {                                                                                                        \
        CHECK_FAILS(expr, want);                                                                                \
        const char *names_[] = {__VA_ARGS__};                                                                   \
        for (size_t i_ = 0; i_ < sizeof names_ / sizeof names_[0]; i_++)                                        \
            CHECK_MSG(strstr(gpt2c_errmsg(), names_[i_]) != NULL, "message '%s' does not name '%s'",            \
                      gpt2c_errmsg(), names_[i_]);                                                              \
    } while (0)

/* A fresh scratch directory under $TMPDIR (or /tmp). */
static inline const char *io_scratch(const char *tag) {
    static char dir[512];
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gpt2c_%s_XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    return dir;
}

static inline char *io_path(const char *dir, const char *name) {
    static char bufs[8][600];
    static int k = 0;
    char *b = bufs[k++ & 7];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

/* Whole file into a malloc'd buffer; NULL if unreadable. */
static inline unsigned char *io_slurp(const char *path, size_t *n) {
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

static inline void io_spit(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        perror(path);
        exit(1);
    }
    fclose(f);
}

/* A small random GPT-2: T=16, V=100 (Vp 128), L=2, NH=2, C=32. */
static inline gpt2c_model *io_tiny_model(uint64_t seed) {
    gpt2c_config cfg = {.max_seq_len = 16, .vocab_size = 100, .num_layers = 2, .num_heads = 2, .channels = 32};
    gpt2c_model *m = NULL;
    if (gpt2c_model_create(&cfg, &m) != GPT2C_OK) {
        fprintf(stderr, "model_create: %s\n", gpt2c_errmsg());
        exit(1);
    }
    gpt2c_model_init_random(m, seed);
    return m;
}

static inline void io_rm_rf(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

#endif
