/* The op table: every backend (ref, cpu, blas, cuda) fills one of these.
 *
 * Model code calls k->op(...) and never a backend routine directly. A backend
 * leaves an entry NULL to inherit the ref implementation (gpt2c_kernels_get
 * fills the gaps), so a new backend can start with one fast op.
 *
 * Conventions (shapes in comments, llm.c style; all row-major fp32):
 *   N = B*T rows.  Weights are stored as (OC, IC): out = inp @ W^T + bias.
 *   "overwrites" an output means it is written, not accumulated.
 *   Parameter gradients (dw, db, dwte, ...) are always ACCUMULATED (+=), so
 *   gradient accumulation and the tied wte/lm_head work without copies.
 *
 * Determinism: for a given backend the result must not depend on the number
 * of threads (split work by outputs; fixed-order reductions). */
#ifndef GPT2C_KERNELS_H
#define GPT2C_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/status.h"

enum { GPT2C_ACT_NONE = 0, GPT2C_ACT_GELU = 1 }; /* epilogues of matmul_infer_range */

struct gpt2c_profiler;

/* A device's peak rates (0 where unknown), for MFU and the roofline. */
typedef struct gpt2c_device_peaks {
    char name[96];                                  /* e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)" */
    double fp32_flops, tf32_flops, bf16_flops;      /* dense FLOP/s at the max clock */
    double mem_bytes_per_s;                         /* DRAM bandwidth */
} gpt2c_device_peaks;

