#include "cli/args.h"
#include "cli/commands.h"

int cmd_convert(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("convert", "not implemented yet");
}
