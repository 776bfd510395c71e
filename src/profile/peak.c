/* Machine peaks: FMA GFLOP/s per ISA (here) and memory bandwidth (peak_bw.c); see gpt2c/peak.h. */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpt2c/core.h"
#include "gpt2c/peak.h"
#include "kernels/cpu/amx.h"
#include "kernels/cpu/bf16_engine.h"
#include "profile/peak_kernels.h"
#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>
#endif

static int isa_supported(int isa) { return gpt2c_cpu_has_isa((gpt2c_isa)isa); }

/* Scalar: 8 independent mul+add chains (2 FLOPs each; no FMA instruction in
 * the base build, ISO C forbids contracting them). */
static float fma_scalar(long iters) {
    float acc[8];
    for (int i = 0; i < 8; i++) acc[i] = 0.001f * (float)i;
    volatile float va = 0.999999f, vb = 1e-7f;
    float a = va, b = vb;
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 8; i++) acc[i] = acc[i] * a + b;
    float s = 0;
    for (int i = 0; i < 8; i++) s += acc[i];
    return s;
}

static float run_fma(int isa, long iters) {
#if defined(__x86_64__) || defined(__i386__)
    if (isa == GPT2C_ISA_AVX512) return gpt2c_peak_fma_avx512(iters);
    if (isa == GPT2C_ISA_AVX2) return gpt2c_peak_fma_avx2(iters);
#else
    (void)isa; /* only the scalar loop exists off x86 */
#endif
    return fma_scalar(iters);
}

static double flops_per_iter(int isa) {
#if defined(__x86_64__) || defined(__i386__)
    if (isa == GPT2C_ISA_AVX512) return gpt2c_peak_fma_flops_per_iter_avx512;
    if (isa == GPT2C_ISA_AVX2) return gpt2c_peak_fma_flops_per_iter_avx2;
#else
    (void)isa;
#endif
    return 16;
}

static volatile float sink;

/* Wall time, except on one thread: that thread's CPU time (immune to
 * preemption on a shared machine; the same on an idle one). */
static uint64_t peak_clock_ns(int threads) {
    if (threads > 1) return gpt2c_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* a peak loop: `iters` rounds on the ISA, returning a value to keep */
typedef float (*peak_loop)(int isa, long iters);

/* Seconds for every thread to run `iters` rounds, timed between barriers. */
static double time_loop(peak_loop loop, int isa, int threads, long iters) {
    double secs = 0;
#pragma omp parallel num_threads(threads)
    {
        uint64_t t0 = 0;
#pragma omp barrier
#pragma omp master
        t0 = peak_clock_ns(threads);
        float r = loop(isa, iters);
#pragma omp barrier
#pragma omp master
        secs = (double)(peak_clock_ns(threads) - t0) * 1e-9;
#pragma omp atomic
        sink += r;
    }
    return secs;
}

double gpt2c_peak_fastest(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] > m) m = v[i];
    return m;
}

/* GFLOP/s: the fastest of `runs` runs of about 0.15 s (flops_iter per round
 * and thread).  The fastest, not the median: nothing makes the loop run above
 * the machine's rate, while a busy neighbour (another VM on the core's other
 * hardware thread, say) slows some runs; the median of 5 taken on an Intel
 * model-207 VM read 193.6 GFLOP/s on 2 threads where the GEMMs then ran at up
 * to 287, "148% of peak". */
static double measure_loop(peak_loop loop, int isa, double flops_iter, int threads, int runs) {
    long iters = 100000;
    double t = time_loop(loop, isa, threads, iters);
    while (t < 0.02) { /* calibrate to about 0.15 s per run */
        iters *= 4;
        t = time_loop(loop, isa, threads, iters);
    }
    iters = (long)((double)iters * 0.15 / t) + 1;
    double g[32] = {0};
    for (int r = 0; r < runs; r++) g[r] = flops_iter * (double)iters * threads / time_loop(loop, isa, threads, iters) * 1e-9;
    return gpt2c_peak_fastest(g, runs);
}

static double measure_fma(int isa, int threads, int runs) {
    return measure_loop(run_fma, isa, flops_per_iter(isa), threads, runs);
}

