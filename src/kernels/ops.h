/* THE list of the op table's entries, written once.  Everything that names
 * the ops is generated from it: the table struct (kernels.h), the ref table
 * and its declarations (ref.h, kernels.c), the registry's fill-from-ref and
 * completeness check (kernels.c), the cpu backend's per-ISA tables and
 * pass-throughs (ops_impl.h, cpu_backend.c), and the cuda table and its
 * declarations (cuda_ops.h, cuda_backend.c).  A new op is one row here, a ref
 * function (ref_<name>) and whichever fast kernels exist.
 *
 * Each row is X(ret, name, params, args): the return type (one token: void,
 * size_t, double, gpt2c_status, voidp), the entry's name, its parameter list
 * and the same parameters as an argument list (for pass-throughs).
 *
 * Conventions (shapes llm.c style):
 *   N = B*T rows.  Weights are stored as (OC, IC): out = inp @ W^T + bias.
 *   Activations and gradients are fp32.  Weights reach the matmuls as typed
 *   views (gpt2c_tensor: f32, bf16, q8, q4, nf4; w->rows = OC, w->cols = IC):
 *   a backend says which formats each such op takes in its `formats` masks
 *   (GPT2C_TYPED_OPS; f32 always), and a weight of any other format goes to
 *   ref's op, which converts each row as it reads it (GPT2C_KERNELS_FOR).
 *   "overwrites" an output means it is written, not accumulated.
 *   Parameter gradients (dw, db, dwte, ...) are ACCUMULATED (+=), so
 *   gradient accumulation and the tied wte/lm_head work without copies; a
 *   NULL parameter gradient is skipped (a frozen tensor pays no GEMM).  The
 *   one exception: matmul_backward's dw is overwritten when its dw_acc is 0
 *   (the first backward after an optimizer step that left the weights'
 *   gradients stale instead of zeroing them: model_internal.h's grads_stale).
 *
 * Determinism: for a given backend the result must not depend on the number
 * of threads (split work by outputs; fixed-order reductions). */
#ifndef GPT2C_OPS_H
#define GPT2C_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/format.h"
#include "gpt2c/status.h"

struct gpt2c_profiler;
struct gpt2c_device_peaks;
typedef void *voidp; /* a return type spelt as one token, for the rows below */

