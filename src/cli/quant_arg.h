/* `--quant q8|q4|nf4`: quantize an fp32 model right after loading it
 * (generate, bench generate, eval, profile, serve). */
#ifndef GPT2C_CLI_QUANT_ARG_H
#define GPT2C_CLI_QUANT_ARG_H

#include "gpt2c/model.h"

#define QUANT_ARG_OPT(q) {"--quant", CLI_STR, &(q), "quantize the fp32 weights on load: q8|q4|nf4 (default: as stored)", 0, 0}

/* Quantizes m when quant is non-NULL (nf4 with double quantization, default
 * blocks); for_inference gives the fp32 copies of the quantized weights back
 * to the OS.  Prints a one-line error and returns non-zero on failure
 * (unknown format, a model that is already quantized). */
int quant_arg_apply(const char *cmd, const char *quant, const char *model_desc, gpt2c_model *m, int for_inference);

/* `--kv-cache auto|f32|bf16` (gpt2c_kv_cache, gpt2c/infer.h): generate, bench generate, profile. */
#define KV_ARG_OPT(kv)                                                                                              \
    {"--kv-cache", CLI_STR, &(kv),                                                                                  \
     "KV cache type: auto|f32|bf16 (auto: bf16 with quantized weights or --precision bf16, else f32)", 0, 0}
/* Sets m's cache type (kv NULL: leave it); a one-line error naming --kv-cache and non-zero if unknown. */
int kv_arg_apply(const char *cmd, const char *kv, gpt2c_model *m);

/* `--quant-act int8|f32`: the activations of the quantized matmuls: int8 decode (gpt2c_qmatmul_set_int8_act)
 * and bf16 prefill (gpt2c_qmatmul_set_bf16_prefill) where the CPU has them, or f32 (exactly the dequantized
 * weights in both): generate, bench generate, profile, serve. */
#define QACT_ARG_OPT(qa)                                                                                            \
    {"--quant-act", CLI_STR, &(qa),                                                                                 \
     "quantized activations: int8|f32 (default int8: int8 decode where AVX-512 VNNI runs, bf16 prefill where "     \
     "AVX512_BF16 runs; f32: exactly the dequantized weights, decode and prefill)", 0, 0}
/* Sets the activation mode (qa NULL: leave it); a one-line error naming --quant-act and non-zero if unknown;
 * a one-line note on stderr when int8 is asked for on a CPU without AVX-512 VNNI (fp32 is used). */
int qact_arg_apply(const char *cmd, const char *qa);

#endif
