/* gpt2c pipeline: seed 003's compression stack on a corpus, measured after
 * every stage -- a teacher (trained here, or --teacher), distillation into a
 * smaller student, LoRA fine-tuning, 80% pruning of the adapters, NF4
 * weights, flash attention -- written as seed 003's table (markdown, JSON,
 * an HTML report with SVG charts).  A thin driver: the stages are
 * pipeline_stages.c, the measures gpt2c/stage_metrics.h, the writers
 * pipeline_report.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/outpaths.h"
#include "cli/pipeline.h"
#include "gpt2c/core.h"
#include "gpt2c/io.h"

/* --quick: a few minutes on 2 cores (the README's command); the default: what runs in < 30 min here */
static void sizes(pipe_ctx *p) {
    if (p->quick) {
        *p = (pipe_ctx){.t_layers = 4, .t_heads = 4, .t_embd = 128, .s_layers = 2, .s_heads = 2, .s_embd = 64,
                        .batch = 8, .seq = 64, .teacher_steps = 150, .distill_steps = 150, .lora_steps = 50,
                        .bench = {.fwd_batch = 4, .prompt = 16, .gen_tokens = 48, .ppl_seqs = 16}, .quick = 1};
    } else {
        *p = (pipe_ctx){.t_layers = 6, .t_heads = 6, .t_embd = 384, .s_layers = 3, .s_heads = 6, .s_embd = 192,
                        .batch = 8, .seq = 128, .teacher_steps = 400, .distill_steps = 400, .lora_steps = 100,
                        .bench = {.fwd_batch = 8, .prompt = 32, .gen_tokens = 96, .ppl_seqs = 64}};
    }
    p->lr = 3e-3;
    p->temperature = 2.0;
    p->alpha = 0.5;
    p->trials = 3;
    p->seed = 1337;
    p->vocab = 50257;
}

/* what --out receives: the report's files, the distilled student and its adapter directory */
static int pipe_output_name(const char *base, const void *user) {
    return cli_profile_output_name(base, user) || strcmp(base, "student.safetensors") == 0 ||
           strcmp(base, "student_merged.safetensors") == 0 || strcmp(base, "adapter") == 0 ||
           strcmp(base, "adapter_pruned") == 0;
}

static void pipe_free(pipe_ctx *p) {
    gpt2c_model_free(p->student);
    gpt2c_model_free(p->teacher);
    gpt2c_dataloader_close(&p->val1);
}