/* ---- training ops: every backend has them (a host backend inherits ref's) ---- */
#define GPT2C_OPS_TRAIN(X)                                                                                          \
    /* out (N,C) = wte[tokens] + wpe[t];  tokens (B,T), wte (Vp,C), wpe (maxT,C) */                                 \
    X(void, encoder_forward,                                                                                        \
      (float *out, const int32_t *tokens, const float *wte, const float *wpe, int B, int T, int C),                 \
      (out, tokens, wte, wpe, B, T, C))                                                                             \
    /* dwte, dwpe += scatter of dout (B,T,C) */                                                                     \
    X(void, encoder_backward, (float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B, int T, int C), \
      (dwte, dwpe, dout, tokens, B, T, C))                                                                          \
    /* out (N,C) = (inp - mean) * rstd * w + b; saves mean, rstd (N) for backward. eps = 1e-5 */                    \
    X(void, layernorm_forward,                                                                                      \
      (float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int N, int C),       \
      (out, mean, rstd, inp, w, b, N, C))                                                                           \
    /* dinp (N,C) += ...; dw, db (C) += ... */                                                                      \
    X(void, layernorm_backward,                                                                                     \
      (float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w, const float *mean,   \
       const float *rstd, int N, int C),                                                                            \
      (dinp, dw, db, dout, inp, w, mean, rstd, N, C))                                                               \
    /* residual (N,C) overwritten = a + b, then out = layernorm(residual) as above.                                \
     * The fused form saves one pass over memory; ref does the two steps. */                                        \
    X(void, residual_layernorm_forward,                                                                             \
      (float *residual, float *out, float *mean, float *rstd, const float *a, const float *b, const float *w,       \
       const float *bias, int N, int C),                                                                            \
      (residual, out, mean, rstd, a, b, w, bias, N, C))                                                             \
    /* out (N,OC) overwritten = inp (N,IC) @ w^T (w is (OC,IC)) + bias (OC, may be NULL) */                         \
    X(void, matmul_forward,                                                                                         \
      (float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int IC, int OC),              \
      (out, inp, w, bias, N, IC, OC))                                                                               \
    /* dinp (N,IC) overwritten (skipped if NULL) = dout (N,OC) @ w;                                                 \
     * dw (OC,IC) += dout^T @ inp, or = when dw_acc is 0: += on a zeroed dw without                                \
     * reading it (cpu, ref: the same bits) (skipped if NULL: a frozen weight);                                     \
     * dbias (OC) += column sums of dout (skipped if NULL) */                                                       \
    X(void, matmul_backward,                                                                                        \
      (float *dinp, float *dw, float *dbias, const float *dout, const float *inp, const gpt2c_tensor *w, int N,     \
       int IC, int OC, int dw_acc),                                                                                 \
      (dinp, dw, dbias, dout, inp, w, N, IC, OC, dw_acc))                                                           \
    /* Causal multi-head self-attention.  qkv (B,T,3C) holds q|k|v per token,                                      \
     * head h at channels [h*hs, (h+1)*hs) of each; out (B,T,C) overwritten.                                        \
     * `state` is per-layer storage the backend keeps for backward, of                                              \
     * attention_state_floats(B,T,NH) floats (ref: the softmax probabilities                                        \
     * (B,NH,T,T); a flash-style backend may keep only log-sum-exp). */                                             \
    X(size_t, attention_state_floats, (int B, int T, int NH), (B, T, NH))                                           \
    X(void, attention_forward, (float *out, float *state, const float *qkv, int B, int T, int C, int NH),          \
      (out, state, qkv, B, T, C, NH))                                                                               \
    /* dqkv (B,T,3C) overwritten.  out is the forward output (flash backward needs it).                             \
     * scratch has attention_scratch_floats(B,T,NH) floats, shared by all layers. */                                \
    X(size_t, attention_scratch_floats, (int B, int T, int NH), (B, T, NH))                                         \
    X(void, attention_backward,                                                                                     \
      (float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out, const float *state,      \
       int B, int T, int C, int NH),                                                                                \
      (dqkv, scratch, dout, qkv, out, state, B, T, C, NH))                                                          \
    /* GELU, tanh approximation: out (N) overwritten */                                                             \
    X(void, gelu_forward, (float *out, const float *inp, size_t N), (out, inp, N))                                  \
    /* dinp (N) overwritten = dout * gelu'(inp) */                                                                  \
    X(void, gelu_backward, (float *dinp, const float *inp, const float *dout, size_t N), (dinp, inp, dout, N))      \
    /* out (N) overwritten = a + b */                                                                               \
    X(void, residual_forward, (float *out, const float *a, const float *b, size_t N), (out, a, b, N))              \
    /* Softmax cross-entropy over the first V of Vp columns (pad columns never                                      \
     * count).  logits (N,Vp) are replaced IN PLACE by the probabilities (pad                                       \
     * columns set to 0); losses (N) overwritten with -log p[target]. */                                            \
    X(void, softmax_xent_forward, (float *losses, float *logits_probs, const int32_t *targets, int N, int V, int Vp), \
      (losses, logits_probs, targets, N, V, Vp))                                                                    \
    /* In place: probs (N,Vp) become dlogits = (probs - onehot(target)) * dloss;                                    \
     * pad columns 0.  dloss is the gradient of the total loss w.r.t. each row's loss. */                           \
    X(void, softmax_xent_backward, (float *probs_dlogits, const int32_t *targets, float dloss, int N, int V, int Vp), \
      (probs_dlogits, targets, dloss, N, V, Vp))                                                                    \
    /* Sum of squares of x (n), as double.  Reduction order fixed (independent of threads). */                      \
    X(double, sumsq, (const float *x, size_t n), (x, n))                                                            \
    /* AdamW on one tensor: g' = g * grad_scale;  m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2;                    \
     * p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), mhat = m / (1-b1^t), vhat = v / (1-b2^t). */                 \
    X(void, adamw,                                                                                                  \
      (float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps,       \
       float wd, float grad_scale, int t),                                                                          \
      (p, g, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, t))                                                    \
    /* x (n) = 0 */                                                                                                 \
    X(void, zero, (float *x, size_t n), (x, n))

