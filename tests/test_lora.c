/* LoRA against PyTorch + PEFT (tests/fixtures/lora, written by
 * tools/reference/lora_fixtures.py over the tiny base of tests/fixtures/hf_dir):
 * a PEFT-saved adapter loads, the forward logits and loss, the gradients of
 * every A and B, three AdamW steps, merge_and_unload's weights; then gpt2c's
 * own save/load round trip, QLoRA against the same adapter over the
 * dequantized base, the frozen base's memory, and the bad-input refusals. */
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpt2c/infer.h"
#include "gpt2c/io.h"
#include "gpt2c/lora.h"
#include "gpt2c/prune.h"
#include "gpt2c/quant_model.h"
#include "model/model_internal.h"
#include "testutil.h"

#define BASE GPT2C_FIXTURES "/hf_dir"
#define ADAPTER GPT2C_FIXTURES "/lora/peft_adapter"
#define REF GPT2C_FIXTURES "/lora/lora_ref.safetensors"

static const char *const MODULES[GPT2C_LORA_NUM_SITES] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};

/* the adapter matrix a PEFT name (after a "grad." / "after." prefix) names, in slab `what` */
static float *matrix(const gpt2c_lora *l, const char *name, int what, size_t *n) {
    int layer;
    char mod[64], ab;
    if (sscanf(name, "base_model.model.transformer.h.%d.%63[a-zA-Z_.]", &layer, mod) != 2) return NULL;
    char *dot = strstr(mod, ".lora_");
    if (!dot) return NULL;
    ab = dot[6];
    *dot = 0;
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++)
        if (strcmp(mod, MODULES[s]) == 0) {
            const int r = gpt2c_lora_config(l)->rank;
            *n = (size_t)r * (ab == 'A' ? gpt2c_lora_site_in(l, s) : gpt2c_lora_site_out(l, s));
            return ab == 'A' ? gpt2c_lora_A(l, s, layer, what) : gpt2c_lora_B(l, s, layer, what);
        }
    return NULL;
}

static gpt2c_model *load_with_adapter(const char *adapter) {
    gpt2c_model *m = NULL;
    if (gpt2c_model_load(BASE, &m) != GPT2C_OK) {
        fprintf(stderr, "load %s: %s\n", BASE, gpt2c_errmsg());
        return NULL;
    }
    gpt2c_model_set_threads(m, 1);
    if (adapter && gpt2c_peft_load(m, adapter, 0, NULL, 0) != GPT2C_OK) {
        fprintf(stderr, "adapter %s: %s\n", adapter, gpt2c_errmsg());
        gpt2c_model_free(m);
        return NULL;
    }
    return m;
}

/* every "<prefix><PEFT name>" tensor of the reference against the adapter's slab `what` */
static void compare_matrices(const gpt2c_st_file *ref, const gpt2c_lora *l, const char *prefix, int what, double tol,
                             const char *label) {
    int found = 0;
    double worst = 0;
    for (int i = 0; i < gpt2c_st_count(ref); i++) {
        const gpt2c_st_tensor *t = gpt2c_st_get(ref, i);
        if (strncmp(t->name, prefix, strlen(prefix)) != 0) continue;
        size_t n = 0;
        float *got = matrix(l, t->name + strlen(prefix), what, &n);
        CHECK_MSG(got != NULL, "%s: no adapter matrix for %s", label, t->name);
        if (!got) continue;
        float *want = malloc(n * sizeof(float));
        CHECK_OK(gpt2c_st_read_f32(ref, t->name, want, n));
        const double e = tu_max_rel_err(got, want, n, 1e-3);
        if (e > worst) worst = e;
        CHECK_MSG(e <= tol, "%s: %s rel err %.3g > %.g", label, t->name, e, tol);
        free(want);
        found++;
    }
    CHECK_MSG(found == 16, "%s: %d matrices compared, expected 16 (2 layers x 4 modules x A, B)", label, found);
    printf("  %s: %d matrices, max rel err %.3g (tolerance %.g)\n", label, found, worst, tol);
}

