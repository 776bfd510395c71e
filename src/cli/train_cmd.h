/* The train command's body (src/cli/cmd_train.c), shared with the commands
 * that train differently: `gpt2c distill` adds its options and a loss and
 * gets train's options, step semantics, log, validation, checkpoints and
 * resume unchanged. */
#ifndef GPT2C_CLI_TRAIN_CMD_H
#define GPT2C_CLI_TRAIN_CMD_H

#include "cli/args.h"
#include "gpt2c/train.h"

typedef struct train_ext {
    const char *cmd;          /* the command's name in messages ("distill") */
    const char *command_line; /* for profiles ("gpt2c distill") */
    /* the option naming the model trained, in place of --model ("--student") */
    const char *model_opt, *model_help;
    const cli_opt *opts; /* parsed after train's */
    int nopts;
    /* one more input the outputs may not overwrite (--teacher): its option and
     * the variable the parser fills */
    const char *input_opt;
    const char *const *input_path;
    /* after the model is made (backend and threads set), before the data and
     * the log are opened: checks the extra options, sets cfg->loss; returns 0
     * or non-zero after printing a one-line error */
    int (*setup)(void *user, gpt2c_model *m, gpt2c_train_cfg *cfg);
    void *user;
} train_ext;

/* cmd_train with ext's additions (ext NULL: cmd_train). */
int cmd_train_with(int argc, char **argv, const train_ext *ext);

#endif
