/* Report writers: terminal text, summary.json, ops.csv, report.html; and the
 * session's write() that puts every file into the output folder. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels/cpu/bf16_engine.h"
#include "profile/session.h"
#include "profile/html_page.h"
#include "profile/table.h"
#include "profile/topdown.h"
#include "model/model_internal.h"

#define MAX_FINDINGS 16

static void stat_cell(tbl *t, int r, int c, const gpt2c_profile_session *s, int g, int f, const char *fmt) {
    if (!S_have(s, g, f)) {
        gpt2c_tbl_set(t, r, c, "-");
        return;
    }
    gpt2c_tbl_set(t, r, c, fmt, S_mean(s, g, f));
}

static void ms_cells(tbl *t, int r, int c, const gpt2c_stat *st) {
    gpt2c_tbl_set(t, r, c, "%.3f", st->mean);
    gpt2c_tbl_set(t, r, c + 1, "%.3f", st->std);
    gpt2c_tbl_set(t, r, c + 2, "%.3f", st->min);
    gpt2c_tbl_set(t, r, c + 3, "%.3f", st->max);
}

static int has_hw(const gpt2c_profile_session *s) { return s->ctr && gpt2c_counters_have(s->ctr, GPT2C_CTR_CYCLES); }
static int has_sw(const gpt2c_profile_session *s) { return s->ctr && gpt2c_counters_have(s->ctr, GPT2C_CTR_TASK_CLOCK); }

/* Every table of the report; returns the count (caller frees each). */
static int build_tables(gpt2c_profile_session *s, tbl **T, const char **ids) {
    int nt = 0;
    double step = S_mean(s, G_STEP, F_MS);
    {
        static const char *const H[] = {"phase", "ms mean", "std", "min", "max", "% step", "GFLOP/s"};
        tbl *t = T[nt] = malloc(sizeof *t);
        ids[nt++] = "tbl-phases";
        gpt2c_tbl_init(t, "Phases (per step)", H, 7);
        for (int p = -1; p < GPT2C_PHASE_COUNT; p++) {
            int g = p < 0 ? G_STEP : G_PHASE0 + p;
            if (!S_have(s, g, F_MS)) continue;
            int r = gpt2c_tbl_row(t);
            gpt2c_tbl_set(t, r, 0, "%s", p < 0 ? "step (total)" : gpt2c_phase_name((gpt2c_phase)p));
            ms_cells(t, r, 1, S_stat(s, g, F_MS));
            gpt2c_tbl_set(t, r, 5, "%.1f", 100 * S_mean(s, g, F_MS) / step);
            stat_cell(t, r, 6, s, g, F_GFLOPS, "%.2f");
        }
    }
    {
        static const char *const H[] = {"layer type", "ms", "std", "% step", "GFLOP/s", "GB/s", "FLOP/B", "bound", "% peak"};
        tbl *t = T[nt] = malloc(sizeof *t);
        ids[nt++] = "tbl-layer-types";
        gpt2c_tbl_init(t, "Layer types (forward + backward + optimizer, per step)", H, 9);
        for (int l = 0; l < GPT2C_LT_COUNT; l++) {
            int g = G_LT0 + l;
            if (!S_have(s, g, F_MS)) continue;
            int r = gpt2c_tbl_row(t);
            gpt2c_tbl_set(t, r, 0, "%s", gpt2c_layer_type_name((gpt2c_layer_type)l));
            gpt2c_tbl_set(t, r, 1, "%.3f", S_mean(s, g, F_MS));
            gpt2c_tbl_set(t, r, 2, "%.3f", S_stat(s, g, F_MS)->std);
            stat_cell(t, r, 3, s, g, F_PCT_STEP, "%.1f");
            stat_cell(t, r, 4, s, g, F_GFLOPS, "%.2f");
            stat_cell(t, r, 5, s, g, F_GBS, "%.2f");
            stat_cell(t, r, 6, s, g, F_AI, "%.2f");
            gpt2c_tbl_set(t, r, 7, "%s", gpt2c_prof_bound(s, g)[0] ? gpt2c_prof_bound(s, g) : "-");
            if (s->have_peak && S_have(s, g, F_GFLOPS)) {
                int mem = !strcmp(gpt2c_prof_bound(s, g), "memory-bound");
                gpt2c_tbl_set(t, r, 8, "%.1f%% %s", 100 * (mem ? S_mean(s, g, F_GBS) / s->peak.mem_gbs : S_mean(s, g, F_GFLOPS) / gpt2c_prof_compute_roof(s, g)),
                        mem ? "bw" : "flops");
            } else gpt2c_tbl_set(t, r, 8, "-");
        }
    }
    {
        const char *H[12] = {"op", "self ms", "std", "% step", "calls", "avg us", "GFLOP/s", "GB/s", "FLOP/B", "bound"};
        /* a column for each probe that ran */
        const int probe = S_have(s, G_STEP, F_PROBE), mem = S_have(s, G_STEP, F_MEM_PROBE), mem_col = 10 + probe;
        if (probe) H[10] = "% probe";
        if (mem) H[mem_col] = "% mem probe";
        tbl *t = T[nt] = malloc(sizeof *t);
        ids[nt++] = "tbl-top-ops";
        gpt2c_tbl_init(t, "Top ops (per step, sorted by self time)", H, 10 + probe + mem);
        int order[GPT2C_OP_COUNT], k = 0;
        for (int o = 0; o < GPT2C_OP_COUNT; o++)
            if (S_have(s, G_OP0 + o, F_MS)) order[k++] = o;
        for (int i = 1; i < k; i++)
            for (int j = i; j > 0 && S_mean(s, G_OP0 + order[j], F_MS) > S_mean(s, G_OP0 + order[j - 1], F_MS); j--) {
                int x = order[j];
                order[j] = order[j - 1];
                order[j - 1] = x;
            }
        for (int i = 0; i < k; i++) {
            int g = G_OP0 + order[i], r = gpt2c_tbl_row(t);
            double calls = S_mean(s, g, F_CALLS);
            gpt2c_tbl_set(t, r, 0, "%s", gpt2c_op_name((gpt2c_op)order[i]));
            gpt2c_tbl_set(t, r, 1, "%.3f", S_mean(s, g, F_MS));
            gpt2c_tbl_set(t, r, 2, "%.3f", S_stat(s, g, F_MS)->std);
            stat_cell(t, r, 3, s, g, F_PCT_STEP, "%.1f");
            gpt2c_tbl_set(t, r, 4, "%.0f", calls);
            gpt2c_tbl_set(t, r, 5, "%.1f", calls > 0 ? 1e3 * S_mean(s, g, F_MS) / calls : 0);
            stat_cell(t, r, 6, s, g, F_GFLOPS, "%.2f");
            stat_cell(t, r, 7, s, g, F_GBS, "%.2f");
            stat_cell(t, r, 8, s, g, F_AI, "%.2f");
            gpt2c_tbl_set(t, r, 9, "%s", gpt2c_prof_bound(s, g)[0] ? gpt2c_prof_bound(s, g) : "-");
            if (probe) stat_cell(t, r, 10, s, g, F_PCT_PROBE, "%.1f");
            /* % mem probe for the memory-bound ops (by the roofline; without a peak, those that are not matmuls) */
            const int mem_op = s->have_peak ? !strcmp(gpt2c_prof_bound(s, g), "memory-bound") : !gpt2c_op_is_matmul((gpt2c_op)order[i]);
            if (mem && mem_op) stat_cell(t, r, mem_col, s, g, F_PCT_MEM_PROBE, "%.1f");
            else if (mem) gpt2c_tbl_set(t, r, mem_col, "-");
        }
    }
    gpt2c_matmul_split all;
    if (gpt2c_prof_matmul_split(s, &all)) {
        /* the cpu GEMMs' split of each matmul's thread time (gemm_split.h), then all of them together */
        static const char *const H[] = {"matmul", "ms", "% kernel", "% packing", "% rest", "kernel GFLOP/s", "kernel % roof"};
        tbl *t = T[nt] = malloc(sizeof *t);
        ids[nt++] = "tbl-matmul-split";
        gpt2c_tbl_init(t, "Inside the matmuls (cpu GEMMs; % of thread time = ms x threads; kernel GFLOP/s: while it runs)", H, 7);
        for (int o = 0; o < GPT2C_OP_COUNT; o++) {
            const int g = G_OP0 + o;
            if (!gpt2c_op_is_matmul((gpt2c_op)o) || !S_have(s, g, F_KERN_MS)) continue;
            const int r = gpt2c_tbl_row(t);
            gpt2c_tbl_set(t, r, 0, "%s", gpt2c_op_name((gpt2c_op)o));
            gpt2c_tbl_set(t, r, 1, "%.3f", S_mean(s, g, F_MS));
            stat_cell(t, r, 2, s, g, F_PCT_KERNEL, "%.1f");
            stat_cell(t, r, 3, s, g, F_PCT_PACK, "%.1f");
            if (S_have(s, g, F_PCT_KERNEL) && S_have(s, g, F_PCT_PACK))
                gpt2c_tbl_set(t, r, 4, "%.1f", 100 - S_mean(s, g, F_PCT_KERNEL) - S_mean(s, g, F_PCT_PACK));
            else gpt2c_tbl_set(t, r, 4, "-");
            stat_cell(t, r, 5, s, g, F_KERNEL_GFLOPS, "%.1f");
            if (s->have_peak && S_have(s, g, F_KERNEL_GFLOPS))
                gpt2c_tbl_set(t, r, 6, "%.1f", 100 * S_mean(s, g, F_KERNEL_GFLOPS) / gpt2c_prof_compute_roof(s, g));
            else gpt2c_tbl_set(t, r, 6, "-");
        }
        const int r = gpt2c_tbl_row(t);
        gpt2c_tbl_set(t, r, 0, "all matmuls");
        gpt2c_tbl_set(t, r, 1, "%.3f", all.ms);
        gpt2c_tbl_set(t, r, 2, "%.1f", all.pct_kernel);
        gpt2c_tbl_set(t, r, 3, "%.1f", all.pct_pack);
        gpt2c_tbl_set(t, r, 4, "%.1f", 100 - all.pct_kernel - all.pct_pack);
        gpt2c_tbl_set(t, r, 5, "%.1f", all.kernel_gflops);
        if (all.pct_roof > 0) gpt2c_tbl_set(t, r, 6, "%.1f", all.pct_roof);
        else gpt2c_tbl_set(t, r, 6, "-");
    }
    {
        static const char *const H[] = {"component (forward)", "ms mean", "std", "min", "max", "GFLOP/s"};
        tbl *t = T[nt] = malloc(sizeof *t);
        ids[nt++] = "tbl-components";
        gpt2c_tbl_init(t, "Components, as in the seed study (forward pass, per step)", H, 6);
        for (int c = 0; c < COMP_COUNT; c++) {
            int g = G_COMP0 + c;
            if (!S_have(s, g, F_MS)) continue;
            int r = gpt2c_tbl_row(t);
            gpt2c_tbl_set(t, r, 0, "%s", gpt2c_comp_name(c));
            ms_cells(t, r, 1, S_stat(s, g, F_MS));
            stat_cell(t, r, 5, s, g, F_GFLOPS, "%.2f");
        }
    }
    if (has_sw(s)) {
        static const char *const H[] = {"group", "cpu util %", "task-clock ms", "page faults", "ctx switches", "migrations",
                                        "CPI", "L1D MPKI", "LLC MPKI", "br MPKI"};
        tbl *t = T[nt] = malloc(sizeof *t);
        ids[nt++] = "tbl-counters";
        gpt2c_tbl_init(t, "Counters per layer type and phase (per step)", H, 10);
        for (int g = 0; g < G_OP0; g++) {
            if (!S_have(s, g, F_CTR0 + GPT2C_CTR_TASK_CLOCK)) continue;
            char nm[64];
            int r = gpt2c_tbl_row(t);
            gpt2c_tbl_set(t, r, 0, "%s", gpt2c_group_name(g, nm, sizeof nm));
            stat_cell(t, r, 1, s, g, F_CPU_UTIL, "%.1f");
            if (S_have(s, g, F_CTR0 + GPT2C_CTR_TASK_CLOCK))
                gpt2c_tbl_set(t, r, 2, "%.3f", 1e-6 * S_mean(s, g, F_CTR0 + GPT2C_CTR_TASK_CLOCK));
            stat_cell(t, r, 3, s, g, F_CTR0 + GPT2C_CTR_PAGE_FAULTS, "%.1f");
            stat_cell(t, r, 4, s, g, F_CTR0 + GPT2C_CTR_CTX_SWITCHES, "%.1f");
            stat_cell(t, r, 5, s, g, F_CTR0 + GPT2C_CTR_MIGRATIONS, "%.1f");
            stat_cell(t, r, 6, s, g, F_CPI, "%.3f");
            stat_cell(t, r, 7, s, g, F_L1D_MPKI, "%.2f");
            stat_cell(t, r, 8, s, g, F_LLC_MPKI, "%.2f");
            stat_cell(t, r, 9, s, g, F_BR_MPKI, "%.2f");
        }
    }
    if (s->ctr && gpt2c_counters_td_scheme(s->ctr) != GPT2C_TD_NONE) {
        static const char *const H[] = {"group", "frontend", "bad spec", "backend", "retiring", "memory", "core"};
        tbl *t = T[nt] = malloc(sizeof *t);
        ids[nt++] = "tbl-topdown";
        gpt2c_tbl_init(t, "Top-down (fractions of slots)", H, 7);
        for (int g = 0; g < G_OP0; g++) {
            if (!S_have(s, g, F_TD_RET)) continue;
            char nm[64];
            int r = gpt2c_tbl_row(t);
            gpt2c_tbl_set(t, r, 0, "%s", gpt2c_group_name(g, nm, sizeof nm));
            static const int F[] = {F_TD_FE, F_TD_BS, F_TD_BE, F_TD_RET, F_TD_MEM, F_TD_CORE};
            for (int i = 0; i < 6; i++) stat_cell(t, r, 1 + i, s, g, F[i], "%.3f");
        }
    }
    if (s->nscaling) {
        static const char *const H[] = {"backend", "threads", "step ms", "std", "min", "max", "speedup", "efficiency"};
        tbl *t = T[nt] = malloc(sizeof *t);
        ids[nt++] = "tbl-scaling";
        gpt2c_tbl_init(t, "Scaling (speedup vs the same backend's fewest threads)", H, 8);
        for (int i = 0; i < s->nscaling; i++) {
            const scaling_row *q = &s->scaling[i];
            int r = gpt2c_tbl_row(t);
            gpt2c_tbl_set(t, r, 0, "%s", q->backend);
            gpt2c_tbl_set(t, r, 1, "%d", q->threads);
            if (!q->step_ms.n) {
                gpt2c_tbl_set(t, r, 2, "unavailable: %s", q->reason);
                continue;
            }
            ms_cells(t, r, 2, &q->step_ms);
            double base = 0;
            int bt = 0;
            for (int j = 0; j < s->nscaling; j++)
                if (s->scaling[j].step_ms.n && !strcmp(s->scaling[j].backend, q->backend) && (!bt || s->scaling[j].threads < bt)) {
                    bt = s->scaling[j].threads;
                    base = s->scaling[j].step_ms.mean;
                }
            gpt2c_tbl_set(t, r, 6, "%.2f", base / q->step_ms.mean);
            gpt2c_tbl_set(t, r, 7, "%.0f%%", 100 * base / q->step_ms.mean / ((double)q->threads / bt));
        }
    }
    return nt;
}

