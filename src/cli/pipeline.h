/* gpt2c pipeline: seed 003's compression stack as one command (cmd_pipeline.c
 * runs it; pipeline_stages.c holds one function per stage; pipeline_report.c
 * writes the table as markdown, JSON and an HTML report with SVG charts). */
#ifndef GPT2C_CLI_PIPELINE_H
#define GPT2C_CLI_PIPELINE_H

#include "gpt2c/data.h"
#include "gpt2c/model.h"
#include "gpt2c/stage_metrics.h"

#define PIPE_MAX_TRIALS 32

/* One row of the table: a stage's result (or why there is none). */
typedef struct {
    const char *name;      /* "baseline (teacher)", "+ distillation", ... */
    const char *what;      /* one line: what the stage did */
    char note[256];        /* pending / unavailable: why (empty: measured) */
    double train_mib;      /* NAN: unavailable (note says why) */
    double infer_mib;
    int trials;
    double fwd_tok_s[PIPE_MAX_TRIALS], fwd_ms[PIPE_MAX_TRIALS], gen_tok_s[PIPE_MAX_TRIALS], gen_ms[PIPE_MAX_TRIALS];
    double ppl;
    char model_desc[128]; /* "4 layers, 256 channels, fp32, 16.1M parameters" */
} pipe_row;

typedef struct {
    /* inputs */
    const char *data, *val_data, *out, *teacher_path;
    int quick, trials, threads;
    long long seed;
    int vocab;
    /* sizes and schedule (set from --quick or the defaults, overridable) */
    int t_layers, t_heads, t_embd, s_layers, s_heads, s_embd, ctx;
    int batch, seq, teacher_steps, distill_steps, lora_steps;
    double lr, temperature, alpha;
    gpt2c_stage_bench bench;
    /* state */
    gpt2c_model *teacher, *student;
    gpt2c_dataloader val1; /* B = 1, T = seq: perplexity and speed prompts */
    pipe_row rows[8];
    int nrows;
    double seconds;
} pipe_ctx;

/* stages (pipeline_stages.c): each returns 0, or 1 after printing a one-line error */
int pipe_load_teacher(pipe_ctx *p); /* --teacher: before the validation data opens (it sets the vocabulary) */
int pipe_stage_teacher(pipe_ctx *p);
int pipe_stage_distill(pipe_ctx *p);
int pipe_stage_lora(pipe_ctx *p);
int pipe_stage_prune_lora(pipe_ctx *p);
int pipe_stage_nf4(pipe_ctx *p);
int pipe_stage_flash(pipe_ctx *p);
/* measures m into a new row (train memory of a full fine-tuning unless the row's note says otherwise) */
int pipe_measure(pipe_ctx *p, gpt2c_model *m, pipe_row *r, int full_finetune);
pipe_row *pipe_new_row(pipe_ctx *p, const char *name, const char *what);

/* pipeline_report.c: DIR/pipeline.md, pipeline.json, report.html; the markdown table on stdout */
int pipe_write_report(const pipe_ctx *p);

#endif
