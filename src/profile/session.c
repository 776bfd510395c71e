/* Profiling session: recording (scope hooks, step / phase spans) and
 * aggregation (per op kind, layer type, phase, component; statistics over
 * trials).  See gpt2c/profile_session.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"
#include "gpt2c/precision.h"
#include "kernels/kernels.h"
#include "profile/session.h"
#include "profile/topdown.h"
#include "kernels/cpu/gemm_split.h"
#include "model/model_internal.h"

static const char *const COMP_NAMES[COMP_COUNT] = {
    "full forward (no loss)", "forward + loss", "one block (mean of L)", "attention (per block)",
    "ffn (per block)",        "embedding",
};
const char *gpt2c_comp_name(int c) { return (unsigned)c < COMP_COUNT ? COMP_NAMES[c] : "?"; }

const char *gpt2c_group_name(int g, char *buf, size_t n) {
    if (g == G_STEP) snprintf(buf, n, "step");
    else if (g < G_LT0) snprintf(buf, n, "phase:%s", gpt2c_phase_name((gpt2c_phase)(g - G_PHASE0)));
    else if (g < G_OP0) snprintf(buf, n, "layer:%s", gpt2c_layer_type_name((gpt2c_layer_type)(g - G_LT0)));
    else if (g < G_COMP0) snprintf(buf, n, "op:%s", gpt2c_op_name((gpt2c_op)(g - G_OP0)));
    else snprintf(buf, n, "component:%s", gpt2c_comp_name(g - G_COMP0));
    return buf;
}

const char *gpt2c_field_name(int f) {
    static const char *const N[] = {"ms", "op_ms", "calls", "flops", "bytes", "bf16_flops", "pack_thread_ms", "kernel_thread_ms"};
    static const char *const D[] = {"gflops_per_s", "gb_per_s", "flops_per_byte", "pct_of_step", "cpu_util_pct",
                                    "cpi", "l1d_mpki", "llc_mpki", "branch_mpki", "frontend_bound",
                                    "bad_speculation", "backend_bound", "retiring", "smt_contention",
                                    "memory_bound", "core_bound", "probe_gflops_per_s", "pct_of_probe",
                                    "mem_probe_read_gb_per_s", "mem_probe_update_gb_per_s", "mem_probe_gb_per_s",
                                    "pct_of_mem_probe", "pct_in_kernel", "pct_packing", "kernel_gflops_per_s"};
    if (f < F_CTR0) return N[f];
    if (f < F_GFLOPS) return gpt2c_ctr_name((gpt2c_ctr)(f - F_CTR0));
    return f < F_COUNT ? D[f - F_GFLOPS] : "?";
}

gpt2c_profile_opts gpt2c_profile_opts_default(void) {
    gpt2c_profile_opts o;
    memset(&o, 0, sizeof o);
    o.counters = 1;
    o.hw_counters = 1;
    o.auto_trials = 1;
    o.use_peak = 1;
    return o;
}

/* ---- scope hooks: counter snapshots around each op ----------------------
 * A snapshot reads every thread's counter group (one read() each; for a
 * thread running on another CPU the kernel interrupts that CPU to update the
 * count, several microseconds).  Ops follow one another with next to nothing
 * between them, so when a scope begins within CHAIN_NS of the previous
 * scope's end, that end snapshot is reused as this begin: half the reads.
 * The gap's counts (at most CHAIN_NS per thread: the profiler's own
 * bookkeeping, threads spinning between parallel regions) go to this op.
 * GPT2C_PROF_CHAIN_NS overrides the window (0: never reuse; for measuring). */
#define CHAIN_NS 50000

static void hook_begin(gpt2c_profiler *p, gpt2c_prof_event *e) {
    (void)e;
    gpt2c_profile_session *s = p->ext;
    if (s->split) gpt2c_cpu_gemm_split_read(s->split_a);
    if (!s->ctr) return;
    uint64_t t0 = gpt2c_now_ns();
    if (s->snap_b_ns && t0 - s->snap_b_ns < s->chain_ns) {
        uint64_t *t = s->snap_a; /* the last end is this begin */
        s->snap_a = s->snap_b;
        s->snap_b = t;
    } else {
        gpt2c_counters_snapshot(s->ctr, s->snap_a);
    }
    s->snap_b_ns = 0;
    s->ctr_read_ns += gpt2c_now_ns() - t0;
}

