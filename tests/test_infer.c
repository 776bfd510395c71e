/* Inference engine: logits with the KV cache equal a full recomputation
 * (gpt2c_model_forward, ref backend) at every position, for prefill in
 * chunks, one-token decode and a batch of sequences at different positions;
 * the cpu backend's decode kernels match ref; sampling is reproducible;
 * bad input gets a one-line error. */
#include <math.h>
#include <stdint.h>

#include "gpt2c/cpu.h"

#include "gpt2c/infer.h"
#include "gpt2c/model.h"
#include "kernels/kernels.h"
#include "testutil.h"
#include "model/model_internal.h"

/* A tiny random model: odd sizes so tails and head splits are exercised. */
static gpt2c_model *tiny(const char *backend, int C, int NH, int L) {
    gpt2c_config cfg = {.max_seq_len = 48, .vocab_size = 203, .padded_vocab_size = 0, .num_layers = L,
                        .num_heads = NH, .channels = C};
    gpt2c_model *m = NULL;
    if (gpt2c_config_check(&cfg, "tiny") != GPT2C_OK || gpt2c_model_create(&cfg, &m) != GPT2C_OK) return NULL;
    gpt2c_model_init_random(m, 42);
    /* larger biases and layernorm params than the init, so every path matters */
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 7, 0);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
        if (m->info[id].ndim == 1)
            for (size_t i = 0; i < m->info[id].numel; i++) m->params.t[id][i] += 0.1f * gpt2c_rng_normal(&r);
    if (gpt2c_model_set_backend(m, backend) != GPT2C_OK) return NULL;
    return m;
}

/* Full recomputation of the logits of tokens (T) with the model's forward. */
static float *full_logits(gpt2c_model *m, const int32_t *tokens, int T) {
    const size_t Vp = (size_t)m->cfg.padded_vocab_size;
    if (gpt2c_model_forward(m, tokens, NULL, 1, T, NULL) != GPT2C_OK) return NULL;
    float *out = malloc(sizeof(float) * T * Vp);
    memcpy(out, gpt2c_model_logits(m), sizeof(float) * T * Vp);
    return out;
}

/* max relative error over the real vocabulary of rows (n, Vp) */
static double rows_err(const float *a, const float *b, int n, int V, int Vp) {
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double e = tu_max_rel_err(a + (size_t)i * Vp, b + (size_t)i * Vp, (size_t)V, 1e-3);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static void check_cache_equals_full(const char *backend, double tol, int C, int NH, int L) {
    gpt2c_model *ref = tiny("ref", C, NH, L), *m = tiny(backend, C, NH, L);
    CHECK(ref && m);
    if (!ref || !m) return;
    const int T = 37, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    int32_t tok[64];
    for (int i = 0; i < T; i++) tok[i] = (i * 37 + 11) % V;
    float *want = full_logits(ref, tok, T);
    CHECK(want != NULL);

    /* prefill in chunks of 8 (the last one partial), all logits */
    gpt2c_infer *s = NULL;
    CHECK_OK(gpt2c_infer_create(m, 3, 0, 8, &s));
    float *got = malloc(sizeof(float) * T * Vp);
    CHECK_OK(gpt2c_infer_prefill(s, 1, tok, T, got));
    double e = rows_err(got, want, T, V, Vp);
    CHECK_MSG(e < tol, "%s C=%d: chunked prefill vs full recompute: rel err %.3g", backend, C, e);
    CHECK(gpt2c_infer_pos(s, 1) == T && gpt2c_infer_pos(s, 0) == 0);
    e = rows_err(gpt2c_infer_logits(s, 1), want + (size_t)(T - 1) * Vp, 1, V, Vp);
    CHECK_MSG(e < tol, "%s: last logits after prefill: %.3g", backend, e);

    /* prefill without all logits (LM head on the last row only) */
    gpt2c_infer_reset(s, -1);
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, 5, NULL));
    float *want5 = full_logits(ref, tok, 5);
    e = rows_err(gpt2c_infer_logits(s, 0), want5 + 4 * (size_t)Vp, 1, V, Vp);
    CHECK_MSG(e < tol, "%s: last-row prefill: %.3g", backend, e);

    /* batch decode with three sequences at different positions:
     * seq 0 prefilled 5, seq 1 prefilled 1, seq 2 a copy of seq 0 then 2 more;
     * then decode steps, each compared with the full recomputation at that position */
    CHECK_OK(gpt2c_infer_prefill(s, 1, tok, 1, NULL));
    CHECK_OK(gpt2c_infer_copy_seq(s, 2, 0));
    CHECK_OK(gpt2c_infer_prefill(s, 2, tok + 5, 2, NULL));
    int len[3] = {5, 1, 7};
    for (int step = 0; step < 20; step++) {
        int32_t next[3];
        for (int b = 0; b < 3; b++) next[b] = tok[len[b]];
        CHECK_OK(gpt2c_infer_decode(s, next));
        for (int b = 0; b < 3; b++) {
            len[b]++;
            e = rows_err(gpt2c_infer_logits(s, b), want + (size_t)(len[b] - 1) * Vp, 1, V, Vp);
            CHECK_MSG(e < tol, "%s: decode seq %d at position %d: rel err %.3g", backend, b, len[b] - 1, e);
        }
    }
    free(want);
    free(want5);
    free(got);
    gpt2c_infer_free(s);
    gpt2c_model_free(ref);
    gpt2c_model_free(m);
}