static void test_against_peft(const gpt2c_st_file *ref) {
    gpt2c_model *m = load_with_adapter(ADAPTER);
    CHECK(m != NULL);
    if (!m) return;
    const gpt2c_lora *l = gpt2c_model_lora(m);
    CHECK(gpt2c_lora_config(l)->rank == 4 && fabsf(gpt2c_lora_scale(l) - 2.0f) < 1e-7f);
    CHECK(gpt2c_lora_config(l)->targets == 15u);
    const gpt2c_st_tensor *tt = gpt2c_st_find(ref, "tokens");
    CHECK(tt && tt->ndim == 2);
    if (!tt) return;
    const int B = (int)tt->shape[0], T = (int)tt->shape[1], V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    int32_t *tok = malloc(sizeof(int32_t) * B * T), *tgt = malloc(sizeof(int32_t) * B * T);
    memcpy(tok, tt->data, sizeof(int32_t) * B * T);
    memcpy(tgt, gpt2c_st_find(ref, "targets")->data, sizeof(int32_t) * B * T);

    /* forward: logits (pad columns dropped) and the loss */
    float *want = malloc(sizeof(float) * B * T * V), *got = malloc(sizeof(float) * B * T * V), loss = 0, ref_loss;
    CHECK_OK(gpt2c_st_read_f32(ref, "logits", want, (size_t)B * T * V));
    CHECK_OK(gpt2c_st_read_f32(ref, "loss", &ref_loss, 1));
    CHECK_OK(gpt2c_model_forward(m, tok, NULL, B, T, NULL));
    const float *lg = gpt2c_model_logits(m);
    for (int r = 0; r < B * T; r++) memcpy(got + (size_t)r * V, lg + (size_t)r * Vp, sizeof(float) * V);
    const double le = tu_max_rel_err(got, want, (size_t)B * T * V, 1e-3);
    CHECK_MSG(le <= 1e-5, "logits rel err %.3g > 1e-5", le);
    CHECK_OK(gpt2c_model_forward(m, tok, tgt, B, T, &loss));
    CHECK_MSG(fabsf(loss - ref_loss) <= 1e-5f * fabsf(ref_loss), "loss %.7f, PEFT %.7f", loss, ref_loss);
    printf("  forward: logits max rel err %.3g (tolerance 1e-5), loss %.7f vs PEFT %.7f\n", le, loss, ref_loss);

    /* backward: the gradients of A and B; nothing of the base */
    gpt2c_model_zero_grad(m);
    CHECK_OK(gpt2c_model_backward(m, 1.0f));
    compare_matrices(ref, l, "grad.", 1, 1e-4, "gradients");
    gpt2c_model_bytes mb = gpt2c_model_memory(m);
    CHECK_MSG(mb.grads == 0 && mb.moments == 0, "frozen base holds %zu gradient and %zu moment bytes", mb.grads,
              mb.moments);

    /* three AdamW steps on the same batch (lr 1e-2, betas (0.9, 0.95), eps 1e-8, wd 0.1, no clipping) */
    gpt2c_model_free(m);
    m = load_with_adapter(ADAPTER);
    l = gpt2c_model_lora(m);
    const gpt2c_adamw_cfg opt = {0.9f, 0.95f, 1e-8f, 0.1f, 0.0f, 0};
    for (int k = 1; k <= 3; k++) {
        char key[32];
        float want_loss;
        snprintf(key, sizeof key, "step%d.loss", k);
        CHECK_OK(gpt2c_st_read_f32(ref, key, &want_loss, 1));
        gpt2c_model_zero_grad(m);
        CHECK_OK(gpt2c_model_forward(m, tok, tgt, B, T, &loss));
        CHECK_MSG(fabsf(loss - want_loss) <= 2e-5f * fabsf(want_loss), "step %d loss %.7f, PEFT %.7f", k, loss,
                  want_loss);
        CHECK_OK(gpt2c_model_backward(m, 1.0f));
        float norm;
        CHECK_OK(gpt2c_model_update(m, &opt, 1e-2f, &norm));
    }
    compare_matrices(ref, l, "after.", 0, 1e-4, "after 3 AdamW steps");
    CHECK(gpt2c_lora_opt_step(l) == 3);
    mb = gpt2c_model_memory(m);
    CHECK_MSG(mb.grads == 0 && mb.moments == 0, "after updates the frozen base holds %zu + %zu bytes", mb.grads,
              mb.moments);

    /* merge (the adapter as saved) = PEFT's merge_and_unload */
    gpt2c_model_free(m);
    m = load_with_adapter(ADAPTER);
    CHECK_OK(gpt2c_lora_merge(m));
    CHECK(gpt2c_model_lora(m) == NULL);
    int merged = 0;
    for (int i = 0; i < gpt2c_st_count(ref); i++) {
        const gpt2c_st_tensor *t = gpt2c_st_get(ref, i);
        int layer;
        char mod[64];
        if (sscanf(t->name, "merged.transformer.h.%d.%63[a-z_.]", &layer, mod) != 2) continue;
        char *w = strstr(mod, ".weight");
        if (w) *w = 0;
        int id = -1;
        for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++)
            if (strcmp(mod, MODULES[s]) == 0) id = gpt2c_lora_site_param(s);
        CHECK(id >= 0);
        if (id < 0) continue;
        const int OUT = m->info[id].rows, IN = m->info[id].cols;
        float *hf = malloc(sizeof(float) * OUT * IN), *mine = malloc(sizeof(float) * OUT * IN);
        CHECK_OK(gpt2c_st_read_f32(ref, t->name, hf, (size_t)OUT * IN));
        const float *W = gpt2c_param_slice(m, m->params_mem, id, layer);
        for (int o = 0; o < OUT; o++)
            for (int i2 = 0; i2 < IN; i2++) mine[(size_t)i2 * OUT + o] = W[(size_t)o * IN + i2]; /* Conv1D (in, out) */
        const double e = tu_max_rel_err(mine, hf, (size_t)OUT * IN, 1e-3);
        CHECK_MSG(e <= 1e-6, "merged %s: rel err %.3g > 1e-6", t->name, e);
        merged++;
        free(hf);
        free(mine);
    }
    CHECK(merged == 4);
    printf("  merge: %d weights equal PEFT's merge_and_unload (tolerance 1e-6 relative)\n", merged);
    /* the merged model computes what base + adapter computed */
    CHECK_OK(gpt2c_model_forward(m, tok, NULL, B, T, NULL));
    lg = gpt2c_model_logits(m);
    for (int r = 0; r < B * T; r++) memcpy(got + (size_t)r * V, lg + (size_t)r * Vp, sizeof(float) * V);
    CHECK_MSG(tu_max_rel_err(got, want, (size_t)B * T * V, 1e-3) <= 1e-5, "merged logits differ");
    gpt2c_model_free(m);
    free(tok);
    free(tgt);
    free(want);
    free(got);
}