/* ---- fused training ops: OPTIONAL for a device backend (the model then calls
 * the plain ops); a host backend inherits ref's ---- */
#define GPT2C_OPS_FUSED(X)                                                                                          \
    /* adamw, and then g (n) = 0: one pass over memory instead of two (the                                          \
     * update leaves such gradients zero, so the next zero_grad skips them). */                                     \
    X(void, adamw_zero_grad,                                                                                        \
      (float *p, float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps, float wd,   \
       float grad_scale, int t),                                                                                    \
      (p, g, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, t))                                                    \
    /* adamw, and pb (n) = the updated p rounded to bf16 (kernels/bf16.h's rounding):                               \
     * bf16 training's weight copy refreshed in the same pass over p, g left as it is                               \
     * (a weight's gradient that its next matmul_backward overwrites) */                                            \
    X(void, adamw_bf16,                                                                                             \
      (float *p, const float *g, float *m, float *v, uint16_t *pb, size_t n, float lr, float beta1, float beta2,    \
       float eps, float wd, float grad_scale, int t),                                                               \
      (p, g, m, v, pb, n, lr, beta1, beta2, eps, wd, grad_scale, t))                                                \
    /* adamw_zero_grad, and pb (n) = the updated p rounded to bf16 (kernels/bf16.h's                                \
     * rounding): bf16 training's weight copy refreshed in the same pass over p. */                                 \
    X(void, adamw_zero_grad_bf16,                                                                                   \
      (float *p, float *g, float *m, float *v, uint16_t *pb, size_t n, float lr, float beta1, float beta2,          \
       float eps, float wd, float grad_scale, int t),                                                               \
      (p, g, m, v, pb, n, lr, beta1, beta2, eps, wd, grad_scale, t))                                               \
    /* bf16 training's second copy of a matmul weight w (rows, cols), in the                                        \
     * panels its data-gradient GEMM reads (kernels/cpu/gemm_bf16.h,                                                \
     * gpt2c_cpu_gemm_bf16_paneled_b: panel j/width, pair row q holds                                               \
     * w[2q][j] | w[2q+1][j] << 16), handed to matmul_backward as w->aux so that                                    \
     * the GEMM packs nothing of it.  bf16_panel_width: the width the backend                                      \
     * reads for such a weight, 0 = no such copy (ref).  bf16_panels: writes                                        \
     * it from the row-major bf16 copy pb.  adamw_bf16_panels: adamw_bf16 that                                      \
     * also writes it (rows even, cols a multiple of width). */                                                     \
    X(int, bf16_panel_width, (int rows, int cols), (rows, cols))                                                    \
    X(void, bf16_panels, (uint32_t * pd, const uint16_t *pb, int rows, int cols, int width),                        \
      (pd, pb, rows, cols, width))                                                                                  \
    X(void, adamw_bf16_panels,                                                                                      \
      (float *p, const float *g, float *m, float *v, uint16_t *pb, uint32_t *pd, int rows, int cols, int width,     \
       float lr, float beta1, float beta2, float eps, float wd, float grad_scale, int t),                          \
      (p, g, m, v, pb, pd, rows, cols, width, lr, beta1, beta2, eps, wd, grad_scale, t))                           \
    /* bf16 precision's loss gradient: softmax_xent_backward's dlogits, each                                       \
     * rounded to bf16 (kernels/bf16.h) and stored IN PLACE at the start of its                                     \
     * row's own storage: row n's Vp words (pad columns 0) at                                                       \
     * (uint16_t *)(probs_dlogits + n*Vp), a bf16 (N,Vp) matrix of leading                                          \
     * dimension 2*Vp.  For the LM head's bf16 backward, which rounds them anyway. */                              \
    X(void, softmax_xent_backward_bf16,                                                                             \
      (float *probs_dlogits, const int32_t *targets, float dloss, int N, int V, int Vp),                           \
      (probs_dlogits, targets, dloss, N, V, Vp))                                                                    \
    /* matmul_backward, no bias, from a bf16 dout (N,OC) of leading dimension ld                                    \
     * words: the numbers of matmul_backward on that dout widened to fp32 */                                        \
    X(void, matmul_backward_dout_bf16,                                                                              \
      (float *dinp, float *dw, const uint16_t *dout, long ld, const float *inp, const gpt2c_tensor *w, int N,      \
       int IC, int OC, int dw_acc),                                                                                 \
      (dinp, dw, dout, ld, inp, w, N, IC, OC, dw_acc))                                                              \
    /* attention_forward / attention_backward for bf16 precision: the same                                          \
     * contract (state, scratch), the products of activations on bf16 operands                                      \
     * with fp32 accumulation, softmax and log-sum-exp in fp32 (ref: the fp32 ones) */                              \
    X(void, attention_forward_bf16, (float *out, float *state, const float *qkv, int B, int T, int C, int NH),     \
      (out, state, qkv, B, T, C, NH))                                                                               \
    X(void, attention_backward_bf16,                                                                                \
      (float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out, const float *state,      \
       int B, int T, int C, int NH),                                                                                \
      (dqkv, scratch, dout, qkv, out, state, B, T, C, NH))