/* the cpu kernels on decode-shaped and prefill-shaped matmuls against ref */
static void check_matmul_kernels(void) {
    const gpt2c_kernels *ref = gpt2c_kernels_ref(), *cpu = NULL;
    CHECK_OK(gpt2c_kernels_get("cpu", &cpu));
    if (!cpu) return;
    const int shapes[][3] = {{1, 768, 2304}, {3, 64, 50}, {16, 96, 384}, {5, 384, 96}, {37, 40, 203}, {2, 17, 9}, {40, 600, 70}, {25, 520, 33}};
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 3, 0);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int N = shapes[si][0], IC = shapes[si][1], OC = shapes[si][2];
        float *x = malloc(sizeof(float) * N * IC), *w = malloc(sizeof(float) * OC * IC), *b = malloc(sizeof(float) * OC);
        float *o1 = malloc(sizeof(float) * N * OC), *o2 = malloc(sizeof(float) * N * OC);
        for (int i = 0; i < N * IC; i++) x[i] = gpt2c_rng_normal(&r);
        for (int i = 0; i < OC * IC; i++) w[i] = 0.05f * gpt2c_rng_normal(&r);
        for (int i = 0; i < OC; i++) b[i] = gpt2c_rng_normal(&r);
        const gpt2c_tensor W = gpt2c_tensor_f32(w, OC, IC);
        for (int act = 0; act < 2; act++) {
            ref->matmul_infer_range(o1, x, &W, act ? b : NULL, N, IC, OC, act, 0, OC);
            /* in two ranges, the cut not on a tile boundary */
            const int cut = OC / 3 + 1;
            cpu->matmul_infer_range(o2, x, &W, act ? b : NULL, N, IC, OC, act, 0, cut);
            cpu->matmul_infer_range(o2, x, &W, act ? b : NULL, N, IC, OC, act, cut, OC);
            double e = tu_max_rel_err(o2, o1, (size_t)N * OC, 1e-3);
            CHECK_MSG(e < 1e-5, "matmul_infer N=%d IC=%d OC=%d act=%d: rel err %.3g", N, IC, OC, act, e);
        }
        free(x), free(w), free(b), free(o1), free(o2);
    }
}

/* Decode-shaped fp32 matmuls (fewer than 24 rows: the dot-product tiles)
 * give each row the bits it gets alone: a tile of several rows and outputs
 * runs each dot product's own FMAs, tail and reduction (the AVX-512 and AVX2
 * tiles, the portable loop), whatever N and the range's cut. */