static void counters_lines(gpt2c_profile_session *s, sbuf *b, int html) {
    const char *pre = html ? "<p class=\"note\">" : "", *post = html ? "</p>\n" : "\n";
    if (!s->ctr) {
        gpt2c_sb_printf(b, "%scounters: off%s", pre, post);
        return;
    }
    if (!has_hw(s)) {
        gpt2c_sb_printf(b, "%shardware counters unavailable: ", pre);
        if (html) gpt2c_sb_html(b, gpt2c_counters_hw_reason(s->ctr));
        else gpt2c_sb_puts(b, gpt2c_counters_hw_reason(s->ctr));
        gpt2c_sb_printf(b, "; reporting software counters%s", post);
    } else {
        gpt2c_sb_printf(b, "%shardware counters: on (%s), top-down: %s, min running/enabled %.3f%s", pre, gpt2c_counters_cpu(s->ctr),
                  gpt2c_td_scheme_name((gpt2c_td_scheme)gpt2c_counters_td_scheme(s->ctr)),
                  gpt2c_counters_min_running_ratio(s->ctr), post);
    }
    if (!has_sw(s)) gpt2c_sb_printf(b, "%ssoftware counters unavailable: %s%s", pre, gpt2c_counters_sw_reason(s->ctr), post);
}

