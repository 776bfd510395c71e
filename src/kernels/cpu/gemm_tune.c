/* The fp32 and bf16 GEMMs' blocking per CPU (gemm.h, gemm_bf16.h): a first
 * guess from the cache sizes (CPUID), then, at the first GEMM, a short
 * autotune on GPT-2 124M's own GEMMs (prefill at 512 and 128 rows, the
 * training step's forward, data- and weight-gradient GEMMs, a slice of the
 * LM head), scored by where a step's time goes, kept in
 * $XDG_CACHE_HOME/gpt2c/gemm.json (else ~/.cache/gpt2c/gemm.json; JSON via
 * jansson, without it nothing is kept), sections "fp32" and "bf16", under the
 * CPU signature (gpt2c_cpu_signature), the kernel, the thread count and the
 * build type (and a section "bf16_engine" for bf16_engine.c's choice).  A
 * tune timed on a loaded machine is not kept (gemm_tune.h: peak bursts before, during and after it must agree with each other and with
 * the cached peak, in-L2 GEMM probes beside them with each other, and the winner's re-timings with each other; one retry):
 * the cache-size guess stays, recorded as provisional so that processes
 * within the next hour do not each pay for a tune, and the reason is given
 * (gpt2c_cpu_gemm_tune_note, `bench gemm`).  The blocking never changes
 * results (fp32: K's block is fixed; bf16: the pair arithmetic), only speed,
 * so tuning is always safe.  GPT2C_GEMM_AUTOTUNE=0 skips the autotunes (the
 * cache-size guesses are used), as does a sanitizer build unless asked
 * (`bench gemm --autotune`): it reads the cache, but would time the sanitizer. */
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

#include "core/sanitizer.h"
#include "gpt2c/core.h"
#include "gpt2c/peak.h"
#include "kernels/cpu/cpu_caches.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_tune.h"

/* From this core's caches (CPUID leaf 4 / 0x8000001D, kernels/cpu/cpu_caches.h):
 * kc: long K blocks reload each C tile less often (a lone 6x64 vdpbf16ps
 *     micro-kernel on Zen 4: ~85% of peak at kc 256, ~92% at 768), so the
 *     64-column B panel (64 x kc bf16, or fp32 for kernels on fp32 panels)
 *     is given 3/32 of L2 (1 MiB: kc 768,
 *     the steady tunes' choice on Zen 4, where L1 (kc 256) cost ~6% of bf16
 *     prefill), which leaves L2 room for A's block beside it;
 * mc: the A block (mc x kc elements, read once per B panel) in half of L2;
 * nc: the B block in this core's share of L3, over 4. */
