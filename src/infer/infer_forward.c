/* The forward pass of inference: the same block stages as gpt2_forward.c
 * (model/gpt2_block.h), but on a few rows at a time against a KV cache.
 * Prefill: one sequence, n rows (one GEMM pass per weight); decode: every
 * sequence, one row each (each weight streamed once per step).  Shapes: n rows, C channels, Vp padded vocab.
 *
 * The whole pass is ONE OpenMP parallel region run as a list of stages (the
 * ops, in order).  Every thread walks the stages; in each it claims chunks
 * (ranges of outputs, rows or heads) from the stage's counter until none are
 * left, then waits until all the stage's chunks are done.  So no per-op fork
 * or join, and on a shared machine a preempted thread holds back at most the
 * chunk it is in: when it wakes it finds the finished stages' chunks taken
 * and catches up.  Each output is computed by one chunk with fixed
 * arithmetic: results do not depend on the thread count. */
#include <omp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/lora.h"
#include "gpt2c/quant.h"
#include "gpt2c/precision.h"
#include "gpt2c/quant_model.h"
#include "infer/infer_state.h"
#include "kernels/bf16_rows.h"
#include "kernels/kernels.h"
#include "model/costs.h"
#include "model/gpt2_block.h"
#include "model/model_internal.h"

enum { MM_CHUNK = 64, ROW_CHUNK = 16 }; /* outputs per matmul chunk, rows per row-wise chunk */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Weight bytes a waiting decode thread may touch ahead of time: the start of
 * its own half of the next matmul (claim_split), where the kernels' own
 * prefetch (8 KiB ahead of the codes being read) has not started yet. */
typedef struct {
    const char *p;
    int left; /* cache lines still to prefetch */
} warm_lines;

/* Until every chunk of the stage is done: spin briefly, then yield the CPU so
 * a preempted peer can finish its chunk.  While it waits, a thread prefetches
 * one line of `warm` per turn (a prefetch never faults and changes no
 * result): time at a barrier becomes the next matmul's first reads. */
static void wait_done(gpt2c_stage_ctr *c, int n, warm_lines *warm) {
    for (unsigned spin = 0; atomic_load_explicit(&c->done, memory_order_acquire) < n; spin++) {
        if (warm->left > 0) {
            __builtin_prefetch(warm->p, 0, 3);
            warm->p += 64, warm->left--;
        }
        if (spin < 512)
            cpu_relax();
        else
            sched_yield();
    }
}

/* bytes of one row of a weight in format f with `cols` columns (0: unknown) */
static size_t row_bytes(gpt2c_format f, int64_t cols) {
    switch (f) {
    case GPT2C_FMT_F32: return (size_t)cols * 4;
    case GPT2C_FMT_BF16: return (size_t)cols * 2;
    case GPT2C_FMT_Q8: return (size_t)cols;
    case GPT2C_FMT_Q4:
    case GPT2C_FMT_NF4: return (size_t)cols / 2;
    default: return 0;
    }
}

/* The first `bytes` of thread tid's half (claim_split) of a matmul with nch
 * chunks of `step` outputs of w, as the lines a waiting thread prefetches. */
static warm_lines warm_half(const gpt2c_tensor *w, int nch, int step, int tid, int bytes) {
    const size_t rb = row_bytes(w->fmt, w->cols);
    const int row0 = (tid & 1) ? (nch + 1) / 2 * step : 0;
    warm_lines h = {NULL, 0};
    if (rb && w->data && row0 < w->rows) h.p = (const char *)w->data + (size_t)row0 * rb, h.left = bytes / 64;
    return h;
}
enum { WARM_BYTES = 8192 };

/* The halves serve quantized weights only: fp32 decode measured 0.96x with
 * them at 2 threads (quiet, interleaved; q4 / nf4 1.14x), so fp32 and bf16
 * weights keep in-order claiming (BENCHMARKS.md, issue 13 fifth session). */
static int quantized(gpt2c_format f) { return f == GPT2C_FMT_Q8 || f == GPT2C_FMT_Q4 || f == GPT2C_FMT_NF4; } /* = the kernels' prefetch distance (QMM_PF_BYTES) */

