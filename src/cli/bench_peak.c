#include "cli/args.h"
#include "cli/bench.h"

int bench_peak(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("bench", "bench_peak: not implemented yet");
}
