/* The bf16 KV cache (gpt2c_kv_cache): what AUTO resolves to, the names, the
 * state's bytes, logits through a bf16 cache against an fp32 one (prefill and
 * decode, cpu and ref backends, a batch at different positions), cpu = ref
 * on the same bf16 cache, and copy_seq of a bf16 cache (a copied sequence
 * decodes exactly as its source). */
#include <stdint.h>

#include "gpt2c/infer.h"
#include "gpt2c/model.h"
#include "gpt2c/precision.h"
#include "gpt2c/quant_model.h"
#include "testutil.h"

static gpt2c_model *tiny(const char *backend) {
    gpt2c_config cfg = {.max_seq_len = 64, .vocab_size = 203, .padded_vocab_size = 0, .num_layers = 2,
                        .num_heads = 3, .channels = 96};
    gpt2c_model *m = NULL;
    if (gpt2c_config_check(&cfg, "tiny") != GPT2C_OK || gpt2c_model_create(&cfg, &m) != GPT2C_OK) return NULL;
    gpt2c_model_init_random(m, 42);
    if (gpt2c_model_set_backend(m, backend) != GPT2C_OK) return NULL;
    return m;
}

static double rows_err(const float *a, const float *b, int n, int V, int Vp) {
    double worst = 0;
    for (int i = 0; i < n; i++) {
        const double e = tu_max_rel_err(a + (size_t)i * Vp, b + (size_t)i * Vp, (size_t)V, 1e-3);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

/* logits of: prefill 20 tokens into 3 sequences at different lengths (all rows), then 4 decode steps */
static float *run(gpt2c_model *m, gpt2c_kv_cache kv, int *nrows) {
    const int V = gpt2c_model_config(m)->vocab_size, Vp = gpt2c_model_config(m)->padded_vocab_size;
    const int lens[3] = {20, 7, 13}, steps = 4;
    gpt2c_model_set_kv_cache(m, kv);
    gpt2c_infer *s = NULL;
    if (gpt2c_infer_create(m, 3, 40, 8, &s) != GPT2C_OK) return NULL;
    CHECK(gpt2c_infer_kv_cache(s) == gpt2c_model_kv_cache(m));
    float *out = malloc(sizeof(float) * (size_t)(20 + 7 + 13 + 3 * steps) * Vp), *o = out;
    int32_t tok[20];
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < lens[b]; i++) tok[i] = (int32_t)((i * 37 + 11 * b + 5) % V);
        CHECK_OK(gpt2c_infer_prefill(s, b, tok, lens[b], o));
        o += (size_t)lens[b] * Vp;
    }
    for (int i = 0; i < steps; i++) {
        int32_t ids[3] = {(i * 13 + 1) % V, (i * 29 + 2) % V, (i * 7 + 3) % V};
        CHECK_OK(gpt2c_infer_decode(s, ids));
        for (int b = 0; b < 3; b++, o += Vp) memcpy(o, gpt2c_infer_logits(s, b), sizeof(float) * Vp);
    }
    *nrows = (int)((o - out) / Vp);
    gpt2c_infer_free(s);
    return out;
}

static void names(void) {
    gpt2c_kv_cache kv = GPT2C_KV_AUTO;
    CHECK(gpt2c_kv_cache_parse("bf16", &kv) == 0 && kv == GPT2C_KV_BF16);
    CHECK(gpt2c_kv_cache_parse("fp32", &kv) == 0 && kv == GPT2C_KV_F32);
    CHECK(gpt2c_kv_cache_parse("f32", &kv) == 0 && kv == GPT2C_KV_F32);
    CHECK(gpt2c_kv_cache_parse("auto", &kv) == 0 && kv == GPT2C_KV_AUTO);
    CHECK(gpt2c_kv_cache_parse("int8", &kv) == -1 && gpt2c_kv_cache_parse(NULL, &kv) == -1);
    CHECK(strcmp(gpt2c_kv_cache_name(GPT2C_KV_BF16), "bf16") == 0 && strcmp(gpt2c_kv_cache_name(GPT2C_KV_F32), "f32") == 0);
}

