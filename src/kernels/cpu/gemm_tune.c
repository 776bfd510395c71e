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
 * build's timings must not choose a Release build's blocking) | tune=3 (the
 * candidate set with long K blocks and the re-timed winner; entries of older
 * tunes are not reused; fp32: tune=2, kc tuned too) */
static void key(char *buf, size_t n, gpt2c_isa isa) {
    snprintf(buf, n, "%s|%s|threads=%d|build=%s|tune=3", gpt2c_cpu_signature(), gpt2c_cpu_gemm_bf16_kernel(isa)->name,
             omp_get_max_threads(), GPT2C_BUILD_TYPE);
}

#ifdef GPT2C_HAVE_JANSSON
/* sections "bf16" and "fp32": kc, mc, nc */
static int cache_read(const char *path, const char *sec, const char *k, gemm_bf16_blocking *b) {
    json_t *root = json_load_file(path, 0, NULL);
    json_t *e = json_object_get(json_object_get(root, sec), k);
    int ok = json_unpack(e, "{s:i, s:i, s:i}", "kc", &b->kc, "mc", &b->mc, "nc", &b->nc) == 0;
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

static int g_tuning, g_tuning32;

/* Sets a candidate blocking (rounded to valid values) and returns it. */
typedef gemm_bf16_blocking (*tune_set_fn)(gemm_bf16_blocking);
static gemm_bf16_blocking set_bf16(gemm_bf16_blocking b) { return gpt2c_cpu_gemm_bf16_set_blocking(b); }
static gemm_bf16_blocking set_fp32(gemm_bf16_blocking b) {
    b.kc = gpt2c_cpu_gemm_fp32_set_kc(b.kc);
    gpt2c_cpu_gemm_fp32_set_blocking(&b.mc, &b.nc);
    return b;
}

static int cmp_dbl(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { TUNE_MAX = 40, TUNE_RETIME = 3 };
typedef struct {
    int bf16;
    gpt2c_isa isa;
    const tune_data *td;
    tune_set_fn set;
    gemm_bf16_blocking c[TUNE_MAX];
    double t[TUNE_MAX];
    int n;
    double gflop;
    int slow; /* one timing took over 0.25 s (a sanitizer build, a tiny CPU): no second phase, no re-time */
} tune_state;

/* Times candidate b (after rounding) unless it was timed already; returns its index. */
static int tune_try(tune_state *s, gemm_bf16_blocking b) {
    b = s->set(b);
    for (int i = 0; i < s->n; i++)
        if (s->c[i].kc == b.kc && s->c[i].mc == b.mc && s->c[i].nc == b.nc) return i;
    if (s->n == TUNE_MAX) return -1;
    s->c[s->n] = b;
    s->t[s->n] = time_layers(s->bf16, s->isa, s->td, &s->gflop);
    return s->n++;
}
static int tune_best(const tune_state *s, int skip) {
    int b = -1;
    for (int i = 0; i < s->n; i++)
        if (i != skip && (b < 0 || s->t[i] < s->t[b])) b = i;
    return b;
}

/* The winner of a sweep, re-timed: one timing per candidate picks two on a
 * machine whose speed can jump within seconds, so the fastest and the
 * runner-up are timed TUNE_RETIME more times each, alternately, and the lower
 * median (over all their timings) wins. */
static gemm_bf16_blocking tune_finish(tune_state *s, double *gflops) {
    const int w[2] = {tune_best(s, -1), tune_best(s, tune_best(s, -1))};
    double med[2] = {s->t[w[0]], 1e30}, v[2][TUNE_RETIME + 1];
    if (w[1] >= 0 && !s->slow) {
        v[0][0] = s->t[w[0]], v[1][0] = s->t[w[1]];
        for (int r = 1; r <= TUNE_RETIME; r++)
            for (int j = 0; j < 2; j++) {
                s->set(s->c[w[j]]);
                v[j][r] = time_layers(s->bf16, s->isa, s->td, &s->gflop);
            }
        for (int j = 0; j < 2; j++) {
            qsort(v[j], TUNE_RETIME + 1, sizeof(double), cmp_dbl);
            med[j] = 0.5 * (v[j][TUNE_RETIME / 2] + v[j][(TUNE_RETIME + 1) / 2]);
        }
    }
    const int win = med[1] < med[0] ? 1 : 0;
    *gflops = s->gflop / med[win];
    return s->set(s->c[w[win]]);
}

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
    tune_state *s = calloc(1, sizeof *s);
    if (!s) {
        g_tuning = 0;
        tune_free(&td);
        return guess;
    }
    s->bf16 = 1, s->isa = isa, s->td = &td, s->set = set_bf16;
    /* 1. K block x rows, at the guessed nc: kc x {1, 1.5, 2, 3, 6, 0.75}
     * (a longer K block reloads each C tile less often: on Zen 4 a lone
     * micro-kernel ran at ~85% of peak with kc 256, ~98% with 3072), rows
     * so that A's block keeps the guess's bytes (in half of L2), x1/2, x2;
     * 2. columns x {1/2, 2} around the best; at most ~3 s; then the re-time. */
    static const int kmul[] = {4, 6, 8, 12, 24, 3}, mmul[] = {2, 1, 4};
    s->slow = time_layers(1, isa, &td, &s->gflop) > 0.25; /* warm-up */
    const uint64_t t_start = gpt2c_now_ns();
    for (size_t a = 0; a < sizeof kmul / sizeof kmul[0]; a++)
        for (size_t m = 0; m < 3 && (double)(gpt2c_now_ns() - t_start) < 2.5e9; m++) {
            const int kc = guess.kc * kmul[a] / 4;
            tune_try(s, (gemm_bf16_blocking){kc, (int)((long)guess.mc * guess.kc / kc * mmul[m] / 2), guess.nc});
        }
    const gemm_bf16_blocking b1 = s->c[tune_best(s, -1)];
    if (!s->slow) {
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc / 2});
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc * 2});
    }
    gemm_bf16_blocking best = tune_finish(s, gflops);
    free(s);
    g_tuning = 0;
    tune_free(&td);
    if (path[0]) cache_write(path, dir, "bf16", k, best, *gflops);
    return best;
}