static void header_lines(gpt2c_profile_session *s, sbuf *b, int html) {
    const char *pre = html ? "<p>" : "", *post = html ? "</p>\n" : "\n";
    gpt2c_stat st = gpt2c_profile_session_step_ms(s);
    gpt2c_sb_printf(b, "%smodel %s (L=%d), B=%d T=%d, backend %s, %d threads; %d trials, %zu steps%s", pre, s->model_name, s->L,
              s->B, s->T, s->backend, s->nthreads, s->ntrials, s->steps_total, post);
    gpt2c_sb_printf(b, "%sstep %.2f ms (std %.2f, min %.2f, max %.2f); %.0f tokens/s%s", pre, st.mean, st.std, st.min, st.max,
              st.mean > 0 ? 1e3 * s->B * s->T / st.mean : 0, post);
    if (s->have_peak && s->peak_device)
        gpt2c_sb_printf(b, "%sdevice peaks (nominal: SMs x max clock x per-SM rate; DRAM bus x clock): %.1f GFLOP/s for the "
                           "%s matmuls, memory %.1f GB/s, %s%s", pre, s->peak.gflops, s->peak.best_isa, s->peak.mem_gbs,
                        s->peak.cpu, post);
    else if (s->have_peak)
        gpt2c_sb_printf(b, "%smachine peaks: %.1f GFLOP/s fp32 (%s, %d threads), memory %.1f GB/s (read stream %.1f; %d threads) (%s)%s", pre,
                  s->peak.gflops, s->peak.best_isa, s->peak.threads, s->peak.mem_gbs, s->peak.read_gbs, s->peak.bw_threads,
                  s->peak.bw_remeasured ? "cached; bandwidths measured again now: the cached ones were below the machine's"
                  : s->peak.from_cache ? "cached" : "measured now", post);
    if (s->have_peak && s->bf16_matmuls && !s->peak_device)
        gpt2c_sb_printf(b, "%sbf16 matmuls: their roof is %.1f GFLOP/s (%s); %% of peak of a group mixes the two roofs by its FLOPs%s", pre,
                        gpt2c_prof_probe_roof(s), /* in a bf16 run: the bf16 roof, or the fp32 peak where unknown */
                        gpt2c_cpu_bf16_amx_hw() ? gpt2c_cpu_bf16_amx_note()
                        : gpt2c_cpu_bf16_engine_note()[0] ? gpt2c_cpu_bf16_engine_note() : "fp32 FMAs", post);
    else if (!s->have_peak)
        gpt2c_sb_printf(b, "%smachine peaks unavailable: %s%s", pre, s->peak_reason, post);
    if (s->slab_bytes) {
        char text[160];
        gpt2c_sb_printf(b, "%sslabs (weights, gradients, moments) in 2 MiB pages: %s%s", pre,
                        gpt2c_huge_pages_text(text, sizeof text, s->huge_bytes, s->slab_bytes, s->thp, NULL), post);
    }
    if (S_have(s, G_STEP, F_PROBE)) {
        const gpt2c_stat *p = S_stat(s, G_STEP, F_PROBE);
        const double share = gpt2c_prof_probe_peak_share(s);
        char of_peak[80] = "";
        const char *kind = s->bf16_matmuls ? "bf16" : "fp32";
        if (share > 0) snprintf(of_peak, sizeof of_peak, " = %.1f%% of the %s peak on as many threads", 100 * share, kind);
        gpt2c_sb_printf(b, "%sin-L2 GEMM probe beside each trial: %.1f GFLOP/s%s (min %.1f, max %.1f; the %s micro-kernel on a "
                           "product that stays in L2, %d thread%s); %% probe: a matmul's rate over it%s", pre, p->mean, of_peak,
                        p->min, p->max, s->bf16_matmuls ? "bf16 GEMM's" : "fp32", s->probe_threads,
                        s->probe_threads == 1 ? "" : "s", post);
    }
    if (S_have(s, G_STEP, F_MEM_PROBE)) {
        const gpt2c_stat *p = S_stat(s, G_STEP, F_MEM_PROBE);
        char of_roof[96] = "";
        if (s->have_peak && !s->peak_device && s->peak.mem_gbs > 0)
            snprintf(of_roof, sizeof of_roof, " = %.0f%% of the cached %.1f GB/s memory roof", 100 * p->mean / s->peak.mem_gbs, s->peak.mem_gbs);
        gpt2c_sb_printf(b, "%smemory probe beside each trial: %.1f GB/s%s (min %.1f, max %.1f; the faster of the update stream, %.1f, and "
                           "the read stream, %.1f, over %d MiB on all cores); %% mem probe: a memory-bound op's GB/s over the stream of its "
                           "pattern (read: the matmuls' weights, the attention's K/V, the grad norm; update: the rest)%s",
                        pre, p->mean, of_roof, p->min, p->max, S_have(s, G_STEP, F_MEM_UPDATE) ? S_mean(s, G_STEP, F_MEM_UPDATE) : 0.0,
                        S_have(s, G_STEP, F_MEM_READ) ? S_mean(s, G_STEP, F_MEM_READ) : 0.0, s->mem_probe_mib, post);
    }
    if (s->ovh_off > 0)
        gpt2c_sb_printf(b, "%sprofiling cost: off %.2f ms, timers %.2f ms (%+.2f%%), timers+counters %.2f ms (%+.2f%%) per step (medians)%s",
                  pre, s->ovh_off, s->ovh_on, 100 * (s->ovh_on / s->ovh_off - 1), s->ovh_ctr,
                  s->ovh_ctr > 0 ? 100 * (s->ovh_ctr / s->ovh_off - 1) : 0.0, post);
    if (s->ctr && s->steps_total && st.mean > 0) {
        double ms = (double)s->ctr_read_ns * 1e-6 / (double)s->steps_total;
        gpt2c_sb_printf(b, "%scounter reads at scope edges: %.3f ms per step = %.2f%% of the step (timed inside the hooks)%s", pre,
                  ms, 100 * ms / st.mean, post);
    }
    counters_lines(s, b, html);
}

