#include "cli/lora_arg.h"

#include "gpt2c/lora.h"

int adapter_arg_apply(const char *cmd, const char *dir, gpt2c_model *m) {
    if (!dir) return 0;
    if (gpt2c_peft_load(m, dir, 0, NULL, 0) != GPT2C_OK) return cli_fail_option(cmd, "--adapter");
    return 0;
}

int lora_arg_check(const char *cmd, const lora_arg *la) {
    if (!la->rank) {
        static const char *const need_rank[] = {"--lora-alpha", "--lora-dropout", "--lora-targets"};
        for (int i = 0; i < 3; i++)
            if (cli_given(need_rank[i])) return cli_error(cmd, "%s needs --lora-rank", need_rank[i]);
        return 0;
    }
    unsigned t;
    if (gpt2c_lora_parse_targets(la->targets, &t) != GPT2C_OK) return cli_fail_option(cmd, "--lora-targets");
    return 0;
}

int lora_arg_attach(const char *cmd, const lora_arg *la, gpt2c_model *m, uint64_t seed) {
    gpt2c_lora_cfg c = {la->rank, (float)(la->alpha < 0 && !cli_given("--lora-alpha") ? la->rank : la->alpha),
                        (float)la->dropout, 0};
    if (gpt2c_lora_parse_targets(la->targets, &c.targets) != GPT2C_OK) return cli_fail_option(cmd, "--lora-targets");
    if (gpt2c_lora_attach(m, &c, seed) != GPT2C_OK) return cli_fail_option(cmd, "--lora-rank");
    return 0;
}
