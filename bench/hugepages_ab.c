/* The optimizer's ops on 4 KiB against 2 MiB pages, in one process: the cpu
 * backend's fused bf16 AdamW (with the dinp panels), its fp32 AdamW and the
 * grad norm (sumsq) on L matrices of 768 x 3072 weights, each set of arrays
 * allocated twice (aligned_alloc(64): THP "madvise" leaves it on 4 KiB
 * pages; gpt2c_alloc_huge: 2 MiB-aligned, MADV_HUGEPAGE), the two calls
 * alternated R times, order flipped every round.  Prints the medians and
 * 2M / 4K.  Built and run by bench/hugepages_ab.sh. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"
#include "kernels/kernels.h"

static int cmpd(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *block(size_t bytes, int huge) {
    if (huge) return gpt2c_alloc_huge(bytes, "huge");
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p) memset(p, 0, bytes);
    return p;
}

int main(int argc, char **argv) {
    const int L = argc > 1 ? atoi(argv[1]) : 12, R = argc > 2 ? atoi(argv[2]) : 7, rows = 768, cols = 3072;
    if (L < 1 || R < 1 || R > 64) return fprintf(stderr, "usage: hugepages_ab [L >= 1] [R in 1..64]\n"), 2;
    const gpt2c_kernels *k = gpt2c_kernels_cpu();
    const size_t per = (size_t)rows * cols, n = per * L;
    const int width = k->bf16_panel_width ? k->bf16_panel_width(rows, cols) : 0;
    float *p[2], *g[2], *m[2], *v[2];
    uint16_t *pb[2];
    uint32_t *pd[2];
    for (int h = 0; h < 2; h++) {
        p[h] = block(n * 4, h), g[h] = block(n * 4, h), m[h] = block(n * 4, h), v[h] = block(n * 4, h);
        pb[h] = block(n * 2, h), pd[h] = block(n * 2, h);
        if (!p[h] || !g[h] || !m[h] || !v[h] || !pb[h] || !pd[h]) return fprintf(stderr, "out of memory\n"), 1;
        for (size_t i = 0; i < n; i++) p[h][i] = 0.01f * (float)(i % 100), g[h][i] = 0.001f * (float)(i % 37);
    }
    double t[2][3][64];
    for (int r = 0; r < R; r++)
        for (int w = 0; w < 2; w++) {
            const int h = (w + r) % 2;
            double t0 = omp_get_wtime();
            for (int l = 0; l < L; l++) {
                const size_t o = (size_t)l * per;
                if (width)
                    k->adamw_bf16_panels(p[h] + o, g[h] + o, m[h] + o, v[h] + o, pb[h] + o, pd[h] + o / 2, rows, cols,
                                         width, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, r + 1);
                else
                    k->adamw_bf16(p[h] + o, g[h] + o, m[h] + o, v[h] + o, pb[h] + o, per, 1e-3f, 0.9f, 0.95f, 1e-8f,
                                  0.1f, 1.0f, r + 1);
            }
            double t1 = omp_get_wtime();
            k->adamw(p[h], g[h], m[h], v[h], n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, r + 1);
            double t2 = omp_get_wtime();
            volatile double ss = k->sumsq(g[h], n);
            (void)ss;
            double t3 = omp_get_wtime();
            t[h][0][r] = t1 - t0, t[h][1][r] = t2 - t1, t[h][2][r] = t3 - t2;
        }
    const char *name[3] = {width ? "bf16 AdamW + copies + panels" : "bf16 AdamW + copies", "fp32 AdamW", "grad norm (sumsq)"};
    printf("%.1fM parameters (%d x %d x %d), %d threads, medians of %d\n", n / 1e6, L, rows, cols, omp_get_max_threads(), R);
    for (int i = 0; i < 3; i++) {
        qsort(t[0][i], R, sizeof(double), cmpd), qsort(t[1][i], R, sizeof(double), cmpd);
        printf("  %-30s 4 KiB %8.2f ms   2 MiB %8.2f ms   2M/4K %.3f\n", name[i], 1e3 * t[0][i][R / 2], 1e3 * t[1][i][R / 2],
               t[1][i][R / 2] / t[0][i][R / 2]);
    }
    for (int h = 0; h < 2; h++) {
        void *b[6] = {p[h], g[h], m[h], v[h], pb[h], pd[h]};
        for (int i = 0; i < 6; i++) h ? gpt2c_free(b[i]) : free(b[i]);
    }
    return 0;
}