/* A decode matmul stage's next chunk for thread tid, or -1 when all are taken.
 * The chunks are split in two contiguous halves; a thread takes its own half
 * (tid & 1) front to back, then what is left of the other half from its back.
 * So with 2 threads each streams one contiguous run of weight rows (its
 * prefetches, 8 KiB ahead of the codes being read, land in its own next
 * chunk, and the hardware prefetchers are not restarted at every chunk), yet
 * a thread that is preempted still holds back only the chunk it is in.  A
 * claim is valid while front + back taken < the half's length; every claim is
 * one atomic add on the half's word, so no chunk is taken twice or skipped.
 * Which thread computes a chunk does not change its arithmetic. */
static int claim_split(gpt2c_stage_ctr *c, int n, int tid, int *stealing) {
    const int mid = (n + 1) / 2;
    const int own = tid & 1;
    if (!*stealing) {
        _Atomic uint64_t *h = own ? &c->half1 : &c->half0;
        const int lo = own ? mid : 0, len = own ? n - mid : mid;
        const uint64_t v = atomic_fetch_add_explicit(h, 1, memory_order_relaxed);
        const int64_t f = (int64_t)(v & 0xffffffffu), b = (int64_t)(v >> 32);
        if (f + b < len) return lo + (int)f;
        *stealing = 1;
    }
    _Atomic uint64_t *h = own ? &c->half0 : &c->half1;
    const int hi = own ? mid : n, len = own ? mid : n - mid;
    const uint64_t v = atomic_fetch_add_explicit(h, (uint64_t)1 << 32, memory_order_relaxed);
    const int64_t f = (int64_t)(v & 0xffffffffu), b = (int64_t)(v >> 32);
    return f + b < len ? hi - 1 - (int)b : -1;
}

/* One stage: claim chunks (the body sees `chunk`), then wait for the rest;
 * STAGE_SPLIT claims them in claim_split's order when `split` (decode
 * matmuls and attention of quantized weights), else in order, as STAGE.
 * With a profiler attached each stage is a scope, recorded by thread 0 alone
 * (the profiler has one writer) from its arrival to the stage's last chunk:
 * the pass keeps its thread count under profiling. */
#define STAGE_SPLIT(split, nchunks, op, layer, cost, ...)                                                         \
    do {                                                                                                       \
        gpt2c_stage_ctr *c_ = &s->ctr[st++];                                                                   \
        const int n_ = (nchunks);                                                                              \
        if (recorder) {                                                                                        \
            const op_cost k_ = (cost);                                                                         \
            gpt2c_prof_begin(prof, op, layer, k_.flops, k_.bytes);                                             \
        }                                                                                                      \
        int stealing_ = 0;                                                                                     \
        for (int chunk; (chunk = (split) ? claim_split(c_, n_, tid, &stealing_)                                \
                                         : atomic_fetch_add_explicit(&c_->next, 1, memory_order_relaxed)) >= 0 && \
                        chunk < n_;) {                                                                         \
            __VA_ARGS__;                                                                                       \
            atomic_fetch_add_explicit(&c_->done, 1, memory_order_release);                                     \
        }                                                                                                      \
        wait_done(c_, n_, &warm);                                                                                     \
        if (recorder) gpt2c_prof_end(prof);                                                                    \
    } while (0)
#define STAGE(...) STAGE_SPLIT(0, __VA_ARGS__)

/* chunk -> [lo, hi) of [0, total) in steps of `step` */
#define RANGE(lo, hi, chunk, step, total)                                                                      \
    const int lo = (chunk) * (step), hi = lo + (step) < (total) ? lo + (step) : (total)

static int nchunks(long total, int step) { return (int)((total + step - 1) / step); }

/* Outputs per chunk of a matmul stage.  Few rows: 64.  Many rows (an fp32,
 * bf16 or quantized weight): each chunk is a GEMM over all the rows, which
 * packs the whole input again, so the fewer chunks the better: two per thread
 * (dynamic claiming still evens out a preempted one).  Zen 4, 2 threads,
 * prefill of GPT-2 124M (bench generate, alternated with the previous build):
 * against chunks of at most 256 outputs (3 per thread) this ran bf16 P=128
 * 1.06x and P=512 1.05x faster, fp32 1.04-1.06x (one chunk per thread gained
 * 1-3% more in one process, with no slack for a preempted thread).  Each
 * output's arithmetic does not depend on its chunk (logits bit for bit). */