static void check_decode_rows_bits(void) {
    const gpt2c_kernels *cpu = NULL;
    CHECK_OK(gpt2c_kernels_get("cpu", &cpu));
    if (!cpu) return;
    const int shapes[][3] = {{8, 768, 70}, {5, 770, 33}, {4, 13, 9}, {23, 64, 37}, {2, 40, 11}, {7, 3072, 6}};
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 9, 0);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int N = shapes[si][0], IC = shapes[si][1], OC = shapes[si][2];
        float *x = malloc(sizeof(float) * N * IC), *w = malloc(sizeof(float) * OC * IC), *b = malloc(sizeof(float) * OC);
        float *all = malloc(sizeof(float) * N * OC), *one = malloc(sizeof(float) * OC);
        for (int i = 0; i < N * IC; i++) x[i] = gpt2c_rng_normal(&r);
        for (int i = 0; i < OC * IC; i++) w[i] = 0.05f * gpt2c_rng_normal(&r);
        for (int i = 0; i < OC; i++) b[i] = gpt2c_rng_normal(&r);
        const gpt2c_tensor W = gpt2c_tensor_f32(w, OC, IC);
        for (int act = 0; act < 2; act++) {
            const int cut = OC / 2 + 1; /* two ranges, an odd count of outputs in the first where OC allows */
            cpu->matmul_infer_range(all, x, &W, b, N, IC, OC, act, 0, cut);
            cpu->matmul_infer_range(all, x, &W, b, N, IC, OC, act, cut, OC);
            size_t bad = 0;
            for (int n = 0; n < N; n++) {
                cpu->matmul_infer_range(one, x + (size_t)n * IC, &W, b, 1, IC, OC, act, 0, OC);
                bad += memcmp(one, all + (size_t)n * OC, sizeof(float) * OC) != 0;
            }
            CHECK_MSG(bad == 0, "decode matmul N=%d IC=%d OC=%d act=%d: %zu rows differ from the row alone", N, IC, OC, act, bad);
        }
        free(x), free(w), free(b), free(all), free(one);
    }
}

/* Prefill-shaped fp32 matmuls (>= 24 rows: the fp32 GEMM on AVX-512) keep
 * the arithmetic prefill has always had, bit for bit: each output is the bias
 * then one fused multiply-add per input channel, in order (the GELU after it
 * is the kernel's own, so only act none is checked here). */
static void check_prefill_matmul_bits(void) {
    const gpt2c_kernels *cpu = NULL;
    CHECK_OK(gpt2c_kernels_get("cpu", &cpu));
    if (!cpu) return;
    const int shapes[][3] = {{40, 600, 70}, {25, 520, 33}, {64, 768, 200}, {30, 17, 129}};
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 5, 0);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int N = shapes[si][0], IC = shapes[si][1], OC = shapes[si][2];
        float *x = malloc(sizeof(float) * N * IC), *w = malloc(sizeof(float) * OC * IC), *b = malloc(sizeof(float) * OC);
        float *o = malloc(sizeof(float) * N * OC);
        for (int i = 0; i < N * IC; i++) x[i] = gpt2c_rng_normal(&r);
        for (int i = 0; i < OC * IC; i++) w[i] = 0.05f * gpt2c_rng_normal(&r);
        for (int i = 0; i < OC; i++) b[i] = gpt2c_rng_normal(&r);
        const gpt2c_tensor W = gpt2c_tensor_f32(w, OC, IC);
        for (int o0 = 0; o0 < OC; o0 += 64) /* in stage-sized ranges */
            cpu->matmul_infer_range(o, x, &W, b, N, IC, OC, GPT2C_ACT_NONE, o0, o0 + 64 < OC ? o0 + 64 : OC);
        size_t bad = 0;
        for (int n = 0; n < N; n++)
            for (int oc = 0; oc < OC; oc++) {
                float acc = b[oc];
                for (int i = 0; i < IC; i++) acc = fmaf(x[(size_t)n * IC + i], w[(size_t)oc * IC + i], acc);
                bad += memcmp(&acc, &o[(size_t)n * OC + oc], 4) != 0;
            }
        if (gpt2c_cpu_isa() == GPT2C_ISA_AVX512 || gpt2c_cpu_isa() == GPT2C_ISA_AVX2) /* the fp32 GEMM's order */
            CHECK_MSG(bad == 0, "prefill matmul N=%d IC=%d OC=%d: %zu outputs not the in-order FMA sum", N, IC, OC, bad);
        free(x), free(w), free(b), free(o);
    }
}

