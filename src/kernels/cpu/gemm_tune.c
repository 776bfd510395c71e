/* The bf16 GEMM's blocking per CPU (gemm_bf16.h): a first guess from the
 * cache sizes (CPUID), then, at the first GEMM, a short autotune on one GPT-2 shape,
 * kept in $XDG_CACHE_HOME/gpt2c/gemm.json (else ~/.cache/gpt2c/gemm.json;
 * JSON via jansson, without it nothing is kept) under the CPU signature
 * (gpt2c_cpu_signature), the kernel and the thread count.  The blocking never
 * changes results (gemm_bf16.h), only speed, so tuning is always safe.
 * GPT2C_GEMM_AUTOTUNE=0 skips the autotune (the cache-size guess is used). */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>
#endif

#include "gpt2c/core.h"
#include "kernels/cpu/cpu_caches.h"
#include "kernels/cpu/gemm_bf16.h"

/* From this core's caches (CPUID leaf 4 / 0x8000001D, kernels/cpu/cpu_caches.h):
 * kc: a 64-column B panel of kc/2 pair words fills L1 (32 KiB: kc 256; it
 *     is reused by every A panel of the block, the A panels stream past it);
 * mc: the A block (mc x kc bf16, read once per B panel) in half of L2;
 * nc: the B block in this core's share of L3, over 4. */
gemm_bf16_blocking gpt2c_cpu_gemm_bf16_blocking_from_caches(void) {
    const gpt2c_cpu_cache_sizes *cs = gpt2c_cpu_caches();
    const long l1 = cs->l1d > 0 ? cs->l1d : 32 << 10, l2 = cs->l2 > 0 ? cs->l2 : 1 << 20;
    const long l3 = cs->l3 > 0 ? cs->l3 / (cs->l3_share > 0 ? cs->l3_share : 1) : 4 << 20;
    gemm_bf16_blocking b = {0, 0, 0};
    b.kc = (int)(l1 / (64 * 2)); /* bytes per k: 64 columns x 2 bytes */
    b.kc = b.kc < 128 ? 128 : b.kc > 512 ? 512 : b.kc;
    b.mc = (int)(l2 / 2 / (b.kc * 2));
    b.mc = b.mc < 96 ? 96 : b.mc > 1536 ? 1536 : b.mc;
    b.nc = (int)(l3 / 4 / (b.kc * 2));
    b.nc = b.nc < 512 ? 512 : b.nc > 4096 ? 4096 : b.nc;
    return gpt2c_cpu_gemm_bf16_set_blocking(b);
}

static void cache_file(char *path, size_t n, char *dir, size_t dn) {
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    path[0] = dir[0] = 0;
    if (x && x[0]) snprintf(dir, dn, "%s/gpt2c", x);
    else if (h && h[0]) snprintf(dir, dn, "%s/.cache/gpt2c", h);
    else return;
    snprintf(path, n, "%s/gemm.json", dir);
}

#ifndef GPT2C_BUILD_TYPE
#define GPT2C_BUILD_TYPE "unknown"
#endif
/* signature | kernel | threads | build (CMake sets GPT2C_BUILD_TYPE: an ASan
 * build's timings must not choose a Release build's blocking) */
static void key(char *buf, size_t n, gpt2c_isa isa) {
    snprintf(buf, n, "%s|%s|threads=%d|build=%s", gpt2c_cpu_signature(), gpt2c_cpu_gemm_bf16_kernel(isa)->name,
             omp_get_max_threads(), GPT2C_BUILD_TYPE);
}

