/* A quantized GPT-2 end to end, for q8 / q4 / nf4:
 *  - gpt2c_quant_save + gpt2c_model_load give back the same codes and scales
 *    (bit for bit) and the same fp32 tensors;
 *  - inference with the fused kernels (prefill, then decode) matches the fp32
 *    forward of the dequantized weights;
 *  - bad files: truncated codes or scales, a block that does not divide the
 *    row, an unknown format, a quantized non-linear tensor: clear errors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpt2c/core.h"
#include "gpt2c/infer.h"
#include "gpt2c/io.h"
#include "gpt2c/quant.h"
#include "gpt2c/quant_model.h"
#include "testutil.h"
#include "model/model_internal.h"

static gpt2c_model *tiny(void) {
    /* C = 128 so nf4's blocks of 64 and q8/q4's of 32 both fit; V = 203 (Vp 256) */
    gpt2c_config cfg = {.max_seq_len = 32, .vocab_size = 203, .padded_vocab_size = 0, .num_layers = 2,
                        .num_heads = 4, .channels = 128};
    gpt2c_model *m = NULL;
    if (gpt2c_config_check(&cfg, "tiny") != GPT2C_OK || gpt2c_model_create(&cfg, &m) != GPT2C_OK) return NULL;
    gpt2c_model_init_random(m, 42);
    return m;
}

static char tmpdir[256];

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", tmpdir, name); }

/* Copies src to dst, with tensor `name` given `rows` rows (a truncated tensor:
 * its bytes shrink with its shape) and metadata key `key` set to `value`. */
