/* gpt2c train: the training loop with a live progress line, JSONL log,
 * periodic validation, atomic checkpoints and exact resume. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/lora_arg.h"
#include "cli/memory_note.h"
#include "cli/model_arg.h"
#include "cli/outpaths.h"
#include "cli/quant_arg.h"
#include "cli/precision_arg.h"
#include "gpt2c/precision.h"
#include "cli/run_arg.h"
#include "gpt2c/dist.h"
#include "gpt2c/fileio.h"
#include "gpt2c/io.h"
#include "gpt2c/lora.h"
#include "gpt2c/profile_session.h"
#include "gpt2c/prune.h"
#include "gpt2c/quant_model.h"
#include "gpt2c/resume.h"
#include "gpt2c/train.h"
#include "cli/train_cmd.h"

/* the command's name in messages: "train", or a train_ext's ("distill") */
static const char *CMD = "train";

typedef struct {
    FILE *log;
    int tty;
    int print_every;
    uint64_t t_start;
    int first_step;
    const char *save_path;
    int save_dir;          /* --save names a Hugging Face directory */
    const char *vocab_dir; /* tokenizer copied into it (NULL: none) */
    uint64_t seed;
    int shuffle;
    float last_val;
    gpt2c_profile_session *prof; /* --profile-out */
    int rank, nranks;            /* data parallel: only rank 0 prints, logs and saves */
    gpt2c_dist *dist;            /* NULL: one process (or built without MPI) */
    int shared_failure;          /* every rank knows the run failed (no abort needed) */
    int lora;                    /* LoRA: --save writes a PEFT adapter directory */
    const char *base_model;      /* the adapter's base (adapter_config.json) */
} train_ui;

static void on_event(const gpt2c_train_event *ev, void *user) {
    train_ui *ui = user;
    if (ui->rank != 0) return;
    if (ev->is_eval) {
        ui->last_val = ev->val_loss;
        if (ui->log) {
            fprintf(ui->log, "{\"step\":%d,\"val_loss\":%.6f}\n", ev->step, ev->val_loss);
            fflush(ui->log); /* a killed run keeps every record written so far */
        }
        fprintf(stderr, "%sval loss %.4f  (after %d of %d steps)\n", ui->tty ? "\r\033[K" : "", ev->val_loss, ev->step,
                ev->steps);
        return;
    }
    if (ui->log)
        fprintf(ui->log, "{\"step\":%d,\"loss\":%.6f,\"lr\":%.6g,\"norm\":%.6f,\"ms\":%.3f,\"tok_s\":%.1f}\n", ev->step,
                ev->loss, ev->lr, ev->norm, ev->ms, ev->tok_s);
    if (ui->log) fflush(ui->log);
    int done = ev->step + 1 - ui->first_step, left = ev->steps - ev->step - 1;
    double elapsed = (gpt2c_now_ns() - ui->t_start) / 1e9, eta = done > 0 ? elapsed / done * left : 0;
    if (ui->tty || ev->step % ui->print_every == 0 || left == 0)
        fprintf(stderr, "%sstep %5d/%d  loss %.4f  lr %.2e  norm %.3f  %7.1f ms  %8.0f tok/s  ETA %5.0fs%s",
                ui->tty ? "\r\033[K" : "", ev->step + 1, ev->steps, ev->loss, ev->lr, ev->norm, ev->ms, ev->tok_s, eta,
                ui->tty && left ? "" : "\n");
}

/* "--save ck_{step}.safetensors" keeps one checkpoint per save; without
 * "{step}" each save replaces the last (atomically). */
static void expand_step(char *out, size_t n, const char *pattern, int step) {
    const char *at = strstr(pattern, "{step}");
    if (!at) {
        snprintf(out, n, "%s", pattern);
        return;
    }
    snprintf(out, n, "%.*s%d%s", (int)(at - pattern), pattern, step, at + 6);
}

static gpt2c_status save_checkpoint(gpt2c_model *m, int steps_done, const gpt2c_dataloader *train, train_ui *ui);

/* Data parallel: every rank checks the parameters agree and (ZeRO-1) sends
 * its moments to rank 0, which writes the file; all learn whether it worked. */
static gpt2c_status on_checkpoint(gpt2c_model *m, int steps_done, const gpt2c_dataloader *train, void *user) {
    train_ui *ui = user;
    if (!ui->save_path) return GPT2C_OK;
#ifdef GPT2C_HAVE_MPI
    if (ui->dist) {
        gpt2c_status st = gpt2c_dist_before_save(ui->dist, m);
        if (st != GPT2C_OK) { /* a collective outcome: every rank has the same error */
            ui->shared_failure = 1;
            return st;
        }
        if (ui->rank == 0) st = save_checkpoint(m, steps_done, train, ui);
        gpt2c_dist_after_save(ui->dist, m);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", st == GPT2C_OK ? "" : gpt2c_errmsg());
        if (gpt2c_dist_agree(ui->dist, st == GPT2C_OK, NULL)) {
            gpt2c_dist_bcast_msg(ui->dist, 0, msg, sizeof msg);
            ui->shared_failure = 1;
            return gpt2c_fail(GPT2C_ERR_IO, "%s", msg);
        }
        return GPT2C_OK;
    }
#endif
    return save_checkpoint(m, steps_done, train, ui);
}