int cmd_pipeline(int argc, char **argv) {
    int quick = 0;
    for (int i = 0; i < argc; i++) quick |= strcmp(argv[i], "--quick") == 0;
    pipe_ctx P = {.quick = quick};
    sizes(&P);
    pipe_ctx *p = &P;
    cli_opt opts[] = {
        {"--data", CLI_STR, &p->data, "training token shards (a file or a glob), as train's", 0, 0},
        {"--val-data", CLI_STR, &p->val_data, "validation token shards: perplexity and the speed runs' tokens", 0, 0},
        {"--out", CLI_STR, &p->out, "output folder: pipeline.md, pipeline.json, report.html, the models (student*.safetensors, adapter/; created if absent)", 0, 0},
        {"--quick", CLI_FLAG, &p->quick, "small sizes that run in a few minutes on 2 cores", 0, 0},
        {"--trials", CLI_INT, &p->trials, "timed trials per stage: mean +- std (default 3)", 1, PIPE_MAX_TRIALS},
        {"--teacher", CLI_STR, &p->teacher_path, "the baseline: load this fp32 checkpoint instead of training a teacher", 0, 0},
        {"--vocab", CLI_INT, &p->vocab, "vocabulary of the models trained here (default 50257, GPT-2's)", 1, 1 << 24},
        {"--teacher-layers", CLI_INT, &p->t_layers, "teacher trained here: blocks", 1, 4096},
        {"--teacher-heads", CLI_INT, &p->t_heads, "teacher trained here: heads", 1, 4096},
        {"--teacher-embd", CLI_INT, &p->t_embd, "teacher trained here: channels", 1, 65536},
        {"--student-layers", CLI_INT, &p->s_layers, "student: blocks", 1, 4096},
        {"--student-heads", CLI_INT, &p->s_heads, "student: heads", 1, 4096},
        {"--student-embd", CLI_INT, &p->s_embd, "student: channels", 1, 65536},
        {"--teacher-steps", CLI_INT, &p->teacher_steps, "teacher training steps", 1, 1 << 30},
        {"--distill-steps", CLI_INT, &p->distill_steps, "distillation steps", 1, 1 << 30},
        {"--lora-steps", CLI_INT, &p->lora_steps, "LoRA fine-tuning steps (QLoRA: a fifth of them)", 1, 1 << 30},
        {"--batch", CLI_INT, &p->batch, "training batch", 1, 1 << 16},
        {"--seq", CLI_INT, &p->seq, "sequence length (training, forward runs, perplexity)", 2, 1 << 16},
        {"--lr", CLI_FLOAT, &p->lr, "peak learning rate, cosine schedule (default 3e-3)", 0, 10},
        {"--temperature", CLI_FLOAT, &p->temperature, "distillation temperature (default 2)", 0, 0},
        {"--alpha", CLI_FLOAT, &p->alpha, "distillation: weight of the soft term (default 0.5)", 0, 0},
        {"--threads", CLI_INT, &p->threads, "threads (default: all cores)", 0, 4096},
        {"--seed", CLI_LONG, &p->seed, "seed for init and data order (default 1337)", 0, 9.2e18},
    };
    int rc = cli_parse("pipeline", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (!p->data) return cli_error("pipeline", "--data is required (training token shards from gpt2c tokenize)");
    if (!p->val_data) return cli_error("pipeline", "--val-data is required (perplexity is measured on it)");
    if (!p->out) return cli_error("pipeline", "--out is required (the folder the table and report go to)");
    if (!(p->temperature > 0) || !isfinite(p->temperature))
        return cli_error("pipeline", "--temperature: must be a finite number > 0 (got %g)", p->temperature);
    if (!(p->alpha >= 0 && p->alpha <= 1)) return cli_error("pipeline", "--alpha: must be in [0, 1] (got %g)", p->alpha);
    p->ctx = p->seq;
    p->bench.seq = p->seq;
    if (p->bench.prompt + p->bench.gen_tokens > p->seq) p->bench.prompt = p->seq / 4;
    if (p->bench.prompt + p->bench.gen_tokens > p->seq) p->bench.gen_tokens = p->seq - p->bench.prompt;
    p->bench.train_batch = p->batch;
    p->bench.min_ms = 200;
    const cli_path ins[] = {{"--data", p->data}, {"--val-data", p->val_data}, {"--teacher", p->teacher_path}};
    if ((rc = cli_check_output_names("pipeline", "--out", p->out, pipe_output_name, NULL, ins, CLI_NOPTS(ins))))
        return rc;
    if (mkdir(p->out, 0755) != 0 && !gpt2c_is_dir(p->out))
        return cli_error("pipeline", "--out: %s: cannot create the folder", p->out);
    const uint64_t t0 = gpt2c_now_ns();
    if (p->teacher_path) { /* the loaded teacher sets the vocabulary and context */
        rc = pipe_load_teacher(p);
        if (!rc && p->seq > gpt2c_model_config(p->teacher)->max_seq_len)
            rc = cli_error("pipeline", "--seq %d: longer than the teacher's context of %d", p->seq,
                           gpt2c_model_config(p->teacher)->max_seq_len);
        if (!rc) p->vocab = gpt2c_model_config(p->teacher)->vocab_size;
    }
    if (!rc && gpt2c_dataloader_open(&p->val1, p->val_data, 1, p->seq, 0, 0, p->vocab) != GPT2C_OK)
        rc = cli_error("pipeline", "--val-data: %s", gpt2c_errmsg());
    if (!rc) rc = pipe_stage_teacher(p);
    if (!rc)
        fprintf(stderr, "gpt2c pipeline: stages in order: teacher, distillation, LoRA, adapter pruning, NF4, flash "
                "attention; %d trials each\n", p->trials);
    int (*const stages[])(pipe_ctx *) = {pipe_stage_distill, pipe_stage_lora, pipe_stage_prune_lora, pipe_stage_nf4,
                                         pipe_stage_flash};
    for (size_t i = 0; !rc && i < sizeof stages / sizeof stages[0]; i++) rc = stages[i](p);
    p->seconds = (gpt2c_now_ns() - t0) * 1e-9;
    if (!rc) rc = pipe_write_report(p);
    pipe_free(p);
    return rc;
}
