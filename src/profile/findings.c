/* Findings: the bottlenecks the numbers show, each with the lever that
 * addresses it.  Only measured figures are quoted. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "profile/session.h"

/* the bf16 matmuls' roof (their engine's peak), the fp32 peak where unknown */
static double bf16_roof(const gpt2c_profile_session *s) { return s->bf16_roof > 0 ? s->bf16_roof : s->peak.gflops; }

double gpt2c_prof_compute_roof(const gpt2c_profile_session *s, int g) {
    const double pf = s->peak.gflops, pb = bf16_roof(s);
    if (!s->bf16_matmuls || !S_have(s, g, F_FLOPS)) return pf;
    const double f = S_mean(s, g, F_FLOPS), fb = S_have(s, g, F_BF16_FLOPS) ? S_mean(s, g, F_BF16_FLOPS) : 0;
    return f > 0 ? f / (fb / pb + (f - fb) / pf) : pf;
}

const char *gpt2c_prof_bound(const gpt2c_profile_session *s, int g) {
    if (!s->have_peak || !S_have(s, g, F_AI)) return "";
    return S_mean(s, g, F_AI) < gpt2c_prof_compute_roof(s, g) / s->peak.mem_gbs ? "memory-bound" : "compute-bound";
}

#define GPT2C_PROF_PROBE_SLOW 0.75 /* the probe below this share of its peak (FMA, or the bf16 roof): a slow machine */
#define GPT2C_PROF_PROBE_GOOD 85.0 /* matmuls at this % of the probe or more: the hierarchy costs little */
#define GPT2C_PROF_SMALL_GEMM_MFLOP 20.0 /* below this per call (the probe's product: 12.6), overheads dominate */

/* a finding line (cut at 512 bytes); snprintf's length is kept, as a cut
 * line is fine, so GCC's -Wformat-truncation does not flag the long ones */
#define ADD(...)                                                                   \
    do {                                                                           \
        if (n < max && snprintf(lines[n], sizeof lines[0], __VA_ARGS__) > 0) n++;  \
    } while (0)

static double pct(const gpt2c_profile_session *s, int g) {
    return S_have(s, g, F_MS) && S_mean(s, G_STEP, F_MS) > 0 ? 100 * S_mean(s, g, F_MS) / S_mean(s, G_STEP, F_MS) : 0;
}

double gpt2c_prof_probe_roof(const gpt2c_profile_session *s) {
    return s->bf16_matmuls ? bf16_roof(s) : s->peak.gflops;
}

double gpt2c_prof_probe_peak_share(const gpt2c_profile_session *s) {
    if (!S_have(s, G_STEP, F_PROBE) || !s->have_peak || s->peak_device || s->peak.threads < 1 || s->probe_threads < 1) return 0;
    const int th = s->probe_threads < s->peak.threads ? s->probe_threads : s->peak.threads;
    return S_mean(s, G_STEP, F_PROBE) / (gpt2c_prof_probe_roof(s) * th / s->peak.threads);
}

/* The matmuls against the in-L2 GEMM probe taken beside each trial: the share
 * the memory hierarchy leaves them (their FLOP-weighted %probe), and whether
 * the machine itself ran cache-using code slowly (the probe far below the FMA
 * peak, which a register-only burst does not show). */
