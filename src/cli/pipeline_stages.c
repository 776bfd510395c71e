/* The stages of `gpt2c pipeline`, one function each, in the order seed 003
 * stacks them; each trains or transforms through the library and measures
 * the result (pipe_measure). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/pipeline.h"
#include "gpt2c/distill.h"
#include "gpt2c/io.h"
#include "gpt2c/lora.h"
#include "gpt2c/prune.h"
#include "gpt2c/quant_model.h"
#include "gpt2c/train.h"

pipe_row *pipe_new_row(pipe_ctx *p, const char *name, const char *what) {
    pipe_row *r = &p->rows[p->nrows++];
    memset(r, 0, sizeof *r);
    r->name = name;
    r->what = what;
    r->train_mib = r->infer_mib = r->ppl = NAN;
    return r;
}

static void describe(const gpt2c_model *m, char *buf, size_t n) {
    const gpt2c_config *c = gpt2c_model_config(m);
    const struct gpt2c_qweights *q = gpt2c_model_qweights(m);
    snprintf(buf, n, "%d layers, %d heads, %d channels, %.2fM parameters, %s", c->num_layers, c->num_heads, c->channels,
             gpt2c_model_num_params(m) / 1e6, q ? gpt2c_format_get(q->fmt)->name : "fp32");
}

int pipe_measure(pipe_ctx *p, gpt2c_model *m, pipe_row *r, int full_finetune) {
    const gpt2c_stage_bench *b = &p->bench;
    describe(m, r->model_desc, sizeof r->model_desc);
    if (full_finetune) {
        gpt2c_train_bytes tb;
        if (gpt2c_measure_train_bytes(m, p->batch, p->seq, &tb) != GPT2C_OK) return cli_fail_status("pipeline");
        r->train_mib = tb.total / 1048576.0;
    }
    size_t ib;
    if (gpt2c_measure_infer_bytes(m, b->fwd_batch, b->seq, &ib) != GPT2C_OK) return cli_fail_status("pipeline");
    r->infer_mib = ib / 1048576.0;
    if (gpt2c_measure_perplexity(m, b, &p->val1, &r->ppl) != GPT2C_OK) return cli_fail_status("pipeline");
    r->trials = p->trials;
    for (int i = 0; i < p->trials; i++) {
        gpt2c_speed_trial t;
        if (gpt2c_measure_speed(m, b, &p->val1, &t) != GPT2C_OK) return cli_fail_status("pipeline");
        r->fwd_tok_s[i] = t.fwd_tok_s;
        r->fwd_ms[i] = t.fwd_ms;
        r->gen_tok_s[i] = t.gen_tok_s;
        r->gen_ms[i] = t.gen_ms;
    }
    fprintf(stderr, "gpt2c pipeline: %-22s ppl %.3f, forward %.0f tok/s, generation %.1f tok/s, inference %.1f MiB\n",
            r->name, r->ppl, r->fwd_tok_s[0], r->gen_tok_s[0], r->infer_mib);
    return 0;
}

/* ---- training through gpt2c_train, progress on stderr ---- */
typedef struct {
    const char *what;
    int every;
} progress;

static void on_event(const gpt2c_train_event *ev, void *user) {
    const progress *pr = user;
    if (ev->is_eval) return;
    if (ev->step % pr->every == 0 || ev->step + 1 == ev->steps)
        fprintf(stderr, "gpt2c pipeline: %s step %d/%d loss %.4f (%.0f ms)\n", pr->what, ev->step + 1, ev->steps,
                ev->loss, ev->ms);
}

static int train(pipe_ctx *p, gpt2c_model *m, int steps, const gpt2c_loss *loss, const char *what) {
    gpt2c_dataloader dl;
    if (gpt2c_dataloader_open(&dl, p->data, p->batch, p->seq, 1, (uint64_t)p->seed, gpt2c_model_config(m)->vocab_size) !=
        GPT2C_OK)
        return cli_error("pipeline", "--data: %s", gpt2c_errmsg());
    progress pr = {what, steps >= 10 ? steps / 10 : 1};
    gpt2c_train_cfg c = {.B = p->batch, .T = p->seq, .steps = steps, .accum = 1, .lr = (float)p->lr,
                         .schedule = GPT2C_SCHED_COSINE, .warmup = steps / 10, .min_lr_frac = 0.1f,
                         .adamw = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0}, .on_event = on_event, .user = &pr,
                         .loss = loss};
    const gpt2c_status st = gpt2c_train(m, &dl, NULL, &c, 0);
    gpt2c_dataloader_close(&dl);
    return st == GPT2C_OK ? 0 : cli_error("pipeline", "%s: %s", what, gpt2c_errmsg());
}

static int new_model(pipe_ctx *p, int layers, int heads, int embd, uint64_t seed, gpt2c_model **out) {
    gpt2c_config c = {.max_seq_len = p->ctx, .vocab_size = p->vocab, .num_layers = layers, .num_heads = heads,
                      .channels = embd};
    if (gpt2c_config_check(&c, "model") != GPT2C_OK || gpt2c_model_create(&c, out) != GPT2C_OK)
        return cli_fail_status("pipeline");
    gpt2c_model_init_random(*out, seed);
    gpt2c_model_set_threads(*out, p->threads);
    return 0;
}

