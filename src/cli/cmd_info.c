/* gpt2c info PATH: what a checkpoint (or token shard) holds -- format, config
 * and where it came from, parameter count, dtypes, metadata, tensor list.
 * Exits 1 if the file is malformed or claims to be GPT-2 but does not load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "gpt2c/io.h"
#include "gpt2c/shard.h"

static void print_config(const gpt2c_config *c, const char *heads_from) {
    printf("config:     layers %d, heads %d%s%s%s, embd %d, context %d, vocab %d (padded %d)\n", c->num_layers,
           c->num_heads, heads_from ? " (from " : "", heads_from ? heads_from : "", heads_from ? ")" : "",
           c->channels, c->max_seq_len, c->vocab_size, c->padded_vocab_size);
}

/* Loads the model to validate it end to end; prints the parameter count. */
static int check_model(const char *path) {
    gpt2c_model *m = NULL;
    if (gpt2c_model_load(path, &m) != GPT2C_OK) return cli_fail_status("info");
    const gpt2c_config *c = gpt2c_model_config(m);
    size_t pad = (size_t)(c->padded_vocab_size - c->vocab_size) * (size_t)c->channels;
    printf("parameters: %zu (%zu with wte padded to %d rows)\n", gpt2c_model_num_params(m) - pad, gpt2c_model_num_params(m),
           c->padded_vocab_size);
    if (gpt2c_model_has_optimizer(m)) printf("optimizer:  AdamW moments present, step %d\n", gpt2c_model_opt_step(m));
    gpt2c_model_free(m);
    return 0;
}

static int info_llmc(const char *path) {
    int32_t h[8];
    size_t size;
    if (gpt2c_llmc_header(path, h, &size) != GPT2C_OK) return cli_fail_status("info");
    printf("file:       %s (%zu bytes)\n", path, size);
    printf("format:     llm.c model checkpoint, version %d (%s)\n", h[1], h[1] == 5 ? "bf16" : "fp32");
    printf("header:     magic %d, maxT %d, V %d, L %d, NH %d, C %d, Vp %d\n", h[0], h[2], h[3], h[4], h[5], h[6], h[7]);
    printf("dtype:      %s\n", h[1] == 5 ? "BF16" : "F32");
    gpt2c_config c = {.max_seq_len = h[2], .vocab_size = h[3], .num_layers = h[4], .num_heads = h[5],
                      .channels = h[6], .padded_vocab_size = h[7]};
    print_config(&c, NULL);
    return check_model(path);
}

static int info_shard(const char *path) {
    uint16_t *tok = NULL;
    size_t n = 0;
    if (gpt2c_shard_read(path, &tok, &n) != GPT2C_OK) return cli_fail_status("info");
    unsigned maxid = 0;
    for (size_t i = 0; i < n; i++)
        if (tok[i] > maxid) maxid = tok[i];
    printf("file:       %s\n", path);
    printf("format:     llm.c token shard, version %d\n", GPT2C_SHARD_VERSION);
    printf("tokens:     %zu (largest id %u)\n", n, maxid);
    free(tok);
    return 0;
}

