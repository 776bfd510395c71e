/* `gpt2c --version`: the version line, then one line per feature of this
 * build (SIMD paths, BLAS, CUDA, MPI, JSON, Unicode, HTTP, ...).  The list
 * lives in features.c: a new optional dependency adds one entry there. */
#ifndef GPT2C_CLI_FEATURES_H
#define GPT2C_CLI_FEATURES_H

#include <stdio.h>

void cli_print_version(FILE *f);

#endif
