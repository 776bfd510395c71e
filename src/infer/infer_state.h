/* The inference state: KV cache, per-sequence positions, row buffers, logits.
 * One slab, planned in gpt2c_infer_create; nothing is allocated afterwards. */
#ifndef GPT2C_INFER_STATE_H
#define GPT2C_INFER_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "gpt2c/infer.h"

/* From this many rows (prefill) a pass's fp32 and bf16 matmuls run in wide
 * output chunks, each a GEMM over all the rows; with bf16 weights their input
 * is rounded to bf16 once per matmul (a stage of its own) instead of in every
 * chunk.  Fewer rows (decode): 64-output chunks of matrix-vector products. */
enum { GPT2C_INFER_GEMM_ROWS = 16 };

/* One stage of the parallel forward (infer_forward.c): chunks claimed, chunks
 * done.  One cache line each, so threads claiming in one stage do not slow
 * those waiting on another.  A decode matmul stage claims from two halves
 * instead of `next` (infer_forward.c, claim_split): half[i] counts the chunks
 * taken from half i's front (low 32 bits) and back (high 32 bits), each on a
 * line of its own. */
typedef struct gpt2c_stage_ctr {
    _Alignas(64) atomic_int next;
    atomic_int done;
    _Alignas(64) _Atomic uint64_t half0;
    _Alignas(64) _Atomic uint64_t half1;
} gpt2c_stage_ctr;

struct gpt2c_infer {
    const gpt2c_model *m;
    int B;     /* sequences */
    int ctx;   /* cache positions per sequence */
    int chunk; /* most rows of one prefill pass */
    int R;     /* rows the buffers hold: max(chunk, B) */
    int *pos;  /* (B) tokens in each sequence's cache */
    int *rpos; /* (R) scratch: positions handed to the kernels */
    int32_t *tok; /* (R) scratch: ids of the rows in flight */

    float *mem;
    size_t floats;
    size_t layer_cache; /* floats of one layer's K (or V) cache: B*C*ctx */
    float *kc;          /* (L, B, NH, hs, ctx) keys, transposed (see kernels.h); NULL with a bf16 cache */
    float *vc;          /* (L, B, NH, ctx, hs) values; NULL with a bf16 cache */
    uint16_t *kc16, *vc16; /* the same in bf16 (kv_bf16), else NULL */
    int kv_bf16;        /* the cache holds bf16 (GPT2C_KV_BF16) */
    float *x, *x2;      /* (R,C) residual stream, ping-pong (no aliasing in fused ops) */
    float *ln;          /* (R,C) layernorm output */
    float *mean, *rstd; /* (R) layernorm statistics (unused, the kernels want them) */
    float *qkv;         /* (R,3C) */
    float *atty;        /* (R,C) attention output */
    float *proj;        /* (R,C) projection outputs */
    float *fch;         /* (R,4C) gelu(fc) */
    float *logits;      /* (B,Vp) last logits of each sequence */
    void *xbf;          /* (R,4C) a matmul's input rows rounded to bf16, in the table's form (kernels/bf16_rows.h;
                           bf16 weights, many rows; else NULL) */
    float *lora_t;      /* (R, rank) LoRA adapters: scale * x A^T of the rows in flight (NULL: none) */
    gpt2c_stage_ctr *ctr; /* (nctr) stage counters of one forward pass */
    int nctr;
};

/* Runs rows through the model: either one sequence `seq` with n rows at
 * positions pos[seq].. (prefill, n <= R), or n sequences with one row each
 * (seq < 0: decode of sequences seqs[0..n), or of 0..n-1 when seqs is NULL).
 * Writes the caches, advances the positions, and fills the logits of the last
 * row of each sequence (and of all rows into all_logits (n,Vp) when given). */
/* Stages (counters) of one pass over a block: the block's stages as this
 * executor runs them (attention in two, gelu inside its matmul). */
int gpt2c_infer_block_stage_count(void);
gpt2c_status gpt2c_infer_rows(gpt2c_infer *s, int seq, const int *seqs, const int32_t *tokens, int n,
                             float *all_logits);

#endif