static void hook_end(gpt2c_profiler *p, gpt2c_prof_event *e) {
    gpt2c_profile_session *s = p->ext;
    if (s->split) {
        double b[GEMM_SPLIT_COUNT];
        gpt2c_cpu_gemm_split_read(b);
        double *d = s->ev_split + (size_t)(e - p->events) * 2;
        d[0] = (b[GEMM_SPLIT_PACK] - s->split_a[GEMM_SPLIT_PACK]) * 1e-6;
        d[1] = (b[GEMM_SPLIT_KERNEL] - s->split_a[GEMM_SPLIT_KERNEL]) * 1e-6;
    }
    if (!s->ctr) return;
    uint64_t t0 = gpt2c_now_ns();
    gpt2c_counters_snapshot(s->ctr, s->snap_b);
    s->snap_b_ns = gpt2c_now_ns();
    size_t i = (size_t)(e - p->events);
    gpt2c_counters_delta(s->ctr, s->snap_a, s->snap_b, s->ev_ctr + i * GPT2C_CTR_COUNT,
                         s->ev_thr + i * (size_t)s->nthreads);
    s->ctr_read_ns += gpt2c_now_ns() - t0;
}

void gpt2c_profile_session_set_tokens(gpt2c_profile_session *s, int B, int T) {
    s->B = B;
    s->T = T;
}

/* A GPU backend's roofs: its nominal peaks (SMs x max clock x per-SM rate for
 * the precision its matmuls run in; DRAM bus width x clock), not the CPU's:
 * the ops run on the GPU. */
static void device_peak(gpt2c_profile_session *s, const gpt2c_kernels *k) {
    gpt2c_device_peaks dp;
    memset(&dp, 0, sizeof dp);
    if (k->device_peaks(&dp) != GPT2C_OK || dp.matmul_flops <= 0 || dp.mem_bytes_per_s <= 0) {
        snprintf(s->peak_reason, sizeof s->peak_reason, "the GPU's peaks are unknown (%s)", dp.name[0] ? dp.name : "no device");
        return;
    }
    memset(&s->peak, 0, sizeof s->peak);
    snprintf(s->peak.cpu, sizeof s->peak.cpu, "%s", dp.name);
    s->peak.threads = s->nthreads;
    s->peak.gflops = dp.matmul_flops * 1e-9;
    s->peak.best_isa = strcmp(dp.matmul_precision, "tf32") == 0 ? "cuda tf32" : "cuda fp32";
    s->peak.read_gbs = s->peak.scale_gbs = s->peak.triad_gbs = s->peak.update_gbs = s->peak.mem_gbs =
        dp.mem_bytes_per_s * 1e-9;
    s->have_peak = s->peak_device = 1;
}

