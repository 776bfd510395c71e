#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/commands.h"

int cmd_bench(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*fn)(int, char **);
        const char *help;
    } B[] = {
        {"train", bench_train, "training step: median/p10/p90 ms, tok/s, GFLOP/s, % of peak"},
        {"forward", bench_forward, "forward pass only"},
        {"gemm", bench_gemm, "GEMM kernels on GPT-2 shapes, against BLAS when present"},
        {"peak", bench_peak, "this machine's FMA peak and memory bandwidth (cached)"},
        {"generate", bench_generate, "prefill and decode tokens/s"},
        {"attention", bench_attention, "inference attention over the KV cache: fused vs unfused (T x T scores)"},
    };
    if (argc >= 1)
        for (size_t i = 0; i < sizeof B / sizeof B[0]; i++)
            if (strcmp(argv[0], B[i].name) == 0) return B[i].fn(argc - 1, argv + 1);
    /* --help: the list on stdout, exit 0; anything else is a usage error */
    int help = argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0);
    FILE *f = help ? stdout : stderr;
    fprintf(f, "usage: gpt2c bench <what> [options]   (gpt2c bench <what> --help)\n");
    for (size_t i = 0; i < sizeof B / sizeof B[0]; i++) fprintf(f, "  %-9s %s\n", B[i].name, B[i].help);
    return help ? -1 : 2;
}
