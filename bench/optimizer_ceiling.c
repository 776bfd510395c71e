/* How close the optimizer's ops come to what their memory traffic allows:
 * the cpu backend's fused bf16 AdamW (weight copy + dinp panels), its fp32
 * AdamW and the grad norm (sumsq), each against a loop that moves exactly the
 * same bytes the same way (the same streams read, written back and streamed
 * past the caches) with next to no arithmetic.  If an op runs as fast as its
 * twin, its time is the memory's, and no rewrite of its arithmetic gains.
 * Arrays of L matrices of rows x cols weights (default 12 of 768 x 3072) in
 * 2 MiB pages (as training's slabs), the op and its twin alternated R times,
 * order flipped every round; medians.
 * Built and run by bench/optimizer_ceiling.sh. */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt2c/core.h"
#include "kernels/kernels.h"

enum { NT_WORDS = 32 /* bf16 words per 64-byte line */ };

static int cmpd(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* AdamW's traffic: read p, g, m, v; write p, m, v back; with bf16 > 0, that
 * many bf16 arrays of the same length streamed out (the copy, the panels). */
static void twin_adamw(float *p, const float *g, float *m, float *v, uint16_t *pb, uint16_t *pd, size_t n, int bf16) {
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < n / NT_WORDS; b++) {
        const size_t i0 = b * NT_WORDS;
        __m512 w[2];
        for (int h = 0; h < 2; h++) {
            const size_t i = i0 + 16 * (size_t)h;
            const __m512 gi = _mm512_loadu_ps(g + i), mi = _mm512_add_ps(_mm512_loadu_ps(m + i), gi),
                         vi = _mm512_add_ps(_mm512_loadu_ps(v + i), gi);
            _mm512_storeu_ps(m + i, mi);
            _mm512_storeu_ps(v + i, vi);
            w[h] = _mm512_add_ps(_mm512_loadu_ps(p + i), mi);
            _mm512_storeu_ps(p + i, w[h]);
        }
        if (bf16) { /* the bf16 words: the top halves of p, as two streamed lines */
            const __m512i lo = _mm512_srli_epi32(_mm512_castps_si512(w[0]), 16),
                          hi = _mm512_srli_epi32(_mm512_castps_si512(w[1]), 16);
            const __m512i words = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(lo)),
                                                     _mm512_cvtepi32_epi16(hi), 1);
            _mm512_stream_si512((void *)(pb + i0), words);
            if (bf16 > 1) _mm512_stream_si512((void *)(pd + i0), words);
        }
    }
    _mm_sfence();
}

/* the grad norm's traffic: one read stream, summed in fp32 lanes */
static double twin_read(const float *x, size_t n) {
    double s = 0;
#pragma omp parallel reduction(+ : s)
    {
        __m512 acc = _mm512_setzero_ps();
#pragma omp for schedule(static)
        for (size_t i = 0; i < n; i += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(x + i));
        s += _mm512_reduce_add_ps(acc);
    }
    return s;
}

int main(int argc, char **argv) {
    const int L = argc > 1 ? atoi(argv[1]) : 12, R = argc > 2 ? atoi(argv[2]) : 7;
    const int rows = argc > 3 ? atoi(argv[3]) : 768, cols = argc > 4 ? atoi(argv[4]) : 3072;
    if (L < 1 || L > 64 || R < 1 || R > 64 || rows < 2 || rows % 2 || cols < 64 || cols % 64)
        return fprintf(stderr, "usage: optimizer_ceiling [L in 1..64] [R in 1..64] [rows: even] [cols: k x 64]\n"), 2;
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw"))
        return fprintf(stderr, "optimizer_ceiling: the twins are AVX-512 loops; this CPU has no AVX-512F/BW\n"), 2;
    const gpt2c_kernels *k = gpt2c_kernels_cpu();
    const size_t per = (size_t)rows * cols, n = per * L;
    const int width = k->bf16_panel_width ? k->bf16_panel_width(rows, cols) : 0;
    float *p = gpt2c_alloc_huge(n * 4, "p"), *g = gpt2c_alloc_huge(n * 4, "g"), *m = gpt2c_alloc_huge(n * 4, "m"),
          *v = gpt2c_alloc_huge(n * 4, "v");
    uint16_t *pb = gpt2c_alloc_huge(n * 2, "copy"), *pd = gpt2c_alloc_huge(n * 2, "panels");
    if (!p || !g || !m || !v || !pb || !pd) return fprintf(stderr, "optimizer_ceiling: out of memory\n"), 1;
    for (size_t i = 0; i < n; i++) p[i] = 0.01f * (float)(i % 100), g[i] = 0.001f * (float)(i % 37), m[i] = v[i] = 0;
    double t[6][64];
    volatile double sink = 0;
    for (int r = 0; r < R; r++)
        for (int w = 0; w < 2; w++) {
            const int twin = (w + r) % 2; /* op first in even rounds, its twin first in odd ones */
            double t0 = omp_get_wtime();
            if (twin)
                twin_adamw(p, g, m, v, pb, pd, n, width ? 2 : 1);
            else
                for (int l = 0; l < L; l++) {
                    const size_t o = (size_t)l * per;
                    if (width)
                        k->adamw_bf16_panels(p + o, g + o, m + o, v + o, pb + o, (uint32_t *)pd + o / 2, rows, cols,
                                             width, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, r + 1);
                    else
                        k->adamw_bf16(p + o, g + o, m + o, v + o, pb + o, per, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f,
                                      r + 1);
                }
            double t1 = omp_get_wtime();
            if (twin)
                twin_adamw(p, g, m, v, pb, pd, n, 0);
            else
                k->adamw(p, g, m, v, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, r + 1);
            double t2 = omp_get_wtime();
            sink += twin ? twin_read(g, n) : k->sumsq(g, n);
            double t3 = omp_get_wtime();
            t[0 + twin][r] = t1 - t0, t[2 + twin][r] = t2 - t1, t[4 + twin][r] = t3 - t2;
        }
    (void)sink;
    const char *name[3] = {width ? "bf16 AdamW + copy + panels" : "bf16 AdamW + copy", "fp32 AdamW",
                           "grad norm (sumsq)"};
    const double bytes[3] = {width ? 32.0 : 30.0, 28.0, 4.0}; /* per parameter, as the ops count theirs */
    printf("%.1fM parameters (%d x %d x %d) in 2 MiB pages, %d threads, medians of %d alternated rounds\n", n / 1e6, L,
           rows, cols, omp_get_max_threads(), R);
    printf("  %-28s %9s %8s %9s %8s %8s\n", "op", "op ms", "GB/s", "twin ms", "GB/s", "op/twin");
    for (int i = 0; i < 3; i++) {
        qsort(t[2 * i], R, sizeof(double), cmpd), qsort(t[2 * i + 1], R, sizeof(double), cmpd);
        const double a = t[2 * i][R / 2], b = t[2 * i + 1][R / 2];
        printf("  %-28s %9.2f %8.1f %9.2f %8.1f %8.3f\n", name[i], 1e3 * a, bytes[i] * n / a / 1e9, 1e3 * b,
               bytes[i] * n / b / 1e9, a / b);
    }
    gpt2c_free(p), gpt2c_free(g), gpt2c_free(m), gpt2c_free(v), gpt2c_free(pb), gpt2c_free(pd);
    return 0;
}