static int info_safetensors(const char *path) {
    gpt2c_st_file *f = NULL;
    if (gpt2c_st_open(path, &f) != GPT2C_OK) return cli_fail_status("info");
    int n = gpt2c_st_count(f);
    if (n == 0) {
        gpt2c_st_close(f);
        return cli_error("info", "%s: a safetensors file with no tensors (empty header): nothing to inspect", path);
    }
    printf("file:       %s\n", path);
    printf("format:     safetensors, %d tensors, header %zu bytes\n", n, gpt2c_st_header_bytes(f));
    int count[GPT2C_DT_BOOL + 1] = {0};
    for (int i = 0; i < n; i++) count[gpt2c_st_get(f, i)->dtype]++;
    printf("dtype:     ");
    for (int d = 0; d <= GPT2C_DT_BOOL; d++)
        if (count[d]) printf(" %s x%d", gpt2c_dtype_name((gpt2c_dtype)d), count[d]);
    printf("\n");
    const int quantized = gpt2c_st_meta(f, "gpt2c.quant.format") != NULL;
    for (int i = 0, shown = 0; i < gpt2c_st_meta_count(f); i++) {
        const char *v;
        const char *k = gpt2c_st_meta_get(f, i, &v);
        if (strncmp(k, "gpt2c.quant:", 12) == 0) continue; /* per-tensor formats: in the tensor list */
        printf("%-11s %s = %s\n", shown++ == 0 ? "metadata:" : "", k, v);
    }
    gpt2c_config cfg;
    const char *prefix = NULL, *heads_from = NULL;
    int rc = 0, is_gpt2 = gpt2c_st_find(f, "wte.weight") || gpt2c_st_find(f, "transformer.wte.weight");
    if (!is_gpt2) {
        printf("model:      not a GPT-2 checkpoint (no wte.weight)\n");
    } else if (gpt2c_st_gpt2_config(f, path, &cfg, &prefix, &heads_from) != GPT2C_OK) {
        rc = cli_fail_status("info");
    } else {
        printf("model:      GPT-2, names %s\n", *prefix ? "with the 'transformer.' prefix" : "without prefix");
        print_config(&cfg, heads_from);
        rc = check_model(path);
    }
    size_t total = 0;
    long long params = 0, file_bytes = 0;
    if (quantized && rc == 0) { /* parameters the file describes: count them from the config */
        gpt2c_model *qm = NULL;
        if (gpt2c_model_load(path, &qm) == GPT2C_OK) {
            const size_t pad = (size_t)(gpt2c_model_config(qm)->padded_vocab_size - gpt2c_model_config(qm)->vocab_size) * (size_t)gpt2c_model_config(qm)->channels;
            params = (long long)(gpt2c_model_num_params(qm) - pad);
            gpt2c_model_free(qm);
        }
        FILE *fp = fopen(path, "rb");
        if (fp && fseek(fp, 0, SEEK_END) == 0) file_bytes = ftell(fp);
        if (fp) fclose(fp);
    }
    printf("tensors:\n");
    for (int i = 0; i < n; i++) {
        const gpt2c_st_tensor *t = gpt2c_st_get(f, i);
        char shape[160];
        size_t k = (size_t)snprintf(shape, sizeof shape, "[");
        for (int d = 0; d < t->ndim && k < sizeof shape; d++)
            k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        if (k < sizeof shape) snprintf(shape + k, sizeof shape - k, "]");
        if (!quantized) {
            printf("  %-44s %-5s %s", t->name, gpt2c_dtype_name(t->dtype), shape);
            if (t->dtype == GPT2C_DT_F32 && t->ndim == 2) { /* pruned weights are exact zeros (gpt2c prune) */
                const size_t ne = t->nbytes / sizeof(float);
                size_t z = 0;
                for (size_t e = 0; e < ne; e++) {
                    float x;
                    memcpy(&x, (const char *)t->data + e * sizeof x, sizeof x); /* may be unaligned */
                    z += x == 0.0f;
                }
                printf("  sparsity %.2f%%", ne ? 100.0 * (double)z / (double)ne : 0.0);
            }
            printf("\n");
            continue;
        }
        /* a quantized file: the format of each tensor (its scales are listed as such) and its bytes */
        char key[300];
        snprintf(key, sizeof key, "gpt2c.quant:%s", t->name);
        const char *fmt = gpt2c_st_meta(f, key);
        const char *dot = strrchr(t->name, '.');
        const int aux = dot && (strcmp(dot, ".scales") == 0 || strcmp(dot, ".absmax_q") == 0 ||
                                strcmp(dot, ".absmax2") == 0 || strcmp(dot, ".absmax_offset") == 0);
        printf("  %-44s %-10s %-5s %-16s %10zu bytes\n", t->name, fmt ? fmt : aux ? "(scales)" : "f32",
               gpt2c_dtype_name(t->dtype), shape, t->nbytes);
        total += t->nbytes;
    }
    if (quantized && params > 0)
        printf("quantized:  %s, tensor data %zu bytes for %lld parameters = %.3f bits per parameter (file %lld bytes: "
               "%.3f)\n", gpt2c_st_meta(f, "gpt2c.quant.format"), total, params, 8.0 * (double)total / (double)params,
               file_bytes, 8.0 * (double)file_bytes / (double)params);
    gpt2c_st_close(f);
    return rc;
}

/* A Hugging Face model directory: its files, the config, then the full load. */
static int info_dir(const char *path) {
    const char *files[] = {"config.json", "generation_config.json", "model.safetensors", "model.safetensors.index.json",
                           "vocab.json", "merges.txt"};
    printf("file:       %s\n", path);
    printf("format:     Hugging Face model directory:");
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", path, files[i]);
        FILE *f = fopen(p, "rb");
        if (f) printf(" %s", files[i]);
        if (f) fclose(f);
    }
    printf("\n");
    gpt2c_model *m = NULL;
    if (gpt2c_model_load(path, &m) != GPT2C_OK) return cli_fail_status("info");
    print_config(gpt2c_model_config(m), NULL);
    gpt2c_model_free(m);
    return check_model(path);
}

int cmd_info(int argc, char **argv) {
    cli_strlist pos;
    int rc = cli_parse("info", argc, argv, NULL, 0, &pos);
    if (rc) return rc;
    if (pos.n != 1) {
        cli_error("info", "expected one path: gpt2c info PATH (.safetensors, llm.c .bin, token shard, or model directory)");
        return 2;
    }
    const char *path = pos.items[0];
    if (gpt2c_is_dir(path)) return info_dir(path);
    switch (gpt2c_detect_format(path)) {
    case GPT2C_FMT_LLMC: return info_llmc(path);
    case GPT2C_FMT_SHARD: return info_shard(path);
    case GPT2C_FMT_SAFETENSORS: return info_safetensors(path);
    case GPT2C_FMT_UNKNOWN: break;
    }
    size_t len = strlen(path);
    if (len >= 4 && strcmp(path + len - 4, ".bin") == 0) return info_llmc(path);
    return info_safetensors(path);
}
