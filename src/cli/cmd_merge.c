/* gpt2c merge: a LoRA adapter folded into its base, W += (alpha / r) B A,
 * written as an ordinary fp32 checkpoint (what PEFT's merge_and_unload gives). */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/lora_arg.h"
#include "cli/model_arg.h"
#include "cli/outpaths.h"
#include "gpt2c/io.h"
#include "gpt2c/lora.h"

int cmd_merge(int argc, char **argv) {
    model_arg ma = {0};
    const char *adapter = NULL, *out = NULL;
    cli_opt opts[] = {
        MODEL_ARG_OPTS(ma),
        {"--adapter", CLI_STR, &adapter, "the PEFT LoRA adapter directory to merge", 0, 0},
        {"--out", CLI_STR, &out, "output: FILE.safetensors, or DIR/ (a Hugging Face model directory)", 0, 0},
    };
    int rc = cli_parse("merge", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (!ma.model) return cli_error("merge", "--model is required (the adapter's base checkpoint)");
    if (!adapter) return cli_error("merge", "--adapter is required (a PEFT adapter directory)");
    if (!out) return cli_error("merge", "--out is required (a .safetensors path or a directory)");
    const size_t n = strlen(out);
    const int dir = out[n - 1] == '/' || gpt2c_is_dir(out);
    const cli_path ins[] = {{"--model", ma.model}, {"--adapter", adapter}};
    if (dir ? (rc = cli_check_output_names("merge", "--out", out, cli_hf_dir_output_name, NULL, ins, 2))
            : (rc = cli_check_output_file("merge", "--out", out, ins, 2)))
        return rc;
    gpt2c_model *m = NULL;
    int loaded = 0;
    if ((rc = model_arg_make("merge", &ma, 1337, &m, &loaded))) return rc;
    if ((rc = adapter_arg_apply("merge", adapter, m))) {
        gpt2c_model_free(m);
        return rc;
    }
    const gpt2c_lora_cfg c = *gpt2c_lora_config(gpt2c_model_lora(m));
    char targets[128], rank[16], alpha[32];
    gpt2c_lora_targets_str(c.targets, targets, sizeof targets);
    snprintf(rank, sizeof rank, "%d", c.rank);
    snprintf(alpha, sizeof alpha, "%g", (double)c.alpha);
    const gpt2c_kv meta[] = {{"gpt2c.lora.merged", adapter}, {"gpt2c.lora.r", rank}, {"gpt2c.lora.alpha", alpha},
                             {"gpt2c.lora.targets", targets}};
    if (gpt2c_lora_merge(m) != GPT2C_OK ||
        (dir ? gpt2c_model_save_dir(m, out, meta, 4, 0, model_arg_vocab_dir(&ma)) : gpt2c_model_save(m, out, meta, 4, 0)) !=
            GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_status("merge");
    }
    printf("merge: %s + %s (rank %d, alpha %g, %s) -> %s\n", ma.model, adapter, c.rank, (double)c.alpha, targets, out);
    gpt2c_model_free(m);
    return 0;
}