static void check_sampling(void) {
    const int V = 1000;
    float *logits = malloc(sizeof(float) * V);
    for (int i = 0; i < V; i++) logits[i] = (float)((i * 7919) % 101) / 20.0f;
    int32_t a[200], b[200];
    gpt2c_sampling sp = gpt2c_sampling_default();
    sp.temperature = 0.9f;
    sp.top_k = 40;
    sp.top_p = 0.9f;
    sp.seed = 5;
    for (int run = 0; run < 2; run++) {
        gpt2c_sampler *smp = NULL;
        CHECK_OK(gpt2c_sampler_create(&sp, V, 2, &smp));
        if (!smp) return;
        for (int i = 0; i < 200; i++) (run ? b : a)[i] = gpt2c_sampler_next(smp, i % 2, logits);
        gpt2c_sampler_free(smp);
    }
    CHECK(memcmp(a, b, sizeof a) == 0); /* same seed: same draws */
    int distinct = 0, in_topk = 1;
    for (int i = 0; i < 200; i++) {
        distinct += a[i] != a[0];
        int rank = 0; /* ids with a strictly larger logit */
        for (int j = 0; j < V; j++) rank += logits[j] > logits[a[i]];
        if (rank >= 40) in_topk = 0;
    }
    CHECK(distinct > 0);
    CHECK(in_topk);
    /* greedy = argmax, lowest id on ties */
    sp.temperature = 0;
    gpt2c_sampler *g = NULL;
    CHECK_OK(gpt2c_sampler_create(&sp, V, 1, &g));
    int32_t best = 0;
    for (int j = 1; j < V; j++)
        if (logits[j] > logits[best]) best = j;
    CHECK(g && gpt2c_sampler_next(g, 0, logits) == best);
    gpt2c_sampler_free(g);
    /* top_p tiny: always the single most likely id */
    sp.temperature = 1;
    sp.top_k = 0;
    sp.top_p = 1e-6f;
    CHECK_OK(gpt2c_sampler_create(&sp, V, 1, &g));
    for (int i = 0; i < 10; i++) CHECK(g && gpt2c_sampler_next(g, 0, logits) == best);
    gpt2c_sampler_free(g);
    /* the draws follow softmax(logits / T): p = 1/7, 2/7, 4/7 at T = 1; at T = 2, 1/(1+sqrt2+2), ... */
    {
        const float l4[3] = {0.0f, logf(2.0f), logf(4.0f)};
        for (int ti = 0; ti < 2; ti++) {
            gpt2c_sampling u = gpt2c_sampling_default();
            u.temperature = ti ? 2.0f : 1.0f;
            gpt2c_sampler *su = NULL;
            CHECK_OK(gpt2c_sampler_create(&u, 3, 1, &su));
            if (!su) break;
            int cnt[3] = {0, 0, 0};
            const int draws = 30000;
            for (int i = 0; i < draws; i++) cnt[gpt2c_sampler_next(su, 0, l4)]++;
            const double r = ti ? sqrt(2.0) : 2.0, z = 1 + r + r * r;
            const double want[3] = {1 / z, r / z, r * r / z};
            for (int j = 0; j < 3; j++)
                CHECK_MSG(fabs((double)cnt[j] / draws - want[j]) < 0.015, "T=%g id %d: frequency %.4f, want %.4f",
                          (double)u.temperature, j, (double)cnt[j] / draws, want[j]);
            gpt2c_sampler_free(su);
        }
        /* top-k 2 renormalizes over ids 1 and 2: 1/3, 2/3 */
        gpt2c_sampling u = gpt2c_sampling_default();
        u.top_k = 2;
        gpt2c_sampler *su = NULL;
        CHECK_OK(gpt2c_sampler_create(&u, 3, 1, &su));
        int cnt[3] = {0, 0, 0};
        for (int i = 0; su && i < 30000; i++) cnt[gpt2c_sampler_next(su, 0, l4)]++;
        CHECK_MSG(cnt[0] == 0 && fabs(cnt[1] / 30000.0 - 1 / 3.0) < 0.015, "top-k 2: %d %d %d", cnt[0], cnt[1], cnt[2]);
        gpt2c_sampler_free(su);
    }
    /* invalid values */
    gpt2c_sampling bad = gpt2c_sampling_default();
    bad.temperature = -1;
    CHECK_FAILS(gpt2c_sampling_check(&bad), GPT2C_ERR_ARG);
    bad = gpt2c_sampling_default();
    bad.top_p = 0;
    CHECK_FAILS(gpt2c_sampling_check(&bad), GPT2C_ERR_ARG);
    bad.top_p = 1.5f;
    CHECK_FAILS(gpt2c_sampling_check(&bad), GPT2C_ERR_ARG);
    bad = gpt2c_sampling_default();
    bad.top_k = -3;
    CHECK_FAILS(gpt2c_sampling_check(&bad), GPT2C_ERR_ARG);
    free(logits);
}

