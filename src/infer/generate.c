/* The generation loop: prefill the prompt once, share its cache with every
 * sequence, then decode one token per sequence per step, streaming each id. */
#include <string.h>

#include "gpt2c/core.h"
#include "infer/infer_state.h"

gpt2c_status gpt2c_generate(gpt2c_infer *s, gpt2c_sampler *smp, const int32_t *prompt, int n, int max_tokens,
                            int eot, gpt2c_token_fn on_token, void *user, gpt2c_gen_stats *stats) {
    gpt2c_gen_stats st = {0};
    st.prompt_tokens = n;
    if (stats) *stats = st;
    if (n <= 0) return gpt2c_fail(GPT2C_ERR_ARG, "prompt: empty (need at least one token)");
    if (n > s->ctx)
        return gpt2c_fail(GPT2C_ERR_RANGE, "prompt: %d tokens do not fit the context of %d (refused, not truncated)", n,
                          s->ctx);
    if (max_tokens < 0) return gpt2c_fail(GPT2C_ERR_ARG, "max tokens: %d is negative", max_tokens);
    if ((long long)n + max_tokens > s->ctx) /* in 64 bits: max_tokens may be 2^31 - 1 */
        return gpt2c_fail(GPT2C_ERR_RANGE,
                          "max tokens: prompt (%d tokens) + max tokens (%d) = %lld exceeds the context of %d (at most %d "
                          "new tokens fit)",
                          n, max_tokens, (long long)n + max_tokens, s->ctx, s->ctx - n);
    const int B = s->B;
    gpt2c_infer_reset(s, -1);
    uint64_t t0 = gpt2c_now_ns();
    GPT2C_TRY(gpt2c_infer_prefill(s, 0, prompt, n, NULL));
    for (int b = 1; b < B; b++) GPT2C_TRY(gpt2c_infer_copy_seq(s, b, 0));
    st.prefill_ns = gpt2c_now_ns() - t0;

    /* the ids of this step (a finished sequence keeps feeding its last id; its output is ignored) */
    int32_t ids[4096];
    unsigned char done[4096];
    memset(done, 0, sizeof done);
    int live = B;
    t0 = gpt2c_now_ns();
    for (int step = 0; step < max_tokens && live > 0; step++) {
        if (step > 0) {
            GPT2C_TRY(gpt2c_infer_decode(s, ids));
            st.decode_steps++;
        }
        st.generated = step + 1;
        for (int b = 0; b < B; b++) {
            if (done[b]) continue;
            ids[b] = gpt2c_sampler_next(smp, b, gpt2c_infer_logits(s, b));
            int stop = on_token ? on_token(user, b, ids[b]) : 0;
            if (stop || ids[b] == eot) {
                done[b] = 1;
                live--;
            }
        }
    }
    st.decode_ns = gpt2c_now_ns() - t0;
    if (stats) *stats = st;
    return GPT2C_OK;
}