static int matmul_step(int n, int OC, gpt2c_format f, int nth) {
    if (n < GPT2C_INFER_GEMM_ROWS || (f != GPT2C_FMT_F32 && f != GPT2C_FMT_BF16 && !gpt2c_format_is_quantized(f))) return MM_CHUNK;
    const int step = OC / (2 * nth) / MM_CHUNK * MM_CHUNK;
    return step < MM_CHUNK ? MM_CHUNK : step;
}

/* rows [r0, r1) of src (IC wide) into s->xbf in the table's form (kernels/bf16_rows.h) */
static void round_rows_bf16(const gpt2c_infer *s, const gpt2c_kernels *k, const float *src, int IC, int r0, int r1) {
    const size_t rb = gpt2c_bf16_in_row_bytes(k->infer_bf16_input, IC);
    gpt2c_bf16_in_rows((char *)s->xbf + (size_t)r0 * rb, src + (size_t)r0 * IC, (size_t)(r1 - r0), IC, k->infer_bf16_input);
}
/* its traffic: an fp32 read and the form's write per element */
static double round_rows_bytes(const gpt2c_kernels *k, double rows, int IC) {
    return rows * (4.0 * IC + (double)gpt2c_bf16_in_row_bytes(k->infer_bf16_input, IC));
}

/* one layer's weight as a typed view, and a range of its matmul on k, or on
 * ref when k does not take the weight's format */
#define W(id, l) infer_weight(m, GPT2C_P_##id, l)

/* Parameter id's layer l as the inference reads it: its quantized form
 * (gpt2c/quant_model.h) when the model has one, else its bf16 copy in bf16
 * precision (gpt2c/precision.h), else the slab's view. */
static gpt2c_tensor infer_weight(const gpt2c_model *m, int id, int l) {
    const gpt2c_tensor *q = gpt2c_qweight(m, id, l);
    return q ? *q : gpt2c_model_weight(m, id, l);
}
/* Whether a prefill-sized matmul on weights of format f takes its input as
 * bf16 rows (GPT2C_ACT_IN_BF16): bf16 weights, or quantized ones where the
 * table's quantized prefill multiplies in bf16 (gpt2c_qmatmul_bf16_prefill). */
static int bf16_rows_for(const gpt2c_kernels *k, gpt2c_format f) {
    return k->infer_bf16_input && GPT2C_KERNELS_TAKES(k, matmul_infer_range, f) &&
           (f == GPT2C_FMT_BF16 || (gpt2c_format_is_quantized(f) && gpt2c_qmatmul_bf16_prefill()));
}
#define MATMUL_RANGE(out, inp, w, bias, N, IC, OC, act, o0, o1)                                                   \
    GPT2C_KERNELS_FOR(k, matmul_infer_range, &(w))->matmul_infer_range(out, inp, &(w), bias, N, IC, OC, act, o0, o1)

int gpt2c_infer_block_stage_count(void) {
    int n = 0;
    for (int i = 0; i < GPT2C_BLOCK_NSTAGES; i++)
        n += gpt2c_block_stages[i].kind == GPT2C_STAGE_ATTENTION ? 2 : gpt2c_block_stages[i].kind == GPT2C_STAGE_GELU ? 0 : 1;
    return n;
}

