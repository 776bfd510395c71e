/* Memory bandwidth probes for gpt2c_peak (gpt2c/peak.h): read, scale
 * (dst = s*src) and triad (dst = a + s*b) streams over arrays far larger
 * than the last-level cache, on every core (a memory ceiling is the
 * machine's, whatever thread count an op runs on: measured with fewer
 * threads it would be exceeded by ops that use more).
 *
 * Arrays: 8x the L3 that the cores span (CPUID, kernels/cpu/cpu_caches.h),
 * at least 256 MiB, at most 1 GiB each; 2 MiB-aligned and advised into huge
 * pages like the inference weights (infer_state.c), so the probe sees the
 * TLB behaviour decode sees; each thread first-touches the part it streams.
 * Bytes are counted as the ops count theirs: what is read plus what is
 * written, no write-allocate traffic.  That traffic is why "update" (x = s*x
 * in place, AdamW's pattern) is a probe of its own: with nothing to
 * write-allocate it can beat both the read stream and scale, e.g. 38 against
 * 20 and 19 GB/s on a 2-vCPU Cascade Lake, where AdamW ran at 34 GB/s. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gpt2c/core.h"
#include "gpt2c/peak.h"
#include "kernels/cpu/cpu_caches.h"
#include "profile/peak_kernels.h"

#define HUGE_ALIGN ((size_t)2 << 20)

static float *alloc_probe(size_t bytes) {
    float *p = aligned_alloc(HUGE_ALIGN, bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p) (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

static float read_chunk(const float *x, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX512)) return gpt2c_peak_sum_avx512(x, n);
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX2)) return gpt2c_peak_sum_avx2(x, n);
#endif
    float s[8] = {0};
    for (size_t i = 0; i < n; i += 8)
        for (int j = 0; j < 8; j++) s[j] += x[i + j];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

static void scale_chunk(float *d, const float *x, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX512)) return gpt2c_peak_scale_avx512(d, x, 1.0001f, n);
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX2)) return gpt2c_peak_scale_avx2(d, x, 1.0001f, n);
#endif
    for (size_t i = 0; i < n; i++) d[i] = 1.0001f * x[i];
}

static void update_chunk(float *x, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX512)) return gpt2c_peak_update_avx512(x, 1.0001f, n);
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX2)) return gpt2c_peak_update_avx2(x, 1.0001f, n);
#endif
    for (size_t i = 0; i < n; i++) x[i] *= 1.0001f;
}

static void triad_chunk(float *d, const float *a, const float *b, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX512)) return gpt2c_peak_triad_avx512(d, a, b, 0.5f, n);
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX2)) return gpt2c_peak_triad_avx2(d, a, b, 0.5f, n);
#endif
    for (size_t i = 0; i < n; i++) d[i] = a[i] + 0.5f * b[i];
}

static volatile float bw_sink;

enum { K_READ, K_SCALE, K_TRIAD, K_UPDATE, K_COUNT };

/* GB/s of one kernel over `passes` passes, every thread on its own chunk. */
static double run_kernel(int kind, float *x, float *y, float *z, size_t n, int threads, int passes) {
    uint64_t t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const size_t chunk = (n / (size_t)nt) & ~(size_t)63, lo = (size_t)t * chunk;
        float s = 0;
#pragma omp barrier
#pragma omp master
        t0 = gpt2c_now_ns();
        for (int p = 0; p < passes; p++) {
            if (kind == K_READ) s += read_chunk(x + lo, chunk);
            else if (kind == K_SCALE) scale_chunk(y + lo, x + lo, chunk);
            else if (kind == K_TRIAD) triad_chunk(z + lo, x + lo, y + lo, chunk);
            else update_chunk(z + lo, chunk);
        }
#pragma omp barrier
#pragma omp master
        t1 = gpt2c_now_ns();
#pragma omp atomic
        bw_sink += s + (kind == K_READ ? 0 : kind == K_SCALE ? y[lo] : z[lo]);
    }
    const size_t chunk = (n / (size_t)threads) & ~(size_t)63;
    const double streams = kind == K_READ ? 1 : kind == K_TRIAD ? 3 : 2;
    return (double)chunk * threads * sizeof(float) * streams * passes / ((double)(t1 - t0) * 1e-9) * 1e-9;
}

void gpt2c_peak_set_mem(gpt2c_peak *o) {
    const double g[] = {o->read_gbs, o->scale_gbs, o->triad_gbs, o->update_gbs};
    o->mem_gbs = 0;
    for (int k = 0; k < K_COUNT; k++)
        if (g[k] > o->mem_gbs) o->mem_gbs = g[k];
}

/* x[i] = v, each part first touched by the thread that streams it (run_kernel's chunks) */
static void first_touch(float *x, float v, size_t n, int threads) {
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const size_t chunk = (n / (size_t)nt) & ~(size_t)63, lo = (size_t)t * chunk;
        for (size_t i = lo; i < lo + chunk; i++) x[i] = v;
    }
}