/* inference (KV cache, stage executor) with the adapter unmerged: prefill of the
 * first sequence's rows and then decode steps give the training forward's logits */
static void test_inference(const gpt2c_st_file *ref) {
    gpt2c_model *m = load_with_adapter(ADAPTER);
    CHECK(m != NULL);
    if (!m) return;
    const gpt2c_st_tensor *tt = gpt2c_st_find(ref, "tokens");
    const int T = (int)tt->shape[1], V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    const int32_t *tok = tt->data; /* sequence 0 */
    int32_t row[64];
    memcpy(row, tok, sizeof(int32_t) * T);
    CHECK_OK(gpt2c_model_forward(m, row, NULL, 1, T, NULL));
    float *want = malloc(sizeof(float) * T * Vp);
    memcpy(want, gpt2c_model_logits(m), sizeof(float) * T * Vp);
    gpt2c_infer *s = NULL;
    CHECK_OK(gpt2c_infer_create(m, 1, T, 0, &s));
    if (!s) return;
    const int P = T / 2;
    float *all = malloc(sizeof(float) * T * Vp);
    CHECK_OK(gpt2c_infer_prefill(s, 0, row, P, all));
    double worst = 0;
    for (int t = 0; t < T; t++) {
        if (t >= P) {
            CHECK_OK(gpt2c_infer_decode(s, row + t));
            memcpy(all + (size_t)t * Vp, gpt2c_infer_logits(s, 0), sizeof(float) * Vp);
        }
        const double e = tu_max_rel_err(all + (size_t)t * Vp, want + (size_t)t * Vp, (size_t)V, 1e-3);
        if (e > worst) worst = e;
    }
    CHECK_MSG(worst <= 1e-5, "inference with an unmerged adapter: logits rel err %.3g > 1e-5", worst);
    printf("  inference (prefill %d + decode %d) with the adapter unmerged: logits max rel err %.3g vs the training "
           "forward\n", P, T - P, worst);
    gpt2c_infer_free(s);
    free(all);
    free(want);
    gpt2c_model_free(m);
}

