/* Inference: a KV cache per layer, batched prefill, one-token decode steps,
 * sampling, and a generation loop that streams tokens as they arrive.
 *
 *   gpt2c_infer *s;   gpt2c_infer_create(model, batch, ctx, 0, &s);
 *   gpt2c_infer_prefill(s, 0, prompt, n, NULL);    // one GEMM pass over the prompt
 *   for (;;) { id = gpt2c_sampler_next(smp, 0, gpt2c_infer_logits(s, 0));
 *              gpt2c_infer_decode(s, &id); }        // weights streamed once per step
 *
 * The inference state is separate from the training activations: the cache,
 * per-sequence positions, the logits and a few row buffers, all planned once
 * in gpt2c_infer_create; prefill and decode never allocate. */
#ifndef GPT2C_INFER_H
#define GPT2C_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpt2c_infer gpt2c_infer;

/* Plans the state for `batch` sequences of up to `ctx` tokens each (ctx <= 0:
 * the model's context).  Prefill runs in chunks of up to `chunk` rows (<= 0:
 * min(ctx, 512)); the row buffers are sized for max(chunk, batch).  The model
 * must outlive the state and keep its parameters in place. */
gpt2c_status gpt2c_infer_create(const gpt2c_model *m, int batch, int ctx, int chunk, gpt2c_infer **out);
void gpt2c_infer_free(gpt2c_infer *s);

/* The KV cache's element type.  bf16 halves the bytes a decode step reads
 * from the cache (at a 512-token context that is 38.9 MB of GPT-2 124M's
 * per-step reads in fp32, as much as q4 weights): each key and value is
 * rounded to bf16 (nearest even) when written, attention computes in fp32.
 * AUTO: bf16 for a model with quantized weights (their decode is the one
 * the cache's bytes bound; its cost is measured in docs/QUANTIZATION.md)
 * or in bf16 precision (where the backend has bf16 cache kernels), fp32
 * otherwise. */
typedef enum { GPT2C_KV_AUTO = 0, GPT2C_KV_F32 = 1, GPT2C_KV_BF16 = 2 } gpt2c_kv_cache;
/* The cache type inference states made from m from now on use (AUTO: the default). */
void gpt2c_model_set_kv_cache(gpt2c_model *m, gpt2c_kv_cache kv);
/* What AUTO (or the type set) resolves to for m now: F32 or BF16. */
gpt2c_kv_cache gpt2c_model_kv_cache(const gpt2c_model *m);
/* The state's cache type (F32 or BF16), and its name ("f32", "bf16"). */
gpt2c_kv_cache gpt2c_infer_kv_cache(const gpt2c_infer *s);
const char *gpt2c_kv_cache_name(gpt2c_kv_cache kv);
/* "auto", "f32" (or "fp32"), "bf16" -> *out; -1 if none of those. */
int gpt2c_kv_cache_parse(const char *name, gpt2c_kv_cache *out);

int gpt2c_infer_batch(const gpt2c_infer *s);
int gpt2c_infer_ctx(const gpt2c_infer *s);
/* Tokens already in sequence seq's cache. */
int gpt2c_infer_pos(const gpt2c_infer *s, int seq);
/* Empties one sequence (seq < 0: all). */
void gpt2c_infer_reset(gpt2c_infer *s, int seq);
/* Copies sequence src's cache and position into dst (one prefill, many samples). */
gpt2c_status gpt2c_infer_copy_seq(gpt2c_infer *s, int dst, int src);
/* Moves the model's weights into 2 MiB pages now (Linux MADV_COLLAPSE, a
 * hint).  Decode streams every weight each step and ran 3-8% faster after.
 * Slow when the weights sit in 4 KiB pages (a copy inside the kernel, ~1 s
 * per 500 MB here), free when they are already huge.  Returns 1 if the
 * kernel did it, 0 if not (unsupported, declined, or a device model). */
int gpt2c_infer_hugepages(const gpt2c_model *m);
/* Bytes of the cache and the working buffers. */
size_t gpt2c_infer_bytes(const gpt2c_infer *s);