#ifndef GPT2C_BUILD_TYPE
#define GPT2C_BUILD_TYPE "unknown"
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1
#endif
#endif
const char *gpt2c_peak_build(void) {
    static char b[64];
    if (!b[0]) {
        const char *extra = "";
#if defined(__SANITIZE_ADDRESS__)
        extra = "+asan";
#endif
        /* GPT2C_BUILD_TYPE comes from CMake (CMAKE_BUILD_TYPE and the sanitizer option) */
        snprintf(b, sizeof b, "%s%s", GPT2C_BUILD_TYPE[0] ? GPT2C_BUILD_TYPE : "unknown", strstr(GPT2C_BUILD_TYPE, "asan") ? "" : extra);
    }
    return b;
}

static void cpu_model(char *buf, size_t n) { snprintf(buf, n, "%s", gpt2c_cpu_brand()); }

#if defined(__x86_64__) || defined(__i386__)
static float run_dpbf16(int isa, long iters) {
    (void)isa; /* AVX-512 only */
    return gpt2c_peak_dpbf16_avx512(iters);
}
#endif

/* vdpbf16ps peak, 0 without AVX512_BF16 */
static double measure_dpbf16(int threads, int runs) {
#if defined(__x86_64__) || defined(__i386__)
    if (!gpt2c_cpu_has_avx512bf16()) return 0;
    return measure_loop(run_dpbf16, GPT2C_ISA_AVX512, gpt2c_peak_dpbf16_flops_per_iter_avx512, threads, runs);
#else
    (void)threads, (void)runs;
    return 0;
#endif
}

/* TDPBF16PS peak, 0 where AMX cannot run */
#ifdef GPT2C_HAVE_AMX_KERNEL
static float run_amx(int isa, long iters) {
    (void)isa;
    return gpt2c_peak_amx_bf16(iters);
}
#endif
static double measure_amx(int threads, int runs) {
#ifdef GPT2C_HAVE_AMX_KERNEL
    if (gpt2c_cpu_amx_usable(NULL)) return measure_loop(run_amx, GPT2C_ISA_AVX512, gpt2c_peak_amx_flops_per_iter, threads, runs);
#endif
    (void)threads, (void)runs;
    return 0;
}

double gpt2c_peak_bf16_roof(const gpt2c_peak *p, gpt2c_isa isa) {
    if (isa == GPT2C_ISA_AVX512 && p->amx_gflops > 0 && gpt2c_cpu_bf16_amx_hw()) return p->amx_gflops;
    const int dp = isa == GPT2C_ISA_AVX512 && p->bf16_gflops > 0 && gpt2c_cpu_bf16_use_dp();
    return dp ? p->bf16_gflops : p->fma_gflops[isa];
}

/* A short burst of the peak loop (see gpt2c/peak.h): the iteration count is
 * calibrated once per (isa, bf16, threads) to about a third of `seconds`
 * (from the fastest of several timings), then three bursts run and the
 * fastest counts. */
double gpt2c_peak_burst_gflops(gpt2c_isa isa, int bf16, int threads, double seconds) {
    if (threads <= 0) threads = omp_get_num_procs();
    if (!isa_supported(isa)) return 0;
    int dp = 0; /* the loop: 0 FMAs, 1 vdpbf16ps, 2 TDPBF16PS */
#if defined(__x86_64__) || defined(__i386__)
    dp = bf16 && isa == GPT2C_ISA_AVX512 && gpt2c_cpu_has_avx512bf16();
#endif
    if (bf16 == GPT2C_PEAK_BURST_AMX) {
#ifdef GPT2C_HAVE_AMX_KERNEL
        if (isa != GPT2C_ISA_AVX512 || !gpt2c_cpu_amx_usable(NULL)) return 0;
        dp = 2;
#else
        return 0;
#endif
    }
    static long cal_iters[GPT2C_ISA_COUNT][3];
    static int cal_threads[GPT2C_ISA_COUNT][3];
    long *iters = &cal_iters[isa][dp];
#if defined(GPT2C_HAVE_AMX_KERNEL)
    const peak_loop loop = dp == 2 ? run_amx : dp ? run_dpbf16 : run_fma;
#define BURST(n) time_loop(loop, isa, threads, (n))
    const double fpi = dp == 2 ? gpt2c_peak_amx_flops_per_iter : dp ? gpt2c_peak_dpbf16_flops_per_iter_avx512 : flops_per_iter(isa);
#elif defined(__x86_64__) || defined(__i386__)
#define BURST(n) time_loop(dp ? run_dpbf16 : run_fma, isa, threads, (n))
    const double fpi = dp ? gpt2c_peak_dpbf16_flops_per_iter_avx512 : flops_per_iter(isa);
#else
#define BURST(n) time_loop(run_fma, isa, threads, (n))
    const double fpi = flops_per_iter(isa);
#endif
    if (*iters == 0 || cal_threads[isa][dp] != threads) {
        /* the fastest of five timings: one taken while a thread was
         * preempted would make every later burst too short to time */
        long n = 2000;
        double t = 1e30;
        for (int r = 0; r < 5 || t < 0.001; r++) {
            if (r >= 5) n *= 4, t = 1e30;
            const double x = BURST(n);
            if (x < t) t = x;
        }
        *iters = (long)((double)n * (seconds / 3) / t) + 1;
        cal_threads[isa][dp] = threads;
    }
    double best = 0;
    for (int r = 0; r < 3; r++) {
        const double t = BURST(*iters);
        const double g = t > 0 ? fpi * (double)*iters * threads / t * 1e-9 : 0;
        if (g > best) best = g;
    }
#undef BURST
    return best;
}