gpt2c_status gpt2c_profile_session_begin(gpt2c_profile_session **out, gpt2c_model *m, const gpt2c_profile_opts *o) {
    *out = NULL;
    gpt2c_profile_opts def = gpt2c_profile_opts_default();
    if (!o) o = &def;
    gpt2c_profile_session *s = calloc(1, sizeof *s);
    if (!s) return gpt2c_fail(GPT2C_ERR_NOMEM, "profile session: out of memory");
    s->m = m;
    s->bf16_matmuls = gpt2c_model_precision(m) == GPT2C_FMT_BF16;
    /* a tiled attention keeps O(T) per head for its backward (the log-sum-exp), a plain one the T x T probabilities */
    s->attention_tiled = m->k && m->k->attention_state_floats && m->k->attention_state_floats(1, 256, 1) < 256 * 256;
    s->bf16_attention = s->bf16_matmuls && m->k && m->k->attention_forward_bf16;
    s->L = m->cfg.num_layers;
    s->B = m->B;
    s->T = m->T;
    s->nthreads = gpt2c_model_threads(m); /* the model's own count (counters open one group per thread) */
    const char *chain = getenv("GPT2C_PROF_CHAIN_NS");
    s->chain_ns = chain && *chain ? (uint64_t)atoll(chain) : CHAIN_NS;
    s->auto_trials = o->auto_trials;
    s->cur_phase = -1;
    snprintf(s->model_name, sizeof s->model_name, "%s", o->model_name ? o->model_name : "gpt2");
    snprintf(s->backend, sizeof s->backend, "%s", o->backend ? o->backend : (m->k ? "" : "?"));
    snprintf(s->command_line, sizeof s->command_line, "%s", o->command_line ? o->command_line : "");
    /* a step records ~17 op scopes per block plus a handful; 32 per block is a safe bound */
    s->eps = (size_t)32 * (size_t)s->L + 64;
    size_t cap = o->max_events ? o->max_events : ((size_t)1 << 18);
    if (cap < 2 * s->eps) cap = 2 * s->eps;
    gpt2c_status st = gpt2c_profiler_init(&s->prof, cap);
    s->span_cap = cap / 4 + 64;
    s->spans = calloc(s->span_cap, sizeof *s->spans);
    s->acc = calloc(M_COUNT, sizeof(double));
    s->st_mean = calloc(M_COUNT, sizeof(double));
    s->st_m2 = calloc(M_COUNT, sizeof(double));
    s->st_min = calloc(M_COUNT, sizeof(double));
    s->st_max = calloc(M_COUNT, sizeof(double));
    s->st_n = calloc(M_COUNT, sizeof(int));
    if (st == GPT2C_OK && (!s->spans || !s->acc || !s->st_mean || !s->st_m2 || !s->st_min || !s->st_max || !s->st_n))
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "profile session: out of memory");
    if (st == GPT2C_OK && o->counters) {
        st = gpt2c_counters_open(&s->ctr, s->nthreads, o->hw_counters);
        if (st == GPT2C_OK) {
            size_t w = gpt2c_counters_snapshot_words(s->ctr);
            s->snap_a = calloc(w, sizeof(uint64_t));
            s->snap_b = calloc(w, sizeof(uint64_t));
            s->ev_ctr = calloc(cap * GPT2C_CTR_COUNT, sizeof(double));
            s->ev_thr = calloc(cap * (size_t)s->nthreads, sizeof(double));
            if (!s->snap_a || !s->snap_b || !s->ev_ctr || !s->ev_thr)
                st = gpt2c_fail(GPT2C_ERR_NOMEM, "profile session: out of memory for counters");
        }
    }
    if (st == GPT2C_OK && o->use_peak && m->k && m->k->device_peaks) {
        device_peak(s, m->k);
    } else if (st == GPT2C_OK && o->use_peak) {
        if (gpt2c_peak_get(s->nthreads, &s->peak, 0) == GPT2C_OK) {
            s->have_peak = 1;
            s->bf16_roof = gpt2c_peak_bf16_roof(&s->peak, gpt2c_cpu_isa());
        } else
            snprintf(s->peak_reason, sizeof s->peak_reason, "%s", gpt2c_errmsg());
    } else if (!o->use_peak) {
        snprintf(s->peak_reason, sizeof s->peak_reason, "not requested");
    }
    if (st != GPT2C_OK) {
        gpt2c_profile_session_free(s);
        return st;
    }
    if (m->k && m->k->prof_attach) {
        /* a device backend times every scope on the device (its hooks; host
         * counters would only see the launches) */
        st = m->k->prof_attach(&s->prof);
        if (st != GPT2C_OK) {
            gpt2c_profile_session_free(s);
            return st;
        }
        s->dev = m->k;
    } else {
        /* host backends: the cpu GEMMs' packing / kernel split per scope (zero where none runs: blas, ref) */
        s->ev_split = calloc(cap * 2, sizeof(double));
        s->split = s->ev_split != NULL;
        if (s->split) gpt2c_cpu_gemm_split_enable(1);
    }
    if (!s->dev && (s->ctr || s->split)) {
        s->prof.ext = s; /* the host hooks find the session here (a device backend keeps its own state in ext) */
        s->prof.on_begin = hook_begin;
        s->prof.on_end = hook_end;
    }
    s->t_origin = gpt2c_now_ns();
    m->prof = &s->prof;
    *out = s;
    return GPT2C_OK;
}

