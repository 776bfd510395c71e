/* gpt2c convert IN OUT [--bf16] [--vocab DIR]: IN detected by content (llm.c
 * .bin, safetensors, or a Hugging Face model directory); OUT by its name:
 * .bin -> llm.c v3 (fp32) or v5 (--bf16), .safetensors -> Hugging
 * Face-loadable safetensors (keeps AdamW state if IN had it), a name ending in
 * '/' or an existing directory -> a Hugging Face model directory
 * (config.json, model.safetensors, generation_config.json, and the
 * tokenizer's vocab.json + merges.txt with --vocab). */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_arg.h"
#include "cli/outpaths.h"
#include "gpt2c/io.h"

static int has_ext(const char *s, const char *ext) {
    size_t a = strlen(s), b = strlen(ext);
    return a > b && strcmp(s + a - b, ext) == 0;
}

int cmd_convert(int argc, char **argv) {
    int bf16 = 0;
    const char *vocab = NULL;
    cli_opt opts[] = {
        {"--bf16", CLI_FLAG, &bf16, "write bf16 weights (llm.c .bin version 5)", 0, 0},
        {"--vocab", CLI_STR, &vocab, "tokenizer directory to copy into an output directory", 0, 0},
    };
    cli_strlist pos;
    int rc = cli_parse("convert", argc, argv, opts, CLI_NOPTS(opts), &pos);
    if (rc) return rc;
    if (pos.n != 2) {
        cli_error("convert", "expected IN and OUT: gpt2c convert IN OUT[.bin|.safetensors|/] [--bf16]");
        return 2;
    }
    const char *in = pos.items[0], *out = pos.items[1];
    size_t len = strlen(out);
    int to_dir = (len && out[len - 1] == '/') || gpt2c_is_dir(out);
    int to_bin = !to_dir && has_ext(out, ".bin"), to_st = !to_dir && has_ext(out, ".safetensors");
    if (!to_bin && !to_st && !to_dir) {
        cli_error("convert", "%s: output format unknown: name it .bin (llm.c), .safetensors, or DIR/ (Hugging Face)", out);
        return 2;
    }
    if (bf16 && !to_bin) {
        cli_error("convert", "--bf16 applies to llm.c .bin output only");
        return 2;
    }
    if (vocab && !to_dir) {
        cli_error("convert", "--vocab applies to a directory output only (OUT ending in '/')");
        return 2;
    }
    if (to_dir && !vocab) { /* directory to directory: the tokenizer goes along */
        model_arg src = {.model = in};
        vocab = model_arg_vocab_dir(&src);
    }
    const cli_path ins[] = {{"IN", in}, {"--vocab", vocab}};
    rc = to_dir ? cli_check_output_names("convert", "OUT", out, cli_hf_dir_output_name, NULL, ins, 2)
                : cli_check_output_file("convert", "OUT", out, ins, 2);
    if (rc) return rc;
    gpt2c_model *m = NULL;
    if (gpt2c_model_load(in, &m) != GPT2C_OK) return cli_fail_status("convert");
    gpt2c_status st = to_bin  ? gpt2c_model_save_llmc(m, out, bf16 ? 5 : 3)
                      : to_dir ? gpt2c_model_save_dir(m, out, NULL, 0, gpt2c_model_has_optimizer(m), vocab)
                               : gpt2c_model_save(m, out, NULL, 0, gpt2c_model_has_optimizer(m));
    if (st != GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_status("convert");
    }
    printf("%s -> %s: %s, %zu parameters, %d layers\n", in, out,
           to_bin   ? (bf16 ? "llm.c v5 (bf16)" : "llm.c v3 (fp32)")
           : to_dir ? "Hugging Face directory (config.json, model.safetensors F32)"
                    : "safetensors (F32)",
           gpt2c_model_num_params(m),
           gpt2c_model_config(m)->num_layers);
    gpt2c_model_free(m);
    return 0;
}