int pipe_load_teacher(pipe_ctx *p) {
    if (gpt2c_model_load(p->teacher_path, &p->teacher) != GPT2C_OK)
        return cli_error("pipeline", "--teacher: %s", gpt2c_errmsg());
    if (gpt2c_model_qweights(p->teacher))
        return cli_error("pipeline", "--teacher %s: quantized; the baseline is an fp32 model", p->teacher_path);
    gpt2c_model_set_threads(p->teacher, p->threads);
    return 0;
}

int pipe_stage_teacher(pipe_ctx *p) {
    pipe_row *r;
    if (p->teacher) { /* loaded: pipe_load_teacher */
        r = pipe_new_row(p, "baseline (teacher)", "the fp32 model loaded from --teacher");
    } else {
        if (new_model(p, p->t_layers, p->t_heads, p->t_embd, (uint64_t)p->seed, &p->teacher)) return 1;
        if (train(p, p->teacher, p->teacher_steps, NULL, "teacher")) return 1;
        r = pipe_new_row(p, "baseline (teacher)", "an fp32 teacher trained here on --data");
    }
    return pipe_measure(p, p->teacher, r, 1);
}

int pipe_stage_distill(pipe_ctx *p) {
    if (new_model(p, p->s_layers, p->s_heads, p->s_embd, (uint64_t)p->seed + 1, &p->student)) return 1;
    const gpt2c_distill_cfg dc = {(float)p->temperature, (float)p->alpha, 64};
    gpt2c_distill *d;
    if (gpt2c_distill_create(p->teacher, gpt2c_model_config(p->student), p->seq, &dc, &d) != GPT2C_OK)
        return cli_fail_status("pipeline");
    const size_t teacher_fwd = gpt2c_distill_bytes(d);
    const int rc = train(p, p->student, p->distill_steps, gpt2c_distill_loss(d), "distillation");
    gpt2c_distill_free(d);
    if (rc) return rc;
    pipe_row *r = pipe_new_row(p, "+ distillation", "a smaller student trained on the teacher's soft labels (gpt2c "
                                                    "distill)");
    if (pipe_measure(p, p->student, r, 1)) return 1;
    size_t teacher_weights;
    if (gpt2c_measure_infer_bytes(p->teacher, 0, 0, &teacher_weights) != GPT2C_OK) return cli_fail_status("pipeline");
    snprintf(r->note, sizeof r->note, "distilling held %.1f MiB: the student's training %.1f + the teacher's weights "
             "%.1f + its forward (KV cache, chunks of logits) %.1f", r->train_mib + (teacher_weights + teacher_fwd) / 1048576.0,
             r->train_mib, teacher_weights / 1048576.0, teacher_fwd / 1048576.0);
    return 0;
}

/* The bytes the model's slabs hold now (after a training run: what it held while training). */
static double held_mib(const gpt2c_model *m) {
    const gpt2c_model_bytes b = gpt2c_model_memory(m);
    return (double)(b.params + b.quantized + b.grads + b.moments + b.acts + b.acts_backward + b.lora_params +
                    b.lora_state + b.lora_acts) / 1048576.0;
}

/* m saved to OUT/NAME and loaded back: a model without the training state of earlier stages */
static int reload(pipe_ctx *p, gpt2c_model **m, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", p->out, name);
    if (gpt2c_model_save(*m, path, NULL, 0, 0) != GPT2C_OK) return cli_error("pipeline", "--out: %s", gpt2c_errmsg());
    gpt2c_model_free(*m);
    *m = NULL;
    if (gpt2c_model_load(path, m) != GPT2C_OK) return cli_fail_status("pipeline");
    gpt2c_model_set_threads(*m, p->threads);
    return 0;
}

/* rank-8 adapters (alpha 16) on c_attn, as seed 003, trained on the frozen student and saved as a PEFT
 * directory; served merged into the weights (W += scale B A: the same outputs, no extra cost per token) */
int pipe_stage_lora(pipe_ctx *p) {
    if (reload(p, &p->student, "student.safetensors")) return 1;
    const gpt2c_lora_cfg lc = {.rank = 8, .alpha = 16.0f, .dropout = 0.0f, .targets = 1u << GPT2C_LORA_C_ATTN};
    if (gpt2c_lora_attach(p->student, &lc, (uint64_t)p->seed + 2) != GPT2C_OK) return cli_fail_status("pipeline");
    gpt2c_lora_set_training(gpt2c_model_lora(p->student), 1);
    if (train(p, p->student, p->lora_steps, NULL, "LoRA fine-tuning")) return 1;
    gpt2c_lora_set_training(gpt2c_model_lora(p->student), 0);
    pipe_row *r = pipe_new_row(p, "+ LoRA (rank 8)", "rank-8 adapters (alpha 16) on c_attn fine-tuned on the frozen "
                                                     "student (training memory: LoRA's); served merged into the "
                                                     "weights");
    r->train_mib = held_mib(p->student);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/adapter", p->out);
    if (gpt2c_peft_save(p->student, dir, "student.safetensors", NULL, 0, 0) != GPT2C_OK)
        return cli_error("pipeline", "--out: %s", gpt2c_errmsg());
    if (gpt2c_lora_merge(p->student) != GPT2C_OK) return cli_fail_status("pipeline");
    return pipe_measure(p, p->student, r, 0);
}

