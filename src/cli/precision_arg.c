#include "cli/precision_arg.h"

#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "gpt2c/cpu.h"
#include "gpt2c/precision.h"
#include "kernels/cpu/bf16_engine.h"
#include "kernels/kernels.h"

int precision_arg_check(const char *cmd, const char *precision, const char *backends) {
    gpt2c_format p;
    if (gpt2c_precision_parse(precision, &p) != 0) {
        cli_error(cmd, "--precision '%s': unknown precision (fp32 or bf16)", precision ? precision : "");
        return 2;
    }
    if (!backends) return 0;
    char list[256];
    snprintf(list, sizeof list, "%s", backends);
    for (char *save = NULL, *be = strtok_r(list, ",", &save); be; be = strtok_r(NULL, ",", &save)) {
        const gpt2c_kernels *k;
        if (gpt2c_kernels_get(be, &k) != GPT2C_OK) continue; /* --backend's error, reported where it is selected */
        if (gpt2c_precision_check_backend(p, be) != GPT2C_OK) {
            cli_error(cmd, "--precision %s: %s", precision, gpt2c_errmsg());
            return 2;
        }
    }
    return 0;
}

int precision_arg_apply(const char *cmd, const char *precision, gpt2c_model *m, int for_inference) {
    gpt2c_format p;
    if (gpt2c_precision_parse(precision, &p) != 0)
        return cli_error(cmd, "--precision '%s': unknown precision (fp32 or bf16)", precision ? precision : "");
    if (p == GPT2C_FMT_F32 && gpt2c_model_precision(m) == GPT2C_FMT_F32) return 0; /* the default: nothing to do */
    if (gpt2c_model_set_precision(m, p) != GPT2C_OK) return cli_error(cmd, "--precision %s: %s", precision, gpt2c_errmsg());
    if (for_inference) gpt2c_model_release_fp32_weights(m);
    return 0;
}

const char *precision_run_tag(gpt2c_format p, const char *backend) {
    if (p != GPT2C_FMT_BF16) return "";
#if defined(__x86_64__)
    if (backend && strcmp(backend, "cpu") == 0 && !gpt2c_cpu_has_avx512bf16())
        return " (bf16 precision; no AVX512_BF16 on this CPU: bf16 GEMMs do fp32's FMAs, bf16 saves memory, not arithmetic)";
    if (backend && strcmp(backend, "cpu") == 0 && gpt2c_cpu_isa() == GPT2C_ISA_AVX512 && !gpt2c_cpu_bf16_use_dp())
        return " (bf16 precision; vdpbf16ps measured slower than fp32 FMAs on this CPU: bf16 GEMMs do FMAs, bf16 saves memory, "
               "not arithmetic)";
#endif
    (void)backend;
    return " (bf16 precision)";
}
