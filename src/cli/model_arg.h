/* `--model NAME|PATH` plus the custom-size options, shared by the commands
 * that take a model.  NAME (gpt2, gpt2-medium, gpt2-large, gpt2-xl) gives a
 * fresh GPT-2-initialised model; --layers/--heads/--embd/--ctx/--vocab
 * override a preset's sizes (custom sizes); a PATH loads a checkpoint
 * (safetensors, llm.c .bin, or a Hugging Face model directory), which the
 * size options may not contradict. */
#ifndef GPT2C_CLI_MODEL_ARG_H
#define GPT2C_CLI_MODEL_ARG_H

#include "cli/args.h"
#include "gpt2c/model.h"

typedef struct {
    const char *model;
    int layers, heads, embd, ctx;
    const char *vocab; /* a number, or a tokenizer directory whose vocabulary size is used */
} model_arg;

/* The option entries for --model and the custom sizes (7 entries). */
#define MODEL_ARG_OPTS(ma)                                                                          \
    {"--model", CLI_STR, &(ma).model, "gpt2|gpt2-medium|gpt2-large|gpt2-xl, a checkpoint file, or a Hugging Face model directory", 0, 0}, \
        {"--layers", CLI_INT, &(ma).layers, "custom size: transformer blocks", 1, 4096},              \
        {"--heads", CLI_INT, &(ma).heads, "custom size: attention heads", 1, 4096},                   \
        {"--embd", CLI_INT, &(ma).embd, "custom size: channels", 1, 65536},                           \
        {"--ctx", CLI_INT, &(ma).ctx, "custom size: context length", 1, 1 << 20},                     \
        {"--vocab", CLI_STR, &(ma).vocab, "custom size: vocabulary size, or a tokenizer dir to take it from", 0, 0}

/* The tokenizer directory that goes with the model: --vocab when it names a
 * directory, else --model when it is a model directory holding vocab.json +
 * merges.txt (or encoder.json + vocab.bpe); NULL if none. */
const char *model_arg_vocab_dir(const model_arg *ma);

/* Builds or loads the model; prints a one-line error and returns non-zero on failure. */
int model_arg_make(const char *cmd, const model_arg *ma, uint64_t seed, gpt2c_model **out, int *loaded);

#endif
