#include "cli/args.h"
#include "cli/commands.h"

int cmd_info(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("info", "not implemented yet");
}
