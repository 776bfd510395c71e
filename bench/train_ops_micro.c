/* The cpu backend's non-GEMM training ops alone, at GPT-2 124M's shapes, one
 * thread, timed in thread CPU time (a shared machine's preemption does not
 * count; its cache and memory contention still does): the median of REPS
 * calls per op, in ms.  Built and run by bench/train_ops_ab.sh, which builds it
 * against two trees and runs them interleaved.
 * Usage: train_ops_micro B T REPS [bf16] */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpt2c/core.h"
#include "kernels/kernels.h"

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *buf(size_t n, float scale) {
    float *p = malloc(sizeof(float) * n);
    if (!p) exit(1);
    uint32_t s = 12345u + (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = scale * ((float)(s >> 8) / 16777216.0f - 0.5f);
    }
    return p;
}

#define TIME(name, reps, call)                                                                                         \
    do {                                                                                                               \
        double t_[64];                                                                                                 \
        const int r_ = (reps) < 64 ? (reps) : 64;                                                                      \
        for (int i_ = 0; i_ < r_; i_++) {                                                                              \
            const double t0_ = cpu_now();                                                                              \
            call;                                                                                                      \
            t_[i_] = (cpu_now() - t0_) * 1e3;                                                                          \
        }                                                                                                              \
        qsort(t_, r_, sizeof(double), cmp_d);                                                                          \
        printf("%-28s %10.3f ms\n", name, t_[r_ / 2]);                                                                 \
    } while (0)