void gpt2c_prof_render_text(gpt2c_profile_session *s, sbuf *b) {
    header_lines(s, b, 0);
    tbl *T[16];
    const char *ids[16];
    int nt = build_tables(s, T, ids);
    for (int i = 0; i < nt; i++) {
        if (T[i]) gpt2c_tbl_text(T[i], b);
        free(T[i]);
    }
    char f[MAX_FINDINGS][512];
    int nf = gpt2c_prof_findings(s, f, MAX_FINDINGS);
    gpt2c_sb_puts(b, "\nFindings\n");
    for (int i = 0; i < nf; i++) gpt2c_sb_printf(b, "  - %s\n", f[i]);
}

static void json_stat(sbuf *b, const gpt2c_stat *st) {
    gpt2c_sb_puts(b, "{");
    gpt2c_sb_json_mean_std(b, st->mean, st->std);
    gpt2c_sb_puts(b, ",\"min\":");
    gpt2c_sb_json_num(b, st->min);
    gpt2c_sb_puts(b, ",\"max\":");
    gpt2c_sb_json_num(b, st->max);
    gpt2c_sb_printf(b, ",\"n\":%d}", st->n);
}

static void json_group(gpt2c_profile_session *s, sbuf *b, int g) {
    gpt2c_sb_puts(b, "{");
    int first = 1;
    for (int f = 0; f < F_COUNT; f++) {
        if (!S_have(s, g, f)) continue;
        gpt2c_sb_printf(b, "%s\"%s\":", first ? "" : ",", gpt2c_field_name(f));
        json_stat(b, S_stat(s, g, f));
        first = 0;
    }
    const char *bound = gpt2c_prof_bound(s, g);
    if (bound[0]) gpt2c_sb_printf(b, "%s\"bound\":\"%s\"", first ? "" : ",", bound);
    gpt2c_sb_puts(b, "}");
}

