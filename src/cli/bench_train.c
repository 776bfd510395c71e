/* `gpt2c bench train` / `gpt2c bench forward`: time training steps (forward +
 * backward + AdamW) or forward passes of a randomly initialised model, for
 * each backend and thread count; median / p10 / p90 ms, tok/s, GFLOP/s (the
 * analytic FLOPs of costs.h), % of the measured FMA peak, speedup over 1 thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/lora_arg.h"
#include "cli/memory_note.h"
#include "cli/quant_arg.h"
#include "cli/precision_arg.h"
#include "cli/run_arg.h"
#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "gpt2c/lora.h"
#include "gpt2c/model.h"
#include "gpt2c/peak.h"
#include "gpt2c/precision.h"
#include "gpt2c/train.h"
#include "kernels/kernels.h"
#include "model/costs.h"

/* process CPU time (all threads), seconds: on a shared machine, CPU ms per
 * step at 1 thread is the step time without the preemptions */
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
/* nearest-rank percentile of a sorted array */
static double pct(const double *v, int n, double p) {
    int i = (int)(p * (n - 1) + 0.5);
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* analytic FLOPs of one forward (and of forward+backward), as the profiler counts them */
static void step_flops(const gpt2c_config *c, int B, int T, double *fwd, double *train) {
    const double N = (double)B * T, C = c->channels, L = c->num_layers, NH = c->num_heads, Vp = c->padded_vocab_size;
    const double S = 0; /* state bytes do not change FLOPs */
    double f = 0, b = 0;
    const double shapes[4][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
    for (int s = 0; s < 4; s++) {
        f += L * cost_matmul_fwd(N, shapes[s][0], shapes[s][1], GPT2C_FMT_F32).flops;
        b += L * cost_matmul_bwd(N, shapes[s][0], shapes[s][1], GPT2C_FMT_F32, 1).flops;
    }
    f += L * cost_attention_fwd(B, T, C, NH, S).flops + cost_matmul_fwd(N, C, Vp, GPT2C_FMT_F32).flops;
    b += L * cost_attention_bwd(B, T, C, NH, S).flops + cost_matmul_bwd(N, C, Vp, GPT2C_FMT_F32, 1).flops;
    *fwd = f;
    *train = f + b;
}

/* the same batch every step */
typedef struct {
    const int32_t *inputs, *targets;
} fixed_batch;
static gpt2c_status fixed_next(void *ctx, const int32_t **inputs, const int32_t **targets) {
    const fixed_batch *b = ctx;
    *inputs = b->inputs;
    *targets = b->targets;
    return GPT2C_OK;
}

typedef struct {
    const char *backend;
    gpt2c_format prec;
    int threads;
    double med, p10, p90, fwd, bwd, upd, peak, cpu_ms;
    double mem; /* --mem-probe: the update stream's GB/s, mean of the runs before and after the timed steps; 0: none */
} result;

static int run_bench(const char *what, int forward_only, int argc, char **argv) {
    const char *model = "gpt2", *backends = "cpu", *isa = "auto", *precisions = "fp32", *adapter = NULL, *quant = NULL;
    lora_arg la = LORA_ARG_DEFAULTS;
    int B = 4, T = 64, steps = 10, warmup = 2, json = 0, mem_probe = 0;
    cli_intlist threads = {{0}, 0};
    cli_opt opts[] = {
        {"--model", CLI_STR, &model, "model preset (gpt2, d12, gpt2-medium, ...)", 0, 0},
        BATCH_ARG_OPT(B, "batch size B", 4096),
        SEQ_ARG_OPT(T, "sequence length T"),
        {"--steps", CLI_INT, &steps, "timed steps per configuration", 1, 100000},
        {"--warmup", CLI_INT, &warmup, "untimed steps first", 0, 1000},
        THREADS_LIST_ARG_OPT(threads, "thread counts, e.g. 1,2 (default: all cores)"),
        BACKEND_ARG_OPT(backends, "backends, comma-separated: cpu,blas,ref"),
        {"--isa", CLI_STR, &isa, "cpu backend SIMD path: auto, avx512, avx2, scalar", 0, 0},
        {"--precision", CLI_STR, &precisions, "compute precision fp32|bf16, or both interleaved: fp32,bf16", 0, 0},
        {"--json", CLI_FLAG, &json, "print one JSON object", 0, 0},
        {"--mem-probe", CLI_FLAG, &mem_probe,
         "the memory's update stream (AdamW's pattern, all cores, ~40 ms) before and after each host configuration's timed "
         "steps: mem_GB/s, the memory's rate while they ran (a VM's moves minutes apart)", 0, 0},
        LORA_ARG_OPTS(la),
        ADAPTER_ARG_OPT(adapter),
        {"--quant", CLI_STR, &quant, "with --lora-rank or --adapter (QLoRA): quantize the frozen base: q8|q4|nf4", 0, 0},
    };
    int rc = cli_parse(what, argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if ((rc = lora_arg_check(what, &la))) return rc;
    if (la.rank && adapter) return cli_error(what, "--lora-rank and --adapter: give one (fresh adapters or saved ones)");
    if (quant && !la.rank && !adapter)
        return cli_error(what, "--quant %s: a quantized base runs here only under adapters (--lora-rank or --adapter)", quant);
    gpt2c_format precs[2];
    int nprec = 0;
    char plist[64];
    snprintf(plist, sizeof plist, "%s", precisions);
    for (char *save = NULL, *p = strtok_r(plist, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if ((rc = precision_arg_check(what, p, backends))) return rc;
        if (nprec == 2) return cli_error(what, "--precision: at most two values (fp32,bf16)");
        gpt2c_precision_parse(p, &precs[nprec++]);
    }
    if (nprec == 0) return precision_arg_check(what, "", NULL);
    if (gpt2c_cpu_force_isa(isa) != GPT2C_OK) return cli_fail_option(what, "--isa");
    if (threads.n == 0) threads.items[threads.n++] = gpt2c_set_threads(0);

    gpt2c_config cfg;
    if (gpt2c_config_preset(model, &cfg) != GPT2C_OK) return cli_fail_option(what, "--model");
    gpt2c_model *m = NULL;
    if (gpt2c_model_create(&cfg, &m) != GPT2C_OK) return cli_fail_status(what);
    gpt2c_model_init_random(m, 1337);
    if (quant_arg_apply(what, quant, model, m, 1) || adapter_arg_apply(what, adapter, m) ||
        (la.rank && lora_arg_attach(what, &la, m, 1337))) {
        gpt2c_model_free(m);
        return 1;
    }
    if (gpt2c_model_lora(m) && la.rank) gpt2c_lora_set_training(gpt2c_model_lora(m), 1);
    const int N = B * T;
    int32_t *tok = malloc(sizeof(int32_t) * (N + 1));
    double *ms = malloc(sizeof(double) * steps * 4);
    if (!tok || !ms) {
        free(tok);
        free(ms);
        gpt2c_model_free(m);
        return cli_error(what, "out of memory");
    }
    gpt2c_mem_probe *probe = mem_probe ? gpt2c_mem_probe_new(0) : NULL;
    if (mem_probe && !probe && !json) printf("  (--mem-probe: no memory for the probe's array: no mem_GB/s)\n");
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 42, 0);
    for (int i = 0; i <= N; i++) tok[i] = (int32_t)(gpt2c_rng_u64(&r) % (uint64_t)cfg.vocab_size);
    double ffw, ftrain;
    step_flops(&cfg, B, T, &ffw, &ftrain);
    const double flops = forward_only ? ffw : ftrain;
    const gpt2c_step_cfg sc = {B, T, 1, 1e-4f, {0.9f, 0.95f, 1e-8f, 0.0f, 1.0f, 0}, NULL, {0}, 0};
    const fixed_batch fb = {tok, tok + 1};
    const gpt2c_batch_source src = {fixed_next, (void *)&fb, NULL};

    result res[64];
    int nres = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", backends);
    int status = 0;
    if (!json)
        printf("%s: %s B=%d T=%d, %.1f GFLOP/step, %d steps (+%d warmup), cpu isa %s, %s\n", what, model, B, T,
               flops * 1e-9, steps, warmup, gpt2c_isa_name(gpt2c_cpu_isa()), gpt2c_cpu_brand());
    for (char *save = NULL, *be = strtok_r(list, ",", &save); be && !status; be = strtok_r(NULL, ",", &save)) {
        if (gpt2c_model_set_backend(m, be) != GPT2C_OK) {
            status = cli_fail_option(what, "--backend");
            break;
        }
        if (gpt2c_model_prepare(m, B, T) != GPT2C_OK) {
            status = cli_fail_option(what, "--batch/--seq");
            break;
        }
        if (!json && strcmp(be, "blas") == 0) printf("  blas: %s\n", gpt2c_blas_describe());
        /* a GPU backend: its own peak for its matmuls' precision, not the CPU's (-1: a host backend) */
        const gpt2c_kernels *bk = NULL;
        gpt2c_device_peaks dp;
        double device_peak = -1;
        if (gpt2c_kernels_get(be, &bk) == GPT2C_OK && bk->device_peaks) {
            device_peak = bk->device_peaks(&dp) == GPT2C_OK ? dp.matmul_flops * 1e-9 : 0;
            if (!json && device_peak > 0)
                printf("  %s: %s, peak %.1f TFLOP/s for its %s matmuls (fp32 %.1f, tf32 %.1f, bf16 %.1f), %.0f GB/s\n", be,
                       dp.name, dp.matmul_flops * 1e-12, dp.matmul_precision, dp.fp32_flops * 1e-12, dp.tf32_flops * 1e-12,
                       dp.bf16_flops * 1e-12, dp.mem_bytes_per_s * 1e-9);
        }
        for (int ti = 0; ti < threads.n * nprec && nres < 64; ti++) {
            const gpt2c_format prec = precs[ti % nprec]; /* precisions interleaved per thread count */
            if (gpt2c_model_set_precision(m, prec) != GPT2C_OK) {
                status = cli_fail_option(what, "--precision");
                break;
            }
            const int nt = gpt2c_model_set_threads(m, threads.items[ti / nprec]);
            double *fw = ms + steps, *bw = ms + 2 * steps, *up = ms + 3 * steps, cpu0 = 0, mem0 = 0;
            const int host = device_peak < 0;
            for (int s = -warmup; s < steps; s++) {
                if (s == 0 && probe && host) mem0 = gpt2c_mem_probe_update(probe);
                if (s == 0) cpu0 = cpu_seconds();
                gpt2c_step_stats st = {0};
                if (forward_only) { /* a forward pass alone */
                    const uint64_t t0 = gpt2c_now_ns();
                    if (gpt2c_model_forward(m, tok, tok + 1, B, T, &st.loss) != GPT2C_OK) status = 1;
                    st.forward_ms = st.total_ms = (gpt2c_now_ns() - t0) * 1e-6;
                } else if (gpt2c_train_step(m, &sc, &src, &st) != GPT2C_OK) { /* the trainer's step */
                    status = 1;
                }
                if (status) break;
                if (s >= 0) {
                    ms[s] = st.total_ms;
                    fw[s] = st.data_ms + st.forward_ms;
                    bw[s] = st.backward_ms;
                    up[s] = st.update_ms;
                }
            }
            if (status) {
                status = cli_fail_status(what);
                break;
            }
            const double cpu_ms = (cpu_seconds() - cpu0) * 1e3 / steps;
            const double mem1 = probe && host ? gpt2c_mem_probe_update(probe) : 0;
            for (int k = 0; k < 4; k++) qsort(ms + k * steps, steps, sizeof(double), cmp_double);
            result *o = &res[nres++];
            o->backend = be;
            o->prec = prec;
            o->threads = nt;
            o->med = pct(ms, steps, 0.5);
            o->p10 = pct(ms, steps, 0.1);
            o->p90 = pct(ms, steps, 0.9);
            o->fwd = pct(fw, steps, 0.5);
            o->bwd = pct(bw, steps, 0.5);
            o->upd = pct(up, steps, 0.5);
            o->cpu_ms = cpu_ms;
            o->mem = mem0 > 0 && mem1 > 0 ? 0.5 * (mem0 + mem1) : 0;
            o->peak = device_peak >= 0           ? device_peak
                      : prec == GPT2C_FMT_BF16 ? bench_peak_bf16_gflops(nt)
                                               : bench_peak_gflops(nt);
        }
    }
    if (!status) {
        if (!json)
            printf("  %-12s %3s %9s %9s %9s %9s %8s %7s %7s | %8s %8s %8s %9s%s\n", "backend", "thr", "median_ms", "p10_ms",
                   "p90_ms", "tok/s", "GFLOP/s", "%peak", "x1thr", "fwd_ms", "bwd_ms", "upd_ms", "cpu_ms", probe ? "  mem_GB/s" : "");
        else
            printf("{\"bench\":\"%s\",\"model\":\"%s\",\"batch\":%d,\"seq\":%d,\"steps\":%d,\"isa\":\"%s\",\"gflop_per_step\":%.3f,"
                   "\"median_ms\":%.3f,\"tok_s\":%.1f,\"results\":[",
                   what, model, B, T, steps, gpt2c_isa_name(gpt2c_cpu_isa()), flops * 1e-9, res[nres - 1].med,
                   N / (res[nres - 1].med * 1e-3));
        for (int i = 0; i < nres; i++) {
            const result *o = &res[i];
            double one = 0;
            for (int j = 0; j < nres; j++)
                if (res[j].threads == 1 && strcmp(res[j].backend, o->backend) == 0 && res[j].prec == o->prec) one = res[j].med;
            const double gf = flops / (o->med * 1e-3) * 1e-9, tps = N / (o->med * 1e-3);
            char spd[32] = "n/a", pk[32] = "unavail";
            if (one > 0) snprintf(spd, sizeof spd, "%.2f", one / o->med);
            if (o->peak > 0) snprintf(pk, sizeof pk, "%.1f", 100 * gf / o->peak);
            char label[32];
            snprintf(label, sizeof label, "%s%s", o->backend, o->prec == GPT2C_FMT_BF16 ? "/bf16" : "");
            char mem[32] = "", memj[32] = "null";
            if (probe && o->mem > 0) snprintf(mem, sizeof mem, " %9.1f", o->mem), snprintf(memj, sizeof memj, "%.1f", o->mem);
            else if (probe) snprintf(mem, sizeof mem, " %9s", "-");
            if (!json)
                printf("  %-12s %3d %9.1f %9.1f %9.1f %9.0f %8.1f %7s %7s | %8.1f %8.1f %8.1f %9.1f%s\n", label,
                       o->threads, o->med, o->p10, o->p90, tps, gf, pk, spd, o->fwd, o->bwd, o->upd, o->cpu_ms, mem);
            else
                printf("%s{\"backend\":\"%s\",\"precision\":\"%s\",\"threads\":%d,\"median_ms\":%.3f,\"p10_ms\":%.3f,\"p90_ms\":%.3f,\"tok_s\":%.1f,"
                       "\"gflops\":%.2f,\"peak_gflops\":%.1f,\"speedup_vs_1thread\":%s,\"forward_ms\":%.3f,\"backward_ms\":%.3f,"
                       "\"update_ms\":%.3f,\"cpu_ms_per_step\":%.3f,\"mem_update_gb_per_s\":%s}",
                       i ? "," : "", o->backend, gpt2c_precision_name(o->prec), o->threads, o->med, o->p10, o->p90, tps, gf, o->peak,
                       one > 0 ? spd : "null", o->fwd, o->bwd, o->upd, o->cpu_ms, memj);
        }
        /* what the run held: peak RSS of the process (with the memory probe's array, if any) and the bytes of each slab */
        const gpt2c_model_bytes mb = gpt2c_model_memory(m);
        const double MiB = 1048576.0, rss = (double)gpt2c_peak_rss_bytes();
        if (json)
            printf("],\"lora_rank\":%d,\"quant\":\"%s\",\"peak_rss_bytes\":%.0f,\"mem_probe_mib\":%d,\"bytes\":{\"params\":%zu,\"quantized\":%zu,"
                   "\"grads\":%zu,\"moments\":%zu,\"acts\":%zu,\"acts_backward\":%zu,\"lora_params\":%zu,"
                   "\"lora_state\":%zu,\"lora_acts\":%zu}}\n",
                   gpt2c_model_lora(m) ? gpt2c_lora_config(gpt2c_model_lora(m))->rank : 0, quant ? quant : "f32", rss,
                   probe ? gpt2c_mem_probe_mib(probe) : 0,
                   mb.params, mb.quantized, mb.grads, mb.moments, mb.acts, mb.acts_backward, mb.lora_params,
                   mb.lora_state, mb.lora_acts);
        else {
            printf("  (%%peak: of the FMA peak measured now for isa %s at that thread count (/bf16 rows: of the bf16 GEMM's\n"
                   "   ceiling: vdpbf16ps's where they run on it, else the FMA peak; a GPU row: of the GPU's dense peak\n"
                   "   above, from its SMs and max clock); cpu_ms: process CPU time per\n"
                   "   step, all threads: at 1 thread, the step time without preemption by other jobs)\n",
                   gpt2c_isa_name(gpt2c_cpu_isa()));
            char with_probe[64] = "";
            if (probe) snprintf(with_probe, sizeof with_probe, " (with the memory probe's %d MiB)", gpt2c_mem_probe_mib(probe));
            char bf16[96] = "";
            if (mb.bf16_copies)
                snprintf(bf16, sizeof bf16, ", bf16 copies %.1f + GEMM panels %.1f", mb.bf16_copies / MiB, mb.bf16_panels / MiB);
            char huge[160];
            cli_huge_pages_note(huge, sizeof huge, m);
            printf("  memory: peak RSS %.1f MiB%s; parameters %.1f MiB (quantized weights %.1f)%s, gradients %.1f, AdamW "
                   "moments %.1f, activations %.1f + backward %.1f, LoRA %.2f (+ grads/moments %.2f, activations %.2f)%s\n",
                   rss / MiB, with_probe, mb.params / MiB, mb.quantized / MiB, bf16, mb.grads / MiB, mb.moments / MiB,
                   mb.acts / MiB, mb.acts_backward / MiB, mb.lora_params / MiB, mb.lora_state / MiB, mb.lora_acts / MiB, huge);
        }
    }
    gpt2c_mem_probe_free(probe);
    free(ms);
    free(tok);
    gpt2c_model_free(m);
    return status;
}

int bench_train(int argc, char **argv) { return run_bench("bench train", 0, argc, argv); }
int bench_forward(int argc, char **argv) { return run_bench("bench forward", 1, argc, argv); }