typedef struct gpt2c_kernels {
    const char *name; /* "ref", "cpu", "blas", "cuda" */
    const char *isa;  /* e.g. "avx512", "avx2", "scalar" (informational) */

    /* out (N,C) = wte[tokens] + wpe[t];  tokens (B,T), wte (Vp,C), wpe (maxT,C) */
    void (*encoder_forward)(float *out, const int32_t *tokens, const float *wte, const float *wpe,
                            int B, int T, int C);
    /* dwte, dwpe += scatter of dout (B,T,C) */
    void (*encoder_backward)(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                             int B, int T, int C);

    /* out (N,C) = (inp - mean) * rstd * w + b; saves mean, rstd (N) for backward. eps = 1e-5 */
    void (*layernorm_forward)(float *out, float *mean, float *rstd, const float *inp,
                              const float *w, const float *b, int N, int C);
    /* dinp (N,C) += ...; dw, db (C) += ... */
    void (*layernorm_backward)(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *mean, const float *rstd, int N, int C);
    /* residual (N,C) overwritten = a + b, then ln = layernorm(residual) as above.
     * The fused form saves one pass over memory; ref does the two steps. */
    void (*residual_layernorm_forward)(float *residual, float *out, float *mean, float *rstd,
                                       const float *a, const float *b, const float *w,
                                       const float *bias, int N, int C);

    /* out (N,OC) overwritten = inp (N,IC) @ w^T (w is (OC,IC)) + bias (OC, may be NULL) */
    void (*matmul_forward)(float *out, const float *inp, const float *w, const float *bias,
                           int N, int IC, int OC);
    /* dinp (N,IC) overwritten (skipped if NULL) = dout (N,OC) @ w;
     * dw (OC,IC) += dout^T @ inp;  dbias (OC) += column sums of dout (skipped if NULL) */
    void (*matmul_backward)(float *dinp, float *dw, float *dbias, const float *dout,
                            const float *inp, const float *w, int N, int IC, int OC);

    /* Causal multi-head self-attention.  qkv (B,T,3C) holds q|k|v per token,
     * head h at channels [h*hs, (h+1)*hs) of each; out (B,T,C) overwritten.
     * `state` is per-layer storage the backend keeps for backward, of
     * attention_state_floats(B,T,NH) floats (ref: the softmax probabilities
     * (B,NH,T,T); a flash-style backend may keep only log-sum-exp). */
    size_t (*attention_state_floats)(int B, int T, int NH);
    void (*attention_forward)(float *out, float *state, const float *qkv, int B, int T, int C, int NH);
    /* dqkv (B,T,3C) overwritten.  out is the forward output (flash backward needs it).
     * scratch has attention_scratch_floats(B,T,NH) floats, shared by all layers. */
    size_t (*attention_scratch_floats)(int B, int T, int NH);
    void (*attention_backward)(float *dqkv, float *scratch, const float *dout, const float *qkv,
                               const float *out, const float *state, int B, int T, int C, int NH);

    /* GELU, tanh approximation: out (N) overwritten */
    void (*gelu_forward)(float *out, const float *inp, size_t N);
    /* dinp (N) overwritten = dout * gelu'(inp) */
    void (*gelu_backward)(float *dinp, const float *inp, const float *dout, size_t N);
    /* out (N) overwritten = a + b */
    void (*residual_forward)(float *out, const float *a, const float *b, size_t N);

    /* Softmax cross-entropy over the first V of Vp columns (pad columns never
     * count).  logits (N,Vp) are replaced IN PLACE by the probabilities (pad
     * columns set to 0); losses (N) overwritten with -log p[target]. */
    void (*softmax_xent_forward)(float *losses, float *logits_probs, const int32_t *targets,
                                 int N, int V, int Vp);
    /* In place: probs (N,Vp) become dlogits = (probs - onehot(target)) * dloss;
     * pad columns 0.  dloss is the gradient of the total loss w.r.t. each row's loss. */
    void (*softmax_xent_backward)(float *probs_dlogits, const int32_t *targets, float dloss,
                                  int N, int V, int Vp);

    /* Sum of squares of x (n), as double.  Reduction order fixed (independent of threads). */
    double (*sumsq)(const float *x, size_t n);
    /* AdamW on one tensor: g' = g * grad_scale;  m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2;
     * p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), mhat = m / (1-b1^t), vhat = v / (1-b2^t). */
    void (*adamw)(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                  float beta2, float eps, float wd, float grad_scale, int t);
    /* x (n) = 0 */
    void (*zero)(float *x, size_t n);

    /* ---- [fast-cpu] fused / extra training ops go here (each with a ref fallback) ---- */

    /* adamw, and then g (n) = 0: one pass over memory instead of two (the
     * model's update leaves the gradients zero, so the next zero_grad is
     * skipped).  OPTIONAL for a device backend: without it the model calls
     * adamw and zero. */
    void (*adamw_zero_grad)(float *p, float *g, float *m, float *v, size_t n, float lr, float beta1,
                            float beta2, float eps, float wd, float grad_scale, int t);

    /* ---- [inference] KV-cache and decode ops go here (each with a ref fallback) ---- */
    /* The KV cache of one layer, per sequence: keys TRANSPOSED, kc (NH, hs, ctx),
     * so the scores of 16 keys are one vector FMA per channel; values vc (NH, ctx, hs).
     * Sequence b's cache starts at kc + b*C*ctx (C = NH*hs), likewise vc. */

    /* The inference ops are SINGLE-THREADED over a range of their outputs: the
     * caller (src/infer's stage executor) hands ranges to threads, so a decode
     * step is one parallel region and no thread waits on a preempted one.
     *
     * out[:, o0:o1) of out (N,OC) = act(inp (N,IC) @ w[o0:o1)^T + bias[o0:o1)), w (OC,IC),
     * bias (OC, may be NULL); act: GPT2C_ACT_NONE or GPT2C_ACT_GELU (tanh form, as
     * gelu_forward).  Built for decode's few rows (N = 1..16: each weight row read
     * once per call) and usable for prefill's many (row panels kept in cache). */
    void (*matmul_infer_range)(float *out, const float *inp, const float *w, const float *bias, int N, int IC,
                               int OC, int act, int o0, int o1);
    /* Writes the keys and values of Tq new tokens of each of B sequences into the
     * caches at positions pos[b] .. pos[b]+Tq-1.  qkv (B,Tq,3C): q|k|v per token. */
    void (*kv_write)(float *kc, float *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C, int NH);
    /* Attention against the cache, tasks [t0, t1) of the B*NH*Tq tasks
     * task = (b*NH + h)*Tq + t: query t of sequence b (at position pos[b]+t), head h,
     * attends causally to cached tokens 0 .. pos[b]+t.  q: row (b,t) at
     * q + (b*Tq+t)*qstride, head h at channels [h*hs, (h+1)*hs).  out (B,Tq,C): the
     * task's hs channels overwritten.  The keys and values must be in the cache. */
    void (*attention_kv_range)(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                               const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1);

    /* ---- [cuda] device-specific entries go here ----
     * A backend whose tensors live in device memory fills these (and EVERY
     * other entry: gpt2c_kernels_get never fills a device backend from ref,
     * whose host loops would dereference device pointers; it refuses a device
     * table with a NULL entry instead).  Host backends leave them NULL: the
     * model then allocates with gpt2c_alloc and copies with memcpy.
     * Pointers passed to every op above are device pointers for such a
     * backend (int32 tokens/targets included); host scalars stay host. */

    /* Probes the device and creates the backend's context (stream, BLAS
     * handles).  Called by gpt2c_kernels_get at selection; fails with a
     * one-line reason (e.g. no device). */
    gpt2c_status (*device_init)(void);
    /* zero-filled device memory; NULL with gpt2c_fail set (naming `what`) on failure */
    void *(*dev_alloc)(size_t bytes, const char *what);
    void (*dev_free)(void *p);
    /* Copies ordered after all queued work; d2h returns once the data is on the host. */
    gpt2c_status (*memcpy_h2d)(void *dst_dev, const void *src_host, size_t bytes);
    gpt2c_status (*memcpy_d2h)(void *dst_host, const void *src_dev, size_t bytes);
    /* The first asynchronous error since the last call (ops return void, so a
     * failed launch is remembered and reported here).  Does not wait. */
    gpt2c_status (*device_check)(void);
    /* GPU time in the profiler's scopes.  attach installs the profiler's
     * on_begin/on_end hooks (refused if another extension holds them): each
     * scope records a CUDA event pair and an NVTX range.  resolve waits for
     * the GPU and rewrites each resolved scope's t0_ns/t1_ns as GPU times on
     * the host clock's axis, so every report shows GPU time; call it before
     * reading or resetting the events (once per step is right).  detach
     * removes the hooks and frees the events. */
    gpt2c_status (*prof_attach)(struct gpt2c_profiler *p);
    gpt2c_status (*prof_resolve)(struct gpt2c_profiler *p);
    void (*prof_detach)(struct gpt2c_profiler *p);
    /* The device's peak rates (after device_init). */
    gpt2c_status (*device_peaks)(gpt2c_device_peaks *out);
} gpt2c_kernels;

