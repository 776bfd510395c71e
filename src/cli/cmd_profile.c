#include "cli/args.h"
#include "cli/commands.h"

int cmd_profile(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("profile", "not implemented yet");
}