gpt2c_status gpt2c_infer_rows(gpt2c_infer *s, int seq, const int *seqs, const int32_t *tokens, int n,
                             float *all_logits) {
    const gpt2c_model *m = s->m;
    const gpt2c_config *c = &m->cfg;
    const gpt2c_kernels *k = m->k;
    float *const *p = m->params.t;
    gpt2c_profiler *prof = m->prof;
    const int C = c->channels, L = c->num_layers, NH = c->num_heads, Vp = c->padded_vocab_size;
    /* nb sequences of Tq rows each: sequences b0.., or seqs[0..nb) (decode of some) */
    const int decode = seq < 0, nb = decode ? n : 1, Tq = decode ? 1 : n, b0 = decode ? 0 : seq;
#define SEQ(b) (seqs ? seqs[b] : b0 + (b))
    int *pos = s->rpos;
    for (int b = 0; b < nb; b++) pos[b] = s->pos[SEQ(b)];
    const size_t ctx = (size_t)s->ctx;
    const size_t seq_floats = (size_t)C * ctx; /* one sequence's slice of one layer's K (or V) cache */
    double pairs = 0; /* (query, key) pairs of each attention, for the profiler */
    for (int b = 0; b < nb; b++) pairs += (double)Tq * pos[b] + (double)Tq * (Tq + 1) / 2;
    const double kv_es = s->kv_bf16 ? 2.0 : 4.0; /* bytes per cached key or value */
    const op_cost att_cost = {pairs * NH * (4.0 * C / NH + 5), 4.0 * n * 4.0 * C + kv_es * 2 * pairs * C};
    /* the LM head's rows: all (all_logits), every sequence's one row (decode), or the last */
    float *lm_out = all_logits ? all_logits : decode ? s->logits : s->logits + (size_t)seq * Vp;
    /* (decode of some sequences: into all_logits, copied to each sequence's row below) */
    const int lm_rows = all_logits || decode ? n : 1;
    const float *lm_in = s->ln + (size_t)(all_logits || decode ? 0 : n - 1) * C;

    for (int i = 0; i < s->nctr; i++) {
        atomic_store_explicit(&s->ctr[i].next, 0, memory_order_relaxed);
        atomic_store_explicit(&s->ctr[i].done, 0, memory_order_relaxed);
        atomic_store_explicit(&s->ctr[i].half0, 0, memory_order_relaxed);
        atomic_store_explicit(&s->ctr[i].half1, 0, memory_order_relaxed);
    }
    const gpt2c_tensor *qwte = gpt2c_qweight(m, GPT2C_P_WTE, 0);
    if (m->lora && !s->lora_t)
        return gpt2c_fail(GPT2C_ERR_ARG, "inference: LoRA adapters were attached after the inference state was made");
    const gpt2c_tensor bwte = gpt2c_model_weight(m, GPT2C_P_WTE, 0); /* bf16 in bf16 precision */
    gpt2c_threads_use(m->threads);
    if (n >= GPT2C_INFER_GEMM_ROWS && k->infer_prepare) /* the GEMMs' first use */
        k->infer_prepare(gpt2c_model_precision(m) == GPT2C_FMT_BF16 ? 1 : gpt2c_model_qweights(m) ? 2 : 0);
    /* GPT2C_INFER_SPLIT=0: decode matmuls claim chunks in order from one counter (A/B runs) */
    const char *split_env = getenv("GPT2C_INFER_SPLIT");
    const int split_on = !(split_env && split_env[0] == '0');
#pragma omp parallel
    {
        int st = 0;
        const int nth = omp_get_num_threads(), tid = omp_get_thread_num();
        /* decode-sized matmuls (matrix-vector products): each thread its own half of the weight rows */
        const int split = nth > 1 && n < GPT2C_INFER_GEMM_ROWS && split_on;
        warm_lines warm = {NULL, 0}; /* split: the next matmul's first lines, prefetched while waiting */
        const int recorder = prof && omp_get_thread_num() == 0;
        /* x (n,C) = wte[token] + wpe[position]; ln = layernorm_1 of layer 0 */
        STAGE(nchunks(n, ROW_CHUNK), GPT2C_OP_ENCODER, -1, cost_encoder_fwd(n, C), {
            RANGE(r0, r1, chunk, ROW_CHUNK, n);
            for (int r = r0; r < r1; r++) {
                const float *wpe_row = p[GPT2C_P_WPE] + (size_t)(pos[r / Tq] + r % Tq) * C;
                if (qwte) { /* a quantized embedding: dequantize the token's row */
                    float *xr = s->x + (size_t)r * C;
                    gpt2c_quant_unpack_row(qwte, tokens[r], xr);
                    for (int i = 0; i < C; i++) xr[i] += wpe_row[i];
                } else if (bwte.fmt == GPT2C_FMT_BF16) { /* bf16 precision: the token's row of the bf16 copy */
                    float *xr = s->x + (size_t)r * C;
                    gpt2c_tensor_row_f32(&bwte, tokens[r], xr);
                    for (int i = 0; i < C; i++) xr[i] += wpe_row[i];
                } else {
                    k->encoder_forward(s->x + (size_t)r * C, tokens + r, p[GPT2C_P_WTE], wpe_row, 1, 1, C);
                }
            }
            k->layernorm_forward(s->ln + (size_t)r0 * C, s->mean + r0, s->rstd + r0, s->x + (size_t)r0 * C,
                                 p[GPT2C_P_LN1W], p[GPT2C_P_LN1B], r1 - r0, C);
        });
        /* the block's stages (model/gpt2_block.h) on the rows' scratch: the residual
         * stream alternates x -> x2 -> x; every layernorm goes to ln (with mean,
         * rstd); the matmul before a gelu applies it (one stage) */
        float *buf[GPT2C_NUM_BUFS];
        buf[GPT2C_BUF_X] = buf[GPT2C_BUF_Y] = s->x, buf[GPT2C_BUF_X2] = s->x2;
        buf[GPT2C_BUF_LN1] = buf[GPT2C_BUF_LN2] = buf[GPT2C_BUF_LN_NEXT] = s->ln;
        buf[GPT2C_BUF_QKV] = s->qkv, buf[GPT2C_BUF_ATTY] = s->atty, buf[GPT2C_BUF_PROJ] = s->proj;
        buf[GPT2C_BUF_FCH] = buf[GPT2C_BUF_FCH_GELU] = s->fch;
        for (int l = 0; l < L; l++) {
            /* this layer's cache: fp32 (kc, vc) or bf16 (kc16, vc16) */
            float *kc = s->kc ? s->kc + (size_t)l * s->layer_cache : NULL;
            float *vc = s->vc ? s->vc + (size_t)l * s->layer_cache : NULL;
            uint16_t *kc16 = s->kc16 ? s->kc16 + (size_t)l * s->layer_cache : NULL;
            uint16_t *vc16 = s->vc16 ? s->vc16 + (size_t)l * s->layer_cache : NULL;
            for (int i = 0; i < GPT2C_BLOCK_NSTAGES; i++) {
                const gpt2c_block_stage *bs = &gpt2c_block_stages[i];
                const int IC = bs->ic * C, OC = bs->oc * C;
                const float *in = buf[bs->in];
                float *out = buf[bs->out];
                switch (bs->kind) {
                case GPT2C_STAGE_MATMUL: {
                    const int gelu = i + 1 < GPT2C_BLOCK_NSTAGES && gpt2c_block_stages[i + 1].kind == GPT2C_STAGE_GELU;
                    const gpt2c_tensor w = infer_weight(m, bs->w, l);
                    const float *bias = p[bs->b] + (size_t)l * OC;
                    /* an unmerged LoRA adapter on this matmul (NULL: none) */
                    const int site = m->lora ? gpt2c_lora_site_of_param(bs->w) : -1;
                    const float *la = site >= 0 ? gpt2c_lora_A(m->lora, site, l, 0) : NULL;
                    if (gelu) out = buf[gpt2c_block_stages[++i].out];
                    /* many rows on bf16 weights: the input rounded to bf16 once (see GPT2C_ACT_IN_BF16) */
                    const int xbf = s->xbf && n >= GPT2C_INFER_GEMM_ROWS && bf16_rows_for(k, w.fmt);
                    if (xbf)
                        STAGE(nchunks(n, ROW_CHUNK), bs->op, l, ((op_cost){0, round_rows_bytes(k, n, IC)}), {
                            RANGE(r0, r1, chunk, ROW_CHUNK, n);
                            round_rows_bf16(s, k, in, IC, r0, r1);
                        });
                    const int mstep = matmul_step(n, OC, w.fmt, nth);
                    const void *min = xbf ? s->xbf : (const void *)in;
                    const int act = (gelu && !la ? GPT2C_ACT_GELU : GPT2C_ACT_NONE) | (xbf ? GPT2C_ACT_IN_BF16 : 0);
                    warm.left = 0;
                    if (split) { /* while this stage's last chunks finish: the next matmul's first lines */
                        int j = i + 1, lj = l;
                        while (j < GPT2C_BLOCK_NSTAGES && gpt2c_block_stages[j].kind != GPT2C_STAGE_MATMUL) j++;
                        if (j == GPT2C_BLOCK_NSTAGES) /* the next layer's first matmul, or the LM head */
                            for (j = 0, lj = l + 1; gpt2c_block_stages[j].kind != GPT2C_STAGE_MATMUL; j++) {}
                        if (lj < L) {
                            const gpt2c_tensor nw = infer_weight(m, gpt2c_block_stages[j].w, lj);
                            if (quantized(nw.fmt))
                                warm = warm_half(&nw, nchunks((long)gpt2c_block_stages[j].oc * C, MM_CHUNK), MM_CHUNK,
                                                 tid, WARM_BYTES);
                        } else {
                            const gpt2c_tensor nw = W(WTE, 0);
                            if (quantized(nw.fmt)) warm = warm_half(&nw, nchunks(Vp, MM_CHUNK * 4), MM_CHUNK * 4, tid, WARM_BYTES);
                        }
                    }
                    STAGE_SPLIT(split && quantized(w.fmt), nchunks(OC, mstep), bs->op, l, cost_matmul_fwd(n, IC, OC, w.fmt), {
                        RANGE(o0, o1, chunk, mstep, OC);
                        MATMUL_RANGE(out, min, w, bias, n, IC, OC, act, o0, o1);
                    });
                    if (la) { /* out += scale * (in A^T) B^T, then the gelu the matmul did not apply */
                        const float *lb = gpt2c_lora_B(m->lora, site, l, 0);
                        const int r = gpt2c_lora_config(m->lora)->rank;
                        const float scale = gpt2c_lora_scale(m->lora);
                        float *t = s->lora_t;
                        STAGE(nchunks(n, ROW_CHUNK), bs->op, l, ((op_cost){2.0 * n * IC * r, 4.0 * (n * IC + r * IC)}), {
                            RANGE(r0, r1, chunk, ROW_CHUNK, n);
                            for (int row = r0; row < r1; row++)
                                for (int j = 0; j < r; j++) {
                                    const float *x = in + (size_t)row * IC, *a = la + (size_t)j * IC;
                                    float acc = 0;
                                    for (int c2 = 0; c2 < IC; c2++) acc += x[c2] * a[c2];
                                    t[(size_t)row * r + j] = scale * acc;
                                }
                        });
                        STAGE(nchunks(OC, MM_CHUNK), bs->op, l, ((op_cost){2.0 * n * OC * r, 4.0 * (2.0 * n * OC + r * OC)}), {
                            RANGE(o0, o1, chunk, MM_CHUNK, OC);
                            for (int row = 0; row < n; row++)
                                for (int o = o0; o < o1; o++) {
                                    const float *tr = t + (size_t)row * r, *bo = lb + (size_t)o * r;
                                    float acc = 0;
                                    for (int j = 0; j < r; j++) acc += tr[j] * bo[j];
                                    out[(size_t)row * OC + o] += acc;
                                }
                        });
                        if (gelu)
                            STAGE(nchunks(n, ROW_CHUNK), GPT2C_OP_GELU, l, cost_gelu_fwd((double)n * OC), {
                                RANGE(r0, r1, chunk, ROW_CHUNK, n);
                                k->gelu_forward(out + (size_t)r0 * OC, out + (size_t)r0 * OC, (size_t)(r1 - r0) * OC);
                            });
                    }
                    break;
                }
                case GPT2C_STAGE_ATTENTION: {
                    /* the new keys and values into the cache, a chunk per head of a prefill's sequence (so
                     * the threads share it) or per decoded sequence, profiled as its own op (inside
                     * "attention" it hid a single-threaded write); then attention per head */
                    const int kv_heads = Tq >= 8 ? 1 : NH, kv_groups = NH / kv_heads;
                    STAGE(nb * kv_groups, GPT2C_OP_KV_WRITE, l, ((op_cost){0, (4.0 + kv_es) * 2 * n * C}), {
                        const int b = chunk / kv_groups, h0 = chunk % kv_groups * kv_heads;
                        if (kc16)
                            k->kv_write_bf16(kc16 + SEQ(b) * seq_floats, vc16 + SEQ(b) * seq_floats,
                                             in + (size_t)b * Tq * 3 * C, pos + b, 1, Tq, s->ctx, C, NH, h0, h0 + kv_heads);
                        else
                            k->kv_write(kc + SEQ(b) * seq_floats, vc + SEQ(b) * seq_floats, in + (size_t)b * Tq * 3 * C,
                                        pos + b, 1, Tq, s->ctx, C, NH, h0, h0 + kv_heads);
                    });
                    const int att_step = Tq > 1 ? 4 : 1; /* tasks (b, t, h) per chunk */
                    /* decode: each thread its own half of the (sequence, head) tasks, whose caches are contiguous */
                    STAGE_SPLIT(split && Tq == 1, nchunks((long)nb * Tq * NH, att_step), bs->op, l, att_cost, {
                        const long t0 = (long)chunk * att_step, tend = (long)nb * Tq * NH;
                        if (seqs) { /* decode (att_step 1): task = (row b, head h), on sequence seqs[b]'s cache */
                            const int b = (int)(t0 / NH), h = (int)(t0 % NH);
                            if (kc16)
                                k->attention_kv_bf16_range(out + (size_t)b * C, in + (size_t)b * 3 * C, (size_t)3 * C,
                                                           kc16 + SEQ(b) * seq_floats, vc16 + SEQ(b) * seq_floats,
                                                           pos + b, 1, 1, s->ctx, C, NH, h, h + 1);
                            else
                                k->attention_kv_range(out + (size_t)b * C, in + (size_t)b * 3 * C, (size_t)3 * C,
                                                      kc + SEQ(b) * seq_floats, vc + SEQ(b) * seq_floats, pos + b, 1, 1,
                                                      s->ctx, C, NH, h, h + 1);
                        } else if (kc16) {
                            k->attention_kv_bf16_range(out, in, (size_t)3 * C, kc16 + SEQ(0) * seq_floats,
                                                       vc16 + SEQ(0) * seq_floats, pos, nb, Tq, s->ctx, C, NH, t0,
                                                       t0 + att_step < tend ? t0 + att_step : tend);
                        } else {
                            k->attention_kv_range(out, in, (size_t)3 * C, kc + SEQ(0) * seq_floats,
                                                  vc + SEQ(0) * seq_floats, pos, nb, Tq, s->ctx, C, NH, t0,
                                                  t0 + att_step < tend ? t0 + att_step : tend);
                        }
                    });
                    break;
                }
                case GPT2C_STAGE_GELU: /* only after a matmul, which applied it */
                    break;
                case GPT2C_STAGE_RESIDUAL_LAYERNORM: {
                    int w, b, wl;
                    gpt2c_block_ln_params(bs, l, L, &w, &b, &wl);
                    const float *lw = p[w] + (size_t)wl * C, *lb = p[b] + (size_t)wl * C;
                    const float *res_in = buf[bs->res_in];
                    float *res_out = buf[bs->res_out];
                    STAGE(nchunks(n, ROW_CHUNK), bs->op, l, cost_residual_layernorm_fwd(n, C), {
                        RANGE(r0, r1, chunk, ROW_CHUNK, n);
                        const size_t o = (size_t)r0 * C;
                        k->residual_layernorm_forward(res_out + o, out + o, s->mean + r0, s->rstd + r0, res_in + o,
                                                      in + o, lw, lb, r1 - r0, C);
                    });
                    break;
                }
                }
            }
        }
        /* s->ln holds lnf (n,C) */
        const gpt2c_tensor wte = W(WTE, 0);
        const int lxbf = s->xbf && lm_rows >= GPT2C_INFER_GEMM_ROWS && bf16_rows_for(k, wte.fmt);
        if (lxbf)
            STAGE(nchunks(lm_rows, ROW_CHUNK), GPT2C_OP_MATMUL_LMHEAD, -1, ((op_cost){0, round_rows_bytes(k, lm_rows, C)}), {
                RANGE(r0, r1, chunk, ROW_CHUNK, lm_rows);
                round_rows_bf16(s, k, lm_in, C, r0, r1);
            });
        const void *lmin = lxbf ? s->xbf : (const void *)lm_in;
        STAGE_SPLIT(split && quantized(wte.fmt) && lm_rows < GPT2C_INFER_GEMM_ROWS, nchunks(Vp, MM_CHUNK * 4), GPT2C_OP_MATMUL_LMHEAD, -1, cost_matmul_fwd(lm_rows, C, Vp, wte.fmt), {
            RANGE(o0, o1, chunk, MM_CHUNK * 4, Vp);
            MATMUL_RANGE(lm_out, lmin, wte, NULL, lm_rows, C, Vp, lxbf ? GPT2C_ACT_IN_BF16 : GPT2C_ACT_NONE, o0, o1);
        });
    }
    if (all_logits)
        for (int b = 0; b < nb; b++)
            memcpy(s->logits + (size_t)SEQ(b) * Vp, all_logits + ((size_t)b * Tq + Tq - 1) * Vp, sizeof(float) * Vp);
    for (int b = 0; b < nb; b++) s->pos[SEQ(b)] += Tq;
#undef SEQ
    return GPT2C_OK;
}