gpt2c_status gpt2c_peak_measure(int threads, int runs, gpt2c_peak *o) {
    if (threads <= 0) threads = omp_get_num_procs();
    if (runs < 1 || runs > 32) return gpt2c_fail(GPT2C_ERR_ARG, "peak: runs must be in [1, 32] (got %d)", runs);
    memset(o, 0, sizeof *o);
    cpu_model(o->cpu, sizeof o->cpu);
    snprintf(o->signature, sizeof o->signature, "%s", gpt2c_cpu_signature());
    o->threads = threads;
    o->runs = runs;
    o->best_isa = "scalar";
    for (int isa = 0; isa < GPT2C_ISA_COUNT; isa++) {
        if (!isa_supported(isa)) continue;
        o->fma_gflops[isa] = measure_fma(isa, threads, runs);
        if (o->fma_gflops[isa] > o->gflops) {
            o->gflops = o->fma_gflops[isa];
            o->best_isa = gpt2c_isa_name((gpt2c_isa)isa);
        }
    }
    o->bf16_gflops = measure_dpbf16(threads, runs);
    o->amx_gflops = measure_amx(threads, runs);
    snprintf(o->build, sizeof o->build, "%s", gpt2c_peak_build());
    return gpt2c_peak_measure_bw(runs, o);
}

static void cache_path(char *buf, size_t n, char *dir, size_t dn) {
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    buf[0] = dir[0] = 0;
    if (x && x[0]) snprintf(dir, dn, "%s/gpt2c", x);
    else if (h && h[0]) snprintf(dir, dn, "%s/.cache/gpt2c", h);
    else return;
    snprintf(buf, n, "%s/peak.json", dir);
}

#ifdef GPT2C_HAVE_JANSSON
/* The cache: {"version":5,"entries":[{"signature":..,"threads":..,"build":..,
 * "cpu":..,"fma_gflops":{"avx512":..,"avx2":..,"scalar":..},"bf16_gflops":..,"amx_gflops":..,
 * "bandwidth_gbs":{"read":..,"scale":..,"triad":..,"update":..},"bandwidth_threads":..,
 * "bandwidth_array_mib":..,"runs":..}, ...]}, keyed by signature, threads and
 * build.  A file of another version is replaced. */
#define CACHE_VERSION 6 /* 4: the "update" stream; 5: the fastest run, not the median; 6: amx_gflops */
static json_t *entry_json(const gpt2c_peak *p) {
    json_t *fma = json_object();
    for (int i = 0; i < GPT2C_ISA_COUNT; i++)
        if (p->fma_gflops[i] > 0) json_object_set_new(fma, gpt2c_isa_name((gpt2c_isa)i), json_real(p->fma_gflops[i]));
    return json_pack("{s:s, s:i, s:s, s:s, s:o, s:f, s:f, s:{s:f, s:f, s:f, s:f}, s:i, s:i, s:i}", "signature", p->signature, "threads",
                     p->threads, "build", p->build, "cpu", p->cpu, "fma_gflops", fma, "bf16_gflops", p->bf16_gflops,
                     "amx_gflops", p->amx_gflops,
                     "bandwidth_gbs", "read", p->read_gbs, "scale", p->scale_gbs, "triad", p->triad_gbs, "update", p->update_gbs,
                     "bandwidth_threads", p->bw_threads, "bandwidth_array_mib", p->bw_mib, "runs", p->runs);
}