static gpt2c_status save_checkpoint(gpt2c_model *m, int steps_done, const gpt2c_dataloader *train, train_ui *ui) {
    char path[4096];
    expand_step(path, sizeof path, ui->save_path, steps_done);
    char step[32], epoch[32], shard[32], cursor[32], seed[32], shuffle[8], gbatch[32];
    snprintf(gbatch, sizeof gbatch, "%d", train->B * (train->nranks > 0 ? train->nranks : 1));
    snprintf(step, sizeof step, "%d", steps_done);
    snprintf(epoch, sizeof epoch, "%" PRIu64, train->pos.epoch);
    snprintf(shard, sizeof shard, "%d", train->pos.shard);
    snprintf(cursor, sizeof cursor, "%" PRIu64, train->pos.cursor);
    snprintf(seed, sizeof seed, "%" PRIu64, ui->seed);
    snprintf(shuffle, sizeof shuffle, "%d", ui->shuffle);
    const gpt2c_kv meta[] = {
        {"gpt2c.step", step},           {"gpt2c.data.epoch", epoch}, {"gpt2c.data.shard", shard},
        {"gpt2c.data.cursor", cursor},  {"gpt2c.seed", seed},        {"gpt2c.data.shuffle", shuffle},
        {"gpt2c.data.global_batch", gbatch},
    };
    if (ui->lora)
        GPT2C_TRY(gpt2c_peft_save(m, path, ui->base_model, meta, (int)(sizeof meta / sizeof meta[0]), 1));
    else if (ui->save_dir)
        GPT2C_TRY(gpt2c_model_save_dir(m, path, meta, (int)(sizeof meta / sizeof meta[0]), 1, ui->vocab_dir));
    else
        GPT2C_TRY(gpt2c_model_save(m, path, meta, (int)(sizeof meta / sizeof meta[0]), 1));
    fprintf(stderr, "%ssaved %s (step %d)\n", ui->tty ? "\r\033[K" : "", path, steps_done);
    return GPT2C_OK;
}

/* "--save run/ck_{step}.safetensors": the names that pattern writes (prefix, digits, suffix). */
typedef struct {
    const char *pre, *suf;
    size_t npre;
} step_names;

static int step_name_match(const char *base, const void *user) {
    const step_names *p = user;
    size_t n = strlen(base), nsuf = strlen(p->suf);
    if (n < p->npre + nsuf + 1 || strncmp(base, p->pre, p->npre) != 0 || strcmp(base + n - nsuf, p->suf) != 0) return 0;
    for (size_t i = p->npre; i < n - nsuf; i++)
        if (base[i] < '0' || base[i] > '9') return 0;
    return 1;
}

/* No output may overwrite an input (--save: a file, or a Hugging Face folder). */
static int check_train_outputs(const char *save, const char *log_path, const char *profile_out, const cli_path *ins,
                               int nin) {
    int rc = 0;
    if (save) {
        /* the checkpoint may replace the one resumed from (loaded first, replaced atomically): not an input here */
        const int nsave_in = nin - 1;
        char first[4096];
        expand_step(first, sizeof first, save, 0);
        size_t n = strlen(first);
        if ((n && first[n - 1] == '/') || gpt2c_is_dir(first)) { /* a Hugging Face folder */
            while (n > 1 && first[n - 1] == '/') first[--n] = 0;
            rc = cli_check_output_names(CMD, "--save", first, cli_hf_dir_output_name, NULL, ins, nsave_in);
        } else {
            rc = cli_check_output_file(CMD, "--save", first, ins, nsave_in);
        }
        if (rc) return rc;
        const char *at = strstr(save, "{step}"), *slash = strrchr(save, '/');
        if (at && (!slash || slash < at)) {
            char dir[4096];
            const char *base = slash ? slash + 1 : save;
            if (!slash) snprintf(dir, sizeof dir, ".");
            else if (slash == save) snprintf(dir, sizeof dir, "/");
            else snprintf(dir, sizeof dir, "%.*s", (int)(slash - save), save);
            step_names sn = {base, at + 6, (size_t)(at - base)};
            if ((rc = cli_check_output_names(CMD, "--save", dir, step_name_match, &sn, ins, nsave_in))) return rc;
        }
    }
    if (log_path && (rc = cli_check_output_file(CMD, "--log", log_path, ins, nin))) return rc;
    if (profile_out &&
        (rc = cli_check_output_names(CMD, "--profile-out", profile_out, cli_profile_output_name, NULL, ins, nin)))
        return rc;
    return 0;
}

/* --save DIR under LoRA: the adapter's files may not overwrite an input (the
 * adapter being resumed is replaced atomically: not an input here). */
