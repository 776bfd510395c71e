/* gpt2c convert IN OUT [--bf16]: IN detected by content (llm.c .bin or
 * safetensors); OUT by extension: .bin -> llm.c v3 (fp32) or v5 (--bf16),
 * .safetensors -> Hugging Face-loadable safetensors (keeps AdamW state if IN had it). */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/outpaths.h"
#include "gpt2c/io.h"

static int has_ext(const char *s, const char *ext) {
    size_t a = strlen(s), b = strlen(ext);
    return a > b && strcmp(s + a - b, ext) == 0;
}

int cmd_convert(int argc, char **argv) {
    int bf16 = 0;
    cli_opt opts[] = {
        {"--bf16", CLI_FLAG, &bf16, "write bf16 weights (llm.c .bin version 5)", 0, 0},
    };
    cli_strlist pos;
    int rc = cli_parse("convert", argc, argv, opts, CLI_NOPTS(opts), &pos);
    if (rc) return rc;
    if (pos.n != 2) {
        cli_error("convert", "expected IN and OUT: gpt2c convert IN OUT[.bin|.safetensors] [--bf16]");
        return 2;
    }
    const char *in = pos.items[0], *out = pos.items[1];
    int to_bin = has_ext(out, ".bin"), to_st = has_ext(out, ".safetensors");
    if (!to_bin && !to_st) {
        cli_error("convert", "%s: output format unknown: name it .bin (llm.c) or .safetensors", out);
        return 2;
    }
    if (bf16 && !to_bin) {
        cli_error("convert", "--bf16 applies to llm.c .bin output only");
        return 2;
    }
    const cli_path ins[] = {{"IN", in}};
    if ((rc = cli_check_output_file("convert", "OUT", out, ins, 1))) return rc;
    gpt2c_model *m = NULL;
    if (gpt2c_model_load(in, &m) != GPT2C_OK) return cli_fail_status("convert");
    gpt2c_status st = to_bin ? gpt2c_model_save_llmc(m, out, bf16 ? 5 : 3)
                             : gpt2c_model_save(m, out, NULL, 0, m->m_mem != NULL);
    if (st != GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_status("convert");
    }
    printf("%s -> %s: %s, %zu parameters, %d layers\n", in, out,
           to_bin ? (bf16 ? "llm.c v5 (bf16)" : "llm.c v3 (fp32)") : "safetensors (F32)", m->num_params,
           m->cfg.num_layers);
    gpt2c_model_free(m);
    return 0;
}
