/* The GEMM autotune's trust test (kernels/cpu/gemm_tune.h) on injected
 * timings: steady figures pass; peak bursts that move, that sit well below
 * the cached peak (a loaded machine), or a winner whose re-timings scatter
 * are refused with a reason naming what moved, as are in-L2 GEMM probes
 * that move while the bursts do not; too few timings are refused.
 * No timing is taken here. */
#include <string.h>

#include "kernels/cpu/gemm_tune.h"
#include "testutil.h"

int main(void) {
    char why[300];
    const double steady_b[6] = {420, 425, 418, 422, 424, 421}, win[4] = {0.0101, 0.0100, 0.0103, 0.0102};
    const double pr[6] = {380, 384, 379, 381, 383, 382}; /* in-L2 GEMM probes beside the bursts */
    CHECK(gpt2c_gemm_tune_steady(steady_b, 6, 424, pr, 6, win, 4, why, sizeof why) == 1);
    CHECK(gpt2c_gemm_tune_steady(steady_b, 6, 0, pr, 6, win, 4, why, sizeof why) == 1); /* no cached peak: not checked */
    CHECK(strstr(why, "no cached peak") != NULL);

    /* a neighbour started mid-tune: the bursts after are 30% down */
    const double moved[6] = {420, 425, 418, 300, 310, 305};
    CHECK(gpt2c_gemm_tune_steady(moved, 6, 424, pr, 6, win, 4, why, sizeof why) == 0);
    CHECK(strstr(why, "peak bursts moved") != NULL);

    /* loaded all along: steady bursts, but at half the cached peak */
    const double half[6] = {210, 212, 209, 211, 213, 210};
    CHECK(gpt2c_gemm_tune_steady(half, 6, 424, pr, 6, win, 4, why, sizeof why) == 0);
    CHECK(strstr(why, "cached peak") != NULL && strstr(why, "loaded") != NULL);
    /* ... at 86% it passes, at 84% not (threshold 85%) */
    const double b86[2] = {0.86 * 424, 0.86 * 424}, b84[2] = {0.84 * 424, 0.84 * 424};
    CHECK(gpt2c_gemm_tune_steady(b86, 2, 424, pr, 6, win, 4, why, sizeof why) == 1);
    CHECK(gpt2c_gemm_tune_steady(b84, 2, 424, pr, 6, win, 4, why, sizeof why) == 0);

    /* a slowdown only cache-using code sees (an SMT neighbour): the bursts
     * stay steady at the peak, the probes after the sweep drop to 0.66x */
    const double pr_moved[6] = {380, 384, 251, 254, 252, 250};
    CHECK(gpt2c_gemm_tune_steady(steady_b, 6, 424, pr_moved, 6, win, 4, why, sizeof why) == 0);
    CHECK(strstr(why, "in-L2 GEMM probes moved") != NULL);
    /* ... at 9% apart it passes, at 11% not (threshold 10%) */
    const double p9[2] = {380, 380 * 1.09}, p11[2] = {380, 380 * 1.11};
    CHECK(gpt2c_gemm_tune_steady(steady_b, 6, 424, p9, 2, win, 4, why, sizeof why) == 1);
    CHECK(gpt2c_gemm_tune_steady(steady_b, 6, 424, p11, 2, win, 4, why, sizeof why) == 0);
    /* a probe that measured nothing, or too few */
    const double p0[3] = {380, 0, 381};
    CHECK(gpt2c_gemm_tune_steady(steady_b, 6, 424, p0, 3, win, 4, why, sizeof why) == 0);
    CHECK(strstr(why, "probe") != NULL);
    CHECK(gpt2c_gemm_tune_steady(steady_b, 6, 424, pr, 1, win, 4, why, sizeof why) == 0);
    CHECK(strstr(why, "too few") != NULL);

    /* the winner's own timings scatter by 30% */
    const double scatter[4] = {0.010, 0.013, 0.010, 0.011};
    CHECK(gpt2c_gemm_tune_steady(steady_b, 6, 424, pr, 6, scatter, 4, why, sizeof why) == 0);
    CHECK(strstr(why, "winner") != NULL);

    /* a burst that measured nothing (preempted, unsupported) and too few figures */
    const double zero[3] = {420, 0, 421};
    CHECK(gpt2c_gemm_tune_steady(zero, 3, 424, pr, 6, win, 4, why, sizeof why) == 0);
    CHECK(gpt2c_gemm_tune_steady(steady_b, 1, 424, pr, 6, win, 4, why, sizeof why) == 0);
    CHECK(gpt2c_gemm_tune_steady(steady_b, 6, 424, pr, 6, win, 0, why, sizeof why) == 0);
    CHECK(strstr(why, "too few") != NULL);
    return tu_finish("test_gemm_tune_steady");
}