int main(void) {
    names();
    gpt2c_model *m = tiny("cpu"), *r = tiny("ref");
    CHECK(m && r);
    if (!m || !r) return tu_finish("test_kv_cache");
    const int V = gpt2c_model_config(m)->vocab_size, Vp = gpt2c_model_config(m)->padded_vocab_size;
    /* AUTO: fp32 weights keep an fp32 cache; bf16 precision gets a bf16 one, and so do quantized
     * weights (test_quant_model checks that side) */
    CHECK(gpt2c_model_kv_cache(m) == GPT2C_KV_F32);
    CHECK_OK(gpt2c_model_set_precision(m, GPT2C_FMT_BF16));
    CHECK_MSG(gpt2c_model_kv_cache(m) == GPT2C_KV_BF16, "bf16 precision: the default cache is not bf16");
    gpt2c_model_set_kv_cache(m, GPT2C_KV_F32); /* an explicit choice stands */
    CHECK(gpt2c_model_kv_cache(m) == GPT2C_KV_F32);
    gpt2c_model_set_kv_cache(m, GPT2C_KV_AUTO);
    CHECK_OK(gpt2c_model_set_precision(m, GPT2C_FMT_F32));
    CHECK(gpt2c_model_kv_cache(m) == GPT2C_KV_F32);
    gpt2c_infer *s32 = NULL, *s16 = NULL;
    gpt2c_model_set_kv_cache(m, GPT2C_KV_BF16);
    CHECK_OK(gpt2c_infer_create(m, 2, 64, 0, &s16));
    gpt2c_model_set_kv_cache(m, GPT2C_KV_F32);
    CHECK_OK(gpt2c_infer_create(m, 2, 64, 0, &s32));
    const size_t cache32 = (size_t)2 * 2 * 2 * 96 * 64 * 4; /* K and V, 2 layers, 2 sequences, 64 positions */
    CHECK(gpt2c_infer_bytes(s32) - gpt2c_infer_bytes(s16) == cache32 / 2);
    gpt2c_infer_free(s32), gpt2c_infer_free(s16);

    int n32 = 0, n16 = 0, nr = 0;
    float *l32 = run(m, GPT2C_KV_F32, &n32), *l16 = run(m, GPT2C_KV_BF16, &n16), *lr = run(r, GPT2C_KV_BF16, &nr);
    CHECK(l32 && l16 && lr && n32 == n16 && n16 == nr);
    if (l32 && l16 && lr) {
        const double e = rows_err(l16, l32, n16, V, Vp), er = rows_err(l16, lr, n16, V, Vp);
        printf("  bf16 cache vs fp32 cache: max relative error of the logits %.2g; cpu vs ref on a bf16 cache %.2g\n", e, er);
        CHECK(e > 0 && e < 1e-2); /* keys and values rounded to 8 bits of mantissa */
        CHECK(er < 1e-4);
    }
    free(l32), free(l16), free(lr);

    /* copy_seq of a bf16 cache: the copy decodes exactly as the source */
    gpt2c_model_set_kv_cache(m, GPT2C_KV_BF16);
    gpt2c_infer *s = NULL;
    CHECK_OK(gpt2c_infer_create(m, 2, 32, 0, &s));
    int32_t tok[11];
    for (int i = 0; i < 11; i++) tok[i] = (int32_t)((i * 53 + 3) % V);
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, 11, NULL));
    CHECK_OK(gpt2c_infer_copy_seq(s, 1, 0));
    const int32_t next[2] = {17, 17};
    CHECK_OK(gpt2c_infer_decode(s, next));
    CHECK(memcmp(gpt2c_infer_logits(s, 0), gpt2c_infer_logits(s, 1), sizeof(float) * (size_t)Vp) == 0);
    gpt2c_infer_free(s);
    gpt2c_model_free(m), gpt2c_model_free(r);
    return tu_finish("test_kv_cache");
}
