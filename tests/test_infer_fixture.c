/* The inference engine on the tiny reference model (tests/fixtures/ref_tiny,
 * written by tools/reference from Hugging Face): greedy generation equals
 * Hugging Face's `generate` (gen_prompt (1,5) -> gen_greedy (1,13)) on the
 * ref and cpu backends, and cached logits equal a full recomputation at every
 * position.  Skips when the fixtures are absent. */
#include <stdint.h>

#include "gpt2c/infer.h"
#include "gpt2c/io.h"
#include "gpt2c/model.h"
#include "testutil.h"

static int read_ids(const gpt2c_st_file *f, const char *name, int32_t *dst, int max) {
    const gpt2c_st_tensor *t = gpt2c_st_find(f, name);
    if (!t || t->dtype != GPT2C_DT_I32 || t->nbytes / 4 > (size_t)max) return -1;
    memcpy(dst, t->data, t->nbytes); /* may be unaligned in the file */
    return (int)(t->nbytes / 4);
}

static int collect(void *user, int seq, int32_t id) {
    int32_t *out = user;
    (void)seq;
    out[1 + out[0]++] = id;
    return 0;
}

int main(void) {
    char mpath[4096], rpath[4096];
    snprintf(mpath, sizeof mpath, "%s/ref_tiny/model.safetensors", GPT2C_FIXTURES);
    snprintf(rpath, sizeof rpath, "%s/ref_tiny/reference.safetensors", GPT2C_FIXTURES);
    FILE *probe = fopen(rpath, "rb");
    if (!probe) tu_skip("tests/fixtures/ref_tiny not present (branch ref-fixtures)");
    fclose(probe);
#ifndef GPT2C_HAVE_JANSSON
    tu_skip("built without jansson (the fixture is safetensors)");
#endif

    gpt2c_st_file *ref = NULL;
    CHECK_OK(gpt2c_st_open(rpath, &ref));
    if (!ref) return tu_finish("test_infer_fixture");
    int32_t prompt[64], greedy[256];
    const int np = read_ids(ref, "gen_prompt", prompt, 64), ng = read_ids(ref, "gen_greedy", greedy, 256);
    CHECK_MSG(np > 0 && ng > np, "gen_prompt / gen_greedy missing or not int32 (%d, %d)", np, ng);
    gpt2c_st_close(ref);
    if (np <= 0 || ng <= np) return tu_finish("test_infer_fixture");

    const char *backends[] = {"ref", "cpu"};
    for (int bi = 0; bi < 2; bi++) {
        gpt2c_model *m = NULL;
        CHECK_OK(gpt2c_model_load(mpath, &m));
        if (!m) break;
        CHECK_OK(gpt2c_model_set_backend(m, backends[bi]));
        const int V = gpt2c_model_config(m)->vocab_size, Vp = gpt2c_model_config(m)->padded_vocab_size;

        /* greedy generation: the prompt, then ng - np tokens, exactly Hugging Face's */
        gpt2c_infer *s = NULL;
        CHECK_OK(gpt2c_infer_create(m, 1, ng, 0, &s));
        gpt2c_sampling sp = gpt2c_sampling_default();
        sp.temperature = 0;
        gpt2c_sampler *smp = NULL;
        CHECK_OK(gpt2c_sampler_create(&sp, V, 1, &smp));
        int32_t got[257] = {0};
        CHECK_OK(gpt2c_generate(s, smp, prompt, np, ng - np, -1, collect, got, NULL));
        CHECK_MSG(got[0] == ng - np, "%s: generated %d tokens, want %d", backends[bi], got[0], ng - np);
        int same = 1;
        for (int i = 0; i < ng - np && i < got[0]; i++) same &= got[1 + i] == greedy[np + i];
        CHECK_MSG(same, "%s: greedy generation differs from Hugging Face's", backends[bi]);
        if (!same)
            for (int i = 0; i < got[0]; i++) fprintf(stderr, "  step %d: got %d want %d\n", i, got[1 + i], greedy[np + i]);

        /* cached logits at every position of the greedy sequence vs a full recomputation (ref) */
        gpt2c_model *full = NULL;
        CHECK_OK(gpt2c_model_load(mpath, &full));
        CHECK_OK(gpt2c_model_set_backend(full, "ref"));
        CHECK_OK(gpt2c_model_forward(full, greedy, NULL, 1, ng, NULL));
        const float *want = gpt2c_model_logits(full);
        gpt2c_infer_reset(s, -1);
        CHECK_OK(gpt2c_infer_prefill(s, 0, greedy, 3, NULL));
        double worst = tu_max_rel_err(gpt2c_infer_logits(s, 0), want + 2 * (size_t)Vp, (size_t)V, 1e-3);
        for (int t = 3; t < ng; t++) {
            CHECK_OK(gpt2c_infer_decode(s, &greedy[t]));
            double e = tu_max_rel_err(gpt2c_infer_logits(s, 0), want + (size_t)t * Vp, (size_t)V, 1e-3);
            if (!(e <= worst)) worst = e;
        }
        CHECK_MSG(worst < 1e-4, "%s: cached logits vs full recompute: rel err %.3g", backends[bi], worst);
        printf("  %s: greedy matches Hugging Face over %d tokens; cached logits max rel err %.2g\n", backends[bi],
               ng - np, worst);
        gpt2c_model_free(full);
        gpt2c_sampler_free(smp);
        gpt2c_infer_free(s);
        gpt2c_model_free(m);
    }
    return tu_finish("test_infer_fixture");
}
