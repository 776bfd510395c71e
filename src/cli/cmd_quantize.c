/* gpt2c quantize: an fp32 checkpoint (or a named model) -> a quantized
 * safetensors file (q8, q4 or nf4 linear weights; layout in src/quant/quant_model.c). */
#include <stdio.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_arg.h"
#include "cli/outpaths.h"
#include "gpt2c/quant.h"
#include "gpt2c/quant_model.h"

int cmd_quantize(int argc, char **argv) {
    model_arg ma = {0};
    const char *fmt_name = NULL, *out = NULL, *keep = NULL;
    int block = 0, dq = 0, no_dq = 0;
    cli_opt opts[] = {
        MODEL_ARG_OPTS(ma),
        {"--format", CLI_STR, &fmt_name, "q8|q4|nf4", 0, 0},
        {"--block", CLI_INT, &block, "elements per block along the input dim (default: q8/q4 32, nf4 64)", 1, 1 << 20},
        {"--double-quant", CLI_FLAG, &dq, "nf4: quantize the absmax scales to 8 bits in blocks of 256 (default)", 0, 0},
        {"--no-double-quant", CLI_FLAG, &no_dq, "nf4: keep the absmax scales fp32", 0, 0},
        {"--keep", CLI_STR, &keep, "comma-separated tensors kept fp32 (e.g. wte, c_fc, h.0.attn.c_attn.weight)", 0, 0},
        {"--out", CLI_STR, &out, "output .safetensors", 0, 0},
    };
    int rc = cli_parse("quantize", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (!ma.model) return cli_error("quantize", "--model is required (a checkpoint or a model name)");
    if (!fmt_name) return cli_error("quantize", "--format is required (q8, q4 or nf4)");
    if (!out) return cli_error("quantize", "--out is required (a .safetensors path)");
    if (dq && no_dq) return cli_error("quantize", "--double-quant and --no-double-quant contradict each other");
    gpt2c_format f;
    if (gpt2c_format_parse(fmt_name, &f) != 0 || !gpt2c_format_is_quantized(f))
        return cli_error("quantize", "--format '%s': unknown format (q8, q4 or nf4)", fmt_name);
    if ((dq || no_dq) && f != GPT2C_FMT_NF4)
        return cli_error("quantize", "--%sdouble-quant applies to nf4 only (not %s)", no_dq ? "no-" : "", fmt_name);
    const cli_path ins[] = {{"--model", ma.model}};
    if ((rc = cli_check_output_file("quantize", "--out", out, ins, 1))) return rc;
    gpt2c_model *m = NULL;
    int loaded;
    if ((rc = model_arg_make("quantize", &ma, 1337, &m, &loaded))) return rc;
    if (gpt2c_model_qweights(m)) {
        rc = cli_error("quantize", "%s is already quantized (%s): quantize its fp32 checkpoint instead", ma.model,
                       gpt2c_format_get(gpt2c_model_qweights(m)->fmt)->name);
        gpt2c_model_free(m);
        return rc;
    }
    if (gpt2c_quantize_model(m, f, block, !no_dq, keep) != GPT2C_OK || gpt2c_quant_save(m, out) != GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_status("quantize");
    }
    struct stat sb;
    const double bytes = stat(out, &sb) == 0 ? (double)sb.st_size : 0;
    const size_t pad = (size_t)(gpt2c_model_config(m)->padded_vocab_size - gpt2c_model_config(m)->vocab_size) * (size_t)gpt2c_model_config(m)->channels;
    const double params = (double)(gpt2c_model_num_params(m) - pad);
    printf("quantize: %s -> %s: %s (block %d%s), wte %s; %.1f MiB, %.2f bits per parameter (fp32: %.1f MiB)\n",
           ma.model, out, fmt_name, gpt2c_quant_block(f, block),
           f == GPT2C_FMT_NF4 ? (no_dq ? ", fp32 scales" : ", double-quantized scales") : "",
           gpt2c_qweight(m, GPT2C_P_WTE, 0) ? gpt2c_format_get(gpt2c_qweight(m, GPT2C_P_WTE, 0)->fmt)->name : "f32",
           bytes / 1048576.0, bytes * 8.0 / params, params * 4.0 / 1048576.0);
    gpt2c_model_free(m);
    return 0;
}
