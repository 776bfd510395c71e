/* `gpt2c profile`: profile training steps of a model (random seeded batches),
 * or with --infer / --quant / a quantized checkpoint its inference passes
 * (cli/profile_infer.c):
 * per op, per layer type, per phase, roofline, counters, trials, sweeps;
 * writes trace.json, summary.json, ops.csv, SVG charts and report.html. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "gpt2c/cpu.h"
#include "cli/lora_arg.h"
#include "cli/model_arg.h"
#include "cli/outpaths.h"
#include "cli/precision_arg.h"
#include "gpt2c/precision.h"
#include "cli/profile_infer.h"
#include "cli/quant_arg.h"
#include "cli/commands.h"
#include "cli/run_arg.h"
#include "gpt2c/quant_model.h"
#include "gpt2c/model.h"
#include "gpt2c/peak.h"
#include "gpt2c/profile_session.h"
#include "gpt2c/train.h"
#include "kernels/cpu/gemm_tune.h"
#include "kernels/kernels.h"

#define CMD "profile"

typedef struct {
    int B, T, steps, trials, warmup, V;
    unsigned long long seed;
    int32_t *tokens, *targets;
    gpt2c_rng rng;
    gpt2c_adamw_cfg opt;
    gpt2c_format prec; /* --precision */
    int probe_threads; /* > 0: the in-L2 GEMM probe beside each trial, on these threads */
    gpt2c_mem_probe *mem; /* the memory probe beside each trial; NULL: none */
} run_ctx;

/* Seeded random tokens: the step's batch source (timed as the data phase). */
static gpt2c_status fill_batch(void *ctx, const int32_t **inputs, const int32_t **targets) {
    run_ctx *r = ctx;
    for (int i = 0; i <= r->B * r->T; i++) {
        int32_t t = (int32_t)(gpt2c_rng_u64(&r->rng) % (uint64_t)r->V);
        if (i < r->B * r->T) r->tokens[i] = t;
        if (i > 0) r->targets[i - 1] = t;
    }
    *inputs = r->tokens;
    *targets = r->targets;
    return GPT2C_OK;
}

/* One training step (the trainer's, gpt2c_train_step), marked in session s if any. */
static gpt2c_status run_step(gpt2c_model *m, gpt2c_profile_session *s, int step, run_ctx *r) {
    const gpt2c_step_hooks none = {0};
    const gpt2c_step_cfg sc = {r->B, r->T, 1, 1e-4f, r->opt, NULL, s ? gpt2c_profile_session_hooks(s) : none, step};
    const gpt2c_batch_source src = {fill_batch, r, NULL};
    if (sc.hooks.step_begin) sc.hooks.step_begin(sc.hooks.user, step);
    GPT2C_TRY(gpt2c_train_step(m, &sc, &src, NULL));
    if (sc.hooks.step_end) sc.hooks.step_end(sc.hooks.user, step);
    return GPT2C_OK;
}

static gpt2c_status setup(gpt2c_model *m, const char *backend, int threads, run_ctx *r) {
    gpt2c_model_set_threads(m, threads);
    GPT2C_TRY(gpt2c_model_set_precision(m, GPT2C_FMT_F32)); /* a sweep may go to a backend without bf16 */
    GPT2C_TRY(gpt2c_model_set_backend(m, backend));
    GPT2C_TRY(gpt2c_model_set_precision(m, r->prec));
    GPT2C_TRY(gpt2c_model_prepare(m, r->B, r->T));
    GPT2C_TRY(gpt2c_model_alloc_grads(m));
    GPT2C_TRY(gpt2c_model_alloc_optimizer(m));
    gpt2c_model_zero_grad(m);
    return GPT2C_OK;
}

/* The in-L2 GEMM probe (~15 ms), 0 when off: its rate beside a trial is the
 * mean of the probes before and after it, neighbours in time. */