gpt2c_profiler *gpt2c_profile_session_profiler(gpt2c_profile_session *s) { return &s->prof; }

static void add_span(gpt2c_profile_session *s, uint64_t t0, uint64_t t1, int is_step, int phase) {
    if (s->nspans >= s->span_cap) return;
    s->spans[s->nspans++] = (span){t0, t1, s->step, (int8_t)is_step, (uint8_t)phase};
}

static void close_phase(gpt2c_profile_session *s, uint64_t now) {
    if (s->cur_phase < 0) return;
    add_span(s, s->phase_t0, now, 0, s->cur_phase);
    double *g = s->acc + (G_PHASE0 + s->cur_phase) * F_COUNT;
    g[F_MS] += (double)(now - s->phase_t0) * 1e-6;
    s->cur_phase = -1;
}

void gpt2c_profile_session_step_begin(gpt2c_profile_session *s, int step) {
    if (s->in_step) gpt2c_profile_session_step_end(s);
    s->in_step = 1;
    s->step = step;
    s->prof.step = step;
    s->step_first = s->prof.n;
    s->cur_phase = -1;
    s->step_t0 = gpt2c_now_ns();
}

void gpt2c_profile_session_phase(gpt2c_profile_session *s, gpt2c_phase ph) {
    uint64_t now = gpt2c_now_ns();
    close_phase(s, now);
    s->cur_phase = (int)ph;
    s->phase_t0 = now;
    s->prof.phase = (int)ph;
}

static void add_event(double *g, double ms, double flops, double bf16_flops, double bytes, const double *ctr,
                      const double *split) {
    if (split) g[F_PACK_MS] += split[0], g[F_KERN_MS] += split[1];
    g[F_OPMS] += ms;
    g[F_CALLS] += 1;
    g[F_FLOPS] += flops;
    g[F_BF16_FLOPS] += bf16_flops;
    g[F_BYTES] += bytes;
    if (ctr)
        for (int c = 0; c < GPT2C_CTR_COUNT; c++) g[F_CTR0 + c] += ctr[c];
}

/* Folds the events of the step just ended into the open trial's sums. */
static void fold_step(gpt2c_profile_session *s) {
    for (size_t i = s->step_first; i < s->prof.n; i++) {
        const gpt2c_prof_event *e = &s->prof.events[i];
        if (e->t1_ns == 0) continue; /* never closed */
        double ms = (double)(e->t1_ns - e->t0_ns) * 1e-6;
        const double *ctr = s->ctr ? s->ev_ctr + i * GPT2C_CTR_COUNT : NULL, *sp = s->split ? s->ev_split + i * 2 : NULL;
        int op = e->op, lt = gpt2c_op_layer_type((gpt2c_op)op);
        const double bf = s->bf16_matmuls && gpt2c_op_is_matmul((gpt2c_op)op) ? e->flops : 0;
        double *g;
        g = s->acc + (G_OP0 + op) * F_COUNT;
        g[F_MS] += ms;
        add_event(g, ms, e->flops, bf, e->bytes, ctr, sp);
        g = s->acc + (G_LT0 + lt) * F_COUNT;
        g[F_MS] += ms;
        add_event(g, ms, e->flops, bf, e->bytes, ctr, sp);
        add_event(s->acc + (G_PHASE0 + e->phase) * F_COUNT, ms, e->flops, bf, e->bytes, ctr, sp);
        add_event(s->acc + G_STEP * F_COUNT, ms, e->flops, bf, e->bytes, ctr, sp);
        if (e->phase == GPT2C_PHASE_FORWARD) {
            int in[COMP_COUNT] = {op != GPT2C_OP_SOFTMAX_XENT, 1, e->layer >= 0, lt == GPT2C_LT_ATTENTION,
                                  lt == GPT2C_LT_FFN, op == GPT2C_OP_ENCODER};
            for (int c = 0; c < COMP_COUNT; c++)
                if (in[c]) {
                    g = s->acc + (G_COMP0 + c) * F_COUNT;
                    g[F_MS] += ms;
                    add_event(g, ms, e->flops, bf, e->bytes, ctr, sp);
                }
        }
    }
}

