/* Checkpoint round trips: safetensors (with and without optimizer state),
 * llm.c .bin v3 (exact) and v5 (bf16 rounding), Hugging Face layout of what we
 * write, and loading an HF-style file without the "transformer." prefix. */
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

#include "io_testutil.h"
#include "model/model_internal.h"

static int same_params(const gpt2c_model *a, const gpt2c_model *b) {
    return a->slab_floats == b->slab_floats &&
           memcmp(&a->cfg, &b->cfg, sizeof a->cfg) == 0 &&
           memcmp(a->params_mem, b->params_mem, a->slab_floats * sizeof(float)) == 0;
}

static void test_safetensors(const char *dir) {
#ifndef GPT2C_HAVE_JANSSON
    (void)dir;
    return;
#else
    gpt2c_model *m = io_tiny_model(1), *r = NULL;
    const char *p = io_path(dir, "m.safetensors");
    gpt2c_kv meta[] = {{"trainer.step", "42"}, {"note", "hello"}};
    CHECK_OK(gpt2c_model_save(m, p, meta, 2, 0));
    CHECK_OK(gpt2c_model_load(p, &r));
    CHECK(r && same_params(m, r));
    CHECK(r && r->m_mem == NULL);
    gpt2c_model_free(r);

    /* what we wrote looks like transformers' save_pretrained output */
    gpt2c_st_file *f = NULL;
    CHECK_OK(gpt2c_st_open(p, &f));
    if (f) {
        const gpt2c_st_tensor *t = gpt2c_st_find(f, "transformer.h.1.attn.c_attn.weight");
        CHECK(t && t->ndim == 2 && t->shape[0] == 32 && t->shape[1] == 96 && t->dtype == GPT2C_DT_F32);
        t = gpt2c_st_find(f, "transformer.wte.weight");
        CHECK(t && t->shape[0] == 100 && t->shape[1] == 32);
        t = gpt2c_st_find(f, "transformer.h.0.ln_1.bias");
        CHECK(t && t->ndim == 1 && t->shape[0] == 32);
        CHECK(gpt2c_st_find(f, "lm_head.weight") == NULL);
        CHECK(gpt2c_st_count(f) == 4 + 12 * 2);
        CHECK(gpt2c_st_meta(f, "format") && strcmp(gpt2c_st_meta(f, "format"), "pt") == 0);
        CHECK(gpt2c_st_meta(f, "n_head") && strcmp(gpt2c_st_meta(f, "n_head"), "2") == 0);
        CHECK(gpt2c_st_meta(f, "trainer.step") && strcmp(gpt2c_st_meta(f, "trainer.step"), "42") == 0);
        CHECK(gpt2c_st_meta(f, "missing") == NULL);
        /* Conv1D transposed: HF [k][r] == ours [r][k] */
        float *w = malloc(32 * 96 * sizeof(float));
        CHECK_OK(gpt2c_st_read_f32(f, "transformer.h.1.attn.c_attn.weight", w, 32 * 96));
        const float *ours = gpt2c_param_slice(m, m->params_mem, GPT2C_P_QKVW, 1);
        CHECK(w[5 * 96 + 7] == ours[7 * 32 + 5]);
        free(w);
        gpt2c_st_close(f);
    }

    /* with AdamW state */
    CHECK_OK(gpt2c_model_alloc_optimizer(m));
    for (size_t i = 0; i < m->slab_floats; i++) {
        m->m_mem[i] = (float)i * 1e-3f;
        m->v_mem[i] = (float)i * 2e-3f;
    }
    m->opt_step = 7;
    const char *po = io_path(dir, "opt.safetensors");
    CHECK_OK(gpt2c_model_save(m, po, NULL, 0, 1));
    r = NULL;
    CHECK_OK(gpt2c_model_load(po, &r));
    CHECK(r && same_params(m, r));
    CHECK(r && r->m_mem && r->v_mem && r->opt_step == 7);
    if (r && r->m_mem) {
        CHECK(memcmp(r->m_mem, m->m_mem, m->slab_floats * sizeof(float)) == 0);
        CHECK(memcmp(r->v_mem, m->v_mem, m->slab_floats * sizeof(float)) == 0);
    }
    gpt2c_model_free(r);
    gpt2c_model_free(m);
#endif
}

static void test_llmc(const char *dir) {
    gpt2c_model *m = io_tiny_model(2), *r = NULL;
    const char *p3 = io_path(dir, "m3.bin"), *p5 = io_path(dir, "m5.bin");
    CHECK_OK(gpt2c_model_save_llmc(m, p3, 3));
    CHECK_OK(gpt2c_model_load(p3, &r));
    CHECK(r && same_params(m, r));
    gpt2c_model_free(r);

    /* header fields */
    int32_t h[8];
    size_t size = 0;
    CHECK_OK(gpt2c_llmc_header(p3, h, &size));
    CHECK(h[0] == 20240326 && h[1] == 3 && h[2] == 16 && h[3] == 100 && h[4] == 2 && h[5] == 2 && h[6] == 32 &&
          h[7] == 128);
    CHECK(gpt2c_detect_format(p3) == GPT2C_FMT_LLMC);

    /* bf16 keeps 8 significant bits: rounding to nearest is within 2^-8 relative */
    r = NULL;
    CHECK_OK(gpt2c_model_save_llmc(m, p5, 5));
    CHECK_OK(gpt2c_model_load(p5, &r));
    if (r) {
        double worst = 0;
        for (size_t i = 0; i < m->slab_floats; i++) {
            double a = m->params_mem[i], b = r->params_mem[i];
            double rel = a == 0 ? fabs(b) : fabs(a - b) / fabs(a);
            if (rel > worst) worst = rel;
        }
        printf("  bf16 round trip: max relative error %.3g (bound 2^-8 = %.3g)\n", worst, ldexp(1, -8));
        CHECK(worst <= ldexp(1, -8));
        /* saving the bf16-loaded model as bf16 again is exact */
        const char *p5b = io_path(dir, "m5b.bin");
        CHECK_OK(gpt2c_model_save_llmc(r, p5b, 5));
        size_t n1, n2;
        unsigned char *b1 = io_slurp(p5, &n1), *b2 = io_slurp(p5b, &n2);
        CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0);
        free(b1);
        free(b2);
    }
    gpt2c_model_free(r);

    /* bin -> safetensors -> bin is byte-identical */