/* The ref backend (plain scalar C, the oracle) */
const gpt2c_kernels *gpt2c_kernels_ref(void);

/* Looks a backend up by name ("ref", "cpu", "blas", "cuda"); entries the
 * backend leaves NULL are filled from ref.  Unknown or not-built backends
 * fail with a message saying why. */
gpt2c_status gpt2c_kernels_get(const char *name, const gpt2c_kernels **out);

/* Index (counting from encoder_forward) of the first NULL entry of a table,
 * -1 if complete.  A device backend must be complete (see [cuda] above). */
long gpt2c_kernels_first_null(const gpt2c_kernels *k);

/* Names of the backends compiled into this build, comma-separated. */
const char *gpt2c_kernels_available(void);

/* Backend registration hooks (each backend file defines its own, NULL if not built). */
const gpt2c_kernels *gpt2c_kernels_cpu(void);
/* The raw cuda table (src/kernels/cuda/), NULL when built without CUDA; does
 * not touch the device (gpt2c_kernels_get("cuda") probes it). */
const gpt2c_kernels *gpt2c_kernels_cuda(void);
/* Fills the cpu backend's [inference] entries (src/kernels/cpu/cpu_infer.c). */
void gpt2c_kernels_cpu_infer_fill(gpt2c_kernels *k);
#endif