static gpt2c_status check_ids(const gpt2c_infer *s, const int32_t *ids, int n, const char *what) {
    const int V = s->m->cfg.vocab_size;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return gpt2c_fail(GPT2C_ERR_RANGE, "%s: token id %d at position %d is outside the vocabulary [0, %d)", what,
                              ids[i], i, V);
    return GPT2C_OK;
}

gpt2c_status gpt2c_infer_prefill(gpt2c_infer *s, int seq, const int32_t *tokens, int n, float *all_logits) {
    if (seq < 0 || seq >= s->B) return gpt2c_fail(GPT2C_ERR_RANGE, "prefill: sequence %d outside [0, %d)", seq, s->B);
    if (n <= 0) return gpt2c_fail(GPT2C_ERR_ARG, "prompt: empty (need at least one token)");
    if (s->pos[seq] + n > s->ctx)
        return gpt2c_fail(GPT2C_ERR_RANGE, "prompt: %d tokens after %d already cached exceed the context of %d", n,
                          s->pos[seq], s->ctx);
    GPT2C_TRY(check_ids(s, tokens, n, "prompt"));
    const size_t Vp = (size_t)s->m->cfg.padded_vocab_size;
    for (int done = 0; done < n; done += s->chunk) {
        const int rows = n - done < s->chunk ? n - done : s->chunk;
        memcpy(s->tok, tokens + done, sizeof(int32_t) * rows);
        GPT2C_TRY(gpt2c_infer_rows(s, seq, NULL, s->tok, rows, all_logits ? all_logits + (size_t)done * Vp : NULL));
    }
    return GPT2C_OK;
}