static int check_lora_outputs(const char *save, const char *log_path, const char *profile_out, const cli_path *ins,
                              int nin) {
    int rc = 0;
    if (save) {
        static const char *const files[] = {"adapter_model.safetensors", "adapter_config.json",
                                            "gpt2c_optimizer.safetensors"};
        char first[4096], path[4200];
        expand_step(first, sizeof first, save, 0);
        size_t n = strlen(first);
        while (n > 1 && first[n - 1] == '/') first[--n] = 0;
        struct stat sb;
        if (!gpt2c_is_dir(first) && stat(first, &sb) == 0)
            return cli_error(CMD, "--save %s: under --lora-rank --save names a directory (a PEFT adapter), and %s is a file",
                             save, first);
        for (int i = 0; i < 3; i++) {
            snprintf(path, sizeof path, "%s/%s", first, files[i]);
            if ((rc = cli_check_output_file(CMD, "--save", path, ins, nin - 1))) return rc;
        }
    }
    if (log_path && (rc = cli_check_output_file(CMD, "--log", log_path, ins, nin))) return rc;
    if (profile_out &&
        (rc = cli_check_output_names(CMD, "--profile-out", profile_out, cli_profile_output_name, NULL, ins, nin)))
        return rc;
    return 0;
}

/* Reads the trainer state a checkpoint saved: steps done, data position, and
 * the seed and shuffle setting that order the data (a resumed run must use
 * the same ones: given on the command line, they must agree). */
static int read_resume_state(const char *path, int *step, gpt2c_data_pos *pos, long long *seed, int *shuffle) {
    const gpt2c_file_format fmt = gpt2c_detect_format(path);
    if (fmt == GPT2C_FMT_LLMC || fmt == GPT2C_FMT_SHARD)
        return cli_error(CMD, "--resume: %s is an llm.c %s: resume needs a gpt2c checkpoint (written by train --save)%s",
                         path, fmt == GPT2C_FMT_LLMC ? "model" : "token shard",
                         fmt == GPT2C_FMT_LLMC ? "; to start from these weights use --model" : "");
    gpt2c_st_file *f;
    char in_dir[4096];
    if (gpt2c_peft_is_adapter_dir(path)) { /* a LoRA adapter written by --lora-rank --save DIR */
        snprintf(in_dir, sizeof in_dir, "%s/adapter_model.safetensors", path);
        path = in_dir;
    } else if (gpt2c_is_dir(path)) { /* a directory written by --save DIR/ */
        snprintf(in_dir, sizeof in_dir, "%s/model.safetensors", path);
        path = in_dir;
    }
    if (gpt2c_st_open(path, &f) != GPT2C_OK) return cli_fail_status(CMD);
    gpt2c_resume_state rs;
    int rc = 0;
    if (gpt2c_resume_read(f, &rs) != GPT2C_OK) {
        rc = cli_error(CMD, "--resume: %s", gpt2c_errmsg());
    } else {
        *step = rs.step;
        *pos = rs.pos;
        long long saved_seed = rs.has_seed ? (long long)rs.seed : *seed;
        int saved_shuffle = rs.has_shuffle ? rs.shuffle : *shuffle;
        if (cli_given("--seed") && saved_seed != *seed)
            rc = cli_error(CMD, "--seed %lld contradicts the checkpoint %s (seed %lld)", *seed, path, saved_seed);
        else if (cli_given("--shuffle") && !saved_shuffle)
            rc = cli_error(CMD, "--shuffle contradicts the checkpoint %s (trained on sequential batches)", path);
        *seed = saved_seed;
        *shuffle = saved_shuffle;
    }
    gpt2c_st_close(f);
    return rc;
}

/* The process's rank from the launcher's environment (before MPI_Init; -1:
 * not started by a launcher): ranks other than 0 keep setup errors quiet. */
static int launcher_rank(int *size) {
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_SIZE", "SLURM_NTASKS"};
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *r = getenv(rank_vars[i]), *n = getenv(size_vars[i]);
        if (r) {
            *size = n ? atoi(n) : 0;
            return atoi(r);
        }
    }
    *size = 1;
    return -1;
}

/* Everything a run holds, freed by train_free. */
typedef struct {
    train_ui ui;
    gpt2c_model *m;
    gpt2c_dataloader train, val;
    int have_train, have_val;
    gpt2c_train_cfg cfg;
    gpt2c_train_dp dp;
    const char *profile_out, *backend;
    char profile_dir[4096];
    gpt2c_sparsity_mask *keep_zero; /* --keep-sparsity */
    const train_ext *ext;           /* distill's additions, NULL: train */
} train_job;

static void train_free(train_job *J) {
    if (J->ui.log) fclose(J->ui.log);
    if (J->ui.prof) gpt2c_profile_session_free(J->ui.prof);
    if (J->have_train) gpt2c_dataloader_close(&J->train);
    if (J->have_val) gpt2c_dataloader_close(&J->val);
    gpt2c_sparsity_mask_free(J->keep_zero);
    gpt2c_model_free(J->m);
}

/* Parses, starts MPI when launched by mpirun (or asked for --zero), loads the
 * model and opens the data.  Returns non-zero after printing (rank 0) or
 * capturing (other ranks) a one-line error. */