void gpt2c_prof_render_summary_json(gpt2c_profile_session *s, sbuf *b) {
    gpt2c_sb_printf(b, "{\n\"tool\":\"gpt2c profile\",\"version\":\"%s\",\n\"command_line\":\"", GPT2C_VERSION);
    gpt2c_sb_json_str(b, s->command_line);
    gpt2c_sb_puts(b, "\",\n\"machine\":{\"cpu\":\"");
    gpt2c_sb_json_str(b, s->have_peak ? s->peak.cpu : (s->ctr ? gpt2c_counters_cpu(s->ctr) : "unknown"));
    gpt2c_sb_printf(b, "\",\"threads\":%d,\"peak\":", s->nthreads);
    if (s->have_peak) {
        gpt2c_sb_printf(b, "{\"fp32_gflops\":%.3f,\"isa\":\"%s\",\"read_gb_per_s\":%.3f,\"mem_gb_per_s\":%.3f,\"ridge_flops_per_byte\":%.4f,\"from_cache\":%s,\"source\":\"%s\",\"per_isa\":{",
                  s->peak.gflops, s->peak.best_isa, s->peak.read_gbs, s->peak.mem_gbs, s->peak.gflops / s->peak.mem_gbs,
                  s->peak.from_cache ? "true" : "false", s->peak_device ? "gpu nominal" : "cpu measured");
        for (int i = 0; i < GPT2C_ISA_COUNT; i++) {
            gpt2c_sb_printf(b, "%s\"%s\":", i ? "," : "", gpt2c_isa_name((gpt2c_isa)i));
            if (s->peak.fma_gflops[i] > 0) gpt2c_sb_printf(b, "%.3f", s->peak.fma_gflops[i]);
            else gpt2c_sb_puts(b, "null");
        }
        gpt2c_sb_puts(b, "}}");
    } else {
        gpt2c_sb_puts(b, "null,\"peak_unavailable\":\"");
        gpt2c_sb_json_str(b, s->peak_reason);
        gpt2c_sb_puts(b, "\"");
    }
    gpt2c_sb_puts(b, "},\n\"model\":{\"name\":\"");
    gpt2c_sb_json_str(b, s->model_name);
    gpt2c_sb_printf(b, "\",\"layers\":%d,\"batch\":%d,\"seq\":%d,\"params\":%zu,\"backend\":\"", s->L, s->B, s->T, s->m->num_params);
    gpt2c_sb_json_str(b, s->backend);
    gpt2c_sb_printf(b, "\",\"slab_bytes\":%zu,\"huge_page_bytes\":", s->slab_bytes);
    if (s->huge_bytes >= 0) gpt2c_sb_printf(b, "%lld", s->huge_bytes);
    else gpt2c_sb_puts(b, "null");
    gpt2c_sb_puts(b, ",\"transparent_huge_pages\":");
    if (s->thp[0]) gpt2c_sb_printf(b, "\"%s\"", s->thp);
    else gpt2c_sb_puts(b, "null");
    gpt2c_sb_printf(b, "},\n\"trials\":%d,\"steps\":%zu,\n\"counters\":{", s->ntrials, s->steps_total);
    if (!s->ctr) gpt2c_sb_puts(b, "\"enabled\":false");
    else {
        gpt2c_sb_puts(b, "\"enabled\":true,\"hardware\":");
        if (has_hw(s)) gpt2c_sb_puts(b, "\"available\"");
        else {
            gpt2c_sb_puts(b, "\"unavailable: ");
            gpt2c_sb_json_str(b, gpt2c_counters_hw_reason(s->ctr));
            gpt2c_sb_puts(b, "\"");
        }
        gpt2c_sb_printf(b, ",\"software\":\"%s\",\"topdown_scheme\":\"%s\",\"min_running_ratio\":%.4f,\"counted\":[",
                  has_sw(s) ? "available" : "unavailable", gpt2c_td_scheme_name((gpt2c_td_scheme)gpt2c_counters_td_scheme(s->ctr)),
                  gpt2c_counters_min_running_ratio(s->ctr));
        int first = 1;
        for (int c = 0; c < GPT2C_CTR_COUNT; c++)
            if (gpt2c_counters_have(s->ctr, (gpt2c_ctr)c)) {
                gpt2c_sb_printf(b, "%s\"%s\"", first ? "" : ",", gpt2c_ctr_name((gpt2c_ctr)c));
                first = 0;
            }
        gpt2c_sb_puts(b, "]");
    }
    gpt2c_sb_puts(b, "},\n\"step\":");
    json_group(s, b, G_STEP);
    const struct {
        const char *key;
        int g0, n;
    } sec[] = {{"phases", G_PHASE0, GPT2C_PHASE_COUNT},
               {"layer_types", G_LT0, GPT2C_LT_COUNT},
               {"ops", G_OP0, GPT2C_OP_COUNT},
               {"components", G_COMP0, COMP_COUNT}};
    for (size_t k = 0; k < sizeof sec / sizeof sec[0]; k++) {
        gpt2c_sb_printf(b, ",\n\"%s\":{", sec[k].key);
        int first = 1;
        for (int i = 0; i < sec[k].n; i++) {
            int g = sec[k].g0 + i;
            if (!S_have(s, g, F_MS)) continue;
            const char *nm = k == 0 ? gpt2c_phase_name((gpt2c_phase)i)
                             : k == 1 ? gpt2c_layer_type_name((gpt2c_layer_type)i)
                             : k == 2 ? gpt2c_op_name((gpt2c_op)i)
                                      : gpt2c_comp_name(i);
            gpt2c_sb_printf(b, "%s\n  \"%s\":", first ? "" : ",", nm);
            json_group(s, b, g);
            first = 0;
        }
        gpt2c_sb_puts(b, "}");
    }
    gpt2c_sb_puts(b, ",\n\"scaling\":[");
    for (int i = 0; i < s->nscaling; i++) {
        const scaling_row *r = &s->scaling[i];
        gpt2c_sb_printf(b, "%s\n  {\"backend\":\"%s\",\"threads\":%d,", i ? "," : "", r->backend, r->threads);
        if (r->step_ms.n) {
            gpt2c_sb_puts(b, "\"step_ms\":");
            json_stat(b, &r->step_ms);
        } else {
            gpt2c_sb_puts(b, "\"unavailable\":\"");
            gpt2c_sb_json_str(b, r->reason);
            gpt2c_sb_puts(b, "\"");
        }
        gpt2c_sb_puts(b, "}");
    }
    gpt2c_sb_puts(b, "],\n\"overhead\":");
    if (s->ovh_off > 0)
        gpt2c_sb_printf(b, "{\"off_ms\":%.4f,\"timers_ms\":%.4f,\"timers_pct\":%.3f,\"timers_counters_ms\":%.4f,\"timers_counters_pct\":%.3f}",
                  s->ovh_off, s->ovh_on, 100 * (s->ovh_on / s->ovh_off - 1), s->ovh_ctr,
                  s->ovh_ctr > 0 ? 100 * (s->ovh_ctr / s->ovh_off - 1) : 0.0);
    else gpt2c_sb_puts(b, "null");
    gpt2c_stat stp = gpt2c_profile_session_step_ms(s);
    if (s->ctr && s->steps_total && stp.mean > 0) {
        double ms = (double)s->ctr_read_ns * 1e-6 / (double)s->steps_total;
        gpt2c_sb_printf(b, ",\n\"counter_reads\":{\"ms_per_step\":%.4f,\"pct_of_step\":%.3f}", ms, 100 * ms / stp.mean);
    }
    char f[MAX_FINDINGS][512];
    int nf = gpt2c_prof_findings(s, f, MAX_FINDINGS);
    gpt2c_sb_puts(b, ",\n\"findings\":[");
    for (int i = 0; i < nf; i++) {
        gpt2c_sb_printf(b, "%s\n  \"", i ? "," : "");
        gpt2c_sb_json_str(b, f[i]);
        gpt2c_sb_puts(b, "\"");
    }
    gpt2c_sb_printf(b, "],\n\"trace\":{\"op_events\":%zu,\"dropped\":%zu,\"truncated\":%s}\n}\n", s->trace_events, s->prof.dropped,
              s->trace_full ? "true" : "false");
}

