/* The fp32 and bf16 GEMMs' blocking per CPU (gemm.h, gemm_bf16.h): a first
 * guess from the cache sizes (CPUID), then, at the first GEMM, a short
 * autotune on two GPT-2 layers (the qkv projection at B*T 256 and the
 * attention projection at 1024: a small and a tall A), kept in
 * $XDG_CACHE_HOME/gpt2c/gemm.json (else ~/.cache/gpt2c/gemm.json; JSON via
 * jansson, without it nothing is kept), sections "fp32" and "bf16", under the
 * CPU signature (gpt2c_cpu_signature), the kernel, the thread count and the
 * build type.  The blocking never changes results (fp32: K's block is fixed;
 * bf16: the pair arithmetic), only speed, so tuning is always safe.
 * GPT2C_GEMM_AUTOTUNE=0 skips the autotunes (the cache-size guesses are used). */
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
 * build's timings must not choose a Release build's blocking) | tune=2 (the
 * two-layer workload; entries of the older one-layer tune are not reused) */
static void key(char *buf, size_t n, gpt2c_isa isa) {
    snprintf(buf, n, "%s|%s|threads=%d|build=%s|tune=2", gpt2c_cpu_signature(), gpt2c_cpu_gemm_bf16_kernel(isa)->name,
             omp_get_max_threads(), GPT2C_BUILD_TYPE);
}