static void finish_trial(gpt2c_profile_session *s);

static void detach_device(gpt2c_profile_session *s) {
    if (!s->dev) return;
    s->dev->prof_detach(&s->prof);
    s->dev = NULL;
}

static void hk_step_begin(void *u, int step) { gpt2c_profile_session_step_begin(u, step); }
static void hk_phase(void *u, gpt2c_phase ph) { gpt2c_profile_session_phase(u, ph); }
static void hk_step_end(void *u, int step) {
    (void)step;
    gpt2c_profile_session_step_end(u);
}

gpt2c_step_hooks gpt2c_profile_session_hooks(gpt2c_profile_session *s) {
    gpt2c_step_hooks h = {hk_step_begin, hk_phase, hk_step_end, s};
    return h;
}

void gpt2c_profile_session_step_end(gpt2c_profile_session *s) {
    if (!s->in_step) return;
    /* device times replace the host times of this step's scopes (waits for the device) */
    if (s->dev && s->dev->prof_resolve(&s->prof) != GPT2C_OK) detach_device(s);
    uint64_t now = gpt2c_now_ns();
    close_phase(s, now);
    add_span(s, s->step_t0, now, 1, 0);
    s->acc[G_STEP * F_COUNT + F_MS] += (double)(now - s->step_t0) * 1e-6;
    fold_step(s);
    s->in_step = 0;
    s->acc_steps++;
    s->steps_total++;
    /* keep this step for the trace if the next one still fits; else freeze the trace */
    if (!s->trace_full && s->prof.n + s->eps <= s->prof.cap && s->nspans + 16 <= s->span_cap) {
        s->trace_events = s->prof.n;
        s->trace_spans = s->nspans;
    } else {
        s->trace_full = 1;
        s->prof.n = s->trace_events;
        s->nspans = s->trace_spans;
    }
    if (s->auto_trials) finish_trial(s);
}

void gpt2c_profile_session_attach_mem_probe(gpt2c_profile_session *s, gpt2c_mem_probe *p) {
    s->mem = p;
    if (!p) return;
    s->mem_before[0] = gpt2c_mem_probe_read(p);
    s->mem_before[1] = gpt2c_mem_probe_update(p);
}

void gpt2c_profile_session_trial_end(gpt2c_profile_session *s) {
    if (s->in_step) gpt2c_profile_session_step_end(s);
    if (s->acc_steps > 0 && s->mem) { /* after this trial, before the next: its figure the mean of the two beside it */
        const double read = gpt2c_mem_probe_read(s->mem), update = gpt2c_mem_probe_update(s->mem);
        gpt2c_profile_session_set_mem_probe(s, 0.5 * (s->mem_before[0] + read), 0.5 * (s->mem_before[1] + update),
                                            gpt2c_mem_probe_mib(s->mem));
        s->mem_before[0] = read, s->mem_before[1] = update;
    }
    if (s->acc_steps > 0) finish_trial(s);
}