static void gemm_vs_probe(const gpt2c_profile_session *s, char lines[][512], int max, int *np) {
    int n = *np;
    if (!S_have(s, G_STEP, F_PROBE)) return;
    double flops = 0, calls = 0, lo = INFINITY, hi = 0;
    for (int o = 0; o < GPT2C_OP_COUNT; o++) {
        const int g = G_OP0 + o;
        if (!S_have(s, g, F_PCT_PROBE)) continue;
        flops += S_mean(s, g, F_FLOPS), calls += S_mean(s, g, F_CALLS);
        lo = fmin(lo, S_mean(s, g, F_PCT_PROBE)), hi = fmax(hi, S_mean(s, g, F_PCT_PROBE));
    }
    if (!S_have(s, G_STEP, F_PCT_PROBE) || !(calls > 0)) return;
    /* all matmuls together, trial by trial as each op (session.c), so it lies among theirs */
    const double pct = S_mean(s, G_STEP, F_PCT_PROBE), mflop_call = flops / calls * 1e-6;
    const double share = gpt2c_prof_probe_peak_share(s);
    const int slow_machine = share > 0 && share < GPT2C_PROF_PROBE_SLOW;
    char at_peak[96] = "", why[512] = "";
    if (share > 0) snprintf(at_peak, sizeof at_peak, "; probe at %.0f%% of the %s peak", 100 * share, s->bf16_matmuls ? "bf16" : "fp32");
    if (slow_machine)
        snprintf(why, sizeof why, "cache-using code ran slowly here (a neighbour on the core, or a lower clock) -> compare GEMMs by %% probe, "
                                  "and only runs whose probes agree%s", pct < GPT2C_PROF_PROBE_GOOD ? "; " : "");
    const size_t k = strlen(why);
    const char *per_shape = s->bf16_matmuls ? "gpt2c bench gemm --precision bf16 gives it per shape (%probe)"
                                            : "bench/gemm_hierarchy.sh splits it per shape";
    if (pct >= GPT2C_PROF_PROBE_GOOD) {
        /* which is the larger part of the gap to peak: the hierarchy (matmuls under the probe) or the
         * micro-kernel (the probe under peak)?  With the probe near peak it is the hierarchy, however
         * close the matmuls are to the probe (a probe at 99% and matmuls at 87% of it was told "the
         * micro-kernel itself") */
        if (!slow_machine && share > 0 && 1 - share < 1 - pct / 100)
            snprintf(why, sizeof why, "the micro-kernel runs near peak in cache, and blocking, packing and cache traffic cost the matmuls %.0f%% -> %s",
                     100 - pct, per_shape);
        else if (!slow_machine)
            snprintf(why, sizeof why, "near the micro-kernel's in-cache rate -> what is left to peak is the micro-kernel itself");
    } else if (mflop_call < GPT2C_PROF_SMALL_GEMM_MFLOP)
        snprintf(why + k, sizeof why - k, "small GEMMs (%.1f MFLOP a call): call overhead, packing and edge tiles -> more tokens (B x T) per step",
                 mflop_call);
    else
        snprintf(why + k, sizeof why - k, "blocking, packing and L2 traffic cost them %.0f%% -> %s", 100 - pct, per_shape);
    ADD("matmuls run at %.1f%% of the in-L2 GEMM probe beside each trial (%.1f-%.1f%% per op)%s: %s", pct, lo, hi, at_peak, why);
    *np = n;
}

/* The memory probe beside each trial against the cached memory roof: a VM's
 * memory bandwidth moves with its host (55 and 98 GB/s minutes apart on the
 * Zen 4 VM), and the cached roof is its best moment, so a memory-bound op's
 * "% of peak" can read half of what it was getting.  Said when the probe ran
 * under GPT2C_PROF_MEM_SLOW of the roof. */
#define GPT2C_PROF_MEM_SLOW 0.75
static void mem_vs_probe(const gpt2c_profile_session *s, char lines[][512], int max, int *np) {
    int n = *np;
    if (!S_have(s, G_STEP, F_MEM_PROBE) || !s->have_peak || s->peak_device || !(s->peak.mem_gbs > 0)) return;
    const gpt2c_stat *p = S_stat(s, G_STEP, F_MEM_PROBE);
    const double share = p->mean / s->peak.mem_gbs;
    if (share >= GPT2C_PROF_MEM_SLOW) return;
    ADD("the memory gave %.1f GB/s beside the trials (%.1f-%.1f), %.0f%% of its cached %.1f GB/s roof: this host's memory was in a slow "
        "phase, so a memory-bound op's %% of peak understates it -> compare those by %% mem probe, or profile again and compare runs "
        "whose memory probes agree",
        p->mean, p->min, p->max, 100 * share, s->peak.mem_gbs);
    *np = n;
}

