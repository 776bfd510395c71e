/* What `gpt2c pipeline` measures of a model after each compression stage
 * (seed 003's table): memory to fine-tune it and to serve it, forward and
 * generation speed, and perplexity on the validation split -- all through the
 * library's own paths (the trainer's slabs, the inference state, the KV-cache
 * generation loop), so a stage that changes a path (quantized weights, a
 * different attention) shows in the numbers.
 *
 * Memory is accounted, not sampled: the bytes of the slabs the run holds, as
 * torch.cuda.max_memory_allocated counts tensors (process RSS also counts the
 * allocator's and the program's own pages; it is printed beside). */
#ifndef GPT2C_STAGE_METRICS_H
#define GPT2C_STAGE_METRICS_H

#include <stddef.h>

#include "gpt2c/data.h"
#include "gpt2c/model.h"

typedef struct gpt2c_stage_bench {
    int fwd_batch, seq;     /* forward: fwd_batch sequences of seq tokens, one prefill each */
    int prompt, gen_tokens; /* generation: one sequence, a prompt of `prompt` tokens, gen_tokens new ones (greedy) */
    int ppl_seqs;           /* perplexity: this many validation sequences of seq tokens */
    int train_batch;        /* training memory: a step of train_batch x seq */
    double min_ms;          /* a speed trial repeats each run until this long has passed (its mean); 0: once */
} gpt2c_stage_bench;

/* The bytes a full fine-tuning step of m holds (every tensor trained, AdamW):
 * parameters, gradients, two moments (one slab each, as gpt2c allocates
 * them), the activations forward keeps and backward's buffers for B x T.
 * Plans (allocates) m's activations for B x T; allocates no gradients. */
typedef struct gpt2c_train_bytes {
    size_t params, grads, moments, acts, total;
} gpt2c_train_bytes;
gpt2c_status gpt2c_measure_train_bytes(gpt2c_model *m, int B, int T, gpt2c_train_bytes *out);

/* The bytes inference holds: the weights as it reads them (quantized codes and
 * scales where quantized, fp32 otherwise) and the inference state (KV cache
 * and buffers) for `batch` sequences of `ctx` tokens (batch 0: the weights alone). */
gpt2c_status gpt2c_measure_infer_bytes(const gpt2c_model *m, int batch, int ctx, size_t *out);

/* One timed trial: a forward (prefill) of fwd_batch x seq tokens, and a
 * greedy generation of gen_tokens after a prompt, each repeated for at least
 * min_ms (the mean of the repetitions); tokens come from val. */
typedef struct gpt2c_speed_trial {
    double fwd_ms, fwd_tok_s; /* the batch's wall time; tokens per second */
    double gen_ms, gen_tok_s; /* prompt + all new tokens' wall time; new tokens per second */
} gpt2c_speed_trial;
gpt2c_status gpt2c_measure_speed(const gpt2c_model *m, const gpt2c_stage_bench *b, gpt2c_dataloader *val,
                                 gpt2c_speed_trial *out);

/* exp(mean cross-entropy) of the first ppl_seqs validation sequences of seq
 * tokens (val opened with B = 1, T = seq), through the inference path. */
gpt2c_status gpt2c_measure_perplexity(const gpt2c_model *m, const gpt2c_stage_bench *b, gpt2c_dataloader *val,
                                      double *ppl);

#endif
