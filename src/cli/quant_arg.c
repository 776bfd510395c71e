#include "cli/quant_arg.h"

#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "gpt2c/quant.h"
#include "gpt2c/infer.h"
#include "gpt2c/quant_model.h"

int quant_arg_apply(const char *cmd, const char *quant, const char *model_desc, gpt2c_model *m, int for_inference) {
    if (!quant) return 0;
    gpt2c_format f;
    if (gpt2c_format_parse(quant, &f) != 0 || !gpt2c_format_is_quantized(f))
        return cli_error(cmd, "--quant '%s': unknown format (q8, q4 or nf4)", quant);
    if (gpt2c_model_qweights(m))
        return cli_error(cmd, "--quant %s: %s is already quantized (%s); load it without --quant", quant, model_desc,
                         gpt2c_format_get(gpt2c_model_qweights(m)->fmt)->name);
    if (gpt2c_quantize_model(m, f, 0, 1, NULL) != GPT2C_OK) return cli_fail_status(cmd);
    if (for_inference) gpt2c_quant_release_fp32(m);
    return 0;
}

int kv_arg_apply(const char *cmd, const char *kv, gpt2c_model *m) {
    if (!kv) return 0;
    gpt2c_kv_cache t;
    if (gpt2c_kv_cache_parse(kv, &t) != 0) return cli_error(cmd, "--kv-cache '%s': unknown cache type (auto, f32 or bf16)", kv);
    gpt2c_model_set_kv_cache(m, t);
    return 0;
}

int qact_arg_apply(const char *cmd, const char *qa) {
    if (!qa) return 0;
    if (strcmp(qa, "f32") == 0) {
        gpt2c_qmatmul_set_int8_act(0);
        gpt2c_qmatmul_set_bf16_prefill(0);
    } else if (strcmp(qa, "int8") == 0) {
        gpt2c_qmatmul_set_bf16_prefill(1);
        if (!gpt2c_qmatmul_set_int8_act(1))
            fprintf(stderr, "%s: note: --quant-act int8 needs AVX-512 VNNI, which this CPU (or --isa) lacks: fp32 activations\n",
                    cmd);
    } else {
        return cli_error(cmd, "--quant-act '%s': unknown activation type (int8 or f32)", qa);
    }
    return 0;
}