static gpt2c_status rewrite(const char *src, const char *dst, const char *name, int64_t rows, const char *key,
                            const char *value) {
    gpt2c_st_file *f;
    GPT2C_TRY(gpt2c_st_open(src, &f));
    gpt2c_st_writer *w;
    gpt2c_status st = gpt2c_st_writer_new(&w);
    for (int i = 0; i < gpt2c_st_count(f) && st == GPT2C_OK; i++) {
        const gpt2c_st_tensor *t = gpt2c_st_get(f, i);
        int64_t shape[8];
        memcpy(shape, t->shape, sizeof shape);
        if (name && strcmp(t->name, name) == 0) shape[0] = rows;
        st = gpt2c_st_writer_add(w, t->name, t->dtype, t->ndim, shape, t->data);
    }
    for (int i = 0; i < gpt2c_st_meta_count(f) && st == GPT2C_OK; i++) {
        const char *v, *k = gpt2c_st_meta_get(f, i, &v);
        st = gpt2c_st_writer_meta(w, k, key && strcmp(k, key) == 0 ? value : v);
    }
    if (st == GPT2C_OK) st = gpt2c_st_writer_write(w, dst);
    gpt2c_st_writer_free(w);
    gpt2c_st_close(f);
    return st;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double worst = 0, scale = 1e-6;
    for (size_t i = 0; i < n; i++) scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)a[i] - b[i]) / scale;
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static void one_format(gpt2c_format f) {
    const char *fname = gpt2c_format_get(f)->name;
    char path[512];
    snprintf(path, sizeof path, "%s/tiny_%s.safetensors", tmpdir, fname);
    gpt2c_model *m = tiny();
    CHECK(m != NULL);
    if (!m) return;
    CHECK_OK(gpt2c_quantize_model(m, f, 0, 1, "c_proj"));
    CHECK_FAILS(gpt2c_quantize_model(m, f, 0, 1, NULL), GPT2C_ERR_ARG); /* already quantized */
    CHECK(gpt2c_qweight(m, GPT2C_P_QKVW, 1) != NULL);
    CHECK(gpt2c_qweight(m, GPT2C_P_ATTPROJW, 0) == NULL); /* kept: attn.c_proj */
    CHECK(gpt2c_qweight(m, GPT2C_P_FCPROJW, 0) == NULL);  /* kept: mlp.c_proj */
    CHECK(gpt2c_qweight(m, GPT2C_P_WTE, 0)->fmt == GPT2C_FMT_Q8);
    CHECK_OK(gpt2c_quant_save(m, path));

    /* the loaded model holds the same codes and scales, bit for bit */
    gpt2c_model *q = NULL;
    CHECK_OK(gpt2c_model_load(path, &q));
    if (!q) {
        gpt2c_model_free(m);
        return;
    }
    CHECK(q->qw && q->qw->fmt == f);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
        for (int l = 0; l < (m->info[id].per_layer ? 2 : 1); l++) {
            const gpt2c_tensor *a = gpt2c_qweight(m, id, l), *b = gpt2c_qweight(q, id, l);
            CHECK((a == NULL) == (b == NULL));
            if (a && b) {
                CHECK(a->fmt == b->fmt && a->block == b->block && a->rows == b->rows && a->cols == b->cols);
                CHECK(memcmp(a->data, b->data, gpt2c_quant_code_bytes(a->fmt, a->rows, a->cols, a->block)) == 0);
                CHECK(memcmp(a->scales, b->scales, 4 * gpt2c_quant_nscales(a->fmt, a->rows, a->cols, a->block)) == 0);
            } else if (!a) {
                const size_t n = m->info[id].numel / (m->info[id].per_layer ? 2 : 1);
                CHECK(memcmp(gpt2c_param_slice(m, m->params_mem, id, l), gpt2c_param_slice(q, q->params_mem, id, l),
                             4 * n) == 0);
            }
        }

    /* inference on the quantized weights = forward of the dequantized ones */
    const int T = 24, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size; /* prefill of 22 rows: the GEMM path */
    int32_t tok[24];
    for (int i = 0; i < T; i++) tok[i] = (int32_t)((i * 37 + 5) % V);
    float *got = malloc(sizeof(float) * T * Vp);
    gpt2c_infer *s = NULL;
    CHECK(gpt2c_model_kv_cache(q) == GPT2C_KV_BF16); /* the default cache of quantized weights */
    gpt2c_model_set_kv_cache(q, GPT2C_KV_F32);       /* fp32 keys and values: exactly the dequantized weights' forward */
    CHECK_OK(gpt2c_infer_create(q, 1, 0, 0, &s));
    gpt2c_qmatmul_set_int8_act(0); /* fp32 activations: exactly the dequantized weights */
    gpt2c_qmatmul_set_bf16_prefill(0);
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, T - 2, got));
    CHECK_OK(gpt2c_infer_decode(s, &tok[T - 2]));
    memcpy(got + (size_t)(T - 2) * Vp, gpt2c_infer_logits(s, 0), sizeof(float) * Vp);
    CHECK_OK(gpt2c_infer_decode(s, &tok[T - 1]));
    memcpy(got + (size_t)(T - 1) * Vp, gpt2c_infer_logits(s, 0), sizeof(float) * Vp);
    /* the default prefill where AVX512_BF16 runs: weights and activations rounded to bf16 (the bf16 GEMM) */
    float *gotp = malloc(sizeof(float) * (size_t)(T - 2) * Vp);
    const int bfp = gpt2c_qmatmul_set_bf16_prefill(1);
    gpt2c_infer_reset(s, 0);
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, T - 2, gotp));
    gpt2c_qmatmul_set_bf16_prefill(0);
    /* the default decode of q8 / q4 on VNNI CPUs: int8 activations, close to it */
    float *got8 = malloc(sizeof(float) * Vp);
    const int int8 = gpt2c_qmatmul_set_int8_act(1);
    gpt2c_infer_reset(s, 0);
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, T - 1, NULL));
    CHECK_OK(gpt2c_infer_decode(s, &tok[T - 1]));
    memcpy(got8, gpt2c_infer_logits(s, 0), sizeof(float) * Vp);
    /* the default bf16 cache (fp32 activations): keys and values rounded to bf16 */
    float *gotbf = malloc(sizeof(float) * Vp);
    gpt2c_qmatmul_set_int8_act(0);
    gpt2c_infer_free(s);
    gpt2c_model_set_kv_cache(q, GPT2C_KV_AUTO);
    CHECK_OK(gpt2c_infer_create(q, 1, 0, 0, &s));
    CHECK(gpt2c_infer_kv_cache(s) == GPT2C_KV_BF16);
    CHECK_OK(gpt2c_infer_prefill(s, 0, tok, T - 1, NULL));
    CHECK_OK(gpt2c_infer_decode(s, &tok[T - 1]));
    memcpy(gotbf, gpt2c_infer_logits(s, 0), sizeof(float) * Vp);
    gpt2c_infer_free(s);
    CHECK_OK(gpt2c_quant_dequantize_params(q));
    CHECK_OK(gpt2c_model_forward(q, tok, NULL, 1, T, NULL));
    const float *want = gpt2c_model_logits(q);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        const double e = max_rel(got + (size_t)t * Vp, want + (size_t)t * Vp, (size_t)V);
        worst = e > worst ? e : worst;
    }
    CHECK_MSG(worst < 1e-4, "%s: infer vs dequantized forward: relative error %.3g", fname, worst);
    double eb = 0, ebx = 0; /* the bf16 prefill vs the dequantized forward, and vs the exact prefill */
    for (int t = 0; t < T - 2; t++) {
        const double e = max_rel(gotp + (size_t)t * Vp, want + (size_t)t * Vp, (size_t)V);
        const double ex = max_rel(gotp + (size_t)t * Vp, got + (size_t)t * Vp, (size_t)V);
        eb = e > eb ? e : eb, ebx = ex > ebx ? ex : ebx;
    }
    if (bfp) { /* bf16 rounding of weights and activations: ~2^-9 per operand */
        CHECK_MSG(eb > 1e-5 && eb < 3e-2, "%s: bf16 prefill vs dequantized forward: relative error %.3g", fname, eb);
        printf("  %s: prefill with bf16 weights and activations vs dequantized forward %.2g\n", fname, eb);
    } else {
        CHECK_MSG(ebx == 0, "%s: prefill without AVX512_BF16 is not the fp32 path: %.3g", fname, ebx);
    }
    free(gotp);
    const double e8 = max_rel(got8, want + (size_t)(T - 1) * Vp, (size_t)V);
    CHECK_MSG(e8 < 3e-2, "%s: int8-activation decode vs dequantized forward: relative error %.3g", fname, e8);
    if (int8) printf("  %s: decode with int8 activations vs dequantized forward %.2g\n", fname, e8);
    const double ebf = max_rel(gotbf, want + (size_t)(T - 1) * Vp, (size_t)V);
    CHECK_MSG(ebf > 0 && ebf < 1e-2, "%s: bf16-cache decode vs dequantized forward: relative error %.3g", fname, ebf);
    printf("  %s: decode with a bf16 KV cache vs dequantized forward %.2g\n", fname, ebf);
    free(got8), free(gotbf);
    printf("  %s: save/load exact, infer vs dequantized forward %.2g\n", fname, worst);
    free(got);
    gpt2c_model_free(q);
    gpt2c_model_free(m);
}