static int train_setup(int argc, char **argv, train_job *J) {
    model_arg ma = {0};
    const char *data = NULL, *val_data = NULL, *save = NULL, *resume = NULL, *log_path = NULL, *schedule = "constant";
    const char *backend = "cpu", *profile_out = NULL, *precision = "fp32", *quant = NULL;
    lora_arg la = LORA_ARG_DEFAULTS;
    int B = 4, T = 64, steps = 50, warmup = 0, accum = 1, eval_every = 20, eval_batches = 10, threads = 0;
    int save_every = 0, decay_all = 0, shuffle = 0, zero = 0, overlap = 1, keep_sparsity = 0;
    long long seed = 1337;
    double lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1, clip = 1.0, min_lr_frac = 0.0;
    cli_opt opts[] = {
        MODEL_ARG_OPTS(ma),
        LORA_ARG_OPTS(la),
        {"--quant", CLI_STR, &quant, "with --lora-rank (QLoRA): quantize the frozen base on load: q8|q4|nf4", 0, 0},
        {"--data", CLI_STR, &data, "training shards: a file or a glob", 0, 0},
        {"--val-data", CLI_STR, &val_data, "validation shards", 0, 0},
        BATCH_ARG_OPT(B, "batch size B per process (default 4; under mpirun the global batch is N x B x accum)", CLI_BATCH_MAX),
        SEQ_ARG_OPT(T, "sequence length T"),
        {"--steps", CLI_INT, &steps, "total optimizer steps (default 50)", 0, 1 << 30},
        {"--lr", CLI_FLOAT, &lr, "peak learning rate (default 3e-4)", 0, 10},
        {"--schedule", CLI_STR, &schedule, "constant|cosine (default constant)", 0, 0},
        {"--warmup", CLI_INT, &warmup, "linear warmup steps (default 0)", 0, 1 << 30},
        {"--min-lr-frac", CLI_FLOAT, &min_lr_frac, "cosine floor as a fraction of --lr (default 0)", 0, 1},
        {"--beta1", CLI_FLOAT, &beta1, "AdamW beta1 (default 0.9)", 0, 0.999999},
        {"--beta2", CLI_FLOAT, &beta2, "AdamW beta2 (default 0.95)", 0, 0.999999},
        {"--eps", CLI_FLOAT, &eps, "AdamW epsilon (default 1e-8)", 1e-30, 1},
        {"--weight-decay", CLI_FLOAT, &wd, "AdamW weight decay, 2-D weights only (default 0.1)", 0, 10},
        {"--decay-all", CLI_FLAG, &decay_all, "apply weight decay to every tensor", 0, 0},
        {"--grad-clip", CLI_FLOAT, &clip, "global grad-norm clip, 0 = off (default 1.0)", 0, 1e9},
        {"--accum", CLI_INT, &accum, "gradient accumulation micro-steps (default 1)", 1, 1 << 20},
        {"--eval-every", CLI_INT, &eval_every, "validate every N steps, 0 = never (default 20)", 0, 1 << 30},
        {"--eval-batches", CLI_INT, &eval_batches, "validation batches (default 10)", 1, 1 << 30},
        SEED_ARG_OPT(seed, "seed for init and shuffling"),
        {"--shuffle", CLI_FLAG, &shuffle, "shuffled batches (seeded) instead of sequential", 0, 0},
        THREADS_ARG_OPT(threads, "threads the model computes with, 0 = all cores (default 0; under mpirun: cores / ranks on the machine)"),
        BACKEND_ARG_OPT_STD(backend),
        PRECISION_ARG_OPT(precision),
        {"--save", CLI_STR, &save, "checkpoint: FILE.safetensors or DIR/ (Hugging Face directory), written atomically; {step} in it is replaced by the step", 0, 0},
        {"--save-every", CLI_INT, &save_every, "also save every N steps", 0, 1 << 30},
        {"--resume", CLI_STR, &resume, "continue exactly from a checkpoint written by --save", 0, 0},
        {"--log", CLI_STR, &log_path, "JSONL log: one object per step and per evaluation", 0, 0},
        {"--profile-out", CLI_STR, &profile_out, "profile the run: trace.json, summary.json, report.html, ... in DIR (under mpirun: DIR/rank<r>)", 0, 0},
        {"--zero", CLI_INT, &zero, "under mpirun: 1 = ZeRO-1, AdamW moments and update sharded over ranks (default 0)", 0, 1},
        {"--keep-sparsity", CLI_FLAG, &keep_sparsity, "linear weights that are zero at the start (gpt2c prune) stay exactly zero", 0, 0},
        {"--overlap", CLI_INT, &overlap, "under mpirun: 1 = all-reduce gradients during backward, 0 = after it (default 1)", 0, 1},
    };
    const train_ext *ext = J->ext;
    const char *mopt = ext && ext->model_opt ? ext->model_opt : "--model";
    cli_opt all[CLI_NOPTS(opts) + 16];
    int nall = CLI_NOPTS(opts);
    memcpy(all, opts, sizeof opts);
    if (ext) { /* the model option renamed, the command's own options after train's */
        all[0].name = mopt;
        if (ext->model_help) all[0].help = ext->model_help;
        for (int i = 0; i < ext->nopts && nall < CLI_NOPTS(all); i++) all[nall++] = ext->opts[i];
    }
    int rc = cli_parse(CMD, argc, argv, all, nall, NULL);
    if (!rc) rc = precision_arg_check(CMD, precision, backend);
    if (rc) return rc;
    int launched_size = 1;
    const int launched = launcher_rank(&launched_size) >= 0;
#ifdef GPT2C_HAVE_MPI
    if (launched || zero) {
        if (gpt2c_dist_init(&J->ui.dist) != GPT2C_OK) return cli_fail_status(CMD);
        J->ui.rank = gpt2c_dist_rank(J->ui.dist);
        J->ui.nranks = gpt2c_dist_size(J->ui.dist);
    } else {
        J->ui.nranks = 1;
    }
#else
    J->ui.nranks = 1;
    if (zero) return cli_error(CMD, "--zero %d: built without MPI (configure with -DGPT2C_MPI=ON; see docs/DISTRIBUTED.md)", zero);
    if (launched && launched_size > 1)
        return cli_error(CMD, "started by an MPI launcher as one of %d processes, but built without MPI: each would "
                         "train alone (configure with -DGPT2C_MPI=ON)", launched_size);
    (void)overlap;
#endif
    train_ui *ui = &J->ui;
#ifdef GPT2C_HAVE_MPI
    if (J->ui.dist && !cli_given("--threads")) { /* share the machine's cores with the other ranks on it */
        const int local = gpt2c_dist_local_size(J->ui.dist);
        const long cores = sysconf(_SC_NPROCESSORS_ONLN);
        if (local > 1) threads = cores / local > 1 ? (int)(cores / local) : 1;
    }
#endif
    if (!data) return cli_error(CMD, "--data is required (token shards from gpt2c tokenize)");
    J->cfg = (gpt2c_train_cfg){.B = B, .T = T, .steps = steps, .accum = accum, .lr = (float)lr, .warmup = warmup,
                               .min_lr_frac = (float)min_lr_frac, .eval_every = val_data ? eval_every : 0,
                               .eval_batches = eval_batches, .save_every = save_every,
                               .adamw = {(float)beta1, (float)beta2, (float)eps, (float)wd, (float)clip, decay_all}};
    gpt2c_train_cfg *cfg = &J->cfg;
    if (strcmp(schedule, "constant") == 0) cfg->schedule = GPT2C_SCHED_CONSTANT;
    else if (strcmp(schedule, "cosine") == 0) cfg->schedule = GPT2C_SCHED_COSINE;
    else return cli_error(CMD, "--schedule: expected constant or cosine, got '%s'", schedule);
    if ((rc = lora_arg_check(CMD, &la))) return rc;
    /* --resume of a LoRA adapter directory: the base comes from --model */
    const int lora_resume = resume && gpt2c_peft_is_adapter_dir(resume);
    if (lora_resume && !ma.model)
        return cli_error(CMD, "--resume %s is a LoRA adapter: give its base model with --model", resume);
    if (resume && ma.model && !lora_resume)
        return cli_error(CMD, "--resume and %s are exclusive: the checkpoint is the model", mopt);
    if (lora_resume && la.rank)
        return cli_error(CMD, "--lora-rank: resuming the adapter %s, whose adapter_config.json sets the rank", resume);
    ui->lora = la.rank > 0 || lora_resume;
    ui->base_model = ma.model;
    if (quant && !ui->lora) return cli_error(CMD, "--quant %s: a quantized base trains only adapters: add --lora-rank", quant);
    if (ui->lora && keep_sparsity) return cli_error(CMD, "--keep-sparsity: under LoRA the base is frozen (prune the adapters with gpt2c prune --target lora)");
    if (ui->lora && ui->nranks > 1) return cli_error(CMD, "--lora-rank: LoRA trains in one process (not under mpirun)");

    /* before any work: no output over an input, and a usable --save */
    const cli_path inputs[] = {{"--data", data}, {"--val-data", val_data}, {mopt, ma.model}, {"--vocab", ma.vocab},
                               {ext ? ext->input_opt : NULL, ext && ext->input_path ? *ext->input_path : NULL},
                               {"--resume", resume}}; /* --resume last (see the check) */
    if ((rc = ui->lora ? check_lora_outputs(save, log_path, profile_out, inputs, CLI_NOPTS(inputs))
                       : check_train_outputs(save, log_path, profile_out, inputs, CLI_NOPTS(inputs))))
        return rc;
    /* fail on an unwritable save path now, not after hours of training */
    size_t save_len = save ? strlen(save) : 0;
    int save_dir = save && (ui->lora || save[save_len - 1] == '/' || gpt2c_is_dir(save));
    if (save && ui->rank == 0) {
        char first[4096];
        expand_step(first, sizeof first, save, 0);
        if (save_dir) { /* probe DIR/model.safetensors if DIR exists, else DIR's parent */
            size_t n = strlen(first);
            while (n > 1 && first[n - 1] == '/') first[--n] = 0;
            if (gpt2c_is_dir(first))
                snprintf(first + n, sizeof first - n, ui->lora ? "/adapter_model.safetensors" : "/model.safetensors");
        }
        gpt2c_atomic probe;
        if (gpt2c_atomic_open(&probe, first) != GPT2C_OK) return cli_error(CMD, "--save: %s", gpt2c_errmsg());
        gpt2c_atomic_abort(&probe);
    }

    int loaded = 0, start_step = 0;
    gpt2c_data_pos pos = {0, 0, 0};
    if (lora_resume) {
        if ((rc = read_resume_state(resume, &start_step, &pos, &seed, &shuffle))) return rc;
        if ((rc = model_arg_make(CMD, &ma, (uint64_t)seed, &J->m, &loaded))) return rc;
    } else if (resume) {
        model_arg ra = ma;
        ra.model = resume;
        if ((rc = read_resume_state(resume, &start_step, &pos, &seed, &shuffle))) return rc;
        if ((rc = model_arg_make(CMD, &ra, (uint64_t)seed, &J->m, &loaded))) return rc;
    } else if ((rc = model_arg_make(CMD, &ma, (uint64_t)seed, &J->m, &loaded))) {
        return rc;
    }
    gpt2c_model *m = J->m;
    gpt2c_model_set_threads(m, threads);
    if (ext && ext->setup && (rc = ext->setup(ext->user, m, cfg))) return rc;
    if ((rc = quant_arg_apply(CMD, quant, ma.model ? ma.model : "the model", m, 1))) return rc;
    const struct gpt2c_qweights *qw = gpt2c_model_qweights(m);
    if (qw && !ui->lora) /* quantized weights have no gradient: they are frozen bases */
        return cli_error(CMD, "--model %s: the checkpoint is quantized (%s): quantized bases are frozen; train "
                         "LoRA adapters on it (--lora-rank R: QLoRA) or train the fp32 checkpoint",
                         ma.model ? ma.model : "(the --resume checkpoint)", gpt2c_format_get(qw->fmt)->name);
    if (keep_sparsity) {
        if (gpt2c_sparsity_mask_from_zeros(m, &J->keep_zero) != GPT2C_OK) return cli_fail_status(CMD);
        cfg->keep_zero = J->keep_zero;
    }
    ui->tty = isatty(2);
    ui->print_every = steps > 100 ? steps / 50 : 1;
    ui->first_step = start_step;
    ui->save_path = save;
    ui->save_dir = save_dir;
    ui->vocab_dir = model_arg_vocab_dir(&ma);
    ui->seed = (uint64_t)seed;
    ui->shuffle = shuffle;
    J->profile_out = profile_out;
    J->backend = backend;
    if (gpt2c_model_set_backend(m, backend) != GPT2C_OK) return cli_fail_option(CMD, "--backend");
    if ((rc = precision_arg_apply(CMD, precision, m, 0))) return rc;
    if (lora_resume) {
        if (gpt2c_peft_load(m, resume, 1, NULL, 0) != GPT2C_OK) return cli_fail_option(CMD, "--resume");
    } else if (la.rank && (rc = lora_arg_attach(CMD, &la, m, (uint64_t)seed))) {
        return rc;
    }
    if (gpt2c_model_lora(m)) { /* dropout on while training; a resumed run continues the masks where it stopped */
        gpt2c_lora_set_training(gpt2c_model_lora(m), 1);
        gpt2c_lora_set_dropout_seed(gpt2c_model_lora(m), (uint64_t)seed, (uint64_t)start_step * (uint64_t)accum);
    }
    if (gpt2c_model_prepare(m, B, T) != GPT2C_OK) return cli_fail_option(CMD, "--batch/--seq");
    if (gpt2c_dataloader_open_part(&J->train, data, B, T, shuffle, (uint64_t)seed, gpt2c_model_config(m)->vocab_size, ui->rank,
                                   ui->nranks) != GPT2C_OK)
        return cli_fail_status(CMD);
    J->have_train = 1;
    if (resume && gpt2c_dataloader_seek(&J->train, pos) != GPT2C_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", gpt2c_errmsg());
        return cli_error(CMD, "--resume: %s: %s", resume, why);
    }
    if (val_data) {
        if (gpt2c_dataloader_open_part(&J->val, val_data, B, T, 0, 0, gpt2c_model_config(m)->vocab_size, ui->rank, ui->nranks) !=
            GPT2C_OK)
            return cli_fail_status(CMD);
        J->have_val = 1;
    }
    if (log_path && ui->rank == 0 && !(ui->log = fopen(log_path, resume ? "a" : "w")))
        return cli_error(CMD, "--log: %s: cannot write", log_path);
    if (start_step > steps)
        return cli_error(CMD, "--steps: %d is fewer than the %d steps the checkpoint has done", steps, start_step);
#ifdef GPT2C_HAVE_MPI
    if (ui->dist) {
        gpt2c_dist_opts o = gpt2c_dist_opts_default();
        o.zero = zero;
        o.overlap = overlap;
        if (gpt2c_dist_attach(ui->dist, m, &o, &J->dp) != GPT2C_OK) return cli_fail_status(CMD);
        cfg->dp = &J->dp;
    }
#endif
    if (profile_out) {
        snprintf(J->profile_dir, sizeof J->profile_dir, "%s", profile_out);
        if (ui->nranks > 1) { /* one profile per rank: DIR/rank<r> */
            if (mkdir(profile_out, 0755) != 0 && errno != EEXIST)
                return cli_error(CMD, "--profile-out: %s: cannot create: %s", profile_out, strerror(errno));
            snprintf(J->profile_dir, sizeof J->profile_dir, "%s/rank%d", profile_out, ui->rank);
        }
        gpt2c_profile_opts po = gpt2c_profile_opts_default();
        po.model_name = ma.model ? ma.model : resume ? resume : "gpt2";
        po.backend = backend;
        po.command_line = J->ext && J->ext->command_line ? J->ext->command_line : "gpt2c train";
        if (gpt2c_profile_session_begin(&ui->prof, m, &po) != GPT2C_OK) return cli_fail_status(CMD);
        cfg->hooks = gpt2c_profile_session_hooks(ui->prof);
    }
    if (ui->rank == 0) {
        fprintf(stderr, "gpt2c %s: %s model, %d layers, %d heads, %d channels, vocab %d (padded %d), %.2fM parameters\n",
                CMD, loaded ? "loaded" : "new", gpt2c_model_config(m)->num_layers, gpt2c_model_config(m)->num_heads, gpt2c_model_config(m)->channels, gpt2c_model_config(m)->vocab_size,
                gpt2c_model_config(m)->padded_vocab_size, gpt2c_model_num_params(m) / 1e6);
        gpt2c_lora *lora = gpt2c_model_lora(m);
        if (lora) {
            const gpt2c_lora_cfg *lc = gpt2c_lora_config(lora);
            char targets[128];
            gpt2c_lora_targets_str(lc->targets, targets, sizeof targets);
            fprintf(stderr, "gpt2c %s: LoRA rank %d, alpha %g, dropout %g on %s: %.3fM trainable parameters, base "
                    "frozen%s%s\n", CMD, lc->rank, (double)lc->alpha, (double)lc->dropout, targets,
                    gpt2c_lora_num_params(lora) / 1e6, qw ? " and quantized " : "",
                    qw ? gpt2c_format_get(qw->fmt)->name : "");
        }
        fprintf(stderr, "gpt2c %s: %zu training tokens, B=%d T=%d accum=%d, %d steps from step %d, backend %s%s, %d threads\n",
                CMD, gpt2c_dataloader_total_tokens(&J->train), B, T, accum, steps, start_step, backend,
                precision_run_tag(gpt2c_model_precision(m), backend), gpt2c_model_threads(m));
    }
    cfg->on_event = on_event;
    cfg->on_checkpoint = save ? on_checkpoint : NULL;
    cfg->user = ui;
    J->ui.first_step = start_step;
    return 0;
}

