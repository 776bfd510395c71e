/* A tiny test harness: CHECK-style macros that count failures, and helpers
 * shared by the tests (fixture paths, array comparison with a tolerance).
 * Exit code 0 = pass, 1 = failure, 77 = skipped (ctest SKIP_RETURN_CODE). */
#ifndef GPT2C_TESTUTIL_H
#define GPT2C_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"

static int tu_failures = 0;
static int tu_checks = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        tu_checks++;                                                             \
        if (!(cond)) {                                                           \
            tu_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

#define CHECK_MSG(cond, ...)                                                     \
    do {                                                                         \
        tu_checks++;                                                             \
        if (!(cond)) {                                                           \
            tu_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

/* Check a gpt2c_status expression is OK, printing the library's message if not. */
#define CHECK_OK(expr)                                                           \
    do {                                                                         \
        int st_ = (int)(expr);                                                   \
        tu_checks++;                                                             \
        if (st_ != 0) {                                                          \
            tu_failures++;                                                       \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, gpt2c_errmsg()); \
        }                                                                        \
    } while (0)

/* Check a call fails with the given status and a non-empty message. */
#define CHECK_FAILS(expr, want)                                                  \
    do {                                                                         \
        int st_ = (int)(expr);                                                   \
        tu_checks++;                                                             \
        if (st_ != (int)(want) || gpt2c_errmsg()[0] == 0) {                      \
            tu_failures++;                                                       \
            fprintf(stderr, "%s:%d: %s: expected status %d, got %d (%s)\n", __FILE__, __LINE__, #expr, (int)(want), st_, gpt2c_errmsg()); \
        } else {                                                                 \
            printf("  expected failure: %s\n", gpt2c_errmsg());                 \
        }                                                                        \
    } while (0)

static inline int tu_finish(const char *name) {
    printf("%s: %d checks, %d failed\n", name, tu_checks, tu_failures);
    return tu_failures ? 1 : 0;
}

/* n floats uniform in [-1, 1), drawn from (seed, n): test operands (caller frees) */
static inline float *tu_uniform(size_t n, uint64_t seed) {
    float *x = malloc(sizeof(float) * (n ? n : 1));
    gpt2c_rng r;
    gpt2c_rng_seed(&r, seed, n);
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * gpt2c_rng_uniform(&r) - 1.0f;
    return x;
}

static inline void tu_skip(const char *why) {
    printf("SKIP: %s\n", why);
    exit(77);
}

/* Max |a-b| / max(max|b|, floor): a relative error against the reference's scale. */
static inline double tu_max_rel_err(const float *a, const float *ref, size_t n, double floor_) {
    double maxref = floor_, maxdiff = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)ref[i]);
        if (r > maxref) maxref = r;
        double d = fabs((double)a[i] - (double)ref[i]);
        if (!(d <= maxdiff)) maxdiff = d; /* NaN propagates */
    }
    return maxdiff / maxref;
}

/* The shared data directory: $GPT2C_DATA, else the build-time default; NULL if absent. */
static inline const char *tu_shared_data(void) {
    const char *d = getenv("GPT2C_DATA");
#ifdef GPT2C_SHARED_DATA_DEFAULT
    if (!d) d = GPT2C_SHARED_DATA_DEFAULT;
#endif
    if (!d) return NULL;
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/gpt2-tokenizer/encoder.json", d);
    FILE *f = fopen(probe, "rb");
    if (!f) return NULL;
    fclose(f);
    return d;
}
#endif