void gpt2c_prof_render_ops_csv(gpt2c_profile_session *s, sbuf *b) {
    gpt2c_sb_puts(b, "op,layer_type,calls_per_step,ms_mean,ms_std,ms_min,ms_max,pct_of_step,avg_us,gflops_per_s,gb_per_s,flops_per_byte,bound,cpu_util_pct,pct_of_probe,pct_of_mem_probe\n");
    for (int o = 0; o < GPT2C_OP_COUNT; o++) {
        int g = G_OP0 + o;
        if (!S_have(s, g, F_MS)) continue;
        const gpt2c_stat *ms = S_stat(s, g, F_MS);
        double calls = S_mean(s, g, F_CALLS);
        gpt2c_sb_printf(b, "%s,%s,%.0f,%.4f,%.4f,%.4f,%.4f,", gpt2c_op_name((gpt2c_op)o),
                  gpt2c_layer_type_name(gpt2c_op_layer_type((gpt2c_op)o)), calls, ms->mean, ms->std, ms->min, ms->max);
        static const int F[] = {F_PCT_STEP, -1, F_GFLOPS, F_GBS, F_AI};
        for (int i = 0; i < 5; i++) {
            if (F[i] < 0) gpt2c_sb_printf(b, "%.2f,", calls > 0 ? 1e3 * ms->mean / calls : 0);
            else if (S_have(s, g, F[i])) gpt2c_sb_printf(b, "%.4f,", S_mean(s, g, F[i]));
            else gpt2c_sb_puts(b, ",");
        }
        gpt2c_sb_printf(b, "%s,", gpt2c_prof_bound(s, g));
        if (S_have(s, g, F_CPU_UTIL)) gpt2c_sb_printf(b, "%.2f", S_mean(s, g, F_CPU_UTIL));
        gpt2c_sb_puts(b, ",");
        if (S_have(s, g, F_PCT_PROBE)) gpt2c_sb_printf(b, "%.2f", S_mean(s, g, F_PCT_PROBE));
        gpt2c_sb_puts(b, ",");
        if (S_have(s, g, F_PCT_MEM_PROBE)) gpt2c_sb_printf(b, "%.2f", S_mean(s, g, F_PCT_MEM_PROBE));
        gpt2c_sb_puts(b, "\n");
    }
}

