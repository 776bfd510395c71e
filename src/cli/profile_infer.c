/* `gpt2c profile --infer` (implied by `--quant FMT` or a quantized
 * checkpoint): profile inference instead of training.  One profiled step =
 * reset the KV cache, prefill --seq random tokens into each of the --batch
 * sequences and --decode greedy steps for all of them (B x (T + decode)
 * tokens through the model); every
 * stage of the inference pass is a profiler scope (src/infer/infer_forward.c),
 * so the tables show the quantized matmuls, attention over the cache, etc.
 * --decode-only: the prefill runs before each step with the profiler
 * detached, so the tables are those of the decode steps alone. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/profile_infer.h"
#include "gpt2c/infer.h"

static int32_t argmax(const float *x, int V) {
    int32_t b = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* one inference step (prefill + decode), marked in session ps if any */
static gpt2c_status infer_step(gpt2c_model *m, gpt2c_infer *s, gpt2c_profile_session *ps, int step, const profile_infer_cfg *c,
                               const int32_t *prompt, int32_t *ids, int V) {
    if (c->decode_only) { /* the prefill outside the step, with the profiler detached */
        if (ps) gpt2c_model_set_profiler(m, NULL);
        gpt2c_infer_reset(s, -1);
        gpt2c_status st = GPT2C_OK;
        for (int b = 0; b < c->B && st == GPT2C_OK; b++) st = gpt2c_infer_prefill(s, b, prompt, c->T, NULL);
        if (ps) gpt2c_model_set_profiler(m, gpt2c_profile_session_profiler(ps));
        GPT2C_TRY(st);
    }
    if (ps) gpt2c_profile_session_step_begin(ps, step), gpt2c_profile_session_phase(ps, GPT2C_PHASE_FORWARD);
    if (!c->decode_only) {
        gpt2c_infer_reset(s, -1);
        for (int b = 0; b < c->B; b++) GPT2C_TRY(gpt2c_infer_prefill(s, b, prompt, c->T, NULL));
    }
    for (int i = 0; i < c->decode; i++) {
        for (int b = 0; b < c->B; b++) ids[b] = argmax(gpt2c_infer_logits(s, b), V);
        GPT2C_TRY(gpt2c_infer_decode(s, ids));
    }
    if (ps) gpt2c_profile_session_step_end(ps);
    return GPT2C_OK;
}

gpt2c_status profile_infer_run(gpt2c_model *m, const profile_infer_cfg *c, const gpt2c_profile_opts *o,
                               gpt2c_profile_session **out) {
    const gpt2c_config *cfg = gpt2c_model_config(m);
    if (c->T + c->decode > cfg->max_seq_len)
        return gpt2c_fail(GPT2C_ERR_ARG, "--seq %d + --decode %d exceeds the model's context of %d", c->T, c->decode,
                          cfg->max_seq_len);
    gpt2c_infer *s = NULL;
    GPT2C_TRY(gpt2c_infer_create(m, c->B, c->T + c->decode, c->T, &s));
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)c->T), *ids = malloc(sizeof(int32_t) * (size_t)c->B);
    gpt2c_status st = prompt && ids ? GPT2C_OK : gpt2c_fail(GPT2C_ERR_NOMEM, "profile: out of memory for the prompt");
    gpt2c_rng r;
    gpt2c_rng_seed(&r, c->seed, 91);
    for (int i = 0; st == GPT2C_OK && i < c->T; i++) prompt[i] = (int32_t)(gpt2c_rng_u64(&r) % (uint64_t)cfg->vocab_size);
    for (int i = 0; st == GPT2C_OK && i < c->warmup; i++) st = infer_step(m, s, NULL, -1 - i, c, prompt, ids, cfg->vocab_size);
    if (st == GPT2C_OK) st = gpt2c_profile_session_begin(out, m, o);
    if (st == GPT2C_OK) gpt2c_profile_session_set_tokens(*out, c->B, (c->decode_only ? 0 : c->T) + c->decode); /* tokens through the model per step */
    if (st == GPT2C_OK) gpt2c_profile_session_attach_mem_probe(*out, c->mem);
    int step = 0;
    for (int t = 0; st == GPT2C_OK && t < c->trials; t++) {
        for (int i = 0; st == GPT2C_OK && i < c->steps; i++) st = infer_step(m, s, *out, step++, c, prompt, ids, cfg->vocab_size);
        if (st == GPT2C_OK) gpt2c_profile_session_trial_end(*out);
    }
    if (*out) {
        const gpt2c_status e = gpt2c_profile_session_end(*out);
        if (st == GPT2C_OK) st = e;
    }
    free(prompt), free(ids);
    gpt2c_infer_free(s);
    return st;
}
