/* Top-down formulas on fixed raw counts, and the counters' unavailable path.
 * The raw counts are hand-made to round numbers (this host has no PMU to
 * record from); each expected value is worked out in the comment beside it
 * from the vendor formula in src/profile/topdown.h. */
#include "gpt2c/core.h"
#include "profile/counters.h"
#include "profile/session.h"
#include "profile/topdown.h"
#include "testutil.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

int main(void) {
    gpt2c_topdown t;
    /* Intel PERF_METRICS: slots 1e9; retiring 4e8, bad-spec 1e8, fe 2e8, be 3e8, mem-bound 1.8e8 */
    double intel[8] = {1e9, 4e8, 1e8, 2e8, 3e8, 1.8e8, 0, 0};
    CHECK_OK(gpt2c_topdown_compute(GPT2C_TD_INTEL, intel, 1, &t));
    CHECK(NEAR(t.retiring, 0.4) && NEAR(t.bad_speculation, 0.1) && NEAR(t.frontend_bound, 0.2) && NEAR(t.backend_bound, 0.3));
    CHECK(t.have_l2 && NEAR(t.memory_bound, 0.18) && NEAR(t.core_bound, 0.12)); /* core = 0.3 - 0.18 */
    CHECK(NEAR(t.frontend_bound + t.bad_speculation + t.backend_bound + t.retiring, 1.0));
    CHECK_OK(gpt2c_topdown_compute(GPT2C_TD_INTEL, intel, 0, &t)); /* Ice Lake: level 1 only */
    CHECK(!t.have_l2 && t.memory_bound == 0);

    /* Zen 4: cycles 1e8 -> 6e8 slots; no_ops_from_frontend 1.2e8 (0.2), backend_stalls 2.4e8 (0.4),
     * ops dispatched 2.7e8, retired 2.4e8 (retiring 0.4, bad spec 0.3e8/6e8 = 0.05),
     * load_not_complete 3e7 of not_complete 4e7 (0.75 -> memory 0.3, core 0.1), smt 0 */
    double zen[8] = {1e8, 1.2e8, 2.4e8, 2.7e8, 2.4e8, 3e7, 4e7, 0};
    CHECK_OK(gpt2c_topdown_compute(GPT2C_TD_ZEN4, zen, 1, &t));
    CHECK(NEAR(t.frontend_bound, 0.2) && NEAR(t.backend_bound, 0.4) && NEAR(t.retiring, 0.4));
    CHECK(NEAR(t.bad_speculation, 0.05));
    CHECK(t.have_l2 && NEAR(t.memory_bound, 0.3) && NEAR(t.core_bound, 0.1));
    /* Zen 5: same counts over 8 slots per cycle -> 8e8 slots */
    CHECK_OK(gpt2c_topdown_compute(GPT2C_TD_ZEN5, zen, 1, &t));
    CHECK(NEAR(t.frontend_bound, 0.15) && NEAR(t.backend_bound, 0.3) && NEAR(t.retiring, 0.3));
    CHECK(NEAR(t.bad_speculation, 0.0375) && NEAR(t.memory_bound, 0.225));
    CHECK(gpt2c_td_width(GPT2C_TD_ZEN4) == 6 && gpt2c_td_width(GPT2C_TD_ZEN5) == 8);

    /* bad input */
    double zero[8] = {0};
    CHECK_FAILS(gpt2c_topdown_compute(GPT2C_TD_ZEN4, zero, 1, &t), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_topdown_compute(GPT2C_TD_NONE, intel, 0, &t), GPT2C_ERR_ARG);

    /* counters: opening never fails for lack of a PMU; the reason is one line */
    gpt2c_counters *c = NULL;
    CHECK_FAILS(gpt2c_counters_open(&c, 0, 1), GPT2C_ERR_ARG);
    CHECK_OK(gpt2c_counters_open(&c, 1, 1));
    if (c) {
        if (!gpt2c_counters_have(c, GPT2C_CTR_CYCLES)) {
            CHECK(gpt2c_counters_hw_reason(c)[0] != 0 && !strchr(gpt2c_counters_hw_reason(c), '\n'));
            printf("  hardware counters unavailable: %s\n", gpt2c_counters_hw_reason(c));
        }
        if (gpt2c_counters_have(c, GPT2C_CTR_TASK_CLOCK)) { /* software path: task-clock advances */
            size_t w = gpt2c_counters_snapshot_words(c);
            uint64_t *a = calloc(w, 8), *b = calloc(w, 8);
            double tot[GPT2C_CTR_COUNT], thr[1];
            gpt2c_counters_snapshot(c, a);
            volatile double x = 0;
            for (int i = 0; i < 2000000; i++) x += i;
            gpt2c_counters_snapshot(c, b);
            gpt2c_counters_delta(c, a, b, tot, thr);
            CHECK(tot[GPT2C_CTR_TASK_CLOCK] > 0 && thr[0] == tot[GPT2C_CTR_TASK_CLOCK]);
            CHECK(gpt2c_counters_min_running_ratio(c) > 0);
            free(a);
            free(b);
        } else {
            printf("  software counters unavailable: %s\n", gpt2c_counters_sw_reason(c));
        }
        gpt2c_counters_close(c);
    }
    CHECK_OK(gpt2c_counters_open(&c, 2, 0)); /* software only, two threads */
    if (c) {
        CHECK(!gpt2c_counters_have(c, GPT2C_CTR_CYCLES));
        gpt2c_counters_close(c);
    }
    /* The compute roof with bf16 matmuls: fp32 peak 100, bf16 peak 400; a group of
     * 1e9 FLOPs with 6e8 in bf16 GEMMs takes at best 6e8/400e9 + 4e8/100e9 s =
     * 5.5 ms -> roof 1e9 / 5.5e-3 = 181.818... GFLOP/s. */
    {
        static gpt2c_stat stats[M_COUNT];
        gpt2c_profile_session s;
        memset(&s, 0, sizeof s);
        s.stats = stats;
        s.have_peak = 1;
        s.peak.gflops = 100;
        s.bf16_roof = 400; /* session setup: gpt2c_peak_bf16_roof */
        s.peak.mem_gbs = 10;
        const int g = G_STEP;
        stats[g * F_COUNT + F_FLOPS] = (gpt2c_stat){1e9, 0, 1e9, 1e9, 1};
        stats[g * F_COUNT + F_BF16_FLOPS] = (gpt2c_stat){6e8, 0, 6e8, 6e8, 1};
        CHECK(NEAR(gpt2c_prof_compute_roof(&s, g), 100)); /* fp32 model: the fp32 roof */
        s.bf16_matmuls = 1;
        CHECK(fabs(gpt2c_prof_compute_roof(&s, g) - 1e9 / 5.5e6) < 1e-6);
        stats[g * F_COUNT + F_BF16_FLOPS].mean = 1e9; /* all in bf16: the bf16 roof */
        CHECK(NEAR(gpt2c_prof_compute_roof(&s, g), 400));
        s.bf16_roof = 0; /* bf16 on fp32 FMAs (no AVX512_BF16, or FMAs the faster): the fp32 roof */
        CHECK(NEAR(gpt2c_prof_compute_roof(&s, g), 100));
        /* bound: intensity 30 FLOP/B is under the bf16 ridge (400/10) but over fp32's (100/10) */
        s.bf16_roof = 400;
        stats[g * F_COUNT + F_AI] = (gpt2c_stat){30, 0, 30, 30, 1};
        CHECK(!strcmp(gpt2c_prof_bound(&s, g), "memory-bound"));
        s.bf16_matmuls = 0;
        CHECK(!strcmp(gpt2c_prof_bound(&s, g), "compute-bound"));
    }
    return tu_finish("test_profile_formulas");
}
