/* Every gpt2c subcommand: one function, one file (src/cli/cmd_<name>.c).
 * Each returns the process exit status (0 ok, 1 failure, 2 usage error). */
#ifndef GPT2C_CLI_COMMANDS_H
#define GPT2C_CLI_COMMANDS_H

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_encode(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_bpe_train(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_wse(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_distill(int argc, char **argv);
int cmd_pipeline(int argc, char **argv);
int cmd_merge(int argc, char **argv);

#endif
