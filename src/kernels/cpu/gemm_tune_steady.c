/* The autotune's trust test (gemm_tune.h): pure arithmetic on timings, so a
 * test can feed it a loaded machine's figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm_tune.h"

static int cmp_dbl(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* lowest and highest of v[0..n); returns the index of the first figure not
 * > 0 (unmeasured), or -1 if all are */
static int range(const double *v, int n, double *lo, double *hi) {
    *lo = 1e300, *hi = 0;
    for (int i = 0; i < n; i++) {
        if (!(v[i] > 0)) return i;
        *lo = v[i] < *lo ? v[i] : *lo, *hi = v[i] > *hi ? v[i] : *hi;
    }
    return -1;
}

int gpt2c_gemm_tune_steady(const double *bursts, int n, double cached_peak, const double *probes, int np,
                           const double *win_t, int nw, char *why, size_t why_n) {
    if (why_n) why[0] = 0;
    if (n < 2 || n > 64 || np < 2 || np > 64 || nw < 1 || nw > 64) {
        snprintf(why, why_n, "too few timings (%d peak bursts, %d in-L2 GEMM probes, %d of the winner)", n, np, nw);
        return 0;
    }
    double b[64], lo, hi;
    int bad = range(bursts, n, &lo, &hi);
    if (bad >= 0) {
        snprintf(why, why_n, "peak burst %d unmeasurable", bad);
        return 0;
    }
    memcpy(b, bursts, sizeof(double) * (size_t)n);
    if (hi > GPT2C_GEMM_TUNE_BURST_SPREAD * lo) {
        snprintf(why, why_n, "peak bursts moved %.1f..%.1f GFLOP/s during the tune (> %.0f%% apart)", lo, hi,
                 100 * (GPT2C_GEMM_TUNE_BURST_SPREAD - 1));
        return 0;
    }
    qsort(b, (size_t)n, sizeof b[0], cmp_dbl);
    const double med = 0.5 * (b[(n - 1) / 2] + b[n / 2]);
    if (cached_peak > 0 && med < GPT2C_GEMM_TUNE_PEAK_FRAC * cached_peak) {
        snprintf(why, why_n, "peak bursts at %.1f GFLOP/s, %.0f%% of the cached peak %.1f (< %.0f%%: machine loaded)", med,
                 100 * med / cached_peak, cached_peak, 100 * GPT2C_GEMM_TUNE_PEAK_FRAC);
        return 0;
    }
    double plo, phi;
    if (range(probes, np, &plo, &phi) >= 0) {
        snprintf(why, why_n, "an in-L2 GEMM probe measured nothing");
        return 0;
    }
    if (phi > GPT2C_GEMM_TUNE_PROBE_SPREAD * plo) {
        snprintf(why, why_n,
                 "in-L2 GEMM probes moved %.1f..%.1f GFLOP/s during the tune (> %.0f%% apart; the peak bursts, %.1f..%.1f, "
                 "did not see it)",
                 plo, phi, 100 * (GPT2C_GEMM_TUNE_PROBE_SPREAD - 1), lo, hi);
        return 0;
    }
    double tlo, thi;
    bad = range(win_t, nw, &tlo, &thi);
    if (bad >= 0) {
        snprintf(why, why_n, "timing %d of the winner unmeasurable", bad);
        return 0;
    }
    if (thi > GPT2C_GEMM_TUNE_TIME_SPREAD * tlo) {
        snprintf(why, why_n, "the winner's timings moved %.1f..%.1f ms (> %.0f%% apart)", tlo * 1e3, thi * 1e3,
                 100 * (GPT2C_GEMM_TUNE_TIME_SPREAD - 1));
        return 0;
    }
    snprintf(why, why_n, "peak bursts %.1f..%.1f GFLOP/s%s, in-L2 GEMM probes %.1f..%.1f, winner's timings within %.0f%%",
             lo, hi, cached_peak > 0 ? " (vs cached peak ok)" : " (no cached peak)", plo, phi, 100 * (thi / tlo - 1));
    return 1;
}