static int entry_parse(json_t *e, gpt2c_peak *p) {
    const char *sig = NULL, *cpu = "", *build = NULL;
    json_t *fma = NULL;
    memset(p, 0, sizeof *p);
    if (json_unpack(e, "{s:s, s:i, s:s, s?s, s:o, s?F, s?F, s:{s:F, s:F, s:F, s:F}, s?i, s?i, s?i}", "signature", &sig, "threads",
                    &p->threads, "build", &build, "cpu", &cpu, "fma_gflops", &fma, "bf16_gflops", &p->bf16_gflops,
                    "amx_gflops", &p->amx_gflops,
                    "bandwidth_gbs", "read", &p->read_gbs, "scale", &p->scale_gbs, "triad", &p->triad_gbs, "update", &p->update_gbs,
                    "bandwidth_threads", &p->bw_threads, "bandwidth_array_mib", &p->bw_mib, "runs", &p->runs) != 0 ||
        !json_is_object(fma))
        return 0;
    gpt2c_peak_set_mem(p);
    snprintf(p->signature, sizeof p->signature, "%s", sig);
    snprintf(p->build, sizeof p->build, "%s", build);
    snprintf(p->cpu, sizeof p->cpu, "%s", cpu);
    p->best_isa = "scalar";
    for (int i = 0; i < GPT2C_ISA_COUNT; i++) {
        json_t *v = json_object_get(fma, gpt2c_isa_name((gpt2c_isa)i));
        p->fma_gflops[i] = json_is_number(v) ? json_number_value(v) : 0;
        if (p->fma_gflops[i] > p->gflops) {
            p->gflops = p->fma_gflops[i];
            p->best_isa = gpt2c_isa_name((gpt2c_isa)i);
        }
    }
    return p->gflops > 0 && p->read_gbs > 0 && p->scale_gbs > 0 && p->triad_gbs > 0 && p->update_gbs > 0;
}

static json_t *cache_load(const char *path) {
    json_t *root = json_load_file(path, 0, NULL);
    if (root && json_integer_value(json_object_get(root, "version")) == CACHE_VERSION && json_is_array(json_object_get(root, "entries")))
        return root;
    json_decref(root);
    return NULL;
}

/* Rewrites the cache with this entry replacing any of the same key; failure is not fatal. */
static int cache_store(const char *path, const char *dir, const gpt2c_peak *p) {
    char parent[600];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = 0;
        mkdir(parent, 0755);
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return 0;
    json_t *root = cache_load(path);
    if (!root) root = json_pack("{s:i, s:[]}", "version", CACHE_VERSION, "entries");
    json_t *entries = json_object_get(root, "entries");
    for (size_t i = json_array_size(entries); i-- > 0;) {
        gpt2c_peak q;
        if (!entry_parse(json_array_get(entries, i), &q) ||
            (strcmp(q.signature, p->signature) == 0 && q.threads == p->threads && strcmp(q.build, p->build) == 0))
            json_array_remove(entries, i);
    }
    json_array_append_new(entries, entry_json(p));
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int ok = json_dump_file(root, tmp, JSON_INDENT(1)) == 0 && rename(tmp, path) == 0;
    if (!ok) remove(tmp);
    json_decref(root);
    return ok;
}

static int cache_find(const char *path, int threads, gpt2c_peak *out) {
    json_t *root = cache_load(path);
    if (!root) return 0;
    json_t *entries = json_object_get(root, "entries");
    int found = 0;
    for (size_t i = 0; i < json_array_size(entries) && !found; i++)
        found = entry_parse(json_array_get(entries, i), out) && strcmp(out->signature, gpt2c_cpu_signature()) == 0 &&
                out->threads == threads && strcmp(out->build, gpt2c_peak_build()) == 0;
    json_decref(root);
    return found;
}
#else
static int cache_store(const char *path, const char *dir, const gpt2c_peak *p) {
    (void)path, (void)dir, (void)p;
    return 0;
}
static int cache_find(const char *path, int threads, gpt2c_peak *out) {
    (void)path, (void)threads, (void)out;
    return 0;
}
#endif