static int count_tokens(void *user, int seq, int32_t id) {
    (void)seq;
    (void)id;
    (*(int *)user)++;
    return 0;
}

static void check_bad_input(void) {
    gpt2c_model *m = tiny("cpu", 32, 4, 1);
    CHECK(m != NULL);
    if (!m) return;
    gpt2c_infer *s = NULL;
    CHECK_FAILS(gpt2c_infer_create(m, 1, 4096, 0, &s), GPT2C_ERR_ARG); /* ctx beyond the model's */
    CHECK_FAILS(gpt2c_infer_create(m, 0, 0, 0, &s), GPT2C_ERR_ARG);
    CHECK_OK(gpt2c_infer_create(m, 2, 16, 0, &s));
    if (!s) return;
    int32_t tok[20] = {1, 2, 3, 500, 4};
    CHECK_FAILS(gpt2c_infer_prefill(s, 0, tok, 5, NULL), GPT2C_ERR_RANGE); /* id 500 >= V */
    tok[3] = -1;
    CHECK_FAILS(gpt2c_infer_prefill(s, 0, tok, 5, NULL), GPT2C_ERR_RANGE);
    tok[3] = 4;
    CHECK_FAILS(gpt2c_infer_prefill(s, 0, tok, 17, NULL), GPT2C_ERR_RANGE); /* longer than ctx */
    CHECK_FAILS(gpt2c_infer_prefill(s, 0, tok, 0, NULL), GPT2C_ERR_ARG);
    gpt2c_sampling sp = gpt2c_sampling_default();
    gpt2c_sampler *smp = NULL;
    CHECK_OK(gpt2c_sampler_create(&sp, m->cfg.vocab_size, 2, &smp));
    int n = 0;
    CHECK_FAILS(gpt2c_generate(s, smp, tok, 5, 12, -1, count_tokens, &n, NULL), GPT2C_ERR_RANGE); /* 5+12 > 16 */
    CHECK_FAILS(gpt2c_generate(s, smp, tok, 17, 0, -1, count_tokens, &n, NULL), GPT2C_ERR_RANGE);
    gpt2c_gen_stats st;
    CHECK_OK(gpt2c_generate(s, smp, tok, 5, 11, -1, count_tokens, &n, &st)); /* exactly fills the context */
    CHECK(n == 2 * 11 && st.generated == 11 && st.decode_steps == 10);
    /* the last sampled id is never fed: one more step fits, then the context is full */
    int32_t two[2] = {1, 1};
    CHECK_OK(gpt2c_infer_decode(s, two));
    CHECK_FAILS(gpt2c_infer_decode(s, two), GPT2C_ERR_RANGE);
    gpt2c_sampler_free(smp);
    gpt2c_infer_free(s);
    gpt2c_model_free(m);
}

/* decode of some sequences = the same rows of a decode of all, bit for bit; the
 * others keep their positions and caches (a server's slots that are idle or mid-prefill) */
