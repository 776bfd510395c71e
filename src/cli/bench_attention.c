/* `gpt2c bench attention`: the inference attention over the KV cache, fused
 * (the cpu table's attention_kv_range: flash attention, online softmax over
 * tiles of 256 keys for blocks of <= 4 queries, a few KiB of scratch per
 * thread whatever T), the previous two-pass kernel (a 4-query block's scores
 * over all its keys in a 64 KiB per-thread buffer, then P V; AVX-512 only)
 * and the unfused way (per head: S = Q K^T with the cpu GEMM (gpt2c_cpu_gemm), causal
 * softmax over the materialised T x T scores, O = P V with the GEMM), at a
 * prefill of T tokens and one decode step after them.  GPT-2 124M's layer
 * shape (12 heads of 64) unless told otherwise; medians of --runs. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/run_arg.h"
#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "kernels/cpu/cpu_infer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/kernels.h"

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* fused: tasks (h, t) in chunks of 4 queries, split over the threads as src/infer does */
static void fused(const gpt2c_kernels *k, float *out, const float *q, const float *kc, const float *vc, int Tq, int pos0,
                  int ctx, int C, int NH) {
    const int pos[1] = {pos0};
    const long tasks = (long)NH * Tq, step = Tq > 1 ? 4 : 1;
#pragma omp parallel for schedule(dynamic, 1)
    for (long t0 = 0; t0 < tasks; t0 += step)
        k->attention_kv_range(out, q, (size_t)3 * C, kc, vc, pos, 1, Tq, ctx, C, NH, t0, t0 + step < tasks ? t0 + step : tasks);
}

/* the previous two-pass kernel (AVX-512), split as fused() splits */
static void two_pass(float *out, const float *q, const float *kc, const float *vc, int Tq, int pos0, int ctx, int C, int NH) {
#if defined(__x86_64__)
    const int pos[1] = {pos0};
    const long tasks = (long)NH * Tq, step = Tq > 1 ? 4 : 1;
#pragma omp parallel for schedule(dynamic, 1)
    for (long t0 = 0; t0 < tasks; t0 += step)
        gpt2c_cpu_infer_attention_avx512(out, q, (size_t)3 * C, kc, vc, pos, 1, Tq, ctx, C, NH, t0,
                                         t0 + step < tasks ? t0 + step : tasks);
#else
    (void)out, (void)q, (void)kc, (void)vc, (void)Tq, (void)pos0, (void)ctx, (void)C, (void)NH;
#endif
}

/* unfused: S (NH, T, T) materialised */
static void unfused(gpt2c_isa isa, float *out, const float *q, const float *kc, const float *vc, float *S, int T, int ctx,
                    int C, int NH) {
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    for (int h = 0; h < NH; h++) {
        float *Sh = S + (size_t)h * T * T;
        /* S (T, T) = Q_h (T, hs) K_h^T: the cache holds K_h as (hs, ctx) */
        gpt2c_cpu_gemm(isa, T, T, hs, q + h * hs, 3L * C, 1, kc + (size_t)h * hs * ctx, ctx, 1, Sh, T, NULL, 0);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < T; i++) { /* causal softmax of row i over keys 0..i */
            float *r = Sh + (size_t)i * T, mx = -INFINITY, sum = 0.0f;
            for (int j = 0; j <= i; j++) mx = fmaxf(mx, r[j] * scale);
            for (int j = 0; j <= i; j++) sum += (r[j] = expf(r[j] * scale - mx));
            for (int j = 0; j <= i; j++) r[j] /= sum;
            for (int j = i + 1; j < T; j++) r[j] = 0.0f;
        }
        /* O_h (T, hs) = P (T, T) V_h (T, hs): the cache holds V_h as (ctx, hs) */
        gpt2c_cpu_gemm(isa, T, hs, T, Sh, T, 1, vc + (size_t)h * ctx * hs, hs, 1, out + h * hs, C, NULL, 0);
    }
}