/* Derived metrics of one group (v = per-step values of that group). */
static void derive(gpt2c_profile_session *s, double *v, double step_ms) {
    const double nan = NAN;
    double ms = v[F_MS], opms = v[F_OPMS];
    v[F_GFLOPS] = ms > 0 && v[F_FLOPS] > 0 ? v[F_FLOPS] / (ms * 1e6) : nan;
    v[F_GBS] = ms > 0 && v[F_BYTES] > 0 ? v[F_BYTES] / (ms * 1e6) : nan;
    v[F_AI] = v[F_BYTES] > 0 ? v[F_FLOPS] / v[F_BYTES] : nan;
    v[F_PCT_STEP] = step_ms > 0 ? 100 * ms / step_ms : nan;
    for (int f = F_CPU_UTIL; f < F_COUNT; f++) v[f] = nan;
    if (v[F_PACK_MS] > 0 || v[F_KERN_MS] > 0) { /* shares of the group's thread time */
        v[F_PCT_KERNEL] = ms > 0 ? 100 * v[F_KERN_MS] / (ms * s->nthreads) : nan;
        v[F_PCT_PACK] = ms > 0 ? 100 * v[F_PACK_MS] / (ms * s->nthreads) : nan;
    } else {
        v[F_PACK_MS] = v[F_KERN_MS] = nan; /* no cpu GEMM ran in it: nothing to report */
    }
    for (int c = 0; c < GPT2C_CTR_COUNT; c++)
        if (!s->ctr || !gpt2c_counters_have(s->ctr, (gpt2c_ctr)c)) v[F_CTR0 + c] = nan;
    if (!s->ctr) return;
    if (gpt2c_counters_have(s->ctr, GPT2C_CTR_TASK_CLOCK) && opms > 0)
        v[F_CPU_UTIL] = 100 * v[F_CTR0 + GPT2C_CTR_TASK_CLOCK] / (opms * 1e6 * s->nthreads);
    double ins = v[F_CTR0 + GPT2C_CTR_INSTRUCTIONS];
    if (isfinite(ins) && ins > 0) {
        v[F_CPI] = v[F_CTR0 + GPT2C_CTR_CYCLES] / ins; /* NaN if cycles not counted */
        v[F_L1D_MPKI] = v[F_CTR0 + GPT2C_CTR_L1D_MISSES] / (ins / 1000);
        v[F_LLC_MPKI] = v[F_CTR0 + GPT2C_CTR_LLC_MISSES] / (ins / 1000);
        v[F_BR_MPKI] = v[F_CTR0 + GPT2C_CTR_BRANCH_MISSES] / (ins / 1000);
    }
    int td = gpt2c_counters_td_scheme(s->ctr);
    if (td != GPT2C_TD_NONE) {
        double raw[8];
        for (int k = 0; k < 8; k++) raw[k] = isfinite(v[F_CTR0 + GPT2C_CTR_TD0 + k]) ? v[F_CTR0 + GPT2C_CTR_TD0 + k] : 0;
        int l2 = td == GPT2C_TD_INTEL ? gpt2c_counters_have(s->ctr, GPT2C_CTR_TD5)
                                      : gpt2c_counters_have(s->ctr, GPT2C_CTR_TD5) && gpt2c_counters_have(s->ctr, GPT2C_CTR_TD6);
        gpt2c_topdown t;
        if (gpt2c_topdown_compute((gpt2c_td_scheme)td, raw, l2, &t) == GPT2C_OK) {
            v[F_TD_FE] = t.frontend_bound;
            v[F_TD_BS] = t.bad_speculation;
            v[F_TD_BE] = t.backend_bound;
            v[F_TD_RET] = t.retiring;
            if (td != GPT2C_TD_INTEL) v[F_TD_SMT] = t.smt_contention;
            if (t.have_l2) {
                v[F_TD_MEM] = t.memory_bound;
                v[F_TD_CORE] = t.core_bound;
            }
        }
    }
}

