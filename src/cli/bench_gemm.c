#include "cli/args.h"
#include "cli/bench.h"

int bench_gemm(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("bench", "bench_gemm: not implemented yet");
}
