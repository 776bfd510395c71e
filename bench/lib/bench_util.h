/* Helpers shared by the C benchmark programs in bench/ (header-only: each
 * program is built by its script from one .c file). */
#ifndef GPT2C_BENCH_UTIL_H
#define GPT2C_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

/* monotonic seconds */
static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* qsort comparison of doubles, ascending */
static inline int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* n floats, 64-byte aligned, filled with a fixed pattern in [-0.5, 0.5); NULL when out of memory */
static inline float *filled(size_t n) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    for (size_t i = 0; p && i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    return p;
}

#endif