int main(int argc, char **argv) {
    const int B = argc > 1 ? atoi(argv[1]) : 4, T = argc > 2 ? atoi(argv[2]) : 64;
    const int reps = argc > 3 ? atoi(argv[3]) : 5, bf16 = argc > 4 && strcmp(argv[4], "bf16") == 0;
    const int C = 768, NH = 12, V = 50257, Vp = 50304, N = B * T;
    gpt2c_set_threads(1);
    const gpt2c_kernels *k = gpt2c_kernels_cpu();
    printf("B=%d T=%d, cpu ops (isa %s), 1 thread, median of %d calls, thread CPU time\n", B, T, k->isa, reps);

    /* optimizer: one tensor the size of GPT-2's fc weights over 12 layers (28M) */
    const size_t np = (size_t)12 * 4 * C * C;
    float *p = buf(np, 0.1f), *g = buf(np, 1e-3f), *m = buf(np, 1e-4f), *v = buf(np, 1e-8f);
    uint16_t *pb = malloc(2 * np);
    for (size_t i = 0; i < np; i++) v[i] = fabsf(v[i]);
    TIME("sumsq (28M)", reps, (void)k->sumsq(g, np));
    if (bf16)
        TIME("adamw_zero_grad_bf16 (28M)", reps,
             k->adamw_zero_grad_bf16(p, g, m, v, pb, np, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 3));
    else
        TIME("adamw_zero_grad (28M)", reps, k->adamw_zero_grad(p, g, m, v, np, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 3));
    free(p), free(g), free(m), free(v), free(pb);

    /* per-layer activations */
    float *x = buf((size_t)N * C, 1.0f), *x2 = buf((size_t)N * C, 1.0f), *y = buf((size_t)N * C, 1.0f);
    float *dy = buf((size_t)N * C, 1e-2f), *dx = buf((size_t)N * C, 0.0f), *res = buf((size_t)N * C, 0.0f);
    float *w = buf(C, 1.0f), *bb = buf(C, 0.1f), *dw = buf(C, 0.0f), *db = buf(C, 0.0f);
    float *mean = buf(N, 0.0f), *rstd = buf(N, 0.0f);
    k->layernorm_forward(y, mean, rstd, x, w, bb, N, C);
    TIME("layernorm_forward", reps, k->layernorm_forward(y, mean, rstd, x, w, bb, N, C));
    TIME("residual_layernorm_forward", reps, k->residual_layernorm_forward(res, y, mean, rstd, x, x2, w, bb, N, C));
    TIME("layernorm_backward", reps, k->layernorm_backward(dx, dw, db, dy, x, w, mean, rstd, N, C));
    float *h = buf((size_t)N * 4 * C, 2.0f), *hg = buf((size_t)N * 4 * C, 0.0f), *dh = buf((size_t)N * 4 * C, 1e-2f);
    TIME("gelu_forward", reps, k->gelu_forward(hg, h, (size_t)N * 4 * C));
    TIME("gelu_backward", reps, k->gelu_backward(hg, h, dh, (size_t)N * 4 * C));
    free(h), free(hg), free(dh);

    float *qkv = buf((size_t)N * 3 * C, 1.0f), *dqkv = buf((size_t)N * 3 * C, 0.0f);
    float *state = buf(k->attention_state_floats(B, T, NH), 0.0f);
    float *scratch = buf(k->attention_scratch_floats(B, T, NH) + 1, 0.0f);
    TIME("attention_forward", reps, k->attention_forward(y, state, qkv, B, T, C, NH));
    TIME("attention_backward", reps, k->attention_backward(dqkv, scratch, dy, qkv, y, state, B, T, C, NH));
    if (bf16) { /* the attention bf16 training runs: its own ops where the tree has them (else the fp32 ones) */
#ifdef HAVE_ATTENTION_BF16
        void (*fwd)(float *, float *, const float *, int, int, int, int) = k->attention_forward_bf16;
        void (*bwd)(float *, float *, const float *, const float *, const float *, const float *, int, int, int, int) =
            k->attention_backward_bf16;
#else
        void (*fwd)(float *, float *, const float *, int, int, int, int) = k->attention_forward;
        void (*bwd)(float *, float *, const float *, const float *, const float *, const float *, int, int, int, int) =
            k->attention_backward;
#endif
        float *yb = buf((size_t)N * C, 0.0f), *dqkvb = buf((size_t)N * 3 * C, 0.0f);
        float *stb = buf(k->attention_state_floats(B, T, NH), 0.0f);
        TIME("attention_forward (bf16 run)", reps, fwd(yb, stb, qkv, B, T, C, NH));
        TIME("attention_backward (bf16 run)", reps, bwd(dqkvb, scratch, dy, qkv, yb, stb, B, T, C, NH));
        double e = 0, mx = 0, ed = 0, mxd = 0;
        for (size_t i = 0; i < (size_t)N * C; i++) e = fmax(e, fabs(yb[i] - y[i])), mx = fmax(mx, fabs(y[i]));
        for (size_t i = 0; i < (size_t)N * 3 * C; i++)
            ed = fmax(ed, fabs(dqkvb[i] - dqkv[i])), mxd = fmax(mxd, fabs(dqkv[i]));
        printf("# bf16-run attention vs fp32: out max err %.3g of max %.3g, dqkv %.3g of %.3g\n", e, mx, ed, mxd);
        free(yb), free(dqkvb), free(stb);
    }
    free(qkv), free(dqkv), free(state), free(scratch);

    float *logits = buf((size_t)N * Vp, 4.0f), *losses = buf(N, 0.0f);
    int32_t *tg = malloc(sizeof(int32_t) * N);
    for (int i = 0; i < N; i++) tg[i] = (i * 7919) % V;
    float *keep = malloc(sizeof(float) * (size_t)N * Vp);
    memcpy(keep, logits, sizeof(float) * (size_t)N * Vp);
    TIME("softmax_xent_forward", reps,
         (memcpy(logits, keep, sizeof(float) * (size_t)N * Vp), k->softmax_xent_forward(losses, logits, tg, N, V, Vp)));
    TIME("  (the memcpy in it)", reps, memcpy(logits, keep, sizeof(float) * (size_t)N * Vp));
    TIME("softmax_xent_backward", reps, k->softmax_xent_backward(logits, tg, 1.0f / N, N, V, Vp));
    free(logits), free(losses), free(tg), free(keep);
    free(x), free(x2), free(y), free(dy), free(dx), free(res), free(w), free(bb), free(dw), free(db), free(mean), free(rstd);
    return 0;
}
