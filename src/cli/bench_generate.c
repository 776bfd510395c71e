#include "cli/args.h"
#include "cli/bench.h"

int bench_generate(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("bench", "bench_generate: not implemented yet");
}