/* Appends n tokens to sequence seq (chunks of the planned size, each one GEMM
 * pass), leaving the logits of the last one in gpt2c_infer_logits(s, seq).
 * all_logits (n, Vp), may be NULL: the logits at every position (tests). */
gpt2c_status gpt2c_infer_prefill(gpt2c_infer *s, int seq, const int32_t *tokens, int n, float *all_logits);
/* One decode step for every sequence: tokens (batch), one per sequence, each
 * appended at that sequence's own position.  Logits in gpt2c_infer_logits. */
gpt2c_status gpt2c_infer_decode(gpt2c_infer *s, const int32_t *tokens);
/* One decode step for n of the sequences (a server's running requests):
 * tokens[i] is appended to sequence seqs[i] (distinct) at its own position;
 * the other sequences are untouched.  logits (n, Vp), the caller's: row i is
 * sequence seqs[i]'s, also copied to gpt2c_infer_logits(s, seqs[i]).  Each
 * row's numbers are those a decode of the sequence alone computes (the
 * kernels' arithmetic per row does not depend on the other rows below 24 rows). */
gpt2c_status gpt2c_infer_decode_some(gpt2c_infer *s, const int *seqs, int n, const int32_t *tokens, float *logits);
/* Logits (Vp; the first V are real) after the last prefill/decode of seq. */
const float *gpt2c_infer_logits(const gpt2c_infer *s, int seq);

/* ---- sampling ----------------------------------------------------------- */
typedef struct gpt2c_sampling {
    float temperature; /* 0: greedy (argmax, lowest id on ties); > 0 divides the logits */
    int top_k;         /* keep the k most likely ids; 0: all */
    float top_p;       /* keep the smallest most-likely set with mass >= top_p; in (0, 1] */
    uint64_t seed;     /* stream s of sequence s draws gpt2c_rng(seed, s): reproducible */
} gpt2c_sampling;

/* temperature 1, no top-k, top-p 1, seed 1337 */
gpt2c_sampling gpt2c_sampling_default(void);
/* One-line error naming the quantity (temperature, top-k, top-p) if invalid. */
gpt2c_status gpt2c_sampling_check(const gpt2c_sampling *sp);

typedef struct gpt2c_sampler gpt2c_sampler;
/* A sampler over V real ids for `streams` independent sequences. */
gpt2c_status gpt2c_sampler_create(const gpt2c_sampling *sp, int V, int streams, gpt2c_sampler **out);
void gpt2c_sampler_free(gpt2c_sampler *s);
/* Draws the next id of stream `stream` from logits (the first V are used). */
int32_t gpt2c_sampler_next(gpt2c_sampler *s, int stream, const float *logits);

/* ---- generation ----------------------------------------------------------- */
/* Called for every generated token as it arrives; return nonzero to stop that sequence. */
typedef int (*gpt2c_token_fn)(void *user, int seq, int32_t id);

typedef struct gpt2c_gen_stats {
    int prompt_tokens;
    int generated;        /* tokens sampled (per sequence, the longest) */
    int decode_steps;     /* decode forward passes (each for the whole batch) */
    uint64_t prefill_ns;  /* prompt prefill, including copying the cache to the other sequences */
    uint64_t decode_ns;   /* all decode steps and sampling */
} gpt2c_gen_stats;

/* Runs the prompt through the cache of sequence 0, copies it to the others,
 * then samples up to max_tokens ids per sequence, stopping a sequence at
 * `eot` (>= 0; the eot id is reported, then the sequence stops) or when on_token
 * returns nonzero.  Fails (saying so; nothing is truncated) when the prompt
 * is empty, holds an id outside the vocabulary, or prompt + max_tokens does
 * not fit the state's context. */
gpt2c_status gpt2c_generate(gpt2c_infer *s, gpt2c_sampler *smp, const int32_t *prompt, int n, int max_tokens,
                            int eot, gpt2c_token_fn on_token, void *user, gpt2c_gen_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
