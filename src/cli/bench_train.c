#include "cli/args.h"
#include "cli/bench.h"

int bench_train(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("bench", "bench_train: not implemented yet");
}
int bench_forward(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("bench", "bench_forward: not implemented yet");
}