static void bad_files(void) {
    char src[512], bad[512];
    snprintf(src, sizeof src, "%s/tiny_q4.safetensors", tmpdir);
    path_of(bad, sizeof bad, "bad.safetensors");
    gpt2c_model *m = NULL;
    /* codes truncated: one row short */
    CHECK_OK(rewrite(src, bad, "transformer.h.1.mlp.c_fc.weight", 511, NULL, NULL));
    CHECK_FAILS(gpt2c_model_load(bad, &m), GPT2C_ERR_FORMAT);
    CHECK(strstr(gpt2c_errmsg(), "h.1.mlp.c_fc.weight") != NULL);
    /* scales truncated */
    CHECK_OK(rewrite(src, bad, "transformer.h.0.attn.c_attn.weight.scales", 100, NULL, NULL));
    CHECK_FAILS(gpt2c_model_load(bad, &m), GPT2C_ERR_FORMAT);
    CHECK(strstr(gpt2c_errmsg(), "c_attn.weight.scales") != NULL);
    /* a block that does not divide the row (128) */
    CHECK_OK(rewrite(src, bad, NULL, 0, "gpt2c.quant:transformer.h.0.attn.c_attn.weight", "q4/96"));
    CHECK_FAILS(gpt2c_model_load(bad, &m), GPT2C_ERR_ARG);
    CHECK(strstr(gpt2c_errmsg(), "does not divide") != NULL);
    /* an unknown format, file-wide and per tensor */
    CHECK_OK(rewrite(src, bad, NULL, 0, "gpt2c.quant.format", "q3"));
    CHECK_FAILS(gpt2c_model_load(bad, &m), GPT2C_ERR_FORMAT);
    CHECK_OK(rewrite(src, bad, NULL, 0, "gpt2c.quant:transformer.h.0.attn.c_attn.weight", "int3/32"));
    CHECK_FAILS(gpt2c_model_load(bad, &m), GPT2C_ERR_FORMAT);
    /* nf4 double-quantized scales truncated */
    snprintf(src, sizeof src, "%s/tiny_nf4.safetensors", tmpdir);
    CHECK_OK(rewrite(src, bad, "transformer.h.0.mlp.c_fc.weight.absmax_q", 3, NULL, NULL));
    CHECK_FAILS(gpt2c_model_load(bad, &m), GPT2C_ERR_FORMAT);
    CHECK(strstr(gpt2c_errmsg(), "absmax_q") != NULL);
    unlink(bad);
}

int main(void) {
#ifndef GPT2C_HAVE_JANSSON
    tu_skip("built without jansson: quantized safetensors files cannot be written or read");
#endif
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gpt2c_test_quant_model_%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", tmpdir);
    if (system(cmd) != 0) tu_skip("cannot make a temporary folder");
    one_format(GPT2C_FMT_Q8);
    one_format(GPT2C_FMT_Q4);
    one_format(GPT2C_FMT_NF4);
    bad_files();
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return tu_finish("test_quant_model");
}