/* 80% global L1 pruning of the adapter matrices = torch.nn.utils.prune.global_unstructured */
static void test_prune_lora(const gpt2c_st_file *ref) {
    gpt2c_model *m = load_with_adapter(ADAPTER);
    CHECK(m != NULL);
    if (!m) return;
    size_t zeros = 0, numel = 0;
    CHECK_OK(gpt2c_prune_lora(m, 0.8, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_UNSTRUCTURED, &zeros, &numel));
    CHECK_MSG(zeros == 1638 && numel == 2048, "%zu of %zu zero, PyTorch 1638 of 2048", zeros, numel);
    compare_matrices(ref, gpt2c_model_lora(m), "pruned.", 0, 0.0, "80% global L1 pruning (exact)");
    CHECK_FAILS(gpt2c_prune_lora(m, 1.0, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_UNSTRUCTURED, NULL, NULL), GPT2C_ERR_ARG);
    CHECK_OK(gpt2c_prune_lora(m, 0.5, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_2_4, &zeros, NULL)); /* r = 4 */
    CHECK(zeros >= numel / 2);
    gpt2c_model_free(m);
}

/* gpt2c's save and load: the same matrices, bit for bit; the optimizer state comes back */
static void test_roundtrip(void) {
    gpt2c_model *m = load_with_adapter(ADAPTER);
    CHECK(m != NULL);
    if (!m) return;
    char dir[] = "/tmp/gpt2c_test_lora_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    gpt2c_lora_set_opt_step(gpt2c_model_lora(m), 7);
    const gpt2c_kv meta[] = {{"gpt2c.step", "7"}};
    CHECK_OK(gpt2c_peft_save(m, dir, "tests/fixtures/hf_dir", meta, 1, 1));
    CHECK(gpt2c_peft_is_adapter_dir(dir));
    gpt2c_model *m2 = load_with_adapter(NULL);
    char base[256];
    CHECK_OK(gpt2c_peft_load(m2, dir, 1, base, sizeof base));
    CHECK(strcmp(base, "tests/fixtures/hf_dir") == 0);
    const gpt2c_lora *a = gpt2c_model_lora(m), *b = gpt2c_model_lora(m2);
    CHECK(b && gpt2c_lora_num_params(a) == gpt2c_lora_num_params(b));
    if (b) {
        CHECK(memcmp(gpt2c_lora_A(a, 0, 0, 0), gpt2c_lora_A(b, 0, 0, 0), gpt2c_lora_num_params(a) * sizeof(float)) == 0);
        CHECK(gpt2c_lora_opt_step(b) == 7);
        CHECK(gpt2c_lora_config(b)->targets == gpt2c_lora_config(a)->targets);
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    gpt2c_model_free(m);
    gpt2c_model_free(m2);
}

/* QLoRA: adapters over an nf4 base (kept quantized, its fp32 slices given back)
 * against the same adapters over the dequantized weights in fp32. */
static void test_qlora(void) {
    gpt2c_config cfg = {32, 100, 0, 2, 2, 64};
    gpt2c_model *q = NULL, *f = NULL;
    CHECK_OK(gpt2c_model_create(&cfg, &q));
    CHECK_OK(gpt2c_model_create(&cfg, &f));
    if (!q || !f) return;
    gpt2c_model_set_threads(q, 2);
    gpt2c_model_set_threads(f, 2);
    gpt2c_model_init_random(q, 5);
    gpt2c_model_init_random(f, 5);
    CHECK_OK(gpt2c_quantize_model(q, GPT2C_FMT_NF4, 0, 1, NULL));
    CHECK_OK(gpt2c_quantize_model(f, GPT2C_FMT_NF4, 0, 1, NULL));
    CHECK_OK(gpt2c_quant_dequantize_params(f)); /* f: the dequantized weights as an fp32 model */
    gpt2c_qweights_free(f->qw);
    f->qw = NULL;
    gpt2c_quant_release_fp32(q); /* q's forward may not read the fp32 slab: it now reads zeros */
    const gpt2c_lora_cfg lc = {4, 8.0f, 0.0f, 15u};
    CHECK_OK(gpt2c_lora_attach(q, &lc, 9));
    CHECK_OK(gpt2c_lora_attach(f, &lc, 9));
    gpt2c_lora *lq = gpt2c_model_lora(q), *lf = gpt2c_model_lora(f);
    gpt2c_rng rng;
    gpt2c_rng_seed(&rng, 11, 0);
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++)
        for (int layer = 0; layer < 2; layer++) {
            float *bq = gpt2c_lora_B(lq, s, layer, 0), *bf = gpt2c_lora_B(lf, s, layer, 0);
            for (int i = 0; i < 4 * gpt2c_lora_site_out(lq, s); i++) bq[i] = bf[i] = 0.1f * gpt2c_rng_normal(&rng);
        }
    enum { B = 2, T = 16 };
    int32_t tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (i * 37 + 5) % 100;
        tgt[i] = (i * 11 + 3) % 100;
    }
    float lossq = 0, lossf = 0;
    CHECK_OK(gpt2c_model_forward(q, tok, tgt, B, T, &lossq));
    CHECK_OK(gpt2c_model_forward(f, tok, tgt, B, T, &lossf));
    CHECK_MSG(fabsf(lossq - lossf) <= 1e-5f * fabsf(lossf), "QLoRA loss %.7f, fp32 over dequantized %.7f", lossq, lossf);
    gpt2c_model_zero_grad(q);
    gpt2c_model_zero_grad(f);
    CHECK_OK(gpt2c_model_backward(q, 1.0f));
    CHECK_OK(gpt2c_model_backward(f, 1.0f));
    const size_t n = gpt2c_lora_num_params(lq);
    const double e = tu_max_rel_err(gpt2c_lora_A(lq, 0, 0, 1), gpt2c_lora_A(lf, 0, 0, 1), n, 1e-6);
    CHECK_MSG(e <= 1e-4, "QLoRA gradients rel err %.3g > 1e-4", e);
    printf("  QLoRA (nf4 base): loss %.7f vs %.7f over the dequantized fp32 base, gradients max rel err %.3g\n", lossq,
           lossf, e);
    gpt2c_model_bytes mb = gpt2c_model_memory(q);
    CHECK(mb.quantized > 0 && mb.grads == 0 && mb.moments == 0);
    CHECK_FAILS(gpt2c_lora_merge(q), GPT2C_ERR_UNSUPPORTED);
    gpt2c_model_free(q);
    gpt2c_model_free(f);
}