gemm_bf16_blocking gpt2c_cpu_gemm_bf16_blocking_from_caches(gpt2c_isa isa) {
    const gpt2c_cpu_cache_sizes *cs = gpt2c_cpu_caches();
    const long l2 = cs->l2 > 0 ? cs->l2 : 1 << 20;
    const long l3 = cs->l3 > 0 ? cs->l3 / (cs->l3_share > 0 ? cs->l3_share : 1) : 4 << 20;
    /* bytes per element in the panels: 2 (pair words), 4 with fp32 panels */
    const int esz = gpt2c_cpu_gemm_bf16_kernel(isa)->fp32 ? 4 : 2;
    gemm_bf16_blocking b = {0, 0, 0};
    b.kc = (int)(l2 * 3 / 32 / (64 * esz)) / 128 * 128; /* bytes per k: 64 columns */
    b.kc = b.kc < 256 ? 256 : b.kc > 1536 ? 1536 : b.kc;
    b.mc = (int)(l2 / 2 / (b.kc * esz));
    b.mc = b.mc < 96 ? 96 : b.mc > 1536 ? 1536 : b.mc;
    b.nc = (int)(l3 / 4 / (b.kc * esz));
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
/* signature | kernel (bf16) or ISA (fp32) | threads | build (CMake sets
 * GPT2C_BUILD_TYPE: an ASan build's timings must not choose a Release
 * build's blocking) | tune=5 (the GPT-2 shape set and the steadiness test;
 * entries of older tunes are not reused) */
static void key(char *buf, size_t n, int bf16, gpt2c_isa isa) {
    snprintf(buf, n, "%s|%s|threads=%d|build=%s|tune=5", gpt2c_cpu_signature(),
             bf16 ? gpt2c_cpu_gemm_bf16_kernel(isa)->name : gpt2c_isa_name(isa), omp_get_max_threads(), GPT2C_BUILD_TYPE);
}

/* An entry: kc, mc, nc, and either tuned_gflops (a steady tune) or
 * refused (why) with retry_after (unix seconds): the cache-size guess,
 * provisional until then. */
typedef struct {
    gemm_bf16_blocking b;
    double gflops;
    const char *refused; /* NULL: a steady tune */
    long long retry_after;
} tune_entry;

#ifdef GPT2C_HAVE_JANSSON
/* 1 if the entry is usable now (a tune, or a refusal not yet due for a retry) */
static int cache_read(const char *path, const char *sec, const char *k, gemm_bf16_blocking *b, int *provisional) {
    json_t *root = json_load_file(path, 0, NULL);
    json_t *e = json_object_get(json_object_get(root, sec), k);
    int ok = json_unpack(e, "{s:i, s:i, s:i}", "kc", &b->kc, "mc", &b->mc, "nc", &b->nc) == 0;
    json_t *ra = json_object_get(e, "retry_after");
    *provisional = ok && ra != NULL;
    if (*provisional && (long long)time(NULL) >= (long long)json_integer_value(ra)) ok = 0;
    json_decref(root);
    return ok;
}
/* Sets entry k of section sec to e (taking it), written to a temporary file
 * renamed over the cache: a failed write leaves the old file. */
static void cache_store(const char *path, const char *dir, const char *sec, const char *k, json_t *e) {
    char parent[600];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = 0;
        mkdir(parent, 0755);
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        json_decref(e);
        return;
    }
    json_t *root = json_load_file(path, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        root = json_object();
    }
    json_t *bf = json_object_get(root, sec);
    if (!json_is_object(bf)) json_object_set_new(root, sec, bf = json_object());
    json_object_set_new(bf, k, e);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (json_dump_file(root, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0) remove(tmp);
    json_decref(root);
}
static void cache_write(const char *path, const char *dir, const char *sec, const char *k, const tune_entry *t) {
    json_t *e = json_pack("{s:i, s:i, s:i}", "kc", t->b.kc, "mc", t->b.mc, "nc", t->b.nc);
    if (t->refused) {
        json_object_set_new(e, "refused", json_string(t->refused));
        json_object_set_new(e, "retry_after", json_integer(t->retry_after));
    } else {
        json_object_set_new(e, "tuned_gflops", json_real(t->gflops));
    }
    cache_store(path, dir, sec, k, e);
}
int gpt2c_cpu_gemm_cache_get(const char *sec, const char *k, const char *const *names, double *v, int n) {
    char path[512], dir[512];
    cache_file(path, sizeof path, dir, sizeof dir);
    if (!path[0]) return 0;
    json_t *root = json_load_file(path, 0, NULL);
    json_t *e = json_object_get(json_object_get(root, sec), k);
    int ok = json_is_object(e);
    for (int i = 0; ok && i < n; i++) {
        json_t *x = json_object_get(e, names[i]);
        ok = json_is_number(x);
        if (ok) v[i] = json_number_value(x);
    }
    json_decref(root);
    return ok;
}
void gpt2c_cpu_gemm_cache_put(const char *sec, const char *k, const char *const *names, const double *v, int n) {
    char path[512], dir[512];
    cache_file(path, sizeof path, dir, sizeof dir);
    if (!path[0]) return;
    json_t *e = json_object();
    for (int i = 0; i < n; i++) json_object_set_new(e, names[i], json_real(v[i]));
    cache_store(path, dir, sec, k, e);
}
#else
static int cache_read(const char *path, const char *sec, const char *k, gemm_bf16_blocking *b, int *provisional) {
    (void)path, (void)sec, (void)k, (void)b;
    *provisional = 0;
    return 0;
}
static void cache_write(const char *path, const char *dir, const char *sec, const char *k, const tune_entry *t) {
    (void)path, (void)dir, (void)sec, (void)k, (void)t;
}
int gpt2c_cpu_gemm_cache_get(const char *sec, const char *k, const char *const *names, double *v, int n) {
    (void)sec, (void)k, (void)names, (void)v, (void)n;
    return 0;
}
void gpt2c_cpu_gemm_cache_put(const char *sec, const char *k, const char *const *names, const double *v, int n) {
    (void)sec, (void)k, (void)names, (void)v, (void)n;
}
#endif

static char g_note[2][400];
const char *gpt2c_cpu_gemm_tune_note(int bf16) { return g_note[bf16 != 0]; }

/* wall time; on one thread that thread's CPU time (immune to preemption on a shared machine) */
static uint64_t tune_clock_ns(void) {
    if (omp_get_max_threads() > 1) return gpt2c_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The tuning workload: GPT-2 124M's GEMMs (rows N, in IC, out OC, op), each
 * with its share of where the time goes -- half forward (prefill at 512 and
 * 128 rows and the training forward: qkv, fc, fc-proj with its K of 3072, a
 * 8192-column slice of the LM head, whose weight does not fit in cache), a
 * quarter data gradient (fc's: K 3072), a quarter weight gradient (K = rows).
 * The score is sum(share x seconds per GFLOP), its inverse a GFLOP/s. */
typedef struct {
    int n, ic, oc;
    gemm_linear_op op;
    double share;
} tune_shape;
static const tune_shape tune_shapes[] = {
    {512, 768, 2304, GEMM_FWD, 0.08}, {512, 768, 3072, GEMM_FWD, 0.10}, {512, 3072, 768, GEMM_FWD, 0.10},
    {128, 768, 3072, GEMM_FWD, 0.06}, {128, 3072, 768, GEMM_FWD, 0.06}, {128, 768, 8192, GEMM_FWD, 0.12},
    {512, 768, 3072, GEMM_DINP, 0.24}, {512, 3072, 768, GEMM_DW, 0.12}, {512, 768, 2304, GEMM_DW, 0.12},
};
enum { TUNE_NSHAPES = sizeof tune_shapes / sizeof tune_shapes[0] };
typedef struct {
    float *X, *D, *C, *Wf;
    uint16_t *W;
} tune_data;

static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }
static int tune_alloc(tune_data *t) {
    size_t nx = 0, nd = 0, nc = 0, nw = 0;
    for (int i = 0; i < TUNE_NSHAPES; i++) {
        const tune_shape *s = &tune_shapes[i];
        nx = zmax(nx, (size_t)s->n * s->ic), nd = zmax(nd, (size_t)s->n * s->oc), nw = zmax(nw, (size_t)s->oc * s->ic);
        nc = zmax(nc, s->op == GEMM_FWD ? (size_t)s->n * s->oc : s->op == GEMM_DINP ? (size_t)s->n * s->ic : (size_t)s->oc * s->ic);
    }
    t->X = malloc(sizeof(float) * nx), t->D = malloc(sizeof(float) * nd), t->C = calloc(nc, sizeof(float));
    t->Wf = malloc(sizeof(float) * nw), t->W = malloc(sizeof(uint16_t) * nw);
    if (!t->X || !t->D || !t->C || !t->Wf || !t->W) return 0;
    for (size_t i = 0; i < nx; i++) t->X[i] = (float)(i % 13) * 0.01f;
    for (size_t i = 0; i < nd; i++) t->D[i] = (float)(i % 7) * 0.01f;
    for (size_t i = 0; i < nw; i++) t->W[i] = 0x3c00, t->Wf[i] = 0.0078125f; /* 2^-7 */
    return 1;
}
static void tune_free(tune_data *t) { free(t->X), free(t->D), free(t->C), free(t->Wf), free(t->W); }

/* The workload's score (seconds per GFLOP, shares applied), one run per GEMM. */
static double time_workload(int bf16, gpt2c_isa isa, const tune_data *t) {
    double score = 0;
    for (int i = 0; i < TUNE_NSHAPES; i++) {
        const tune_shape *s = &tune_shapes[i];
        const int N = s->n, IC = s->ic, OC = s->oc;
        const uint64_t t0 = tune_clock_ns();
        if (bf16) {
            if (s->op == GEMM_DW)
                gpt2c_cpu_linear_gemm_bf16(isa, GEMM_DW, t->C, t->D, GPT2C_FMT_F32, t->X, GPT2C_FMT_F32, N, IC, OC);
            else
                gpt2c_cpu_linear_gemm_bf16(isa, s->op, t->C, s->op == GEMM_FWD ? t->X : t->D, GPT2C_FMT_F32, t->W,
                                           GPT2C_FMT_BF16, N, IC, OC);
        } else {
            gpt2c_cpu_linear_gemm(isa, s->op, t->C, s->op == GEMM_FWD ? t->X : t->D, s->op == GEMM_DW ? t->X : t->Wf, N,
                                  IC, OC);
        }
        const double sec = (double)(tune_clock_ns() - t0) * 1e-9;
        score += s->share * sec / (2.0 * N * IC * OC * 1e-9);
    }
    return score;
}

static int g_tuning, g_tuning32;
static int g_done[2]; /* the first-use hook of bf16 / fp32 has nothing left to do */

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

enum { TUNE_MAX = 40, TUNE_RETIME = 3, TUNE_BURSTS = 6 };
typedef struct {
    int bf16;
    int dp; /* the bf16 kernel is vdpbf16ps: its bursts are of that loop */
    gpt2c_isa isa;
    const tune_data *td;
    tune_set_fn set;
    gemm_bf16_blocking guess;
    gemm_bf16_blocking c[TUNE_MAX];
    double t[TUNE_MAX];
    int n;
    int slow; /* one timing took over 0.25 s (a sanitizer build, a tiny CPU): no second phase, one re-time round */
    uint64_t t_start;
    double bursts[TUNE_BURSTS], probes[TUNE_BURSTS];
    int nb, np;
} tune_state;

/* Times candidate b (after rounding) unless it was timed already; returns its index. */
static int tune_try(tune_state *s, gemm_bf16_blocking b) {
    b = s->set(b);
    for (int i = 0; i < s->n; i++)
        if (s->c[i].kc == b.kc && s->c[i].mc == b.mc && s->c[i].nc == b.nc) return i;
    if (s->n == TUNE_MAX) return -1;
    s->c[s->n] = b;
    s->t[s->n] = time_workload(s->bf16, s->isa, s->td);
    return s->n++;
}
static int tune_best(const tune_state *s, int skip) {
    int b = -1;
    for (int i = 0; i < s->n; i++)
        if (i != skip && (b < 0 || s->t[i] < s->t[b])) b = i;
    return b;
}
static int tune_time_left(const tune_state *s, double budget_s) {
    return (double)(gpt2c_now_ns() - s->t_start) < budget_s * 1e9;
}

/* Two short peak bursts (FMA, or vdpbf16ps for the bf16 kernel that uses
 * it), each followed by an in-L2 GEMM probe (gemm_probe.c: what slows code
 * that uses the caches, which the bursts do not see) */
static void tune_bursts(tune_state *s) {
    for (int i = 0; i < 2 && s->nb < TUNE_BURSTS; i++) {
        s->bursts[s->nb++] = gpt2c_peak_burst_gflops(s->isa, s->dp, omp_get_max_threads(), 0.03);
        s->probes[s->np++] = gpt2c_cpu_gemm_probe_gflops(s->isa, omp_get_max_threads(), 0.02);
    }
}

/* bf16 sweep: K block x rows, at the guess's nc: kc x {1, 2/3, 4/3, 1/2, 2,
 * 1/3, 4} (the likelier first, in case the time runs out) with rows so that
 * A's block keeps the guess's bytes (in half of L2), x1/2, x2; then columns
 * x {1/2, 2} around the best; at most ~1.5 s. */
static void sweep_bf16(tune_state *s) {
    static const int kmul[] = {6, 4, 8, 3, 12, 2, 24}, mmul[] = {2, 1, 4};
    const gemm_bf16_blocking g = s->guess;
    for (size_t a = 0; a < sizeof kmul / sizeof kmul[0]; a++)
        for (size_t m = 0; m < 3 && tune_time_left(s, 1.5); m++) {
            const int kc = g.kc * kmul[a] / 6;
            tune_try(s, (gemm_bf16_blocking){kc, (int)((long)g.mc * g.kc / kc * mmul[m] / 2), g.nc});
        }
    const gemm_bf16_blocking b1 = s->c[tune_best(s, -1)];
    if (!s->slow) {
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc / 2});
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc * 2});
    }
}
/* fp32 sweep: kc x {1, 2, 3} (fewer C reloads), rows so that A's block keeps
 * the L2 guess's bytes (3/8 of L2), x1/2, x2, and columns so that a packed B
 * block does (half of L2); then columns x {1/2, 2, 4} around the best; at
 * most ~1.5 s. */
