#include "cli/args.h"
#include "cli/commands.h"

int cmd_encode(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("encode", "not implemented yet");
}