int gpt2c_prof_matmul_split(const gpt2c_profile_session *s, gpt2c_matmul_split *out) {
    double ms = 0, kern = 0, pack = 0, flops = 0, roof_s = 0; /* roof_s: the FLOPs' time at their roofs */
    for (int o = 0; o < GPT2C_OP_COUNT; o++) {
        const int g = G_OP0 + o;
        if (!gpt2c_op_is_matmul((gpt2c_op)o) || !S_have(s, g, F_KERN_MS) || !S_have(s, g, F_MS)) continue;
        ms += S_mean(s, g, F_MS), kern += S_mean(s, g, F_KERN_MS);
        pack += S_have(s, g, F_PACK_MS) ? S_mean(s, g, F_PACK_MS) : 0;
        const double f = S_have(s, g, F_FLOPS) ? S_mean(s, g, F_FLOPS) : 0;
        flops += f;
        if (s->have_peak) roof_s += f / (gpt2c_prof_compute_roof(s, g) * 1e9);
    }
    if (!(ms > 0) || !(kern > 0) || s->nthreads < 1) return 0;
    out->ms = ms;
    out->pct_kernel = 100 * kern / (ms * s->nthreads);
    out->pct_pack = 100 * pack / (ms * s->nthreads);
    out->kernel_gflops = flops / (kern / s->nthreads * 1e6);
    out->pct_roof = roof_s > 0 ? 100 * roof_s / (kern / s->nthreads * 1e-3) : 0;
    return 1;
}

/* Inside the matmuls: how much of their thread time the micro-kernel runs and
 * at what rate, against packing and the rest (waiting at barriers, edges).
 * A kernel at its roof while it runs puts the gap on what surrounds it. */
static void matmul_inside(const gpt2c_profile_session *s, char lines[][512], int max, int *np) {
    int n = *np;
    gpt2c_matmul_split m;
    if (!gpt2c_prof_matmul_split(s, &m)) return;
    const double rest = 100 - m.pct_kernel - m.pct_pack > 0 ? 100 - m.pct_kernel - m.pct_pack : 0;
    char roof[96] = "", why[256];
    if (m.pct_roof > 0) snprintf(roof, sizeof roof, " = %.1f%% of their roof", m.pct_roof);
    /* the largest of the three losses, as shares of the thread time: the kernel under its roof, packing, the rest */
    const double lost_kernel = m.pct_roof > 0 ? m.pct_kernel * (100 - m.pct_roof) / 100 : 0;
    if (lost_kernel >= m.pct_pack && lost_kernel >= rest)
        snprintf(why, sizeof why, "the kernel's own rate (%.1f%% of the thread time lost under its roof: C tiles loaded and stored per K "
                                  "block, panels read from L2) -> longer K blocks (gpt2c bench gemm --autotune)", lost_kernel);
    else if (m.pct_pack >= rest)
        snprintf(why, sizeof why, "packing (weight blocks per unit and K block, but the bf16 dinp's kept panels; activations converted) -> "
                                  "fewer or shared packings");
    else
        snprintf(why, sizeof why, "the rest: threads waiting at the GEMMs' barriers -> even work per thread");
    ADD("inside the matmuls (%.1f ms; thread time, cpu GEMMs): %.1f%% in the micro-kernel, at %.0f GFLOP/s while it runs%s; %.1f%% "
        "packing operands; %.1f%% the rest (waiting at barriers, edge tiles, scheduling) -> the largest loss is %s",
        m.ms, m.pct_kernel, m.kernel_gflops, roof, m.pct_pack, rest, why);
    *np = n;
}

/* bf16 precision shortens the matmuls only (their products on bf16
 * operands); the optimizer (fp32 master weights and moments, plus the bf16
 * copies), the attention's softmax, the norms and the pointwise ops run as
 * in fp32.  So the step has a floor whatever the matmuls do: the rest of the
 * step plus the matmuls' FLOPs at the bf16 roof.  Says how far that is, so a
 * bf16/fp32 ratio above 0.5 reads as what it is. */
