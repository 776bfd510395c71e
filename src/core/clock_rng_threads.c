#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gpt2c/core.h"

uint64_t gpt2c_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void gpt2c_rng_seed(gpt2c_rng *r, uint64_t seed, uint64_t stream) {
    r->s = splitmix64(splitmix64(seed) ^ splitmix64(stream + 0x632be59bd9b4e019ull));
    if (r->s == 0) r->s = 0x853c49e6748fea9bull;
}

uint64_t gpt2c_rng_u64(gpt2c_rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dull;
}

float gpt2c_rng_uniform(gpt2c_rng *r) { return (float)(gpt2c_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

/* Box-Muller; one of the pair is discarded to keep the state a single word. */
float gpt2c_rng_normal(gpt2c_rng *r) {
    double u1 = ((gpt2c_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
    double u2 = (gpt2c_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

int gpt2c_set_threads(int n) {
    if (n <= 0) n = omp_get_num_procs();
    omp_set_num_threads(n);
    return n;
}

int gpt2c_get_threads(void) { return omp_get_max_threads(); }

void gpt2c_threads_use(int n) {
    if (n > 0 && omp_get_max_threads() != n) omp_set_num_threads(n);
}

size_t gpt2c_peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (size_t)ru.ru_maxrss * 1024; /* Linux reports KiB */
}