#define PROBE_SECONDS 0.015
static double probe_now(const run_ctx *r) {
    if (r->probe_threads <= 0) return 0;
    return r->prec == GPT2C_FMT_BF16 ? gpt2c_cpu_gemm_bf16_probe_gflops(gpt2c_cpu_isa(), r->probe_threads, PROBE_SECONDS)
                                     : gpt2c_cpu_gemm_probe_gflops(gpt2c_cpu_isa(), r->probe_threads, PROBE_SECONDS);
}

/* warm-up, then `trials` trials of `steps` steps inside a session */
static gpt2c_status run_trials(gpt2c_model *m, gpt2c_profile_session **out, const gpt2c_profile_opts *o, run_ctx *r) {
    for (int i = 0; i < r->warmup; i++) GPT2C_TRY(run_step(m, NULL, -1 - i, r));
    GPT2C_TRY(gpt2c_profile_session_begin(out, m, o));
    gpt2c_profile_session_attach_mem_probe(*out, r->mem);
    int step = 0;
    double before = probe_now(r);
    for (int t = 0; t < r->trials; t++) {
        for (int i = 0; i < r->steps; i++) GPT2C_TRY(run_step(m, *out, step++, r));
        const double after = probe_now(r);
        if (before > 0 && after > 0) gpt2c_profile_session_set_probe(*out, 0.5 * (before + after), r->probe_threads);
        before = after;
        gpt2c_profile_session_trial_end(*out);
    }
    return gpt2c_profile_session_end(*out);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Profiling cost: rounds alternate off / timers / timers+counters so drift on
 * a shared host hits all three alike; medians of per-step ms. */
static gpt2c_status measure_overhead(gpt2c_model *m, run_ctx *r, int rounds, double out[3]) {
    gpt2c_profile_opts o = gpt2c_profile_opts_default();
    o.use_peak = 0;
    o.counters = 0;
    o.max_events = 1 << 14;
    gpt2c_profile_session *on = NULL, *ctr = NULL;
    gpt2c_status st = gpt2c_profile_session_begin(&on, m, &o);
    o.counters = 1;
    if (st == GPT2C_OK) st = gpt2c_profile_session_begin(&ctr, m, &o);
    double *t = calloc((size_t)rounds * 3, sizeof(double));
    if (!t && st == GPT2C_OK) st = gpt2c_fail(GPT2C_ERR_NOMEM, "overhead: out of memory");
    for (int i = 0; st == GPT2C_OK && i < rounds; i++)
        for (int k = 0; k < 3 && st == GPT2C_OK; k++) {
            gpt2c_profile_session *s = k == 0 ? NULL : k == 1 ? on : ctr;
            gpt2c_model_set_profiler(m, s ? gpt2c_profile_session_profiler(s) : NULL);
            uint64_t t0 = gpt2c_now_ns();
            st = run_step(m, s, i, r);
            t[k * rounds + i] = (double)(gpt2c_now_ns() - t0) * 1e-6;
        }
    gpt2c_model_set_profiler(m, NULL);
    for (int k = 0; st == GPT2C_OK && k < 3; k++) {
        qsort(t + k * rounds, (size_t)rounds, sizeof(double), cmp_d);
        out[k] = t[k * rounds + rounds / 2];
    }
    free(t);
    gpt2c_profile_session_free(on);
    gpt2c_profile_session_free(ctr);
    return st;
}

int cmd_profile(int argc, char **argv) {
    const char *out = NULL, *backends = "cpu", *precision = "fp32", *adapter = NULL;
    model_arg ma = {0};
    int B = 4, T = 64, steps = 1, trials = 10, warmup = 2;
    int no_counters = 0, no_hw = 0, no_peak = 0, no_probe = 0, overhead = 0, quiet = 0, infer = 0, decode = 16, decode_only = 0;
    const char *quant = NULL, *kv = NULL, *qact = NULL;
    long long seed = 1337;
    cli_intlist threads = {{0}, 0};
    cli_opt opts[] = {
        MODEL_ARG_OPTS(ma),
        BATCH_ARG_OPT(B, "batch size B", 1 << 16),
        SEQ_ARG_OPT(T, "sequence length T"),
        {"--steps", CLI_INT, &steps, "training steps per trial", 1, 1 << 20},
        {"--trials", CLI_INT, &trials, "trials after warm-up (statistics over trials)", 1, 100000},
        {"--warmup", CLI_INT, &warmup, "warm-up steps, not recorded", 0, 1000},
        THREADS_LIST_ARG_OPT(threads, "threads, or a sweep: 1,2,4 (default: all cores)"),
        BACKEND_ARG_OPT(backends, "backend, or a sweep: cpu,blas"),
        PRECISION_ARG_OPT(precision),
        {"--out", CLI_STR, &out, "output folder for trace.json, summary.json, ops.csv, report.html, *.svg", 0, 0},
        SEED_ARG_OPT(seed, "seed for the model and the batches"),
        {"--no-counters", CLI_FLAG, &no_counters, "no perf_event counters", 0, 0},
        {"--no-hw-counters", CLI_FLAG, &no_hw, "software counters only", 0, 0},
        {"--no-peak", CLI_FLAG, &no_peak, "skip the machine peaks (no roofline roofs)", 0, 0},
        {"--no-probe", CLI_FLAG, &no_probe, "no probes beside each trial: the in-L2 GEMM probe (cpu backend, training: the matmuls' % probe) and the memory probe (% mem probe)", 0, 0},
        {"--overhead", CLI_FLAG, &overhead, "also measure the profiler's own cost (off / timers / counters)", 0, 0},
        {"--quiet", CLI_FLAG, &quiet, "do not print the tables", 0, 0},
        {"--infer", CLI_FLAG, &infer,
         "profile inference instead of training: a step = prefill --seq tokens for --batch sequences + --decode steps", 0, 0},
        {"--decode", CLI_INT, &decode, "with --infer: decode steps per profiled step [16]", 0, 1 << 20},
        {"--decode-only", CLI_FLAG, &decode_only, "with --infer: profile the decode steps alone (the prefill runs unprofiled)", 0, 0},
        QUANT_ARG_OPT(quant),
        KV_ARG_OPT(kv),
        QACT_ARG_OPT(qact),
        ADAPTER_ARG_OPT(adapter),
    };
    int rc = cli_parse(CMD, argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if ((rc = precision_arg_check(CMD, precision, backends))) return rc;

    /* backends: comma-separated, each a known name */
    char blist[256];
    snprintf(blist, sizeof blist, "%s", backends);
    const char *bk[16];
    int nb = 0;
    for (char *tok = strtok(blist, ","); tok; tok = strtok(NULL, ",")) {
        if (!gpt2c_kernels_known(tok)) {
            fprintf(stderr, "gpt2c %s: --backend: unknown backend '%s' (available: %s)\n", CMD, tok,
                    gpt2c_kernels_available());
            return 2;
        }
        if (nb < 16) bk[nb++] = tok;
    }
    if (nb == 0) {
        fprintf(stderr, "gpt2c %s: --backend: empty list\n", CMD);
        return 2;
    }
    if (threads.n == 0) threads.items[threads.n++] = gpt2c_set_threads(0);
    int main_threads = threads.items[0];
    for (int i = 1; i < threads.n; i++)
        if (threads.items[i] > main_threads) main_threads = threads.items[i];

    if (out) {
        const cli_path ins[] = {{"--model", ma.model}, {"--vocab", ma.vocab}};
        if ((rc = cli_check_output_names(CMD, "--out", out, cli_profile_output_name, NULL, ins, CLI_NOPTS(ins))))
            return rc;
    }
    /* a preset (fresh GPT-2 init, sizes overridable) or a checkpoint */
    const char *model = ma.model ? ma.model : "gpt2";
    gpt2c_model *m = NULL;
    int loaded = 0;
    if ((rc = model_arg_make(CMD, &ma, (uint64_t)seed, &m, &loaded))) return rc;
    /* --quant, or a quantized checkpoint: its inference is profiled (quantized bases are not trained) */
    /* with --adapter a quantized base is trained (QLoRA): its training steps are profiled */
    if ((quant || gpt2c_model_qweights(m)) && !adapter) infer = 1;
    if (quant_arg_apply(CMD, quant, model, m, 1) || kv_arg_apply(CMD, kv, m) || qact_arg_apply(CMD, qact) || adapter_arg_apply(CMD, adapter, m)) {
        gpt2c_model_free(m);
        return 1;
    }
    if (infer && T + decode > gpt2c_model_config(m)->max_seq_len) {
        const int ctx = gpt2c_model_config(m)->max_seq_len;
        gpt2c_model_free(m);
        return cli_error(CMD, "--seq %d + --decode %d exceeds the model's context of %d", T, decode, ctx);
    }
    if (decode_only && (!infer || decode < 1)) {
        gpt2c_model_free(m);
        return cli_error(CMD, "--decode-only: profiles inference decode steps (needs --infer, --quant or a quantized model, "
                              "and --decode >= 1)");
    }
    if (infer && (nb * threads.n > 1 || overhead)) {
        gpt2c_model_free(m);
        return cli_error(CMD, "--infer: backend/thread sweeps and --overhead profile training steps only");
    }
    if (T > gpt2c_model_config(m)->max_seq_len) {
        gpt2c_model_free(m);
        return cli_error(CMD, "--seq: %d is longer than the model's context of %d", T, gpt2c_model_config(m)->max_seq_len);
    }

    char cmdline[2048];
    int k = snprintf(cmdline, sizeof cmdline, "gpt2c profile");
    for (int i = 0; i < argc && k < (int)sizeof cmdline; i++)
        k += snprintf(cmdline + k, sizeof cmdline - (size_t)k, " %s", argv[i]);

    run_ctx r = {B, T, steps, trials, warmup, gpt2c_model_config(m)->vocab_size, (unsigned long long)seed, NULL, NULL, {0}, {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0}, GPT2C_FMT_F32, 0, NULL};
    gpt2c_precision_parse(precision, &r.prec);
    /* the probe is the cpu backend's micro-kernel of the run's precision (bf16: the pair engine; none, a 0, where
     * the bf16 GEMMs run on AMX tiles): beside that backend's matmuls only */
    if (!no_probe && !infer && !strcmp(bk[0], "cpu") && !gpt2c_model_qweights(m) &&
        (r.prec == GPT2C_FMT_F32 || r.prec == GPT2C_FMT_BF16))
        r.probe_threads = main_threads;
    /* the memory probe: the host's memory, beside backends that run on it */
    if (!no_probe && (!strcmp(bk[0], "cpu") || !strcmp(bk[0], "blas")) && !(r.mem = gpt2c_mem_probe_new(0)) && !quiet)
        fprintf(stderr, "gpt2c profile: no memory for the memory probe: none beside the trials\n");
    gpt2c_rng_seed(&r.rng, (uint64_t)seed, 77);
    r.tokens = malloc(sizeof(int32_t) * (size_t)B * T);
    r.targets = malloc(sizeof(int32_t) * (size_t)B * T);
    gpt2c_profile_session *s = NULL;
    int ret = 1;
    if (!r.tokens || !r.targets) {
        cli_error(CMD, "out of memory for the batch");
        goto done;
    }
    if (infer) {
        gpt2c_model_set_threads(m, main_threads);
        if (gpt2c_model_set_backend(m, bk[0]) != GPT2C_OK) {
            cli_fail_status(CMD);
            goto done;
        }
        if (precision_arg_apply(CMD, precision, m, 1)) goto done;
    } else if (setup(m, bk[0], main_threads, &r) != GPT2C_OK) {
        cli_fail_status(CMD);
        goto done;
    }
    gpt2c_profile_opts o = gpt2c_profile_opts_default();
    o.counters = !no_counters;
    o.hw_counters = !no_hw;
    o.use_peak = !no_peak;
    o.auto_trials = 0;
    o.command_line = cmdline;
    o.model_name = model;
    o.backend = bk[0];
    if (!quiet && infer) {
        const char *fmt = gpt2c_model_qweights(m) ? gpt2c_format_get(gpt2c_model_qweights(m)->fmt)->name
                          : r.prec == GPT2C_FMT_BF16 ? "bf16" : "f32";
        fprintf(stderr, "gpt2c profile: inference of %s (%s weights), %d sequences: each prefills %d tokens%s + %d decode steps per step, %s, "
                "%d threads: %d warm-up + %d x %d steps\n", model, fmt, B, T, decode_only ? " (unprofiled)" : "", decode, bk[0],
                main_threads, warmup, trials, steps);
    } else if (!quiet)
        fprintf(stderr, "gpt2c profile: %s B=%d T=%d, %s%s, %d threads: %d warm-up + %d x %d steps\n", model, B, T, bk[0],
                precision_run_tag(r.prec, bk[0]), main_threads, warmup, trials, steps);
    for (int bi = 0; bi < nb && !quiet; bi++)
        if (strcmp(bk[bi], "blas") == 0) fprintf(stderr, "gpt2c profile: blas: %s\n", gpt2c_blas_describe());
    const profile_infer_cfg ic = {B, T, decode, steps, trials, warmup, (unsigned long long)seed, decode_only, r.mem};
    if (infer ? profile_infer_run(m, &ic, &o, &s) != GPT2C_OK : run_trials(m, &s, &o, &r) != GPT2C_OK) {
        cli_fail_status(CMD);
        goto done;
    }
    /* sweep: every backend x thread count; the main run is one of the points */
    if (nb * threads.n > 1) {
        r.probe_threads = 0; /* sweep points report step times only */
        gpt2c_mem_probe_free(r.mem);
        r.mem = NULL;
        for (int bi = 0; bi < nb; bi++)
            for (int ti = 0; ti < threads.n; ti++) {
                int th = threads.items[ti];
                if (bi == 0 && th == main_threads) {
                    gpt2c_profile_session_add_scaling(s, bk[0], th, gpt2c_profile_session_step_ms(s), NULL);
                    continue;
                }
                if (!quiet) fprintf(stderr, "gpt2c profile: sweep %s, %d threads\n", bk[bi], th);
                if (setup(m, bk[bi], th, &r) != GPT2C_OK) {
                    gpt2c_profile_session_add_scaling(s, bk[bi], th, (gpt2c_stat){0, 0, 0, 0, 0}, gpt2c_errmsg());
                    continue;
                }
                gpt2c_profile_opts so = gpt2c_profile_opts_default();
                so.counters = 0;
                so.use_peak = 0;
                so.auto_trials = 0;
                so.max_events = 1;
                gpt2c_profile_session *sw = NULL;
                if (run_trials(m, &sw, &so, &r) != GPT2C_OK) {
                    gpt2c_profile_session_add_scaling(s, bk[bi], th, (gpt2c_stat){0, 0, 0, 0, 0}, gpt2c_errmsg());
                } else {
                    gpt2c_profile_session_add_scaling(s, bk[bi], th, gpt2c_profile_session_step_ms(sw), NULL);
                }
                gpt2c_profile_session_free(sw);
                gpt2c_model_set_profiler(m, NULL);
            }
    }
    if (overhead) {
        double ov[3];
        if (setup(m, bk[0], main_threads, &r) != GPT2C_OK || measure_overhead(m, &r, trials * steps, ov) != GPT2C_OK) {
            cli_fail_status(CMD);
            goto done;
        }
        gpt2c_profile_session_set_overhead(s, ov[0], ov[1], ov[2]);
    }
    if (out && gpt2c_profile_session_write(s, out) != GPT2C_OK) {
        cli_fail_status(CMD);
        goto done;
    }
    if (!quiet) {
        char *text = NULL;
        if (gpt2c_profile_session_text(s, &text) != GPT2C_OK) {
            cli_fail_status(CMD);
            goto done;
        }
        fputs(text, stdout);
        free(text);
        if (out) printf("\nwrote %s/{report.html, summary.json, trace.json, ops.csv, *.svg}\n", out);
    }
    ret = 0;
done:
    gpt2c_profile_session_free(s);
    gpt2c_mem_probe_free(r.mem);
    gpt2c_model_free(m);
    free(r.tokens);
    free(r.targets);
    return ret;
}