#ifdef GPT2C_HAVE_JANSSON
static int cache_read(const char *path, const char *k, gemm_bf16_blocking *b) {
    json_t *root = json_load_file(path, 0, NULL);
    json_t *e = json_object_get(json_object_get(root, "bf16"), k);
    int ok = json_unpack(e, "{s:i, s:i, s:i}", "kc", &b->kc, "mc", &b->mc, "nc", &b->nc) == 0;
    json_decref(root);
    return ok;
}
static void cache_write(const char *path, const char *dir, const char *k, gemm_bf16_blocking b, double gflops) {
    char parent[600];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = 0;
        mkdir(parent, 0755);
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return;
    json_t *root = json_load_file(path, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        root = json_object();
    }
    json_t *bf = json_object_get(root, "bf16");
    if (!json_is_object(bf)) json_object_set_new(root, "bf16", bf = json_object());
    json_object_set_new(bf, k, json_pack("{s:i, s:i, s:i, s:f}", "kc", b.kc, "mc", b.mc, "nc", b.nc, "tuned_gflops", gflops));
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (json_dump_file(root, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0) remove(tmp);
    json_decref(root);
}
#else
static int cache_read(const char *path, const char *k, gemm_bf16_blocking *b) {
    (void)path, (void)k, (void)b;
    return 0;
}
static void cache_write(const char *path, const char *dir, const char *k, gemm_bf16_blocking b, double gflops) {
    (void)path, (void)dir, (void)k, (void)b, (void)gflops;
}
#endif

/* Seconds for the three GEMMs of one linear layer (N 256, 768 -> 2304: the
 * qkv projection), the best of two runs. */
/* wall time; on one thread that thread's CPU time (immune to preemption on a shared machine) */
static uint64_t tune_clock_ns(void) {
    if (omp_get_max_threads() > 1) return gpt2c_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double time_layer(gpt2c_isa isa, float *C, const float *X, const float *D, const uint16_t *W) {
    enum { N = 256, IC = 768, OC = 2304 };
    double best = 1e30;
    for (int r = 0; r < 2; r++) {
        const uint64_t t0 = tune_clock_ns();
        gpt2c_cpu_linear_gemm_bf16(isa, GEMM_FWD, C, X, GPT2C_FMT_F32, W, GPT2C_FMT_BF16, N, IC, OC);
        gpt2c_cpu_linear_gemm_bf16(isa, GEMM_DINP, C, D, GPT2C_FMT_F32, W, GPT2C_FMT_BF16, N, IC, OC);
        gpt2c_cpu_linear_gemm_bf16(isa, GEMM_DW, C, D, GPT2C_FMT_F32, X, GPT2C_FMT_F32, N, IC, OC);
        const double t = (double)(tune_clock_ns() - t0) * 1e-9;
        if (t < best) best = t;
    }
    return best;
}

static int g_tuning;

gemm_bf16_blocking gpt2c_cpu_gemm_bf16_autotune(gpt2c_isa isa, int force, int *from_cache, double *gflops) {
    char path[512], dir[512], k[300];
    cache_file(path, sizeof path, dir, sizeof dir);
    key(k, sizeof k, isa);
    gemm_bf16_blocking b;
    *from_cache = 0;
    *gflops = 0;
    if (!force && path[0] && cache_read(path, k, &b)) {
        *from_cache = 1;
        return gpt2c_cpu_gemm_bf16_set_blocking(b);
    }
    const gemm_bf16_blocking guess = gpt2c_cpu_gemm_bf16_blocking_from_caches();
    enum { N = 256, IC = 768, OC = 2304 };
    float *X = malloc(sizeof(float) * N * IC), *D = malloc(sizeof(float) * N * OC), *C = malloc(sizeof(float) * OC * IC);
    uint16_t *W = malloc(sizeof(uint16_t) * OC * IC);
    if (!X || !D || !C || !W) {
        free(X), free(D), free(C), free(W);
        return guess;
    }
    for (size_t i = 0; i < (size_t)N * IC; i++) X[i] = (float)(i % 13) * 0.01f;
    for (size_t i = 0; i < (size_t)N * OC; i++) D[i] = (float)(i % 7) * 0.01f;
    for (size_t i = 0; i < (size_t)OC * IC; i++) W[i] = 0x3c00; /* 2^-7 */
    memset(C, 0, sizeof(float) * OC * IC);
    g_tuning = 1;
    /* candidates around the cache-size guess (kc x1, x1.5, x0.75, x3; mc x1,
     * x0.5, x2; nc x1, x0.5, x2); at most ~2 s in all */
    static const int kmul[] = {4, 6, 3, 12}, mmul[] = {2, 1, 4}, nmul[] = {2, 1, 4};
    gemm_bf16_blocking best = guess;
    time_layer(isa, C, X, D, W); /* warm-up */
    double tbest = time_layer(isa, C, X, D, W);
    const uint64_t t_start = gpt2c_now_ns();
    for (size_t a = 0; a < 4; a++)
        for (size_t m = 0; m < 3; m++)
            for (size_t n = 0; n < 3 && (double)(gpt2c_now_ns() - t_start) < 2e9; n++) {
                const gemm_bf16_blocking c = gpt2c_cpu_gemm_bf16_set_blocking(
                    (gemm_bf16_blocking){guess.kc * kmul[a] / 4, guess.mc * mmul[m] / 2, guess.nc * nmul[n] / 2});
                const double t = time_layer(isa, C, X, D, W);
                if (t < tbest) tbest = t, best = c;
            }
    g_tuning = 0;
    free(X), free(D), free(C), free(W);
    best = gpt2c_cpu_gemm_bf16_set_blocking(best);
    *gflops = 3 * 2.0 * N * IC * OC / tbest * 1e-9;
    if (path[0]) cache_write(path, dir, k, best, *gflops);
    return best;
}

void gpt2c_cpu_gemm_bf16_first_use(gpt2c_isa isa) {
    static int done;
    if (done || g_tuning) return;
    done = 1;
    const char *e = getenv("GPT2C_GEMM_AUTOTUNE");
    if (e && strcmp(e, "0") == 0) {
        gpt2c_cpu_gemm_bf16_blocking_from_caches();
        return;
    }
    int from_cache;
    double gf;
    gpt2c_cpu_gemm_bf16_autotune(isa, 0, &from_cache, &gf);
}