static void sweep_fp32(tune_state *s) {
    static const int kmul[] = {1, 2, 3}, mmul[] = {2, 1, 4};
    const gemm_bf16_blocking g = s->guess;
    for (size_t a = 0; a < 3; a++)
        for (size_t m = 0; m < 3 && tune_time_left(s, 1.5); m++)
            tune_try(s, (gemm_bf16_blocking){g.kc * kmul[a], g.mc * mmul[m] / 2 / kmul[a], g.nc / kmul[a]});
    const gemm_bf16_blocking b1 = s->c[tune_best(s, -1)];
    if (!s->slow) {
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc / 2});
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc * 2});
        tune_try(s, (gemm_bf16_blocking){b1.kc, b1.mc, b1.nc * 4});
    }
}

/* One attempt: bursts, the guess and the sweep, bursts, the re-time, bursts
 * (an unsteady phase ends the attempt at once).
 * Re-time: one timing per candidate picks by noise on a machine whose speed
 * jumps within seconds, so the fastest, the runner-up and the guess are timed
 * TUNE_RETIME more times each, round-robin, and the lowest median wins --
 * the guess unless another is faster by over 3% (so equal blockings do not
 * flip from one tune to the next).  Returns 1 if steady (gemm_tune.h). */
static int tune_attempt(tune_state *s, void (*sweep)(tune_state *), double cached_peak, gemm_bf16_blocking *best,
                        double *gflops, char *why, size_t why_n) {
    s->n = s->nb = s->np = 0;
    s->t_start = gpt2c_now_ns();
    const double one = 1;
    tune_bursts(s); /* a machine already loaded: no sweep (seconds saved, nothing learnt) */
    if (!gpt2c_gemm_tune_steady(s->bursts, s->nb, cached_peak, s->probes, s->np, &one, 1, why, why_n)) return 0;
    tune_try(s, s->guess); /* index 0 */
    sweep(s);
    tune_bursts(s);
    if (!gpt2c_gemm_tune_steady(s->bursts, s->nb, cached_peak, s->probes, s->np, &one, 1, why, why_n)) return 0;
    int w[3] = {0, -1, -1}; /* the guess, the fastest other, the next */
    for (int i = 1; i < s->n; i++)
        if (w[1] < 0 || s->t[i] < s->t[w[1]]) w[1] = i;
    for (int i = 1; i < s->n; i++)
        if (i != w[1] && (w[2] < 0 || s->t[i] < s->t[w[2]])) w[2] = i;
    const int nw = 1 + (w[1] >= 0) + (w[2] >= 0);
    double v[3][TUNE_RETIME + 1], med[3];
    int nv;
    for (int j = 0; j < nw; j++) v[j][0] = s->t[w[j]];
    const int rounds = s->slow ? 1 : TUNE_RETIME; /* slow: still two timings each, for the steadiness test */
    for (int r = 1; r <= rounds; r++)
        for (int j = 0; j < nw; j++) {
            s->set(s->c[w[j]]);
            v[j][r] = time_workload(s->bf16, s->isa, s->td);
        }
    nv = rounds + 1;
    double win_t[TUNE_RETIME + 1];
    int win = 0;
    for (int j = 0; j < nw; j++) {
        double sorted[TUNE_RETIME + 1];
        memcpy(sorted, v[j], sizeof(double) * nv);
        qsort(sorted, (size_t)nv, sizeof(double), cmp_dbl);
        med[j] = 0.5 * (sorted[(nv - 1) / 2] + sorted[nv / 2]);
        if (med[j] < med[win]) win = j;
    }
    if (win != 0 && med[0] <= 1.03 * med[win]) win = 0;
    memcpy(win_t, v[win], sizeof(double) * nv);
    tune_bursts(s);
    *gflops = 1.0 / med[win];
    *best = s->set(s->c[w[win]]);
    return gpt2c_gemm_tune_steady(s->bursts, s->nb, cached_peak, s->probes, s->np, win_t, nv, why, why_n);
}