/* copies the fixture adapter into a temp dir with this adapter_config.json */
static void write_adapter(const char *dir, const char *config_json) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s' && cp '%s/adapter_model.safetensors' '%s/'", dir, dir,
             ADAPTER, dir);
    CHECK(system(cmd) == 0);
    char path[1200];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL);
    if (!fp) return;
    fputs(config_json, fp);
    fclose(fp);
}

static void test_bad_input(void) {
    char dir[] = "/tmp/gpt2c_test_lora_bad_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char ad[256];
    snprintf(ad, sizeof ad, "%.200s/a", dir);
    struct {
        const char *config, *want;
    } cases[] = {
        {"{\"peft_type\":\"LORA\",\"r\":8,\"lora_alpha\":16,\"target_modules\":[\"c_attn\",\"c_proj\",\"c_fc\"]}",
         "rank 8"},
        {"{\"peft_type\":\"LORA\",\"r\":4,\"lora_alpha\":8,\"target_modules\":[\"c_attn\"]}", "does not name"},
        {"{\"peft_type\":\"LORA\",\"r\":4,\"lora_alpha\":8,\"target_modules\":[\"q_proj\"]}", "q_proj"},
        {"{\"peft_type\":\"LORA\",\"r\":4,\"lora_alpha\":8,\"target_modules\":[\"c_attn\",\"c_proj\",\"c_fc\"],"
         "\"rank_pattern\":{\"c_fc\":2}}",
         "rank_pattern"},
        {"{\"peft_type\":\"IA3\",\"r\":4,\"lora_alpha\":8,\"target_modules\":[\"c_attn\"]}", "peft_type"},
        {"{\"peft_type\":\"LORA\",\"r\":0,\"lora_alpha\":8,\"target_modules\":[\"c_attn\"]}", "\"r\""},
        {"{\"peft_type\":\"LORA\",\"r\":4,\"lora_alpha\":8,\"target_modules\":[\"c_attn\",\"c_proj\",\"c_fc\"", "JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_adapter(ad, cases[i].config);
        gpt2c_model *m = load_with_adapter(NULL);
        CHECK(m != NULL);
        if (!m) continue;
        const int st = gpt2c_peft_load(m, ad, 0, NULL, 0);
        CHECK_MSG(st != GPT2C_OK && strstr(gpt2c_errmsg(), cases[i].want), "case %zu: status %d, message '%s'", i, st,
                  gpt2c_errmsg());
        CHECK(gpt2c_model_lora(m) == NULL); /* nothing attached */
        if (st != GPT2C_OK) printf("  expected failure: %s\n", gpt2c_errmsg());
        gpt2c_model_free(m);
    }
    /* a base of another width or depth */
    gpt2c_config wide = {24, 48, 0, 2, 2, 32}, shallow = {24, 48, 0, 1, 2, 16};
    gpt2c_model *m = NULL;
    CHECK_OK(gpt2c_model_create(&wide, &m));
    CHECK_FAILS(gpt2c_peft_load(m, ADAPTER, 0, NULL, 0), GPT2C_ERR_FORMAT);
    CHECK(strstr(gpt2c_errmsg(), "shape") != NULL);
    gpt2c_model_free(m);
    CHECK_OK(gpt2c_model_create(&shallow, &m));
    CHECK_FAILS(gpt2c_peft_load(m, ADAPTER, 0, NULL, 0), GPT2C_ERR_FORMAT);
    CHECK(strstr(gpt2c_errmsg(), "layer 1") != NULL);
    /* options */
    unsigned t;
    CHECK_FAILS(gpt2c_lora_parse_targets("c_attn,q_proj", &t), GPT2C_ERR_ARG);
    CHECK_OK(gpt2c_lora_parse_targets("c_proj", &t));
    CHECK(t == (1u << GPT2C_LORA_ATTN_C_PROJ | 1u << GPT2C_LORA_MLP_C_PROJ));
    const gpt2c_lora_cfg bad_rank = {0, 1, 0, 1}, bad_drop = {4, 1, 1.0f, 1};
    CHECK_FAILS(gpt2c_lora_attach(m, &bad_rank, 1), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_lora_attach(m, &bad_drop, 1), GPT2C_ERR_ARG);
    gpt2c_model_free(m);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
#ifndef GPT2C_HAVE_JANSSON
    tu_skip("built without jansson: the adapter and fixtures cannot be read");
#endif
    gpt2c_st_file *ref = NULL;
    if (gpt2c_st_open(REF, &ref) != GPT2C_OK) {
        fprintf(stderr, "%s\n", gpt2c_errmsg());
        return 1;
    }
    test_against_peft(ref);
    test_inference(ref);
    test_prune_lora(ref);
    gpt2c_st_close(ref);
    test_roundtrip();
    test_qlora();
    test_bad_input();
    return tu_finish("test_lora");
}