static void bf16_bound(const gpt2c_profile_session *s, char lines[][512], int max, int *np) {
    int n = *np;
    const double step = S_mean(s, G_STEP, F_MS);
    if (!s->bf16_matmuls || !s->have_peak || s->peak_device || !(step > 0)) return;
    double mm_ms = 0, mm_flops = 0;
    for (int o = 0; o < GPT2C_OP_COUNT; o++)
        if (gpt2c_op_is_matmul((gpt2c_op)o) && S_have(s, G_OP0 + o, F_MS) && S_have(s, G_OP0 + o, F_FLOPS))
            mm_ms += S_mean(s, G_OP0 + o, F_MS), mm_flops += S_mean(s, G_OP0 + o, F_FLOPS);
    const double roof = bf16_roof(s), rest = step - mm_ms;
    if (!(mm_ms > 0) || !(mm_flops > 0) || !(roof > 0) || rest < 0) return;
    const int opt = G_PHASE0 + GPT2C_PHASE_OPTIMIZER, core = G_OP0 + GPT2C_OP_ATTENTION;
    const double opt_ms = S_have(s, opt, F_MS) ? S_mean(s, opt, F_MS) : 0, att_ms = S_have(s, core, F_MS) ? S_mean(s, core, F_MS) : 0;
    const double floor_ms = rest + mm_flops / (roof * 1e6);
    ADD("bf16 bound: the matmuls are %.1f%% of the step (%.1f ms at %.0f GFLOP/s, %.0f%% of the bf16 roof); the other %.1f ms "
        "(optimizer %.1f, attention core %.1f, the rest %.1f) gain little or nothing from bf16 -> with every matmul at the "
        "roof this step would still take %.1f ms (%.2fx of now): below that, only those ops can give",
        100 * mm_ms / step, mm_ms, mm_flops / (mm_ms * 1e6), 100 * mm_flops / (mm_ms * 1e6) / roof, rest, opt_ms, att_ms,
        rest - opt_ms - att_ms > 0 ? rest - opt_ms - att_ms : 0, floor_ms, floor_ms / step);
    *np = n;
}

