/* gpt2c distill: train a student on a teacher's soft labels.  Everything but
 * the loss is `gpt2c train` (src/cli/cmd_train.c): the same options, step
 * semantics, JSONL log, validation (the student's cross-entropy), checkpoints
 * and resume; this file adds --teacher, --temperature, --alpha and the loss. */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/train_cmd.h"
#include "gpt2c/distill.h"
#include "gpt2c/io.h"

typedef struct {
    const char *teacher_path;
    double temperature, alpha;
    int chunk;
    gpt2c_model *teacher;
    gpt2c_distill *d;
} distill_job;

static int distill_setup(void *user, gpt2c_model *student, gpt2c_train_cfg *cfg) {
    distill_job *J = user;
    if (!J->teacher_path) return cli_error("distill", "--teacher is required (the checkpoint to distill from)");
    const gpt2c_distill_cfg dc = {(float)J->temperature, (float)J->alpha, J->chunk};
    const gpt2c_distill_cfg tau_only = {dc.temperature, 0.5f, 0};
    if (gpt2c_distill_check(&dc) != GPT2C_OK)
        return cli_fail_option("distill", gpt2c_distill_check(&tau_only) != GPT2C_OK ? "--temperature" : "--alpha");
    if (gpt2c_model_load(J->teacher_path, &J->teacher) != GPT2C_OK)
        return cli_error("distill", "--teacher: %s", gpt2c_errmsg());
    gpt2c_model_set_threads(J->teacher, gpt2c_model_threads(student));
    if (gpt2c_distill_create(J->teacher, gpt2c_model_config(student), cfg->T, &dc, &J->d) != GPT2C_OK)
        return cli_error("distill", "--teacher %s: %s", J->teacher_path, gpt2c_errmsg());
    cfg->loss = gpt2c_distill_loss(J->d);
    const gpt2c_config *t = gpt2c_model_config(J->teacher);
    fprintf(stderr,
            "gpt2c distill: teacher %s: %d layers, %d heads, %d channels, %.2fM parameters; temperature %g, alpha %g; "
            "teacher forward holds %.1f MiB (%d positions of logits at a time)\n",
            J->teacher_path, t->num_layers, t->num_heads, t->channels, gpt2c_model_num_params(J->teacher) / 1e6, J->temperature,
            J->alpha, gpt2c_distill_bytes(J->d) / 1048576.0, J->chunk > 0 && J->chunk < cfg->T ? J->chunk : cfg->T < 64 ? cfg->T : 64);
    return 0;
}

int cmd_distill(int argc, char **argv) {
    distill_job J = {.temperature = 2.0, .alpha = 0.5, .chunk = 64};
    const cli_opt opts[] = {
        {"--teacher", CLI_STR, &J.teacher_path, "the teacher: a checkpoint file or Hugging Face model directory (same vocabulary as the student)", 0, 0},
        {"--temperature", CLI_FLOAT, &J.temperature, "softmax temperature tau > 0 of both distributions in the soft term (default 2)", 0, 0},
        {"--alpha", CLI_FLOAT, &J.alpha, "weight of the soft term in [0, 1]; 1 - alpha weighs the cross-entropy (default 0.5)", 0, 0},
        {"--teacher-chunk", CLI_INT, &J.chunk, "teacher positions per forward: rows of its logits held at once (default 64)", 1, 1 << 20},
    };
    const train_ext ext = {
        .cmd = "distill",
        .command_line = "gpt2c distill",
        .model_opt = "--student",
        .model_help = "the student: a checkpoint file, a Hugging Face model directory, or a preset name (gpt2, ...) "
                      "whose sizes --layers/--heads/--embd/--ctx/--vocab override (a new student)",
        .opts = opts,
        .nopts = CLI_NOPTS(opts),
        .input_opt = "--teacher",
        .input_path = &J.teacher_path,
        .setup = distill_setup,
        .user = &J,
    };
    const int rc = cmd_train_with(argc, argv, &ext);
    gpt2c_distill_free(J.d);
    gpt2c_model_free(J.teacher);
    return rc;
}
