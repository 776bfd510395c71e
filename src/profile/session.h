/* Profiling session internals, shared by session.c (recording, aggregation)
 * and the writers (trace.c, report.c, svg.c, findings.c). */
#ifndef GPT2C_PROFILE_SESSION_INTERNAL_H
#define GPT2C_PROFILE_SESSION_INTERNAL_H

#include <stdint.h>

#include "gpt2c/peak.h"
#include "gpt2c/profile_session.h"
#include "profile/counters.h"
#include "profile/sbuf.h"

/* Aggregation groups: each event adds into its op kind, layer type, phase,
 * the whole step, and the seed study's components (forward only). */
enum {
    G_STEP = 0,
    G_PHASE0 = 1,
    G_LT0 = G_PHASE0 + GPT2C_PHASE_COUNT,
    G_OP0 = G_LT0 + GPT2C_LT_COUNT,
    G_COMP0 = G_OP0 + GPT2C_OP_COUNT,
    G_COUNT = G_COMP0 + 6
};
enum { COMP_FULL_FWD, COMP_FWD_LOSS, COMP_BLOCK, COMP_ATTN, COMP_FFN, COMP_EMB, COMP_COUNT };

/* Fields of a group: raw sums per step, then metrics derived per trial. */
enum {
    F_MS, F_OPMS, F_CALLS, F_FLOPS, F_BYTES, /* F_MS: wall (spans for step/phase); F_OPMS: sum of op scopes */
    F_BF16_FLOPS,                  /* the part of F_FLOPS done by bf16 GEMMs (vdpbf16ps roof) */
    F_PACK_MS, F_KERN_MS,          /* thread-ms the cpu GEMMs spent packing operands / in micro-kernel tiles (gemm_split.h) */
    F_CTR0,                        /* GPT2C_CTR_COUNT raw counters */
    F_GFLOPS = F_CTR0 + GPT2C_CTR_COUNT, F_GBS, F_AI, F_PCT_STEP,
    F_CPU_UTIL,                    /* task-clock / (wall * threads) */
    F_CPI, F_L1D_MPKI, F_LLC_MPKI, F_BR_MPKI,
    F_TD_FE, F_TD_BS, F_TD_BE, F_TD_RET, F_TD_SMT, F_TD_MEM, F_TD_CORE,
    F_PROBE,     /* G_STEP only: the in-L2 GEMM probe beside the trial, GFLOP/s (set_probe) */
    F_PCT_PROBE, /* matmul ops: their GFLOP/s as a % of that probe; G_STEP: all matmuls' together */
    F_MEM_READ, F_MEM_UPDATE, /* G_STEP only: the memory probe's read and update streams beside the trial, GB/s */
    F_MEM_PROBE,     /* G_STEP only: the faster of the two, the memory's ceiling at that moment */
    F_PCT_MEM_PROBE, /* ops: their GB/s as a % of the probe's stream of their pattern (gpt2c_prof_op_reads) */
    F_PCT_KERNEL, F_PCT_PACK, /* F_KERN_MS, F_PACK_MS as a % of the group's thread time (ms x threads) */
    F_KERNEL_GFLOPS,          /* matmul ops: their FLOPs over their micro-kernel time per thread: the rate while it runs */
    F_COUNT
};
#define M_COUNT (G_COUNT * F_COUNT)

const char *gpt2c_group_name(int g, char *buf, size_t n); /* "op:matmul_fc", "lt:attention", ... */
const char *gpt2c_field_name(int f);
const char *gpt2c_comp_name(int c);

typedef struct {
    uint64_t t0, t1;
    int32_t step;
    int8_t is_step; /* 1 step span, 0 phase span */
    uint8_t phase;
} span;

typedef struct {
    char backend[16];
    int threads;
    gpt2c_stat step_ms;
    char reason[200];
} scaling_row;

struct gpt2c_profile_session {
    const struct gpt2c_kernels *dev; /* a device backend whose profiler hooks are attached (GPU times), or NULL */
    gpt2c_model *m;
    gpt2c_profiler prof;
    gpt2c_counters *ctr; /* NULL: counters off */
    int nthreads, L, B, T;
    char model_name[128], backend[32], command_line[2048];
    uint64_t t_origin;

    double *ev_ctr;     /* [cap][GPT2C_CTR_COUNT] per event, when counters are on */
    double *ev_thr;     /* [cap][nthreads] task-clock ns per thread per event */
    uint64_t *snap_a, *snap_b;
    uint64_t snap_b_ns; /* when snap_b (the last scope's end) was read; 0: none to reuse */
    uint64_t chain_ns;    /* reuse window for snapshots (session.c: CHAIN_NS) */
    uint64_t ctr_read_ns; /* time spent in the counter hooks (reads + deltas), all steps */

    span *spans;
    size_t nspans, span_cap;
    size_t trace_events, trace_spans; /* frozen prefix kept for the trace */
    int trace_full;
    size_t eps; /* events-per-step bound */

    int in_step, cur_phase, step;
    uint64_t step_t0, phase_t0;
    size_t step_first;

    double *acc;   /* [M_COUNT] sums over the steps of the open trial */
    int acc_steps;
    /* running statistics over trials (Welford), so long runs need no storage */
    double *st_mean, *st_m2, *st_min, *st_max;
    int *st_n;
    int ntrials, auto_trials;
    size_t steps_total;

    gpt2c_stat *stats; /* [M_COUNT] after end */
    int ended;

