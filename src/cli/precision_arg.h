/* `--precision fp32|bf16` (gpt2c/precision.h): train, eval, generate, bench
 * train / forward / generate / gemm, profile, serve. */
#ifndef GPT2C_CLI_PRECISION_ARG_H
#define GPT2C_CLI_PRECISION_ARG_H

#include "gpt2c/model.h"

#define PRECISION_ARG_OPT(p)                                                                                        \
    {"--precision", CLI_STR, &(p), "compute precision: fp32|bf16 (bf16: bf16 matmul operands, fp32 accumulation)", 0, 0}

/* Checks the value and that every backend of `backends` (a name, or a
 * comma-separated list; NULL: not checked) can compute in it, before any
 * model is made.  Prints a one-line error naming --precision and returns 2. */
int precision_arg_check(const char *cmd, const char *precision, const char *backends);
/* Sets the model's precision (after its backend and --quant): bf16 makes the
 * bf16 weight copies; for_inference also gives the fp32 copies of those
 * weights back to the OS.  Prints a one-line error and returns 1 on failure. */
int precision_arg_apply(const char *cmd, const char *precision, gpt2c_model *m, int for_inference);
/* The run line's precision tag for format p on `backend`: "" (fp32),
 * " (bf16 precision)", or, on the cpu backend of an x86 CPU without
 * AVX512_BF16, that plus what bf16 buys there (no arithmetic speed). */
const char *precision_run_tag(gpt2c_format p, const char *backend);

#endif
