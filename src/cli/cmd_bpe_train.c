#include "cli/args.h"
#include "cli/commands.h"

int cmd_bpe_train(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("bpe_train", "not implemented yet");
}
