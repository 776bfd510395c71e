#include "cli/args.h"
#include "cli/commands.h"

int cmd_tokenize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("tokenize", "not implemented yet");
}
