/* A profiling session: attach to a model, mark steps and phases, get every
 * aggregate, the roofline, counters, trace and report.
 *
 *   gpt2c_profile_session *s;
 *   gpt2c_profile_opts o = gpt2c_profile_opts_default();
 *   GPT2C_TRY(gpt2c_profile_session_begin(&s, model, &o));   // sets model->prof
 *   for each step:
 *       gpt2c_profile_session_step_begin(s, step);
 *       gpt2c_profile_session_phase(s, GPT2C_PHASE_DATA);      // load the batch
 *       gpt2c_profile_session_phase(s, GPT2C_PHASE_FORWARD);   // forward
 *       gpt2c_profile_session_phase(s, GPT2C_PHASE_BACKWARD);  // zero_grad + backward
 *       gpt2c_profile_session_phase(s, GPT2C_PHASE_OPTIMIZER); // update
 *       gpt2c_profile_session_step_end(s);
 *       (optional) gpt2c_profile_session_trial_end(s);         // close a trial of steps
 *   gpt2c_profile_session_end(s);                              // detaches (model->prof = NULL)
 *   gpt2c_profile_session_write(s, "out/");                    // all files
 *   gpt2c_profile_session_free(s);
 *
 * With opts.auto_trials (the default) every step is one trial: mean/std/min/max
 * are over steps; else the caller closes trials of several steps.
 * Memory is bounded for long runs: the trace keeps the first events that fit
 * in max_events; aggregates keep counting every step. */
#ifndef GPT2C_PROFILE_SESSION_H
#define GPT2C_PROFILE_SESSION_H

#include <stddef.h>

#include "gpt2c/model.h"
#include "gpt2c/peak.h"

typedef struct gpt2c_profile_opts {
    int counters;       /* 1: open perf_event counters (hardware if the PMU allows, else software) */
    int hw_counters;    /* 0: software counters only */
    size_t max_events;  /* trace capacity in op events (0 = 1<<18) */
    int auto_trials;    /* 1: every step is one trial; 0: the caller calls trial_end */
    int use_peak;       /* 1: read (or measure once) this machine's peaks for the roofline */
    const char *command_line; /* recorded in summary.json (may be NULL) */
    const char *model_name;   /* shown in the report (may be NULL) */
    const char *backend;      /* shown in the report (may be NULL) */
} gpt2c_profile_opts;

gpt2c_profile_opts gpt2c_profile_opts_default(void);

typedef struct gpt2c_profile_session gpt2c_profile_session;

typedef struct gpt2c_stat {
    double mean, std, min, max; /* sample std (n-1); 0 when n == 1 */
    int n;                      /* 0: unavailable */
} gpt2c_stat;

gpt2c_status gpt2c_profile_session_begin(gpt2c_profile_session **out, gpt2c_model *m, const gpt2c_profile_opts *o);
/* The batch shape shown and counted in tokens/s (default: the model's prepared
 * B and T); inference profiles set B sequences x T tokens processed per step. */
void gpt2c_profile_session_set_tokens(gpt2c_profile_session *s, int B, int T);
/* The scope recorder, for callers that time their own work (data loading). */
gpt2c_profiler *gpt2c_profile_session_profiler(gpt2c_profile_session *s);
void gpt2c_profile_session_step_begin(gpt2c_profile_session *s, int step);
void gpt2c_profile_session_phase(gpt2c_profile_session *s, gpt2c_phase ph);
void gpt2c_profile_session_step_end(gpt2c_profile_session *s);
void gpt2c_profile_session_trial_end(gpt2c_profile_session *s);
/* The three above as a training loop's hooks (gpt2c_train_cfg.hooks,
 * gpt2c_step_cfg.hooks): the session is the profiler's one owner. */
gpt2c_step_hooks gpt2c_profile_session_hooks(gpt2c_profile_session *s);
/* Detaches from the model; aggregates are final after this. */
gpt2c_status gpt2c_profile_session_end(gpt2c_profile_session *s);

/* Mean step time over trials (ms). */
gpt2c_stat gpt2c_profile_session_step_ms(const gpt2c_profile_session *s);
int gpt2c_profile_session_trials(const gpt2c_profile_session *s);

/* Extra results shown in the outputs. */
/* One row of the thread / backend scaling table; reason != NULL: unavailable. */
gpt2c_status gpt2c_profile_session_add_scaling(gpt2c_profile_session *s, const char *backend, int threads,
                                               gpt2c_stat step_ms, const char *reason);
/* The in-L2 GEMM probe (the cpu backend's micro-kernel of the matmuls'
 * precision, fp32 or the bf16 pair engine, on a product that stays in L2, on
 * `threads` threads) measured beside the trial now open, in
 * GFLOP/s; call before that trial's trial_end.  The outputs then give each
 * matmul op's rate as a % of it ("%probe"): what the memory hierarchy leaves
 * of the micro-kernel's in-cache rate, at the same moment, so a machine that
 * runs cache-using code slowly for a while (a VM's neighbour) does not read as
 * a slow GEMM.  Ignored when gflops <= 0. */
void gpt2c_profile_session_set_probe(gpt2c_profile_session *s, double gflops, int threads);
/* The memory probe (gpt2c/peak.h's gpt2c_mem_probe: its read and update
 * streams on all cores, GB/s, over an array of `mib` MiB) measured beside the
 * trial now open; call before that trial's trial_end.  The outputs then give
 * each op's bandwidth as a % of the stream of its pattern ("% mem probe":
 * read for the matmuls' weights, the attention's K/V cache and the grad
 * norm; update for the ops that write what they read): against what the
 * memory gave at that moment, where the cached peak's % is against what it
 * gave at its best (a VM's memory moves with its host: 55 and 98 GB/s
 * minutes apart on Zen 4).  Ignored unless both are > 0. */
void gpt2c_profile_session_set_mem_probe(gpt2c_profile_session *s, double read_gbs, double update_gbs, int mib);
/* Runs memory probe p (not owned; NULL: none) now and at the end of each
 * trial, and gives each trial the mean of the runs before and after it
 * (set_mem_probe): ~40 ms a run at 128 MiB, outside the steps. */
struct gpt2c_mem_probe;
void gpt2c_profile_session_attach_mem_probe(gpt2c_profile_session *s, struct gpt2c_mem_probe *p);
/* Profiling cost: median step ms with profiling off, on (timers), on (timers + counters). */
void gpt2c_profile_session_set_overhead(gpt2c_profile_session *s, double off_ms, double on_ms, double on_ctr_ms);

/* Writes trace.json, summary.json, ops.csv, report.html, report.txt and the
 * SVG charts into out_dir (created if missing). */
gpt2c_status gpt2c_profile_session_write(gpt2c_profile_session *s, const char *out_dir);
/* The terminal report (tables and findings), malloc'd; caller frees. */
gpt2c_status gpt2c_profile_session_text(gpt2c_profile_session *s, char **out);

void gpt2c_profile_session_free(gpt2c_profile_session *s);

#endif
