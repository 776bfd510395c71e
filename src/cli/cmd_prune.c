/* gpt2c prune: magnitude (L1) pruning of a checkpoint's linear weights
 * (gpt2c/prune.h), written as a dense fp32 checkpoint whose pruned weights are
 * exact zeros; `train --keep-sparsity` keeps them zero. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/lora_arg.h"
#include "cli/model_arg.h"
#include "cli/outpaths.h"
#include "gpt2c/io.h"
#include "gpt2c/lora.h"
#include "gpt2c/prune.h"

/* the metadata a pruned file carries: the method and the sparsity (printed into sp) */
static void prune_meta(gpt2c_kv meta[2], char *sp, size_t n, double sparsity, gpt2c_prune_scope scope,
                       gpt2c_prune_pattern pattern) {
    snprintf(sp, n, "%g", sparsity);
    meta[0] = (gpt2c_kv){"gpt2c.prune", pattern == GPT2C_PRUNE_2_4       ? "l1 2:4"
                                        : scope == GPT2C_PRUNE_GLOBAL ? "l1 global unstructured"
                                                                      : "l1 layer unstructured"};
    meta[1] = (gpt2c_kv){"gpt2c.prune.sparsity", sp};
}

/* --target lora: prune the adapter's matrices, write an adapter directory */
static int prune_lora(const model_arg *ma, const char *adapter, const char *out, double sparsity, gpt2c_prune_scope scope,
                      gpt2c_prune_pattern pattern, const char *scope_s, const char *pattern_s) {
    const cli_path ins[] = {{"--model", ma->model}, {"--adapter", adapter}};
    static const char *const files[] = {"adapter_model.safetensors", "adapter_config.json"};
    char path[4200];
    int rc;
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        if ((rc = cli_check_output_file("prune", "--out", path, ins, 2))) return rc;
    }
    gpt2c_model *m = NULL;
    int loaded;
    if ((rc = model_arg_make("prune", ma, 1337, &m, &loaded))) return rc;
    char base[4096];
    size_t zeros = 0, numel = 0;
    if (gpt2c_peft_load(m, adapter, 0, base, sizeof base) != GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_option("prune", "--adapter");
    }
    char sp[32];
    gpt2c_kv meta[2];
    prune_meta(meta, sp, sizeof sp, sparsity, scope, pattern);
    if (gpt2c_prune_lora(m, sparsity, scope, pattern, &zeros, &numel) != GPT2C_OK ||
        gpt2c_peft_save(m, out, base[0] ? base : ma->model, meta, 2, 0) != GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_status("prune");
    }
    printf("prune: %s -> %s: l1 %s %s, %zu of %zu LoRA adapter weights zero (%.2f%%)\n", adapter, out, scope_s,
           pattern_s, zeros, numel, numel ? 100.0 * (double)zeros / (double)numel : 0.0);
    gpt2c_model_free(m);
    return 0;
}

int cmd_prune(int argc, char **argv) {
    model_arg ma = {0};
    const char *method = "l1", *scope_s = "global", *pattern_s = "unstructured", *target = "weights", *out = NULL;
    const char *adapter = NULL;
    double sparsity = 0;
    cli_opt opts[] = {
        MODEL_ARG_OPTS(ma),
        {"--sparsity", CLI_FLOAT, &sparsity, "fraction of the linear weights set to zero, in [0, 1) (2:4: 0.5, the default)", -1e30, 1e30},
        {"--method", CLI_STR, &method, "l1: smallest magnitudes first (default)", 0, 0},
        {"--scope", CLI_STR, &scope_s, "global: one threshold over all linear weights (default); layer: each matrix on its own", 0, 0},
        {"--pattern", CLI_STR, &pattern_s, "unstructured (default) | 2:4 (2 of every 4 along the input dim)", 0, 0},
        {"--target", CLI_STR, &target, "weights: attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj (default); lora: the --adapter's A and B matrices", 0, 0},
        {"--adapter", CLI_STR, &adapter, "with --target lora: the PEFT LoRA adapter directory to prune (--model: its base)", 0, 0},
        {"--out", CLI_STR, &out, "output .safetensors (--target lora: an adapter directory)", 0, 0},
    };
    int rc = cli_parse("prune", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (!ma.model) return cli_error("prune", "--model is required (a checkpoint or a model name)");
    if (!out) return cli_error("prune", "--out is required (a .safetensors path)");
    if (strcmp(method, "l1") != 0) return cli_error("prune", "--method '%s': unknown method (l1)", method);
    const int lora = strcmp(target, "lora") == 0;
    if (!lora && strcmp(target, "weights") != 0)
        return cli_error("prune", "--target '%s': unknown target (weights or lora)", target);
    if (lora && !adapter) return cli_error("prune", "--target lora needs --adapter DIR (and its base as --model)");
    if (!lora && adapter) return cli_error("prune", "--adapter: give --target lora to prune the adapter");
    gpt2c_prune_scope scope;
    if (strcmp(scope_s, "global") == 0) scope = GPT2C_PRUNE_GLOBAL;
    else if (strcmp(scope_s, "layer") == 0) scope = GPT2C_PRUNE_LAYER;
    else return cli_error("prune", "--scope '%s': unknown scope (global or layer)", scope_s);
    gpt2c_prune_pattern pattern;
    if (strcmp(pattern_s, "unstructured") == 0) pattern = GPT2C_PRUNE_UNSTRUCTURED;
    else if (strcmp(pattern_s, "2:4") == 0) pattern = GPT2C_PRUNE_2_4;
    else return cli_error("prune", "--pattern '%s': unknown pattern (unstructured or 2:4)", pattern_s);
    if (!cli_given("--sparsity")) {
        if (pattern != GPT2C_PRUNE_2_4) return cli_error("prune", "--sparsity is required (a fraction in [0, 1))");
        sparsity = 0.5;
    }
    if (!(sparsity >= 0 && sparsity < 1)) return cli_error("prune", "--sparsity %g: outside [0, 1)", sparsity);
    if (pattern == GPT2C_PRUNE_2_4 && sparsity != 0.5)
        return cli_error("prune", "--sparsity %g: the 2:4 pattern prunes exactly 0.5", sparsity);
    if (lora) return prune_lora(&ma, adapter, out, sparsity, scope, pattern, scope_s, pattern_s);
    const cli_path ins[] = {{"--model", ma.model}};
    if ((rc = cli_check_output_file("prune", "--out", out, ins, 1))) return rc;
    gpt2c_model *m = NULL;
    int loaded;
    if ((rc = model_arg_make("prune", &ma, 1337, &m, &loaded))) return rc;
    size_t zeros = 0, numel = 0;
    if (gpt2c_prune_model(m, sparsity, scope, pattern, &zeros) != GPT2C_OK ||
        gpt2c_prune_count_zeros(m, -1, -1, NULL, &numel) != GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_status("prune");
    }
    char sp[32];
    gpt2c_kv meta[2];
    prune_meta(meta, sp, sizeof sp, sparsity, scope, pattern);
    if (gpt2c_model_save(m, out, meta, 2, 0) != GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_status("prune");
    }
    printf("prune: %s -> %s: l1 %s %s, %zu of %zu linear weights zero (%.2f%%); dense fp32 file (no sparse kernel)\n",
           ma.model, out, scope_s, pattern_s, zeros, numel, numel ? 100.0 * (double)zeros / (double)numel : 0.0);
    gpt2c_model_free(m);
    return 0;
}