int bench_attention(int argc, char **argv) {
    int C = 768, NH = 12, threads = 0, runs = 5;
    cli_intlist Ts = {{64, 256, 1024}, 3};
    cli_opt opts[] = {
        {"--seq", CLI_INTLIST, &Ts, "prefill lengths T [64,256,1024]", 0, 0},
        {"--embd", CLI_INT, &C, "channels [768]", 1, 16384},
        {"--heads", CLI_INT, &NH, "heads [12]", 1, 1024},
        THREADS_ARG_OPT_STD(threads),
        {"--runs", CLI_INT, &runs, "timed runs; medians are reported [5]", 1, 1000},
    };
    int rc = cli_parse("bench attention", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (C % NH) return cli_error("bench attention", "--embd %d is not a multiple of --heads %d", C, NH);
    const int nthreads = gpt2c_set_threads(threads);
    const gpt2c_kernels *k = NULL;
    if (gpt2c_kernels_get("cpu", &k) != GPT2C_OK) return cli_fail_status("bench attention");
    const gpt2c_isa isa = gpt2c_cpu_isa();
    printf("attention over the KV cache, %d heads of %d, %d threads (%s); medians of %d runs\n", NH, C / NH, nthreads,
           gpt2c_isa_name(isa), runs);
    const int have_two_pass = isa == GPT2C_ISA_AVX512;
    printf("%6s  %10s  %10s  %10s  %9s  %9s  %14s  %14s  %14s  %10s\n", "T", "flash ms", "2-pass ms", "unfused ms",
           "vs 2-pass", "vs unfus.", "flash scratch", "2-pass scratch", "unfused scores", "decode ms");
    for (int ti = 0; ti < Ts.n; ti++) {
        const int T = Ts.items[ti], ctx = T + 1;
        if (T < 1 || T > 4095) { /* the two-pass kernel's limit (the flash one has none) */
            printf("%6d  (skipped: T must be in [1, 4095])\n", T);
            continue;
        }
        gpt2c_rng r;
        gpt2c_rng_seed(&r, 5, (uint64_t)T);
        float *q = malloc(sizeof(float) * (size_t)(T + 1) * 3 * C), *kc = malloc(sizeof(float) * (size_t)C * ctx);
        float *vc = malloc(sizeof(float) * (size_t)C * ctx), *o1 = malloc(sizeof(float) * (size_t)T * C);
        float *o2 = malloc(sizeof(float) * (size_t)T * C), *o3 = malloc(sizeof(float) * (size_t)T * C);
        float *S = malloc(sizeof(float) * (size_t)NH * T * T);
        double *tf = malloc(sizeof(double) * runs), *tu = malloc(sizeof(double) * runs), *td = malloc(sizeof(double) * runs);
        double *t2p = malloc(sizeof(double) * runs);
        if (!q || !kc || !vc || !o1 || !o2 || !o3 || !S || !tf || !tu || !td || !t2p) {
            free(q), free(kc), free(vc), free(o1), free(o2), free(o3), free(S), free(tf), free(tu), free(td), free(t2p);
            return cli_error("bench attention", "T=%d: out of memory", T);
        }
        for (size_t i = 0; i < (size_t)(T + 1) * 3 * C; i++) q[i] = gpt2c_rng_normal(&r);
        for (size_t i = 0; i < (size_t)C * ctx; i++) kc[i] = gpt2c_rng_normal(&r), vc[i] = gpt2c_rng_normal(&r);
        for (int run = -1; run < runs; run++) { /* run -1: warm-up; the three interleaved */
            uint64_t t0 = gpt2c_now_ns();
            fused(k, o1, q, kc, vc, T, 0, ctx, C, NH);
            uint64_t t1 = gpt2c_now_ns();
            unfused(isa, o2, q, kc, vc, S, T, ctx, C, NH);
            uint64_t t2 = gpt2c_now_ns();
            fused(k, o1, q + (size_t)T * 3 * C, kc, vc, 1, T - 1, ctx, C, NH); /* one decode step at position T-1 */
            uint64_t t3 = gpt2c_now_ns();
            if (have_two_pass) two_pass(o3, q, kc, vc, T, 0, ctx, C, NH);
            uint64_t t4 = gpt2c_now_ns();
            if (run >= 0)
                tf[run] = (t1 - t0) * 1e-6, tu[run] = (t2 - t1) * 1e-6, td[run] = (t3 - t2) * 1e-6, t2p[run] = (t4 - t3) * 1e-6;
        }
        /* the three agree (the same attention): check the prefill outputs once more */
        fused(k, o1, q, kc, vc, T, 0, ctx, C, NH);
        double maxd = 0, maxd2 = 0, maxv = 1e-30;
        for (size_t i = 0; i < (size_t)T * C; i++) {
            maxd = fmax(maxd, fabs((double)o1[i] - o2[i]));
            if (have_two_pass) maxd2 = fmax(maxd2, fabs((double)o1[i] - o3[i]));
            maxv = fmax(maxv, fabs((double)o2[i]));
        }
        qsort(tf, (size_t)runs, sizeof(double), cmp_double);
        qsort(tu, (size_t)runs, sizeof(double), cmp_double);
        qsort(td, (size_t)runs, sizeof(double), cmp_double);
        qsort(t2p, (size_t)runs, sizeof(double), cmp_double);
        const double mf = tf[runs / 2], mu = tu[runs / 2], m2 = t2p[runs / 2];
        /* scratch per thread: flash 4 x 256 accumulators + 4 x 256 scores (stack); two-pass 4 x 4096 scores */
        const double flash_kib = 4.0 * (4 * 256 + 4 * 256) / 1024.0, two_kib = 4.0 * 4 * 4096 / 1024.0;
        char m2s[32] = "unavailable", r2s[32] = "-";
        if (have_two_pass) snprintf(m2s, sizeof m2s, "%.3f", m2), snprintf(r2s, sizeof r2s, "%.2fx", m2 / mf);
        printf("%6d  %10.3f  %10s  %10.3f  %9s  %8.2fx  %10.1f KiB  %10.1f KiB  %10.1f KiB  %10.4f   (max |diff| %.1e unfused, "
               "%.1e 2-pass, of %.1e)\n",
               T, mf, m2s, mu, r2s, mu / mf, flash_kib * nthreads, two_kib * nthreads, 4.0 * NH * T * T / 1024.0,
               td[runs / 2], maxd, maxd2, maxv);
        free(q), free(kc), free(vc), free(o1), free(o2), free(o3), free(S), free(tf), free(tu), free(td), free(t2p);
    }
    return 0;
}