    gpt2c_peak peak;
    int have_peak;
    int peak_device; /* peak holds a GPU's nominal figures (device_peaks), not the CPU's measured ones */
    double bf16_roof; /* the bf16 matmuls' ceiling, GFLOP/s (gpt2c_peak_bf16_roof: its engine's peak); 0: peak.gflops */
    int bf16_matmuls; /* the model computes its matmuls in bf16 (--precision bf16) */
    int attention_tiled; /* the backend's attention keeps no T x T scores (flash-style: its state is O(T)) */
    int bf16_attention;  /* bf16 precision on a backend whose attention multiplies in bf16 (attention_forward_bf16) */
    char peak_reason[256];
    size_t slab_bytes;    /* the weights', gradients', moments' (and bf16 copies') slabs (gpt2c_model_huge_page_bytes) */
    long long huge_bytes; /* of those, in 2 MiB pages at the session's end; -1: unknown */
    char thp[16];         /* transparent huge pages' mode; "": unknown */

    scaling_row scaling[64];
    int nscaling;
    double ovh_off, ovh_on, ovh_ctr;
    double trial_probe; /* GFLOP/s of the probe beside the open trial; 0: none */
    int probe_threads;  /* the threads it ran on (for the report) */
    double trial_mem_read, trial_mem_update; /* GB/s of the memory probe beside the open trial; 0: none */
    int mem_probe_mib;                       /* its array (for the report) */
    gpt2c_mem_probe *mem;                    /* attached: run at each trial's end (not owned) */
    double mem_before[2];                    /* its read and update streams at the open trial's start */
    int split;                               /* the cpu GEMMs' packing / kernel split is recorded per scope (host backends) */
    double split_a[2];                       /* its sums at the open scope's start, ns */
    double *ev_split;                        /* [cap][2] per event: packing and kernel thread-ms */
};

static inline double S_mean(const gpt2c_profile_session *s, int g, int f) { return s->stats[g * F_COUNT + f].mean; }

/* The compute roof of group g, GFLOP/s: the fp32 FMA peak, or with bf16
 * matmuls the time-weighted mix of the two roofs over the group's FLOPs
 * (F flops of which Fb in bf16 GEMMs take at best Fb/Pbf16 + (F-Fb)/Pfp32
 * seconds).  Needs have_peak. */
double gpt2c_prof_compute_roof(const gpt2c_profile_session *s, int g);
static inline const gpt2c_stat *S_stat(const gpt2c_profile_session *s, int g, int f) { return &s->stats[g * F_COUNT + f]; }
static inline int S_have(const gpt2c_profile_session *s, int g, int f) { return s->stats[g * F_COUNT + f].n > 0; }

/* The peak the in-L2 GEMM probe is held to: the fp32 peak, or the bf16
 * matmuls' roof in a bf16 run (the probe is then the bf16 pair engine's). */
double gpt2c_prof_probe_roof(const gpt2c_profile_session *s);
/* The in-L2 GEMM probe's mean as a share of that peak on as many threads
 * (the peak is taken on peak.threads; the probe may run on fewer); 0 when
 * either is missing or the peak is a device's. */
double gpt2c_prof_probe_peak_share(const gpt2c_profile_session *s);

/* All matmul ops together, from the cpu GEMMs' split (gemm_split.h): their
 * wall ms per step, % of their thread time in the micro-kernel and packing,
 * the kernel's rate while it runs (GFLOP/s) and that as a % of the matmuls'
 * roof (0 without a peak).  0 when no matmul recorded a split. */
typedef struct {
    double ms, pct_kernel, pct_pack, kernel_gflops, pct_roof;
} gpt2c_matmul_split;
int gpt2c_prof_matmul_split(const gpt2c_profile_session *s, gpt2c_matmul_split *out);

/* 1 if op o's memory traffic is reads (the matmuls' weights, the attention's
 * K/V cache in decode, the grad norm): its % mem probe is over the probe's
 * read stream; 0: over its update stream (what an op reads it writes back or
 * writes elsewhere, as AdamW, the norms and gelu do: bytes both ways) */
int gpt2c_prof_op_reads(int o);

/* writers */
gpt2c_status gpt2c_prof_write_trace(gpt2c_profile_session *s, sbuf *b);
void gpt2c_prof_render_summary_json(gpt2c_profile_session *s, sbuf *b);
void gpt2c_prof_render_ops_csv(gpt2c_profile_session *s, sbuf *b);
void gpt2c_prof_render_text(gpt2c_profile_session *s, sbuf *b);
void gpt2c_prof_render_html(gpt2c_profile_session *s, sbuf *b);
/* charts: id is the svg element id */
void gpt2c_prof_svg_top_ops(gpt2c_profile_session *s, sbuf *b);
void gpt2c_prof_svg_attn_ffn(gpt2c_profile_session *s, sbuf *b);
void gpt2c_prof_svg_phases(gpt2c_profile_session *s, sbuf *b);
void gpt2c_prof_svg_layer_types(gpt2c_profile_session *s, sbuf *b);
void gpt2c_prof_svg_roofline(gpt2c_profile_session *s, sbuf *b);
void gpt2c_prof_svg_scaling(gpt2c_profile_session *s, sbuf *b);
/* findings: up to max lines, each "bottleneck with numbers -> lever" */
int gpt2c_prof_findings(gpt2c_profile_session *s, char lines[][512], int max);
/* "compute-bound" / "memory-bound" / "" for a group, from its AI and the ridge point */
const char *gpt2c_prof_bound(const gpt2c_profile_session *s, int g);

#endif
