/* Core utilities: aligned allocation, clocks, deterministic RNG, threads. */
#ifndef GPT2C_CORE_H
#define GPT2C_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/status.h"

#define GPT2C_ALIGN 64

/* 64-byte-aligned, zero-filled; NULL on failure (with gpt2c_fail set naming `what`). */
void *gpt2c_alloc(size_t bytes, const char *what);
/* The same for the slabs streamed whole every step (weights, gradients, moments):
 * from 4 MiB on, 2 MiB-aligned and advised into transparent huge pages (Linux). */
void *gpt2c_alloc_huge(size_t bytes, const char *what);
void gpt2c_free(void *p);
/* The bytes of the mappings holding these blocks that Linux backs with 2 MiB
 * pages (AnonHugePages, /proc/self/smaps; each mapping once); -1 if unknown. */
long long gpt2c_huge_page_bytes(const void *const *blocks, int n);
/* The transparent-huge-page mode ("always", "madvise", "never") into buf; NULL if unknown. */
const char *gpt2c_thp_mode(char *buf, size_t n);
/* Those bytes said in words into buf: "H of S MiB (transparent huge pages: MODE<note>)", or
 * "unknown (...)" for huge < 0 (the memory lines of train / bench train, profile's header). */
const char *gpt2c_huge_pages_text(char *buf, size_t n, long long huge, size_t slabs, const char *thp, const char *note);

/* Monotonic clock in nanoseconds. */
uint64_t gpt2c_now_ns(void);

/* Deterministic RNG: splitmix64-seeded xorshift64*.  Independent streams are
 * made with gpt2c_rng_seed(seed, stream), so parallel work can draw the same
 * numbers whatever the thread count. */
typedef struct {
    uint64_t s;
} gpt2c_rng;
void gpt2c_rng_seed(gpt2c_rng *r, uint64_t seed, uint64_t stream);
uint64_t gpt2c_rng_u64(gpt2c_rng *r);
float gpt2c_rng_uniform(gpt2c_rng *r); /* [0, 1) */
float gpt2c_rng_normal(gpt2c_rng *r);  /* N(0, 1) */

/* OpenMP threads: n <= 0 means all cores.  Returns the count in effect. */
int gpt2c_set_threads(int n);
int gpt2c_get_threads(void);
/* Makes n (> 0) the calling thread's OpenMP team size if it is not already;
 * n <= 0 leaves it.  For objects that own a thread count (gpt2c_model). */
void gpt2c_threads_use(int n);

/* Peak resident set size of this process in bytes (0 if unknown). */
size_t gpt2c_peak_rss_bytes(void);

#endif