/* The autotune of one precision: from the cache unless `force`; else up to
 * two attempts; a steady one is kept, else the guess is set and recorded as
 * provisional for an hour. */
static gemm_bf16_blocking autotune(int bf16, gpt2c_isa isa, int force, gemm_bf16_blocking guess, int *from_cache,
                                   double *gflops) {
    char path[512], dir[512], k[300];
    g_done[bf16] = 1;
    const char *sec = bf16 ? "bf16" : "fp32";
    tune_set_fn set = bf16 ? set_bf16 : set_fp32;
    cache_file(path, sizeof path, dir, sizeof dir);
    key(k, sizeof k, bf16, isa);
    gemm_bf16_blocking b;
    int provisional = 0;
    *from_cache = 0;
    *gflops = 0;
    if (!force && path[0] && cache_read(path, sec, k, &b, &provisional)) {
        *from_cache = 1;
        snprintf(g_note[bf16], sizeof g_note[bf16], "%s",
                 provisional ? "cache-size blocking (a recent autotune was refused: machine loaded)" : "cached autotune");
        return set(b);
    }
    b = guess = set(guess);
    if (!force && GPT2C_SANITIZED) { /* its timings would measure the sanitizer, at 10-50x the cost of a tune */
        snprintf(g_note[bf16], sizeof g_note[bf16], "not tuned (a sanitizer build): cache-size blocking");
        return guess;
    }
    tune_data td;
    tune_state *s = calloc(1, sizeof *s);
    if (!s || !tune_alloc(&td)) {
        free(s);
        tune_free(&td);
        snprintf(g_note[bf16], sizeof g_note[bf16], "not tuned (out of memory): cache-size blocking");
        return guess;
    }
    gpt2c_peak pk;
    double cached_peak = 0;
    const int dp = bf16 && strcmp(gpt2c_cpu_gemm_bf16_kernel(isa)->name, "avx512bf16") == 0;
    if (gpt2c_peak_cached(omp_get_max_threads(), &pk)) cached_peak = dp ? pk.bf16_gflops : pk.fma_gflops[isa];
    s->bf16 = bf16, s->dp = dp, s->isa = isa, s->td = &td, s->set = set, s->guess = guess;
    s->slow = (time_workload(bf16, isa, &td), time_workload(bf16, isa, &td)) * 16 > 0.25; /* warm-up; ~16 GFLOP */
    char why[300] = "";
    int steady = 0;
    for (int attempt = 0; attempt < 2 && !steady; attempt++)
        steady = tune_attempt(s, bf16 ? sweep_bf16 : sweep_fp32, cached_peak, &b, gflops, why, sizeof why);
    free(s);
    tune_free(&td);
    tune_entry e = {b, *gflops, NULL, 0};
    if (steady) {
        snprintf(g_note[bf16], sizeof g_note[bf16], "autotuned now (%s)", why);
    } else {
        b = set(guess);
        *gflops = 0;
        e.b = b, e.refused = why, e.retry_after = (long long)time(NULL) + 3600;
        snprintf(g_note[bf16], sizeof g_note[bf16], "autotune refused twice (%s): the cache-size blocking is kept", why);
    }
    if (path[0]) cache_write(path, dir, sec, k, &e);
    return b;
}