/* Seed 003's adapter pruning: the LoRA stage's adapters (OUT/adapter) reloaded onto the unmerged student,
 * their A and B matrices L1-pruned 80% with one global threshold (prune --target lora), saved as
 * OUT/adapter_pruned and served merged like the LoRA row.  Pruning trains nothing: no training memory. */
int pipe_stage_prune_lora(pipe_ctx *p) {
    char path[4200], dir[4200], out[4200];
    snprintf(path, sizeof path, "%s/student.safetensors", p->out);
    snprintf(dir, sizeof dir, "%s/adapter", p->out);
    snprintf(out, sizeof out, "%s/adapter_pruned", p->out);
    gpt2c_model_free(p->student);
    p->student = NULL;
    if (gpt2c_model_load(path, &p->student) != GPT2C_OK) return cli_fail_status("pipeline");
    gpt2c_model_set_threads(p->student, p->threads);
    if (gpt2c_peft_load(p->student, dir, 0, NULL, 0) != GPT2C_OK) return cli_fail_status("pipeline");
    size_t zeros = 0, numel = 0;
    if (gpt2c_prune_lora(p->student, 0.8, GPT2C_PRUNE_GLOBAL, GPT2C_PRUNE_UNSTRUCTURED, &zeros, &numel) != GPT2C_OK)
        return cli_fail_status("pipeline");
    if (gpt2c_peft_save(p->student, out, "student.safetensors", NULL, 0, 0) != GPT2C_OK)
        return cli_error("pipeline", "--out: %s", gpt2c_errmsg());
    pipe_row *r = pipe_new_row(p, "+ prune adapters 80%", "L1-prune 80% of the adapter weights (prune --target lora, "
                                                           "global, unstructured); served merged");
    snprintf(r->note, sizeof r->note, "%zu of %zu adapter weights zero (%.1f%%); pruning trains nothing", zeros, numel,
             numel ? 100.0 * (double)zeros / (double)numel : 0.0);
    if (gpt2c_lora_merge(p->student) != GPT2C_OK) return cli_fail_status("pipeline");
    return pipe_measure(p, p->student, r, 0);
}

/* The student with its adapters merged, linear weights NF4 (embedding / LM head q8); its training memory is
 * QLoRA's: fresh rank-8 adapters trained a few steps on the NF4 base (then removed) */
int pipe_stage_nf4(pipe_ctx *p) {
    if (reload(p, &p->student, "student_merged.safetensors")) return 1; /* fp32, merged; no training state left */
    if (gpt2c_quantize_model(p->student, GPT2C_FMT_NF4, 0, 1, NULL) != GPT2C_OK) return cli_fail_status("pipeline");
    gpt2c_quant_release_fp32(p->student);
    const gpt2c_lora_cfg lc = {.rank = 8, .alpha = 16.0f, .dropout = 0.0f, .targets = 1u << GPT2C_LORA_C_ATTN};
    if (gpt2c_lora_attach(p->student, &lc, (uint64_t)p->seed + 3) != GPT2C_OK) return cli_fail_status("pipeline");
    gpt2c_lora_set_training(gpt2c_model_lora(p->student), 1);
    const int steps = p->lora_steps / 5 > 0 ? p->lora_steps / 5 : 1;
    if (train(p, p->student, steps, NULL, "QLoRA fine-tuning")) return 1;
    pipe_row *r = pipe_new_row(p, "+ NF4 weights", "the merged student's linear weights NF4 (double-quantized scales; "
                                                   "embedding / LM head q8); training memory: QLoRA (rank-8 adapters "
                                                   "on the NF4 base)");
    r->train_mib = held_mib(p->student);
    gpt2c_lora_detach(p->student);
    return pipe_measure(p, p->student, r, 0);
}

/* Flash attention (issue 13) is the cpu backend's inference attention, with no switch to turn it off: every
 * row above already ran it, so its row points there instead of repeating the NF4 row's numbers. */
int pipe_stage_flash(pipe_ctx *p) {
    pipe_row *r = pipe_new_row(p, "+ flash attention", "inference attention as flash attention (online softmax over "
                                                       "256-key tiles of the KV cache, 8 KiB of scratch per thread)");
    snprintf(r->note, sizeof r->note, "in every row: it is the cpu backend's inference attention (no switch), so the "
             "rows above already include it; gpt2c bench attention compares it with the two-pass and unfused kernels");
    return 0;
}