void gpt2c_cpu_gemm_fp32_autotune(gpt2c_isa isa, int force, int *mc, int *nc, int *from_cache, double *gflops) {
    char path[512], dir[512], k[300];
    cache_file(path, sizeof path, dir, sizeof dir);
    snprintf(k, sizeof k, "%s|%s|threads=%d|build=%s|tune=2", gpt2c_cpu_signature(), gpt2c_isa_name(isa),
             omp_get_max_threads(), GPT2C_BUILD_TYPE);
    gemm_bf16_blocking b = {GEMM_KC, 0, 0};
    *from_cache = 0;
    *gflops = 0;
    if (!force && path[0] && cache_read(path, "fp32", k, &b)) {
        *from_cache = 1;
        b = set_fp32(b);
        *mc = b.mc, *nc = b.nc;
        return;
    }
    int gm, gn;
    gpt2c_cpu_gemm_fp32_blocking_from_caches(&gm, &gn);
    *mc = gm, *nc = gn;
    tune_data td;
    tune_state *s = calloc(1, sizeof *s);
    if (!s || !tune_alloc(&td)) {
        free(s);
        tune_free(&td);
        return;
    }
    g_tuning32 = 1;
    s->bf16 = 0, s->isa = isa, s->td = &td, s->set = set_fp32;
    /* 1. K block x rows: kc x {1, 2, 3} (fewer C reloads), rows so that A's
     * block keeps the L2 guess's bytes (3/8 of L2), x1/2, x2, and columns so
     * that a packed B block does (half of L2); 2. columns x {1/2, 2, 4}
     * around the best; at most ~2 s; then the re-time. */
    static const int kmul[] = {1, 2, 3}, mmul[] = {2, 1, 4};
    s->slow = time_layers(0, isa, &td, &s->gflop) > 0.25; /* warm-up */
    const uint64_t t_start = gpt2c_now_ns();
    for (size_t a = 0; a < 3; a++)
        for (size_t m = 0; m < 3 && (double)(gpt2c_now_ns() - t_start) < 1.5e9; m++)
            tune_try(s, (gemm_bf16_blocking){GEMM_KC * kmul[a], gm * mmul[m] / 2 / kmul[a], gn / kmul[a]});
    const gemm_bf16_blocking b1 = s->c[tune_best(s, -1)];
    if (!s->slow) {
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc / 2});
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc * 2});
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc * 4});
    }
    b = tune_finish(s, gflops);
    free(s);
    g_tuning32 = 0;
    tune_free(&td);
    *mc = b.mc, *nc = b.nc;
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