#ifdef GPT2C_HAVE_MPI
/* rank 0 says who runs where and what the global batch is */
static int print_dist(train_job *J) {
    char hosts[2048];
    int nhosts = 0;
    if (gpt2c_dist_hosts(J->ui.dist, hosts, sizeof hosts, &nhosts) != GPT2C_OK) return cli_fail_status(CMD);
    if (J->ui.rank != 0) return 0;
    const gpt2c_train_cfg *c = &J->cfg;
    fprintf(stderr, "gpt2c %s: data parallel, %d processes on %d host%s: %s\n", CMD, J->ui.nranks, nhosts,
            nhosts == 1 ? "" : "s", hosts);
    fprintf(stderr,
            "gpt2c %s: global batch %d processes x B=%d x accum %d = %d sequences of T=%d (%d tokens per step); "
            "AdamW moments %.1f MiB per rank%s\n",
            CMD, J->ui.nranks, c->B, c->accum, J->ui.nranks * c->B * c->accum, c->T, J->ui.nranks * c->B * c->accum * c->T,
            gpt2c_dist_optimizer_bytes(J->ui.dist, J->m) / 1048576.0, J->dp.update ? " (ZeRO-1 shard)" : "");
    return 0;
}
#endif

/* The bytes of each slab the run holds (the memory LoRA cuts). */
static void print_memory(const gpt2c_model *m) {
    gpt2c_model_bytes b = gpt2c_model_memory(m);
    const double MiB = 1048576.0;
    char bf16[96] = "";
    if (b.bf16_copies)
        snprintf(bf16, sizeof bf16, ", bf16 copies %.1f + GEMM panels %.1f", b.bf16_copies / MiB, b.bf16_panels / MiB);
    char huge[160];
    cli_huge_pages_note(huge, sizeof huge, m);
    fprintf(stderr,
            "gpt2c %s: memory: parameters %.1f MiB (of which quantized weights %.1f)%s, gradients %.1f, AdamW moments "
            "%.1f, activations %.1f + backward %.1f, LoRA adapters %.2f (grads + moments %.2f, activations %.2f)%s\n",
            CMD, b.params / MiB, b.quantized / MiB, bf16, b.grads / MiB, b.moments / MiB, b.acts / MiB, b.acts_backward / MiB,
            b.lora_params / MiB, b.lora_state / MiB, b.lora_acts / MiB, huge);
}