gpt2c_status gpt2c_infer_decode(gpt2c_infer *s, const int32_t *tokens) {
    for (int b = 0; b < s->B; b++)
        if (s->pos[b] >= s->ctx)
            return gpt2c_fail(GPT2C_ERR_RANGE, "decode: sequence %d has filled the context of %d tokens", b, s->ctx);
    GPT2C_TRY(check_ids(s, tokens, s->B, "decode"));
    memcpy(s->tok, tokens, sizeof(int32_t) * s->B);
    return gpt2c_infer_rows(s, -1, NULL, s->tok, s->B, NULL);
}

gpt2c_status gpt2c_infer_decode_some(gpt2c_infer *s, const int *seqs, int n, const int32_t *tokens, float *logits) {
    if (n <= 0 || n > s->B) return gpt2c_fail(GPT2C_ERR_ARG, "decode: %d sequences (want 1..%d)", n, s->B);
    if (!seqs || !tokens || !logits) return gpt2c_fail(GPT2C_ERR_ARG, "decode: seqs, tokens and logits are required");
    for (int i = 0; i < n; i++) {
        const int b = seqs[i];
        if (b < 0 || b >= s->B) return gpt2c_fail(GPT2C_ERR_RANGE, "decode: sequence %d outside [0, %d)", b, s->B);
        if (s->pos[b] >= s->ctx)
            return gpt2c_fail(GPT2C_ERR_RANGE, "decode: sequence %d has filled the context of %d tokens", b, s->ctx);
        for (int j = 0; j < i; j++)
            if (seqs[j] == b) return gpt2c_fail(GPT2C_ERR_ARG, "decode: sequence %d listed twice", b);
    }
    GPT2C_TRY(check_ids(s, tokens, n, "decode"));
    memcpy(s->tok, tokens, sizeof(int32_t) * n);
    return gpt2c_infer_rows(s, -1, seqs, s->tok, n, logits);
}