/* ---- inference ops: OPTIONAL for a device backend (gpt2c_infer_create
 * refuses a backend without them); a host backend inherits ref's.
 * The KV cache of one layer, per sequence: keys TRANSPOSED, kc (NH, hs, ctx),
 * so the scores of 16 keys are one vector FMA per channel; values vc (NH, ctx, hs).
 * Sequence b's cache starts at kc + b*C*ctx (C = NH*hs), likewise vc.
 * These ops are SINGLE-THREADED over a range of their outputs: the caller
 * (src/infer's stage executor) hands ranges to threads, so a decode step is
 * one parallel region and no thread waits on a preempted one. ---- */
#define GPT2C_OPS_INFER(X)                                                                                          \
    /* out[:, o0:o1) of out (N,OC) = act(inp (N,IC) @ w[o0:o1)^T + bias[o0:o1)), w (OC,IC),                         \
     * bias (OC, may be NULL); act: GPT2C_ACT_NONE or GPT2C_ACT_GELU (tanh form, as                                 \
     * gelu_forward).  Built for decode's few rows (N = 1..16: each weight row read                                 \
     * once per call) and usable for prefill's many (row panels kept in cache). */                                  \
    X(void, matmul_infer_range,                                                                                     \
      (float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int IC, int OC, int act,      \
       int o0, int o1),                                                                                             \
      (out, inp, w, bias, N, IC, OC, act, o0, o1))                                                                  \
    /* Writes the keys and values of Tq new tokens of each of B sequences, heads                                    \
     * [h0, h1) of each, into the caches at positions pos[b] .. pos[b]+Tq-1 (so a                                   \
     * prefill's heads can be written in parallel).  qkv (B,Tq,3C): q|k|v per token. */                             \
    X(void, kv_write,                                                                                               \
      (float *kc, float *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C, int NH, int h0,        \
       int h1),                                                                                                     \
      (kc, vc, qkv, pos, B, Tq, ctx, C, NH, h0, h1))                                                                \
    /* Attention against the cache, tasks [t0, t1) of the B*NH*Tq tasks                                             \
     * task = (b*NH + h)*Tq + t: query t of sequence b (at position pos[b]+t), head h,                              \
     * attends causally to cached tokens 0 .. pos[b]+t.  q: row (b,t) at                                            \
     * q + (b*Tq+t)*qstride, head h at channels [h*hs, (h+1)*hs).  out (B,Tq,C): the                                \
     * task's hs channels overwritten.  The keys and values must be in the cache. */                                \
    X(void, attention_kv_range,                                                                                     \
      (float *out, const float *q, size_t qstride, const float *kc, const float *vc, const int *pos, int B, int Tq, \
       int ctx, int C, int NH, long t0, long t1),                                                                   \
      (out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1))                                                   \
    /* The same two over a bf16 KV cache (gpt2c_kv_cache, gpt2c/infer.h): same layout, keys and values                \
     * rounded to bf16 (nearest even) as they are written, widened to fp32 as attention reads them. */              \
    X(void, kv_write_bf16,                                                                                          \
      (uint16_t * kc, uint16_t * vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C, int NH,       \
       int h0, int h1),                                                                                             \
      (kc, vc, qkv, pos, B, Tq, ctx, C, NH, h0, h1))                                                                \
    X(void, attention_kv_bf16_range,                                                                                \
      (float *out, const float *q, size_t qstride, const uint16_t *kc, const uint16_t *vc, const int *pos, int B,   \
       int Tq, int ctx, int C, int NH, long t0, long t1),                                                           \
      (out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1))