static int train_run(train_job *J) {
    train_ui *ui = &J->ui;
#ifdef GPT2C_HAVE_MPI
    if (ui->dist && print_dist(J)) return 1;
#endif
    ui->t_start = gpt2c_now_ns();
    if (gpt2c_train(J->m, &J->train, J->have_val ? &J->val : NULL, &J->cfg, ui->first_step) != GPT2C_OK) return 1;
    if (ui->rank == 0) {
        fprintf(stderr, "gpt2c %s: done in %.1f s, peak RSS %.2f GiB%s\n", CMD, (gpt2c_now_ns() - ui->t_start) / 1e9,
                gpt2c_peak_rss_bytes() / 1073741824.0, ui->nranks > 1 ? " (rank 0)" : "");
        print_memory(J->m);
    }
#ifdef GPT2C_HAVE_MPI
    if (ui->dist && getenv("GPT2C_DIST_STATS")) { /* bench/mpi.sh: each rank's communication totals */
        gpt2c_dist_stats s = gpt2c_dist_get_stats(ui->dist);
        const double n = s.steps > 0 ? s.steps : 1;
        const double waited = s.wait_ms - s.skew_ms; /* the all-reduce's part of the wait */
        if (s.device) /* NCCL: the host does not wait for the device's streams */
            fprintf(stderr, "gpt2c %s: rank %d: %d steps, NCCL all-reduce %.1f MiB/step; times unavailable (on the "
                    "device's streams: see --profile-out)\n", CMD, ui->rank, s.steps, s.bytes / n / 1048576.0);
        else
            fprintf(stderr, "gpt2c %s: rank %d: %d steps, %s %.1f MiB/step over %.1f ms/step, waited for "
                    "after backward %.1f ms/step (hidden %.1f; waiting for slower ranks %.1f), all-gather %.1f "
                    "ms/step, peak RSS %.2f GiB%s\n", CMD, ui->rank, s.steps,
                    s.reduce_scatter ? "reduce-scatter" : "all-reduce", s.bytes / n / 1048576.0, s.comm_ms / n,
                    waited / n, s.comm_ms > waited ? (s.comm_ms - waited) / n : 0.0, s.skew_ms / n, s.gather_ms / n,
                    gpt2c_peak_rss_bytes() / 1073741824.0, s.wte_early ? ", wte early" : "");
    }
#endif
    if (ui->prof) {
        if (gpt2c_profile_session_end(ui->prof) != GPT2C_OK ||
            gpt2c_profile_session_write(ui->prof, J->profile_dir) != GPT2C_OK)
            return 1;
        if (ui->rank == 0)
            fprintf(stderr, "gpt2c %s: profile written to %s%s (report.html, trace.json, summary.json)\n",
                    CMD, J->profile_out, ui->nranks > 1 ? "/rank<r>" : "");
    }
    return 0;
}