static void check_decode_some(const char *backend) {
    gpt2c_model *m = tiny(backend, 48, 4, 2);
    CHECK(m != NULL);
    if (!m) return;
    const int B = 4, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    gpt2c_infer *all = NULL, *some = NULL;
    CHECK_OK(gpt2c_infer_create(m, B, 32, 0, &all));
    CHECK_OK(gpt2c_infer_create(m, B, 32, 0, &some));
    if (!all || !some) return;
    int32_t tok[16];
    for (int i = 0; i < 16; i++) tok[i] = (i * 29 + 3) % V;
    for (int b = 0; b < B; b++) { /* sequences at different positions */
        CHECK_OK(gpt2c_infer_prefill(all, b, tok + b, 2 + 3 * b, NULL));
        CHECK_OK(gpt2c_infer_prefill(some, b, tok + b, 2 + 3 * b, NULL));
    }
    float *rows = malloc(sizeof(float) * B * Vp);
    const int seqs[2] = {3, 1};
    for (int step = 0; step < 5; step++) {
        int32_t next[4] = {tok[step], tok[step + 1], tok[step + 2], tok[step + 3]};
        CHECK_OK(gpt2c_infer_decode(all, next));
        const int32_t two[2] = {next[3], next[1]};
        CHECK_OK(gpt2c_infer_decode_some(some, seqs, 2, two, rows));
        for (int i = 0; i < 2; i++) {
            const int b = seqs[i];
            CHECK_MSG(memcmp(rows + (size_t)i * Vp, gpt2c_infer_logits(all, b), sizeof(float) * V) == 0,
                      "%s: decode_some row %d (seq %d) differs from a full decode at step %d", backend, i, b, step);
            CHECK(memcmp(gpt2c_infer_logits(some, b), gpt2c_infer_logits(all, b), sizeof(float) * V) == 0);
            CHECK(gpt2c_infer_pos(some, b) == gpt2c_infer_pos(all, b));
        }
        CHECK(gpt2c_infer_pos(some, 0) == 2 && gpt2c_infer_pos(some, 2) == 8); /* untouched */
    }
    /* the untouched sequences continue where they were: one more prefill token each equals */
    gpt2c_infer_reset(all, 0);
    CHECK_OK(gpt2c_infer_prefill(all, 0, tok, 3, NULL));
    CHECK_OK(gpt2c_infer_prefill(some, 0, tok + 2, 1, NULL));
    double e = tu_max_rel_err(gpt2c_infer_logits(some, 0), gpt2c_infer_logits(all, 0), (size_t)V, 1e-3);
    CHECK_MSG(e < 1e-4, "%s: an untouched sequence continues after decode_some: rel err %.3g", backend, e);
    /* bad input */
    const int dup[2] = {1, 1}, out[1] = {4};
    const int32_t ids[2] = {1, 2}, bad_id[1] = {V};
    CHECK_FAILS(gpt2c_infer_decode_some(some, dup, 2, ids, rows), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_infer_decode_some(some, out, 1, ids, rows), GPT2C_ERR_RANGE);
    CHECK_FAILS(gpt2c_infer_decode_some(some, seqs, 1, bad_id, rows), GPT2C_ERR_RANGE);
    CHECK_FAILS(gpt2c_infer_decode_some(some, seqs, 0, ids, rows), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_infer_decode_some(some, seqs, 5, ids, rows), GPT2C_ERR_ARG);
    free(rows);
    gpt2c_infer_free(all);
    gpt2c_infer_free(some);
    gpt2c_model_free(m);
}

/* with a profiler attached the pass runs on one thread, one scope per stage; same logits */
static void check_profiled(void) {
    gpt2c_model *m = tiny("cpu", 48, 4, 2);
    CHECK(m != NULL);
    if (!m) return;
    gpt2c_infer *s = NULL;
    CHECK_OK(gpt2c_infer_create(m, 1, 0, 0, &s));
    if (!s) return;
    const int Vp = m->cfg.padded_vocab_size;
    int32_t tok[6] = {5, 6, 7, 8, 9, 10};
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, 6, NULL));
    float *plain = malloc(sizeof(float) * Vp);
    memcpy(plain, gpt2c_infer_logits(s, 0), sizeof(float) * Vp);
    CHECK(gpt2c_infer_hugepages(m) == 0); /* the tiny slab holds no whole 2 MiB page */
    gpt2c_profiler prof;
    CHECK_OK(gpt2c_profiler_init(&prof, 4096));
    m->prof = &prof;
    gpt2c_infer_reset(s, -1);
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, 6, NULL));
    CHECK(prof.n == (size_t)(2 + 8 * m->cfg.num_layers));
    CHECK(memcmp(plain, gpt2c_infer_logits(s, 0), sizeof(float) * Vp) == 0); /* thread count does not matter */
    m->prof = NULL;
    gpt2c_profiler_free(&prof);
    free(plain);
    gpt2c_infer_free(s);
    gpt2c_model_free(m);
}

int main(void) {
    check_cache_equals_full("ref", 1e-5, 48, 4, 2);
    check_cache_equals_full("cpu", 1e-4, 48, 4, 2);
    check_cache_equals_full("cpu", 1e-4, 64, 2, 2);   /* hs = 32 */
    check_cache_equals_full("cpu", 1e-4, 80, 5, 1);   /* hs = 16, C not a multiple of 32 */
    check_matmul_kernels();
    check_decode_rows_bits();
    check_prefill_matmul_bits();
    check_sampling();
    check_bad_input();
    check_decode_some("ref");
    check_decode_some("cpu");
    check_profiled();
    return tu_finish("test_infer");
}