#ifdef GPT2C_HAVE_JANSSON
/* section "bf16": kc, mc, nc; section "fp32": mc, nc (kc stays GEMM_KC) */
static int cache_read(const char *path, const char *sec, const char *k, gemm_bf16_blocking *b) {
    json_t *root = json_load_file(path, 0, NULL);
    json_t *e = json_object_get(json_object_get(root, sec), k);
    int ok = strcmp(sec, "fp32") == 0 ? json_unpack(e, "{s:i, s:i}", "mc", &b->mc, "nc", &b->nc) == 0
                                      : json_unpack(e, "{s:i, s:i, s:i}", "kc", &b->kc, "mc", &b->mc, "nc", &b->nc) == 0;
    json_decref(root);
    return ok;
}
static void cache_write(const char *path, const char *dir, const char *sec, const char *k, gemm_bf16_blocking b,
                        double gflops) {
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
    json_t *bf = json_object_get(root, sec);
    if (!json_is_object(bf)) json_object_set_new(root, sec, bf = json_object());
    json_object_set_new(bf, k, json_pack("{s:i, s:i, s:i, s:f}", "kc", b.kc, "mc", b.mc, "nc", b.nc, "tuned_gflops", gflops));
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (json_dump_file(root, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0) remove(tmp);
    json_decref(root);
}
#else
static int cache_read(const char *path, const char *sec, const char *k, gemm_bf16_blocking *b) {
    (void)path, (void)sec, (void)k, (void)b;
    return 0;
}
static void cache_write(const char *path, const char *dir, const char *sec, const char *k, gemm_bf16_blocking b,
                        double gflops) {
    (void)path, (void)dir, (void)sec, (void)k, (void)b, (void)gflops;
}
#endif

/* wall time; on one thread that thread's CPU time (immune to preemption on a shared machine) */
static uint64_t tune_clock_ns(void) {
    if (omp_get_max_threads() > 1) return gpt2c_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The tuning workload: the three GEMMs (forward, dinp, dweight) of two
 * linear layers, the qkv projection at N 256 (768 -> 2304: a short A) and
 * the attention projection at N 1024 (768 -> 768: a tall one, whose A block
 * must still fit in L2), activations fp32, the weight fp32 or bf16. */
enum { TUNE_NX = 1024 * 768, TUNE_ND = 1024 * 768, TUNE_NW = 2304 * 768, TUNE_NC = 2304 * 768 };
static const int tune_layers[2][3] = {{256, 768, 2304}, {1024, 768, 768}};
typedef struct {
    float *X, *D, *C, *Wf;
    uint16_t *W;
} tune_data;

static int tune_alloc(tune_data *t) {
    t->X = malloc(sizeof(float) * TUNE_NX), t->D = malloc(sizeof(float) * TUNE_ND), t->C = malloc(sizeof(float) * TUNE_NC);
    t->Wf = malloc(sizeof(float) * TUNE_NW), t->W = malloc(sizeof(uint16_t) * TUNE_NW);
    if (!t->X || !t->D || !t->C || !t->Wf || !t->W) return 0;
    for (size_t i = 0; i < TUNE_NX; i++) t->X[i] = (float)(i % 13) * 0.01f;
    for (size_t i = 0; i < TUNE_ND; i++) t->D[i] = (float)(i % 7) * 0.01f;
    for (size_t i = 0; i < TUNE_NW; i++) t->W[i] = 0x3c00, t->Wf[i] = 0.0078125f; /* 2^-7 */
    memset(t->C, 0, sizeof(float) * TUNE_NC);
    return 1;
}
static void tune_free(tune_data *t) { free(t->X), free(t->D), free(t->C), free(t->Wf), free(t->W); }

/* Seconds for the workload (each layer the best of two runs) and its GFLOP. */
static double time_layers(int bf16, gpt2c_isa isa, const tune_data *t, double *gflop) {
    double total = 0;
    *gflop = 0;
    for (int l = 0; l < 2; l++) {
        const int N = tune_layers[l][0], IC = tune_layers[l][1], OC = tune_layers[l][2];
        double best = 1e30;
        for (int r = 0; r < 2; r++) {
            const uint64_t t0 = tune_clock_ns();
            if (bf16) {
                gpt2c_cpu_linear_gemm_bf16(isa, GEMM_FWD, t->C, t->X, GPT2C_FMT_F32, t->W, GPT2C_FMT_BF16, N, IC, OC);
                gpt2c_cpu_linear_gemm_bf16(isa, GEMM_DINP, t->C, t->D, GPT2C_FMT_F32, t->W, GPT2C_FMT_BF16, N, IC, OC);
                gpt2c_cpu_linear_gemm_bf16(isa, GEMM_DW, t->C, t->D, GPT2C_FMT_F32, t->X, GPT2C_FMT_F32, N, IC, OC);
            } else {
                gpt2c_cpu_linear_gemm(isa, GEMM_FWD, t->C, t->X, t->Wf, N, IC, OC);
                gpt2c_cpu_linear_gemm(isa, GEMM_DINP, t->C, t->D, t->Wf, N, IC, OC);
                gpt2c_cpu_linear_gemm(isa, GEMM_DW, t->C, t->D, t->X, N, IC, OC);
            }
            const double s = (double)(tune_clock_ns() - t0) * 1e-9;
            if (s < best) best = s;
        }
        total += best;
        *gflop += 3 * 2.0 * N * IC * OC * 1e-9;
    }
    return total;
}

static int g_tuning;

gemm_bf16_blocking gpt2c_cpu_gemm_bf16_autotune(gpt2c_isa isa, int force, int *from_cache, double *gflops) {
    char path[512], dir[512], k[300];
    cache_file(path, sizeof path, dir, sizeof dir);
    key(k, sizeof k, isa);
    gemm_bf16_blocking b;
    *from_cache = 0;
    *gflops = 0;
    if (!force && path[0] && cache_read(path, "bf16", k, &b)) {
        *from_cache = 1;
        return gpt2c_cpu_gemm_bf16_set_blocking(b);
    }
    const gemm_bf16_blocking guess = gpt2c_cpu_gemm_bf16_blocking_from_caches();
    tune_data td;
    if (!tune_alloc(&td)) {
        tune_free(&td);
        return guess;
    }
    g_tuning = 1;
    /* candidates around the cache-size guess (kc x1, x1.5, x0.75, x3; mc x1,
     * x0.5, x2; nc x1, x0.5, x2); at most ~2 s in all */
    static const int kmul[] = {4, 6, 3, 12}, mmul[] = {2, 1, 4}, nmul[] = {2, 1, 4};
    gemm_bf16_blocking best = guess;
    double gflop;
    time_layers(1, isa, &td, &gflop); /* warm-up */
    double tbest = time_layers(1, isa, &td, &gflop);
    const uint64_t t_start = gpt2c_now_ns();
    for (size_t a = 0; a < 4; a++)
        for (size_t m = 0; m < 3; m++)
            for (size_t n = 0; n < 3 && (double)(gpt2c_now_ns() - t_start) < 2e9; n++) {
                const gemm_bf16_blocking c = gpt2c_cpu_gemm_bf16_set_blocking(
                    (gemm_bf16_blocking){guess.kc * kmul[a] / 4, guess.mc * mmul[m] / 2, guess.nc * nmul[n] / 2});
                const double t = time_layers(1, isa, &td, &gflop);
                if (t < tbest) tbest = t, best = c;
            }
    g_tuning = 0;
    tune_free(&td);
    best = gpt2c_cpu_gemm_bf16_set_blocking(best);
    *gflops = gflop / tbest;
    if (path[0]) cache_write(path, dir, "bf16", k, best, *gflops);
    return best;
}

static int g_tuning32;

void gpt2c_cpu_gemm_fp32_autotune(gpt2c_isa isa, int force, int *mc, int *nc, int *from_cache, double *gflops) {
    char path[512], dir[512], k[300];
    cache_file(path, sizeof path, dir, sizeof dir);
    snprintf(k, sizeof k, "%s|%s|threads=%d|build=%s", gpt2c_cpu_signature(), gpt2c_isa_name(isa), omp_get_max_threads(),
             GPT2C_BUILD_TYPE);
    gemm_bf16_blocking b = {GEMM_KC, 0, 0};
    *from_cache = 0;
    *gflops = 0;
    if (!force && path[0] && cache_read(path, "fp32", k, &b)) {
        *from_cache = 1;
        *mc = b.mc, *nc = b.nc;
        gpt2c_cpu_gemm_fp32_set_blocking(mc, nc);
        return;
    }
    int gm, gn;
    gpt2c_cpu_gemm_fp32_blocking_from_caches(&gm, &gn);
    *mc = gm, *nc = gn;
    tune_data td;
    if (!tune_alloc(&td)) {
        tune_free(&td);
        return;
    }
    g_tuning32 = 1;
    /* candidates around the L2 guess (mc x1, x0.5, x2: A's block, 3/8 of L2
     * in the guess, stays within L2; nc x1, x0.5, x2, x4; clamped); at most
     * ~1.5 s in all */
    static const int mul[] = {2, 1, 4, 8};
    double gflop;
    time_layers(0, isa, &td, &gflop); /* warm-up */
    double tbest = time_layers(0, isa, &td, &gflop);
    int bm = gm, bn = gn;
    const uint64_t t_start = gpt2c_now_ns();
    for (size_t m = 0; m < 3; m++)
        for (size_t n = 0; n < 4 && (double)(gpt2c_now_ns() - t_start) < 1.5e9; n++) {
            if (m == 0 && n == 0) continue; /* the guess: timed above */
            int cm = gm * mul[m] / 2, cn = gn * mul[n] / 2;
            gpt2c_cpu_gemm_fp32_set_blocking(&cm, &cn);
            const double t = time_layers(0, isa, &td, &gflop);
            if (t < tbest) tbest = t, bm = cm, bn = cn;
        }
    g_tuning32 = 0;
    tune_free(&td);
    gpt2c_cpu_gemm_fp32_set_blocking(&bm, &bn);
    *mc = bm, *nc = bn;
    *gflops = gflop / tbest;
    b.mc = bm, b.nc = bn;
    if (path[0]) cache_write(path, dir, "fp32", k, b, *gflops);
}

void gpt2c_cpu_gemm_fp32_first_use(gpt2c_isa isa) {
    static int done;
    if (done || g_tuning32) return;
    done = 1;
    int mc, nc, from_cache;
    double gf;
    const char *e = getenv("GPT2C_GEMM_AUTOTUNE");
    if ((e && strcmp(e, "0") == 0) || isa == GPT2C_ISA_SCALAR) { /* the portable kernel: not worth a tune */
        gpt2c_cpu_gemm_fp32_blocking_from_caches(&mc, &nc);
        return;
    }
    gpt2c_cpu_gemm_fp32_autotune(isa, 0, &mc, &nc, &from_cache, &gf);
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
