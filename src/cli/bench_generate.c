/* `gpt2c bench generate`: prefill and decode tokens/s with the KV cache.
 * Each run: reset, prefill P random ids (one pass; timed), then N greedy
 * decode steps for every sequence (timed).  Reports medians over the runs. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/infer_common.h"
#include "cli/lora_arg.h"
#include "cli/precision_arg.h"
#include "cli/quant_arg.h"
#include "gpt2c/quant.h"
#include "gpt2c/precision.h"
#include "cli/run_arg.h"
#include "gpt2c/quant_model.h"
#include "gpt2c/infer.h"
#include "gpt2c/peak.h"

/* Resident set size now (Linux /proc/self/statm; 0 elsewhere). */
static long long current_rss_bytes(void) {
    long long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%lld %lld", &pages, &rss) != 2) rss = 0;
    fclose(f);
    return rss * sysconf(_SC_PAGESIZE);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* --cpu-time: the process's CPU time (with --threads 1, immune to preemption
 * on a shared machine; with more threads it also counts their waiting) */
static uint64_t cpu_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int32_t argmax(const float *x, int V) {
    int32_t b = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

int bench_generate(int argc, char **argv) {
    const char *model = "gpt2", *backend = "cpu", *quant = NULL, *kv = NULL, *qact = NULL, *precision = "fp32", *adapter = NULL;
    int P = 512, N = 64, threads = 0, runs = 3, batch = 1, json = 0, hugepages = 0, no_peak = 0, cpu_time = 0;
    cli_opt opts[] = {
        {"--model", CLI_STR, &model, "model name (random weights) or checkpoint path [gpt2]", 0, 0},
        {"--prompt-len", CLI_INT, &P, "prompt tokens prefilled in one pass [512]", 1, 1 << 20},
        {"--tokens", CLI_INT, &N, "decode steps per run [64]", 1, 1 << 20},
        THREADS_ARG_OPT_STD(threads),
        {"--runs", CLI_INT, &runs, "timed runs; medians are reported [3]", 1, 1000},
        BATCH_ARG_OPT(batch, "sequences decoded together", 4096),
        BACKEND_ARG_OPT_STD(backend),
        {"--hugepages", CLI_FLAG, &hugepages, "move the weights into 2 MiB pages first (gpt2c_infer_hugepages)", 0, 0},
        {"--json", CLI_FLAG, &json, "print one JSON object", 0, 0},
        {"--cpu-time", CLI_FLAG, &cpu_time, "time by process CPU time (with --threads 1: immune to preemption)", 0, 0},
        {"--no-peak", CLI_FLAG, &no_peak, "no read-bandwidth figure (gpt2c_peak_get; else cached or measured once)", 0, 0},
        QUANT_ARG_OPT(quant),
        KV_ARG_OPT(kv),
        QACT_ARG_OPT(qact),
        ADAPTER_ARG_OPT(adapter),
        PRECISION_ARG_OPT(precision),
    };
    int rc = cli_parse("bench generate", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if ((rc = precision_arg_check("bench generate", precision, backend))) return rc;
    gpt2c_model *m = NULL;
    const double rss0 = (double)current_rss_bytes();
    if (cli_open_model(model, backend, 1337, &m) != GPT2C_OK) return cli_fail_status("bench generate");
    const int nthreads = gpt2c_model_set_threads(m, threads);
    if (quant_arg_apply("bench generate", quant, model, m, 1) || kv_arg_apply("bench generate", kv, m) || qact_arg_apply("bench generate", qact) || precision_arg_apply("bench generate", precision, m, 1) ||
        adapter_arg_apply("bench generate", adapter, m)) {
        gpt2c_model_free(m);
        return 1;
    }
    /* the weights' resident memory: what loading (and quantizing) left mapped */
    const double resident_mb = ((double)current_rss_bytes() - rss0) / 1e6;
    const char *fmt = gpt2c_model_qweights(m) ? gpt2c_format_get(gpt2c_model_qweights(m)->fmt)->name
                      : gpt2c_model_precision(m) == GPT2C_FMT_BF16 ? "bf16" : "f32";
    const gpt2c_config *c = gpt2c_model_config(m);
    if (P + N > c->max_seq_len) {
        gpt2c_model_free(m);
        return cli_error("bench generate", "--prompt-len %d + --tokens %d exceeds the model's context of %d", P, N,
                         c->max_seq_len);
    }
    const int huge = hugepages ? gpt2c_infer_hugepages(m) : 0;
    gpt2c_infer *s = NULL;
    /* one prefill pass for the whole prompt (chunk = P) */
    if (gpt2c_infer_create(m, batch, P + N, P, &s) != GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_status("bench generate");
    }
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)P), *ids = malloc(sizeof(int32_t) * (size_t)batch);
    double *pf = malloc(sizeof(double) * runs), *dc = malloc(sizeof(double) * runs);
    if (!prompt || !ids || !pf || !dc) {
        rc = cli_error("bench generate", "out of memory");
        goto done;
    }
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 42, 0);
    for (int i = 0; i < P; i++) prompt[i] = (int32_t)(gpt2c_rng_u64(&r) % (uint64_t)c->vocab_size);

    gpt2c_status st = GPT2C_OK;
    for (int run = -1; run < runs && st == GPT2C_OK; run++) { /* run -1: warm-up, not counted */
        gpt2c_infer_reset(s, -1);
        uint64_t (*const now)(void) = cpu_time ? cpu_now_ns : gpt2c_now_ns;
        uint64_t t0 = now();
        st = gpt2c_infer_prefill(s, 0, prompt, P, NULL);
        for (int b = 1; b < batch && st == GPT2C_OK; b++) st = gpt2c_infer_copy_seq(s, b, 0);
        uint64_t t1 = now();
        const int steps = run < 0 && N > 2 ? 2 : N; /* the warm-up takes a few steps only */
        for (int i = 0; i < steps && st == GPT2C_OK; i++) {
            for (int b = 0; b < batch; b++) ids[b] = argmax(gpt2c_infer_logits(s, b), c->vocab_size);
            st = gpt2c_infer_decode(s, ids);
        }
        uint64_t t2 = now();
        if (run >= 0) {
            pf[run] = P / ((t1 - t0) * 1e-9);
            dc[run] = (double)batch * N / ((t2 - t1) * 1e-9);
        }
    }
    if (st != GPT2C_OK) {
        rc = cli_fail_status("bench generate");
    } else {
        const double prefill = median(pf, runs), decode = median(dc, runs);
        /* weights streamed per decode step (quantized: codes + scales) */
        const double wbytes = gpt2c_model_qweights(m) ? (double)gpt2c_quant_weight_bytes(m) : (double)gpt2c_model_weight_bytes(m);
        const double step_s = batch / decode;
        /* bytes read per decode step: the weights once, and every sequence's keys and values up to its
         * position (the middle of the decode on average); the bound is that over the read bandwidth */
        const double kv_es = gpt2c_infer_kv_cache(s) == GPT2C_KV_BF16 ? 2.0 : 4.0; /* bytes per cached value */
        const double kv_bytes = 2.0 * kv_es * c->num_layers * (double)c->channels * (P + 0.5 * (N - 1)) * batch;
        const double step_bytes = wbytes + kv_bytes;
        gpt2c_peak pk = {0};
        char why[160] = "--no-peak";
        if (!no_peak && gpt2c_peak_get(nthreads, &pk, 0) != GPT2C_OK) snprintf(why, sizeof why, "%s", gpt2c_errmsg()), pk.read_gbs = 0;
        const double read_gbs = no_peak ? 0 : pk.read_gbs;
        const double bound_tok_s = read_gbs > 0 ? read_gbs * 1e9 / step_bytes * batch : 0;
        const double rss_mb = gpt2c_peak_rss_bytes() / 1e6, state_mb = gpt2c_infer_bytes(s) / 1e6;
        if (json) {
            printf("{\"model\":\"%s\",\"backend\":\"%s\",\"threads\":%d,\"prompt_len\":%d,\"tokens\":%d,\"batch\":%d,"
                   "\"runs\":%d,\"cpu_time\":%d,\"hugepages\":%d,\"prefill_tok_s\":%.1f,\"decode_tok_s\":%.1f,\"decode_ms_per_step\":%.3f,"
                   "\"decode_weight_gb_s\":%.1f,\"weights_mb\":%.1f,\"state_mb\":%.1f,\"peak_rss_mb\":%.1f,"
                   "\"format\":\"%s\",\"weights_resident_mb\":%.1f,\"decode_bytes_per_step_mb\":%.1f,"
                   "\"read_gb_s\":%.1f,\"decode_bound_tok_s\":%.1f,\"decode_pct_of_bound\":%.1f,\"kv_cache\":\"%s\",\"quant_act\":\"%s\","
                   "\"quant_prefill\":\"%s\"}\n",
                   model, backend, nthreads, P, N, batch, runs, cpu_time, huge, prefill, decode, 1e3 * step_s, wbytes / step_s / 1e9,
                   wbytes / 1e6, state_mb, rss_mb, fmt, resident_mb, step_bytes / 1e6, read_gbs, bound_tok_s,
                   bound_tok_s > 0 ? 100.0 * decode / bound_tok_s : 0.0, gpt2c_kv_cache_name(gpt2c_infer_kv_cache(s)),
                   gpt2c_qmatmul_int8_act() ? "int8" : "f32", gpt2c_qmatmul_bf16_prefill() ? "bf16" : "f32");
        } else {
            printf("model %s (%zu params, %.0f MB %s%s), backend %s, %d threads, batch %d\n", model, gpt2c_model_num_params(m),
                   wbytes / 1e6, fmt, huge ? ", 2 MiB pages" : "", backend, nthreads, batch);
            printf("prefill  P=%-5d %9.1f tok/s   (median of %d%s)\n", P, prefill, runs, cpu_time ? ", process CPU time" : "");
            printf("decode   N=%-5d %9.1f tok/s   %.2f ms/step, weights at %.1f GB/s\n", N, decode, 1e3 * step_s,
                   wbytes / step_s / 1e9);
            if (bound_tok_s > 0)
                printf("bound    %.1f MB read per step (weights + KV cache) at the read bandwidth %.1f GB/s (%s): %.1f tok/s; "
                       "decode at %.0f%% of it\n",
                       step_bytes / 1e6, read_gbs, pk.from_cache ? "cached" : "measured", bound_tok_s, 100.0 * decode / bound_tok_s);
            else
                printf("bound    %.1f MB read per step (weights + KV cache); bandwidth bound unavailable (%s)\n", step_bytes / 1e6, why);
            printf("memory   weights %.1f MB (%.1f MB resident after loading), KV cache (%s) + buffers %.1f MB, peak RSS %.1f MB\n",
                   wbytes / 1e6, resident_mb, gpt2c_kv_cache_name(gpt2c_infer_kv_cache(s)), state_mb, rss_mb);
        }
    }
done:
    free(prompt);
    free(ids);
    free(pf);
    free(dc);
    gpt2c_infer_free(s);
    gpt2c_model_free(m);
    return rc;
}