void gpt2c_prof_render_html(gpt2c_profile_session *s, sbuf *b) {
    char title[256];
    snprintf(title, sizeof title, "gpt2c profile: %s", s->model_name);
    gpt2c_html_page_begin(b, title, "gpt2c profile");
    gpt2c_sb_puts(b, "<p><code>");
    gpt2c_sb_html(b, s->command_line);
    gpt2c_sb_puts(b, "</code></p>\n");
    header_lines(s, b, 1);
    char f[MAX_FINDINGS][512];
    int nf = gpt2c_prof_findings(s, f, MAX_FINDINGS);
    gpt2c_sb_puts(b, "<h2>Findings</h2>\n<ul id=\"findings\">\n");
    for (int i = 0; i < nf; i++) {
        gpt2c_sb_puts(b, "<li>");
        gpt2c_sb_html(b, f[i]);
        gpt2c_sb_puts(b, "</li>\n");
    }
    gpt2c_sb_puts(b, "</ul>\n<h2>Charts</h2>\n");
    gpt2c_prof_svg_phases(s, b);
    gpt2c_prof_svg_top_ops(s, b);
    gpt2c_prof_svg_layer_types(s, b);
    gpt2c_prof_svg_attn_ffn(s, b);
    gpt2c_prof_svg_roofline(s, b);
    gpt2c_prof_svg_scaling(s, b);
    tbl *T[16];
    const char *ids[16];
    int nt = build_tables(s, T, ids);
    for (int i = 0; i < nt; i++) {
        if (T[i]) gpt2c_tbl_html(T[i], b, ids[i]);
        free(T[i]);
    }
    gpt2c_sb_puts(b, "<p>Files: trace.json (open in ui.perfetto.dev or chrome://tracing), summary.json, ops.csv, *.svg.</p>\n");
    gpt2c_html_page_end(b);
}

