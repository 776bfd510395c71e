/* LoRA options shared by the commands: `--adapter DIR` (eval, generate,
 * bench, profile, serve: a PEFT adapter applied unmerged) and train's
 * `--lora-rank R --lora-alpha A --lora-dropout P --lora-targets LIST`. */
#ifndef GPT2C_CLI_LORA_ARG_H
#define GPT2C_CLI_LORA_ARG_H

#include <stdint.h>

#include "cli/args.h"
#include "gpt2c/model.h"

#define ADAPTER_ARG_OPT(dir)                                                                                           \
    {"--adapter", CLI_STR, &(dir), "a PEFT LoRA adapter directory (gpt2c train --lora-rank --save, or peft), applied unmerged", 0, 0}

/* Loads the adapter in `dir` (NULL: nothing) onto m, checked against it;
 * prints a one-line error naming --adapter and returns non-zero on failure. */
int adapter_arg_apply(const char *cmd, const char *dir, gpt2c_model *m);

typedef struct {
    int rank;
    double alpha, dropout;
    const char *targets;
} lora_arg;

#define LORA_ARG_DEFAULTS {0, -1, 0, "c_attn"}
#define LORA_ARG_OPTS(la)                                                                                              \
    {"--lora-rank", CLI_INT, &(la).rank, "train LoRA adapters of rank R on a frozen base (saved as a PEFT adapter directory)", 1, 65536}, \
        {"--lora-alpha", CLI_FLOAT, &(la).alpha, "LoRA alpha: the update is scaled by alpha / rank (default: the rank)", -1e6, 1e6}, \
        {"--lora-dropout", CLI_FLOAT, &(la).dropout, "dropout on the adapters' input while training, [0, 1) (default 0)", 0, 0.999999}, \
        {"--lora-targets", CLI_STR, &(la).targets, "modules that get adapters: c_attn,attn.c_proj,c_fc,mlp.c_proj (or c_proj, all; default c_attn)", 0, 0}

/* Checks the --lora-* options (rank given when any other is, targets known); 0 or a printed error. */
int lora_arg_check(const char *cmd, const lora_arg *la);
/* Attaches fresh adapters (PEFT's init, seeded); prints the error and returns non-zero on failure. */
int lora_arg_attach(const char *cmd, const lora_arg *la, gpt2c_model *m, uint64_t seed);

#endif
