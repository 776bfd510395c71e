#include "cli/args.h"
#include "cli/commands.h"

int cmd_decode(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("decode", "not implemented yet");
}
