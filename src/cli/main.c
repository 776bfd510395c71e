/* gpt2c: one program, one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/features.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} command;

static const command COMMANDS[] = {
    {"train", cmd_train, "train or fine-tune a model on token shards"},
    {"eval", cmd_eval, "mean loss and perplexity of a model on token shards"},
    {"info", cmd_info, "config, parameter count, dtype and tensors of a checkpoint"},
    {"quantize", cmd_quantize, "quantize a checkpoint's linear weights: q8, q4 or nf4"},
    {"merge", cmd_merge, "fold a LoRA adapter (PEFT directory) into its base: W += (alpha / r) B A"},
    {"prune", cmd_prune, "magnitude-prune a checkpoint's linear weights: global/per layer, unstructured or 2:4"},
    {"convert", cmd_convert, "convert checkpoints: llm.c .bin <-> safetensors <-> Hugging Face directories"},
    {"encode", cmd_encode, "text on stdin -> GPT-2 token ids"},
    {"decode", cmd_decode, "token ids on stdin -> text"},
    {"tokenize", cmd_tokenize, "text files -> llm.c token shards"},
    {"bpe-train", cmd_bpe_train, "learn a byte-level BPE vocabulary"},
    {"generate", cmd_generate, "generate text with a KV cache"},
    {"serve", cmd_serve, "HTTP completion server (OpenAI /v1/completions), batching requests"},
    {"bench", cmd_bench, "benchmarks: train, forward, gemm, peak, generate"},
    {"profile", cmd_profile, "profile training: per op, per layer, roofline, trace, report"},
    {"distill", cmd_distill, "train a student on a teacher's soft labels (knowledge distillation)"},
    {"pipeline", cmd_pipeline, "seed 003's compression stack on a corpus, measured after each stage (table + report)"},
    {"wse", cmd_wse, "GPT-2 on a simulated wafer-scale mesh (Cerebras-like): run, sweep"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: gpt2c <command> [options]   (gpt2c <command> --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        cli_print_version(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(argv[1], COMMANDS[i].name) == 0) {
            int rc = COMMANDS[i].fn(argc - 2, argv + 2);
            return rc < 0 ? 0 : rc; /* -1: --help was printed */
        }
    fprintf(stderr, "gpt2c: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