gemm_bf16_blocking gpt2c_cpu_gemm_bf16_autotune(gpt2c_isa isa, int force, int *from_cache, double *gflops) {
    g_tuning = 1;
    const gemm_bf16_blocking b = autotune(1, isa, force, gpt2c_cpu_gemm_bf16_blocking_from_caches(isa), from_cache, gflops);
    g_tuning = 0;
    return b;
}

void gpt2c_cpu_gemm_fp32_autotune(gpt2c_isa isa, int force, int *mc, int *nc, int *from_cache, double *gflops) {
    int gm, gn;
    gpt2c_cpu_gemm_fp32_blocking_from_caches(&gm, &gn);
    g_tuning32 = 1;
    const gemm_bf16_blocking b = autotune(0, isa, force, (gemm_bf16_blocking){GEMM_KC, gm, gn}, from_cache, gflops);
    g_tuning32 = 0;
    *mc = b.mc, *nc = b.nc;
}

void gpt2c_cpu_gemm_fp32_first_use(gpt2c_isa isa) {
    if (g_done[0] || g_tuning32) return;
    g_done[0] = 1;
    int mc, nc, from_cache;
    double gf;
    const char *e = getenv("GPT2C_GEMM_AUTOTUNE");
    if ((e && strcmp(e, "0") == 0) || isa == GPT2C_ISA_SCALAR) { /* the portable kernel: not worth a tune */
        gpt2c_cpu_gemm_fp32_blocking_from_caches(&mc, &nc);
        snprintf(g_note[0], sizeof g_note[0], "not tuned (%s): cache-size blocking",
                 isa == GPT2C_ISA_SCALAR ? "portable kernel" : "GPT2C_GEMM_AUTOTUNE=0");
        return;
    }
    gpt2c_cpu_gemm_fp32_autotune(isa, 0, &mc, &nc, &from_cache, &gf);
}

void gpt2c_cpu_gemm_bf16_first_use(gpt2c_isa isa) {
    if (g_done[1] || g_tuning) return;
    g_done[1] = 1;
    const char *e = getenv("GPT2C_GEMM_AUTOTUNE");
    if (e && strcmp(e, "0") == 0) {
        gpt2c_cpu_gemm_bf16_blocking_from_caches(isa);
        snprintf(g_note[1], sizeof g_note[1], "not tuned (GPT2C_GEMM_AUTOTUNE=0): cache-size blocking");
        return;
    }
    int from_cache;
    double gf;
    gpt2c_cpu_gemm_bf16_autotune(isa, 0, &from_cache, &gf);
}