/* GPT2C_PEAK_ARRAY_MIB: another size for every probe array (tests keep them
 * small; the figure is then not a memory one); else `bytes` */
static size_t probe_bytes(size_t bytes) {
    const char *e = getenv("GPT2C_PEAK_ARRAY_MIB");
    return e && atoi(e) >= 1 && atoi(e) <= 4096 ? (size_t)atoi(e) << 20 : bytes;
}

/* The bytes of a probe array: `times` x the L3 the cores span, within [lo, hi] MiB
 * (GPT2C_PEAK_ARRAY_MIB overrides it) */
static size_t l3_multiple_bytes(int threads, int times, int lo_mib, int hi_mib) {
    const gpt2c_cpu_cache_sizes *cs = gpt2c_cpu_caches();
    /* the L3 the cores span: one instance per l3_share logical CPUs */
    const int inst = cs->l3_share > 0 ? (threads + cs->l3_share - 1) / cs->l3_share : 1;
    size_t bytes = (size_t)times * (size_t)(cs->l3 > 0 ? cs->l3 : 32l << 20) * (size_t)inst;
    if (bytes < ((size_t)lo_mib << 20)) bytes = (size_t)lo_mib << 20;
    if (bytes > ((size_t)hi_mib << 20)) bytes = (size_t)hi_mib << 20;
    return probe_bytes(bytes);
}

struct gpt2c_mem_probe {
    float *x;
    size_t n;
    int threads, mib;
};

gpt2c_mem_probe *gpt2c_mem_probe_new(int mib) {
    gpt2c_mem_probe *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->threads = omp_get_num_procs();
    const size_t bytes = mib > 0 ? probe_bytes((size_t)mib << 20) : l3_multiple_bytes(p->threads, 4, 128, 512);
    p->n = bytes / sizeof(float);
    p->mib = (int)(bytes >> 20);
    p->x = alloc_probe(bytes);
    if (!p->x) {
        free(p);
        return NULL;
    }
    first_touch(p->x, 1.0f, p->n, p->threads);
    return p;
}

/* the faster of two double passes of stream `kind` (K_READ or K_UPDATE) over the probe's array */
static double probe_stream(gpt2c_mem_probe *p, int kind) {
    double best = 0;
    for (int r = 0; r < 2; r++) {
        const double g = run_kernel(kind, p->x, NULL, p->x, p->n, p->threads, 2);
        if (g > best) best = g;
    }
    return best;
}

double gpt2c_mem_probe_update(gpt2c_mem_probe *p) { return probe_stream(p, K_UPDATE); }

double gpt2c_mem_probe_read(gpt2c_mem_probe *p) { return probe_stream(p, K_READ); }

int gpt2c_mem_probe_mib(const gpt2c_mem_probe *p) { return p->mib; }

void gpt2c_mem_probe_free(gpt2c_mem_probe *p) {
    if (!p) return;
    free(p->x);
    free(p);
}

double gpt2c_peak_update_spot(int mib) {
    gpt2c_mem_probe *p = gpt2c_mem_probe_new(mib > 0 ? mib : 256);
    const double g = p ? gpt2c_mem_probe_update(p) : 0;
    gpt2c_mem_probe_free(p);
    return g;
}

gpt2c_status gpt2c_peak_measure_bw(int runs, gpt2c_peak *o) {
    const int threads = omp_get_num_procs();
    const size_t bytes = l3_multiple_bytes(threads, 8, 256, 1024);
    const size_t n = bytes / sizeof(float);
    float *x = alloc_probe(bytes), *y = alloc_probe(bytes), *z = alloc_probe(bytes);
    if (!x || !y || !z) {
        free(x), free(y), free(z);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "peak bandwidth probe: cannot allocate 3 x %zu MiB", bytes >> 20);
    }
    first_touch(x, 1.0f, n, threads), first_touch(y, 2.0f, n, threads), first_touch(z, 0.0f, n, threads);
    double g[K_COUNT][32];
    for (int r = 0; r < runs; r++) /* interleaved, so a slow moment hits all four alike */
        for (int k = 0; k < K_COUNT; k++) g[k][r] = run_kernel(k, x, y, z, n, threads, k == K_READ ? 4 : 2);
    free(x), free(y), free(z);
    /* the fastest run of each (as the FMA peaks: a ceiling, not a typical rate) */
    o->read_gbs = gpt2c_peak_fastest(g[K_READ], runs);
    o->scale_gbs = gpt2c_peak_fastest(g[K_SCALE], runs);
    o->triad_gbs = gpt2c_peak_fastest(g[K_TRIAD], runs);
    o->update_gbs = gpt2c_peak_fastest(g[K_UPDATE], runs);
    gpt2c_peak_set_mem(o);
    o->bw_threads = threads;
    o->bw_mib = (int)(bytes >> 20);
    return GPT2C_OK;
}