static void finish_trial(gpt2c_profile_session *s) {
    double v[M_COUNT];
    for (int i = 0; i < M_COUNT; i++) v[i] = s->acc[i] / s->acc_steps;
    for (int c = COMP_BLOCK; c <= COMP_FFN; c++) /* per block */
        for (int f = 0; f < F_CTR0 + GPT2C_CTR_COUNT; f++) v[(G_COMP0 + c) * F_COUNT + f] /= s->L;
    double step_ms = v[G_STEP * F_COUNT + F_MS];
    for (int g = 0; g < G_COUNT; g++) {
        double *x = v + g * F_COUNT;
        int present = x[F_CALLS] > 0 || (g >= G_PHASE0 && g < G_LT0 && x[F_MS] > 0) || g == G_STEP;
        if (!present) {
            for (int f = 0; f < F_COUNT; f++) x[f] = NAN;
            continue;
        }
        derive(s, x, step_ms);
    }
    /* a matmul's rate while its micro-kernel runs: its FLOPs over the kernel's time per thread */
    for (int o = 0; o < GPT2C_OP_COUNT; o++) {
        double *x = v + (G_OP0 + o) * F_COUNT;
        if (gpt2c_op_is_matmul((gpt2c_op)o) && isfinite(x[F_KERN_MS]) && x[F_KERN_MS] > 0 && x[F_FLOPS] > 0)
            x[F_KERNEL_GFLOPS] = x[F_FLOPS] / (x[F_KERN_MS] / s->nthreads * 1e6);
    }
    /* the in-L2 GEMM probe taken beside this trial: each matmul op's rate over it */
    if (s->trial_probe > 0) {
        double flops = 0, ms = 0; /* all matmuls together: the step group's pct_of_probe */
        v[G_STEP * F_COUNT + F_PROBE] = s->trial_probe;
        for (int o = 0; o < GPT2C_OP_COUNT; o++) {
            double *x = v + (G_OP0 + o) * F_COUNT;
            if (!gpt2c_op_is_matmul((gpt2c_op)o) || !isfinite(x[F_GFLOPS])) continue;
            x[F_PCT_PROBE] = 100 * x[F_GFLOPS] / s->trial_probe;
            flops += x[F_FLOPS], ms += x[F_MS];
        }
        if (ms > 0) v[G_STEP * F_COUNT + F_PCT_PROBE] = 100 * flops / (ms * 1e6) / s->trial_probe;
        s->trial_probe = 0;
    }
    /* the memory probe taken beside this trial: each op's bandwidth over the stream of its own pattern */
    if (s->trial_mem_read > 0 && s->trial_mem_update > 0) {
        double *st = v + G_STEP * F_COUNT;
        st[F_MEM_READ] = s->trial_mem_read;
        st[F_MEM_UPDATE] = s->trial_mem_update;
        st[F_MEM_PROBE] = s->trial_mem_read > s->trial_mem_update ? s->trial_mem_read : s->trial_mem_update;
        for (int o = 0; o < GPT2C_OP_COUNT; o++) {
            double *x = v + (G_OP0 + o) * F_COUNT;
            const double stream = gpt2c_prof_op_reads(o) ? s->trial_mem_read : s->trial_mem_update;
            if (isfinite(x[F_GBS]) && x[F_GBS] > 0) x[F_PCT_MEM_PROBE] = 100 * x[F_GBS] / stream;
        }
        s->trial_mem_read = s->trial_mem_update = 0;
    }
    for (int i = 0; i < M_COUNT; i++) { /* Welford */
        double x = v[i];
        if (!isfinite(x)) continue;
        int n = ++s->st_n[i];
        double d = x - s->st_mean[i];
        s->st_mean[i] += d / n;
        s->st_m2[i] += d * (x - s->st_mean[i]);
        if (n == 1 || x < s->st_min[i]) s->st_min[i] = x;
        if (n == 1 || x > s->st_max[i]) s->st_max[i] = x;
    }
    memset(s->acc, 0, sizeof(double) * M_COUNT);
    s->acc_steps = 0;
    s->ntrials++;
}

gpt2c_status gpt2c_profile_session_end(gpt2c_profile_session *s) {
    if (s->ended) return GPT2C_OK;
    if (s->in_step) gpt2c_profile_session_step_end(s);
    if (s->acc_steps > 0) finish_trial(s);
    detach_device(s);
    if (s->m && s->m->prof == &s->prof) s->m->prof = NULL;
    if (s->split) gpt2c_cpu_gemm_split_enable(0);
    s->stats = calloc(M_COUNT, sizeof *s->stats);
    if (!s->stats) return gpt2c_fail(GPT2C_ERR_NOMEM, "profile session: out of memory");
    for (int i = 0; i < M_COUNT; i++) {
        int n = s->st_n[i];
        /* a metric missing from some trials is reported over the trials that had it */
        s->stats[i] = (gpt2c_stat){s->st_mean[i], n > 1 ? sqrt(s->st_m2[i] / (n - 1)) : 0, s->st_min[i], s->st_max[i], n};
    }
    s->huge_bytes = s->m ? gpt2c_model_huge_page_bytes(s->m, &s->slab_bytes) : -1;
    if (!gpt2c_thp_mode(s->thp, sizeof s->thp)) s->thp[0] = '\0';
    s->ended = 1;
    if (s->ntrials == 0) return gpt2c_fail(GPT2C_ERR_ARG, "profile session: no step was recorded");
    return GPT2C_OK;
}