int cmd_train(int argc, char **argv) { return cmd_train_with(argc, argv, NULL); }

int cmd_train_with(int argc, char **argv, const train_ext *ext) {
    CMD = ext ? ext->cmd : "train";
    int size = 1;
    const int lrank = launcher_rank(&size);
    char captured[1024] = "";
    if (lrank > 0) cli_capture_errors(captured, sizeof captured); /* rank 0 speaks for all */
    train_job J = {.ext = ext};
    int rc = train_setup(argc, argv, &J);
#ifdef GPT2C_HAVE_MPI
    if (J.ui.dist) { /* every rank learns whether any failed; the first that did says why */
        int bad = -1;
        if (gpt2c_dist_agree(J.ui.dist, rc == 0, &bad)) {
            if (bad == J.ui.rank && bad > 0) fprintf(stderr, "gpt2c %s: rank %d: %s\n", CMD, bad, captured);
            rc = 1;
        }
    }
#endif
    cli_capture_errors(NULL, 0);
    if (!rc && train_run(&J)) {
        rc = 1;
#ifdef GPT2C_HAVE_MPI
        if (J.ui.dist && J.ui.nranks > 1 && !J.ui.shared_failure) {
            /* the others may be waiting for this rank in a collective: end them all */
            fprintf(stderr, "gpt2c %s: rank %d of %d: %s (stopping every rank)\n", CMD, J.ui.rank, J.ui.nranks,
                    gpt2c_errmsg());
            gpt2c_dist_abort(J.ui.dist, 1);
        }
#endif
        if (J.ui.rank == 0) cli_fail_status(CMD);
    }
#ifdef GPT2C_HAVE_MPI
    gpt2c_dist_finalize(J.ui.dist); /* before the model: it unhooks itself from it */
#endif
    train_free(&J);
    return rc;
}
