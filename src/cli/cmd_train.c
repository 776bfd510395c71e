#include "cli/args.h"
#include "cli/commands.h"

int cmd_train(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("train", "not implemented yet");
}