gpt2c_stat gpt2c_profile_session_step_ms(const gpt2c_profile_session *s) {
    gpt2c_stat z = {0, 0, 0, 0, 0};
    return s->stats ? s->stats[G_STEP * F_COUNT + F_MS] : z;
}

int gpt2c_profile_session_trials(const gpt2c_profile_session *s) { return s->ntrials; }

gpt2c_status gpt2c_profile_session_add_scaling(gpt2c_profile_session *s, const char *backend, int threads,
                                               gpt2c_stat step_ms, const char *reason) {
    if (s->nscaling >= (int)(sizeof s->scaling / sizeof s->scaling[0]))
        return gpt2c_fail(GPT2C_ERR_RANGE, "profile: more than %d sweep points", (int)(sizeof s->scaling / sizeof s->scaling[0]));
    scaling_row *r = &s->scaling[s->nscaling++];
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    r->threads = threads;
    r->step_ms = step_ms;
    snprintf(r->reason, sizeof r->reason, "%s", reason ? reason : "");
    if (reason) r->step_ms.n = 0;
    return GPT2C_OK;
}

void gpt2c_profile_session_set_probe(gpt2c_profile_session *s, double gflops, int threads) {
    if (!(gflops > 0)) return;
    s->trial_probe = gflops;
    s->probe_threads = threads;
}

int gpt2c_prof_op_reads(int op) {
    switch (op) {
    case GPT2C_OP_MATMUL_QKV: case GPT2C_OP_MATMUL_ATTPROJ: case GPT2C_OP_MATMUL_FC: case GPT2C_OP_MATMUL_FCPROJ:
    case GPT2C_OP_MATMUL_LMHEAD: /* the weights (decode streams them) */
    case GPT2C_OP_ATTENTION:     /* the K/V cache in decode */
    case GPT2C_OP_GRAD_NORM: case GPT2C_OP_DATA_LOAD: return 1;
    default: return 0; /* what they read they write back or write elsewhere: AdamW, the norms, gelu, the loss */
    }
}

void gpt2c_profile_session_set_mem_probe(gpt2c_profile_session *s, double read_gbs, double update_gbs, int mib) {
    if (!(read_gbs > 0) || !(update_gbs > 0)) return;
    s->trial_mem_read = read_gbs;
    s->trial_mem_update = update_gbs;
    s->mem_probe_mib = mib;
}

void gpt2c_profile_session_set_overhead(gpt2c_profile_session *s, double off_ms, double on_ms, double on_ctr_ms) {
    s->ovh_off = off_ms;
    s->ovh_on = on_ms;
    s->ovh_ctr = on_ctr_ms;
}

void gpt2c_profile_session_free(gpt2c_profile_session *s) {
    if (!s) return;
    detach_device(s);
    if (s->m && s->m->prof == &s->prof) s->m->prof = NULL;
    if (s->split && !s->ended) gpt2c_cpu_gemm_split_enable(0);
    free(s->ev_split);
    gpt2c_profiler_free(&s->prof);
    gpt2c_counters_close(s->ctr);
    free(s->ev_ctr);
    free(s->ev_thr);
    free(s->snap_a);
    free(s->snap_b);
    free(s->spans);
    free(s->acc);
    free(s->st_mean);
    free(s->st_m2);
    free(s->st_min);
    free(s->st_max);
    free(s->st_n);
    free(s->stats);
    free(s);
}