int gpt2c_prof_findings(gpt2c_profile_session *s, char lines[][512], int max) {
    int n = 0;
    double step = S_mean(s, G_STEP, F_MS);
    /* biggest op */
    int top = -1;
    for (int o = 0; o < GPT2C_OP_COUNT; o++)
        if (S_have(s, G_OP0 + o, F_MS) && (top < 0 || S_mean(s, G_OP0 + o, F_MS) > S_mean(s, G_OP0 + top, F_MS))) top = o;
    if (top >= 0) {
        int g = G_OP0 + top;
        const int mem = strcmp(gpt2c_prof_bound(s, g), "memory-bound") == 0;
        if (s->have_peak && mem && S_have(s, g, F_GBS))
            ADD("%s is the top op: %.1f%% of the step at %.1f GB/s = %.1f%% of this machine's %.1f GB/s memory peak (memory-bound) -> fewer bytes: fuse it with its neighbours or store its operands in bf16",
                gpt2c_op_name((gpt2c_op)top), pct(s, g), S_mean(s, g, F_GBS), 100 * S_mean(s, g, F_GBS) / s->peak.mem_gbs,
                s->peak.mem_gbs);
        else if (s->have_peak && S_have(s, g, F_GFLOPS))
            ADD("%s is the top op: %.1f%% of the step at %.1f GFLOP/s = %.1f%% of this machine's %.0f GFLOP/s peak (%s) -> %s",
                gpt2c_op_name((gpt2c_op)top), pct(s, g), S_mean(s, g, F_GFLOPS), 100 * S_mean(s, g, F_GFLOPS) / gpt2c_prof_compute_roof(s, g),
                gpt2c_prof_compute_roof(s, g), gpt2c_prof_bound(s, g),
                !gpt2c_op_is_matmul((gpt2c_op)top) ? "a blocked, vectorised kernel for it"
                : S_have(s, g, F_PCT_PROBE)       ? "the in-L2 GEMM probe splits the gap (next line)"
                                                  : "a blocked, register-tiled GEMM kernel or the BLAS backend");
        else
            ADD("%s is the top op: %.1f%% of the step", gpt2c_op_name((gpt2c_op)top), pct(s, g));
    }
    gemm_vs_probe(s, lines, max, &n);
    matmul_inside(s, lines, max, &n);
    bf16_bound(s, lines, max, &n);
    mem_vs_probe(s, lines, max, &n);
    int opt = G_PHASE0 + GPT2C_PHASE_OPTIMIZER;
    if (pct(s, opt) > 5) {
        /* its bandwidth against the memory roof, and against what the memory gave beside the trials: at either,
         * only fewer bytes (or overlap with compute) help */
        char bw[128] = "", now[192] = "";
        if (s->have_peak && S_have(s, opt, F_GBS) && s->peak.mem_gbs > 0)
            snprintf(bw, sizeof bw, " at %.1f GB/s = %.0f%% of the %.1f GB/s memory roof", S_mean(s, opt, F_GBS),
                     100 * S_mean(s, opt, F_GBS) / s->peak.mem_gbs, s->peak.mem_gbs);
        else if (S_have(s, opt, F_GBS))
            snprintf(bw, sizeof bw, " at %.1f GB/s", S_mean(s, opt, F_GBS));
        /* each of its two ops against the memory probe's stream of its own pattern: the grad norm only reads,
         * AdamW updates its tensors in place (session.c) */
        const int gn = G_OP0 + GPT2C_OP_GRAD_NORM, ad = G_OP0 + GPT2C_OP_ADAMW;
        if (S_have(s, gn, F_PCT_MEM_PROBE) && S_have(s, ad, F_PCT_MEM_PROBE))
            snprintf(now, sizeof now, "; beside the trials the grad norm read at %.0f%% of the read stream (%.1f GB/s), AdamW at %.0f%% of the update stream (%.1f GB/s)",
                     S_mean(s, gn, F_PCT_MEM_PROBE), S_mean(s, G_STEP, F_MEM_READ), S_mean(s, ad, F_PCT_MEM_PROBE),
                     S_mean(s, G_STEP, F_MEM_UPDATE));
        /* slabs left on 4 KiB pages (THP "never", or no huge pages free): the first thing to fix, where they
         * are large enough for it to matter (a tiny model's are under gpt2c_alloc_huge's 4 MiB on purpose) */
        char pages[192] = "";
        if (s->slab_bytes >= ((size_t)64 << 20) && s->huge_bytes >= 0 && 2 * (size_t)s->huge_bytes < s->slab_bytes)
            snprintf(pages, sizeof pages, "2 MiB pages for its slabs first (%.0f of %.0f MiB are; transparent huge pages: %s; AdamW ran up to 1.2x faster in them on Zen 4), then ",
                     s->huge_bytes / 1048576.0, s->slab_bytes / 1048576.0, s->thp[0] ? s->thp : "mode unknown");
        ADD("optimizer is %.1f%% of the step (%.1f ms: grad norm + AdamW, %s%s%s) -> %sfewer passes over the slabs (the grad norm reads every gradient once more), fewer bytes (bf16 moments), or its traffic overlapped with compute on idle cores (between a GEMM's own tiles it ran slower: docs/GEMM.md)",
            pct(s, opt), S_mean(s, opt, F_MS), gpt2c_prof_bound(s, opt)[0] ? gpt2c_prof_bound(s, opt) : "memory traffic", bw, now, pages);
    }
    int att = G_LT0 + GPT2C_LT_ATTENTION, ffn = G_LT0 + GPT2C_LT_FFN, core = G_OP0 + GPT2C_OP_ATTENTION;
    if (S_have(s, core, F_MS)) {
        /* the advice depends on what the backend already does: a tiled (flash-style) attention was told to
         * become one; its own rate against the roof says what is left */
        char rate[160] = "";
        const double roof = s->bf16_attention ? bf16_roof(s) : s->peak.gflops; /* its products' engine */
        if (s->have_peak && S_have(s, core, F_GFLOPS) && roof > 0)
            snprintf(rate, sizeof rate, " at %.0f GFLOP/s = %.0f%% of its %.0f GFLOP/s roof", S_mean(s, core, F_GFLOPS),
                     100 * S_mean(s, core, F_GFLOPS) / roof, roof);
        ADD("attention core (softmax(QK^T)V, O(T^2)) is %.1f%% of the step at T=%d%s (attention layers %.1f%%, FFN %.1f%%); its share grows with T -> %s",
            pct(s, core), s->T, rate, pct(s, att), pct(s, ffn),
            s->attention_tiled ? "it is already tiled (flash-style, no T x T scores): its exponentials, masking and tile packing, not its "
                                 "products, keep it under the matmuls' rate"
                               : "fused (flash-style) attention for long sequences: the cpu backend's");
    }
    int mem_ops[] = {GPT2C_OP_GELU, GPT2C_OP_RESIDUAL_LAYERNORM, GPT2C_OP_LAYERNORM, GPT2C_OP_SOFTMAX_XENT};
    double mem_pct = 0;
    for (int i = 0; i < 4; i++) mem_pct += pct(s, G_OP0 + mem_ops[i]);
    if (mem_pct > 3)
        ADD("pointwise/normalisation ops (gelu, layernorms, softmax-xent) take %.1f%% of the step at low arithmetic intensity -> fuse them into the neighbouring matmul epilogues",
            mem_pct);
    int data = G_PHASE0 + GPT2C_PHASE_DATA, ev = G_PHASE0 + GPT2C_PHASE_EVAL;
    if (pct(s, data) > 2) ADD("data loading is %.1f%% of the step -> prefetch the next batch on a spare thread", pct(s, data));
    if (S_have(s, ev, F_MS) && pct(s, ev) > 2)
        ADD("eval is %.1f%% of the step time on average -> evaluate less often or on fewer batches", pct(s, ev));
    if (S_have(s, G_STEP, F_CPU_UTIL) && S_mean(s, G_STEP, F_CPU_UTIL) < 80)
        ADD("threads are busy %.0f%% of op time on average (task-clock / (wall x %d threads)) -> larger parallel regions, less serial work between ops",
            S_mean(s, G_STEP, F_CPU_UTIL), s->nthreads);
    for (int i = 0; i < s->nscaling; i++) {
        const scaling_row *r = &s->scaling[i];
        if (!r->step_ms.n) continue;
        for (int j = 0; j < s->nscaling; j++) {
            const scaling_row *q = &s->scaling[j];
            if (!q->step_ms.n || strcmp(q->backend, r->backend) || q->threads >= r->threads) continue;
            double eff = (q->step_ms.mean / r->step_ms.mean) / ((double)r->threads / q->threads);
            if (eff < 0.8)
                ADD("%s: %d -> %d threads gives %.2fx (efficiency %.0f%%) -> look at serial ops and memory bandwidth (shared host: other load counts too)",
                    r->backend, q->threads, r->threads, q->step_ms.mean / r->step_ms.mean, 100 * eff);
            break;
        }
    }
    if (s->have_peak && S_have(s, G_STEP, F_GFLOPS))
        ADD("whole step: %.1f GFLOP/s = %.1f%% of peak (%.1f ms/step)", S_mean(s, G_STEP, F_GFLOPS),
            100 * S_mean(s, G_STEP, F_GFLOPS) / gpt2c_prof_compute_roof(s, G_STEP), step);
    if (s->ctr && gpt2c_counters_min_running_ratio(s->ctr) < 0.999)
        ADD("hardware counters were multiplexed (min running/enabled %.2f): counts are scaled estimates of the kernel's sampling, ratios within a group are exact",
            gpt2c_counters_min_running_ratio(s->ctr));
    /* a figure above the cached peak means the peak was measured at a slower
     * moment (a VM's memory bandwidth moves with its neighbours): say so */
    if (s->have_peak) {
        double max_gbs = 0, max_gflops = 0, roof = s->peak.gflops;
        for (int lt = 0; lt < GPT2C_LT_COUNT; lt++) {
            int g = G_LT0 + lt;
            if (S_have(s, g, F_GBS) && S_mean(s, g, F_GBS) > max_gbs) max_gbs = S_mean(s, g, F_GBS);
            if (S_have(s, g, F_GFLOPS) && S_mean(s, g, F_GFLOPS) / gpt2c_prof_compute_roof(s, g) > max_gflops / roof)
                max_gflops = S_mean(s, g, F_GFLOPS), roof = gpt2c_prof_compute_roof(s, g);
        }
        if (max_gbs > s->peak.mem_gbs || max_gflops > roof)
            ADD("achieved %.1f GB/s / %.1f GFLOP/s exceeds the cached peak (%.1f GB/s, %.1f GFLOP/s): the peak was measured at a slower moment, so %% of peak here is relative to it -> gpt2c bench peak --remeasure",
                max_gbs, max_gflops, s->peak.mem_gbs, roof);
    }
    if (s->prof.dropped) ADD("%zu scopes did not fit the event buffer: raise max_events", s->prof.dropped);
    return n;
}