#ifdef GPT2C_HAVE_JANSSON
    r = NULL;
    const char *ps = io_path(dir, "from_bin.safetensors"), *p3b = io_path(dir, "m3b.bin");
    CHECK_OK(gpt2c_model_save(m, ps, NULL, 0, 0));
    CHECK_OK(gpt2c_model_load(ps, &r));
    if (r) CHECK_OK(gpt2c_model_save_llmc(r, p3b, 3));
    size_t n1 = 0, n2 = 0;
    unsigned char *b1 = io_slurp(p3, &n1), *b2 = io_slurp(p3b, &n2);
    CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0);
    free(b1);
    free(b2);
    gpt2c_model_free(r);
#endif
    gpt2c_model_free(m);
}

/* An HF-style file without the prefix, with the legacy attention-mask buffers
 * and a tied lm_head, and the head count only in config.json. */
static void test_hf_noprefix(const char *dir) {
#ifndef GPT2C_HAVE_JANSSON
    (void)dir;
#else
    gpt2c_model *m = io_tiny_model(3), *r = NULL;
    const char *full = io_path(dir, "full.safetensors");
    CHECK_OK(gpt2c_model_save(m, full, NULL, 0, 0));
    gpt2c_st_file *f = NULL;
    CHECK_OK(gpt2c_st_open(full, &f));
    if (!f) return;
    gpt2c_st_writer *w = NULL;
    CHECK_OK(gpt2c_st_writer_new(&w));
    for (int i = 0; i < gpt2c_st_count(f); i++) {
        const gpt2c_st_tensor *t = gpt2c_st_get(f, i);
        CHECK_OK(gpt2c_st_writer_add(w, t->name + strlen("transformer."), t->dtype, t->ndim, t->shape, t->data));
    }
    static float mask[2][16 * 16];
    for (int l = 0; l < 2; l++) {
        char name[64];
        int64_t shape[4] = {1, 1, 16, 16};
        snprintf(name, sizeof name, "h.%d.attn.bias", l);
        CHECK_OK(gpt2c_st_writer_add(w, name, GPT2C_DT_F32, 4, shape, mask[l]));
    }
    const gpt2c_st_tensor *wte = gpt2c_st_find(f, "transformer.wte.weight");
    CHECK_OK(gpt2c_st_writer_add(w, "lm_head.weight", wte->dtype, 2, wte->shape, wte->data));
    CHECK_OK(gpt2c_st_writer_meta(w, "format", "pt"));
    const char *np = io_path(dir, "hf/model.safetensors");
    mkdir(io_path(dir, "hf"), 0755);
    CHECK_OK(gpt2c_st_writer_write(w, np));
    gpt2c_st_writer_free(w);
    gpt2c_st_close(f);

    /* C=32 is not a multiple of 64: without config.json the head count is unknown */
    CHECK_FAILS_NAMING(gpt2c_model_load(np, &r), GPT2C_ERR_FORMAT, np, "heads");
    const char *cj = "{\"model_type\": \"gpt2\", \"n_head\": 2, \"n_embd\": 32, \"n_layer\": 2}";
    io_spit(io_path(dir, "hf/config.json"), cj, strlen(cj));
    CHECK_OK(gpt2c_model_load(np, &r));
    CHECK(r && same_params(m, r));
    gpt2c_model_free(r);

    gpt2c_st_file *g = NULL;
    gpt2c_config cfg;
    const char *prefix = NULL, *from = NULL;
    CHECK_OK(gpt2c_st_open(np, &g));
    if (g) {
        CHECK_OK(gpt2c_st_gpt2_config(g, np, &cfg, &prefix, &from));
        CHECK(prefix && strcmp(prefix, "") == 0 && from && strcmp(from, "config.json") == 0);
        CHECK(cfg.num_layers == 2 && cfg.num_heads == 2 && cfg.channels == 32 && cfg.vocab_size == 100 &&
              cfg.padded_vocab_size == 128 && cfg.max_seq_len == 16);
        gpt2c_st_close(g);
    }
    gpt2c_model_free(m);
#endif
}

int main(void) {
    const char *d = io_scratch("roundtrip");
    char dir[512];
    snprintf(dir, sizeof dir, "%s", d);
    test_safetensors(dir);
    test_llmc(dir);
    test_hf_noprefix(dir);
    io_rm_rf(dir);
    return tu_finish("test_io_roundtrip");
}