/* Every compute op. */
#define GPT2C_OPS_COMPUTE(X) GPT2C_OPS_TRAIN(X) GPT2C_OPS_FUSED(X) GPT2C_OPS_INFER(X)

/* ---- device memory: a backend whose tensors live in device memory fills these
 * (and EVERY training op: a device table never inherits ref, whose host loops
 * would dereference device pointers).  Host backends leave them NULL: the
 * model then allocates with gpt2c_alloc and copies with memcpy.  Pointers
 * passed to every op are device pointers for such a backend (int32
 * tokens/targets included); host scalars stay host. ---- */
#define GPT2C_OPS_DEVICE(X)                                                                                         \
    /* Probes the device and creates the backend's context (stream, BLAS                                            \
     * handles).  Called at selection; fails with a one-line reason. */                                             \
    X(gpt2c_status, device_init, (void), ())                                                                        \
    /* zero-filled device memory; NULL with gpt2c_fail set (naming `what`) on failure */                            \
    X(voidp, dev_alloc, (size_t bytes, const char *what), (bytes, what))                                            \
    X(void, dev_free, (void *p), (p))                                                                               \
    /* Copies ordered after all queued work; d2h returns once the data is on the host. */                           \
    X(gpt2c_status, memcpy_h2d, (void *dst_dev, const void *src_host, size_t bytes), (dst_dev, src_host, bytes))    \
    X(gpt2c_status, memcpy_d2h, (void *dst_host, const void *src_dev, size_t bytes), (dst_host, src_dev, bytes))    \
    /* The first asynchronous error since the last call (ops return void, so a                                      \
     * failed launch is remembered and reported here).  Does not wait. */                                           \
    X(gpt2c_status, device_check, (void), ())                                                                       \
    /* Waits until all queued work is done (then as device_check).  The step                                        \
     * calls it at the end of backward and of the update, so that each phase's                                      \
     * host-timed milliseconds are its own device time. */                                                          \
    X(gpt2c_status, device_sync, (void), ())                                                                        \
    /* The device's peak rates (after device_init). */                                                              \
    X(gpt2c_status, device_peaks, (struct gpt2c_device_peaks * out), (out))

/* ---- profiler hooks of a device backend: GPU time in the profiler's scopes.
 * attach installs the profiler's on_begin/on_end hooks (refused if another
 * extension holds them): each scope records a CUDA event pair and an NVTX
 * range.  resolve waits for the GPU and rewrites each resolved scope's
 * t0_ns/t1_ns as GPU times on the host clock's axis; call it before reading
 * or resetting the events (once per step).  detach removes the hooks and
 * frees the events.  The profile session calls them (profile_session.c). ---- */
#define GPT2C_OPS_PROFILER(X)                                                                                       \
    X(gpt2c_status, prof_attach, (struct gpt2c_profiler * p), (p))                                                  \
    X(gpt2c_status, prof_resolve, (struct gpt2c_profiler * p), (p))                                                 \
    X(void, prof_detach, (struct gpt2c_profiler * p), (p))

/* The entries a device backend must fill (the registry refuses a hole). */
#define GPT2C_OPS_DEVICE_REQUIRED(X) GPT2C_OPS_TRAIN(X) GPT2C_OPS_DEVICE(X) GPT2C_OPS_PROFILER(X)

/* Ops that take a typed weight: Y(name).  Each has a format mask in the table. */
#define GPT2C_TYPED_OPS(Y) Y(matmul_forward) Y(matmul_backward) Y(matmul_infer_range)

/* `return` for a non-void row, nothing for a void one: pass-throughs are
 * written `GPT2C_RETURN_##ret f args;`. */
#define GPT2C_RETURN_void
#define GPT2C_RETURN_size_t return
#define GPT2C_RETURN_double return
#define GPT2C_RETURN_int return
#define GPT2C_RETURN_gpt2c_status return
#define GPT2C_RETURN_voidp return

#endif