int gpt2c_peak_cached(int threads, gpt2c_peak *out) {
    if (threads <= 0) threads = omp_get_num_procs();
    char path[512], dir[512];
    cache_path(path, sizeof path, dir, sizeof dir);
    return path[0] && cache_find(path, threads, out);
}

/* Each of p's four bandwidths raised to other's where other's is faster (a
 * ceiling only rises), the memory ceiling with them; how many were raised. */
static int raise_bandwidths(gpt2c_peak *p, const gpt2c_peak *other) {
    double *mine[4] = {&p->read_gbs, &p->scale_gbs, &p->triad_gbs, &p->update_gbs};
    const double theirs[4] = {other->read_gbs, other->scale_gbs, other->triad_gbs, other->update_gbs};
    int raised = 0;
    for (int i = 0; i < 4; i++)
        if (theirs[i] > *mine[i]) *mine[i] = theirs[i], raised++;
    gpt2c_peak_set_mem(p);
    return raised;
}

/* A memory ceiling from the cache may have been measured at a slower moment:
 * a VM's bandwidth moves with its host and neighbours (two Zen 4 sessions of
 * the same CPU signature: in-place update 55 and 102 GB/s), and the ops then
 * run above their "peak".  So a cached entry's update stream is checked
 * (gpt2c_peak_update_spot, ~0.1 s); if the check beats it by more than 5%,
 * the four bandwidths are measured again, each kept at the faster of the two
 * figures (a ceiling only rises), and the entry is rewritten.  The compute
 * peaks (register loops) do not move that way and are kept.
 * GPT2C_PEAK_NO_RECHECK=1 skips the check. */
static void recheck_bandwidth(gpt2c_peak *p, int runs, const char *path, const char *dir) {
    const char *e = getenv("GPT2C_PEAK_NO_RECHECK");
    if (e && strcmp(e, "0") != 0) return;
    p->bw_spot_gbs = gpt2c_peak_update_spot(p->bw_mib);
    if (p->bw_spot_gbs <= 1.05 * p->update_gbs) return;
    gpt2c_peak m = *p;
    if (gpt2c_peak_measure_bw(runs, &m) != GPT2C_OK) return; /* (no memory for the probes: the cached figures stand) */
    raise_bandwidths(p, &m);
    p->bw_threads = m.bw_threads;
    p->bw_mib = m.bw_mib;
    p->bw_remeasured = 1;
    if (!cache_store(path, dir, p)) p->cache_path[0] = 0;
}

/* Measured again over a cached entry (bench peak --remeasure): the memory may
 * be in a slow moment now (the Zen 4 VM's update stream: 55 GB/s in one
 * minute, 100 in the next), and a lowered ceiling puts the ops above 100% of
 * it (the optimizer at 122% after a sitting re-measured in such a minute).  So each
 * bandwidth keeps the faster of the cached and the new figure, as the
 * recheck does; the compute peaks (register loops) are taken as measured. */
static void keep_faster_bandwidths(gpt2c_peak *p, const gpt2c_peak *old) {
    p->bw_now_gbs = p->mem_gbs;
    p->bw_kept = raise_bandwidths(p, old);
}

gpt2c_status gpt2c_peak_get(int threads, gpt2c_peak *out, int remeasure) { return gpt2c_peak_get_runs(threads, 5, out, remeasure); }

gpt2c_status gpt2c_peak_get_runs(int threads, int runs, gpt2c_peak *out, int remeasure) {
    if (threads <= 0) threads = omp_get_num_procs();
    char path[512], dir[512];
    cache_path(path, sizeof path, dir, sizeof dir);
    if (!remeasure && path[0] && cache_find(path, threads, out)) {
        out->from_cache = 1;
        snprintf(out->cache_path, sizeof out->cache_path, "%s", path);
        recheck_bandwidth(out, runs, path, dir);
        return GPT2C_OK;
    }
    gpt2c_peak old;
    const int had = remeasure != GPT2C_PEAK_RESET && path[0] && cache_find(path, threads, &old);
    GPT2C_TRY(gpt2c_peak_measure(threads, runs, out));
    if (had) keep_faster_bandwidths(out, &old);
    if (path[0] && cache_store(path, dir, out)) snprintf(out->cache_path, sizeof out->cache_path, "%s", path);
    return GPT2C_OK;
}