gpt2c_status gpt2c_profile_session_text(gpt2c_profile_session *s, char **out) {
    *out = NULL;
    if (!s->ended) return gpt2c_fail(GPT2C_ERR_ARG, "profile: session_text before session_end");
    sbuf b = {0};
    gpt2c_prof_render_text(s, &b);
    if (b.failed) {
        gpt2c_sb_free(&b);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "profile: out of memory rendering the report");
    }
    *out = b.p;
    return GPT2C_OK;
}

typedef void (*render_fn)(gpt2c_profile_session *, sbuf *);

static gpt2c_status render_to(gpt2c_profile_session *s, const char *dir, const char *name, render_fn fn) {
    sbuf b = {0};
    fn(s, &b);
    gpt2c_status st = gpt2c_sb_write_file(&b, dir, name);
    gpt2c_sb_free(&b);
    return st;
}

static void render_trace(gpt2c_profile_session *s, sbuf *b) { gpt2c_prof_write_trace(s, b); }

gpt2c_status gpt2c_profile_session_write(gpt2c_profile_session *s, const char *dir) {
    if (!s->ended) return gpt2c_fail(GPT2C_ERR_ARG, "profile: session_write before session_end");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return gpt2c_fail(GPT2C_ERR_IO, "%s: cannot create the output folder: %s", dir, strerror(errno));
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return gpt2c_fail(GPT2C_ERR_IO, "%s: not a folder", dir);
    static const struct {
        const char *name;
        render_fn fn;
    } F[] = {{"trace.json", render_trace},
             {"summary.json", gpt2c_prof_render_summary_json},
             {"ops.csv", gpt2c_prof_render_ops_csv},
             {"report.txt", gpt2c_prof_render_text},
             {"report.html", gpt2c_prof_render_html},
             {"top_ops.svg", gpt2c_prof_svg_top_ops},
             {"attention_vs_ffn.svg", gpt2c_prof_svg_attn_ffn},
             {"phases.svg", gpt2c_prof_svg_phases},
             {"layer_types.svg", gpt2c_prof_svg_layer_types},
             {"roofline.svg", gpt2c_prof_svg_roofline},
             {"scaling.svg", gpt2c_prof_svg_scaling}};
    for (size_t i = 0; i < sizeof F / sizeof F[0]; i++) GPT2C_TRY(render_to(s, dir, F[i].name, F[i].fn));
    return GPT2C_OK;
}
