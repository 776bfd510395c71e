/* Attention over the KV cache on AVX2 + FMA, for CPUs without AVX-512 (which
 * take the flash kernel, flash_infer_avx512.c): per query, the scores q.k_j
 * of all its keys into a per-thread row (the cache's transposed key rows are
 * contiguous in j, so the loops run over keys in vectors), softmax in fp32
 * (vexp.h), then the value rows summed with the probabilities.  fp32
 * throughout: ref's oracle, the fallback before, accumulates in double with
 * each score computed twice, one channel at a time (at a 128-token prompt it
 * was a fifth of an AVX2 decode step and 38% of the prefill).  An fp32 or
 * (bf16) bf16 cache: a bf16 value is widened exactly as it is loaded. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_infer.h"
#include "kernels/cpu/vexp.h"
#include "kernels/kv_task.h"

static _Thread_local float *tl_s; /* one query's scores, then probabilities */
static _Thread_local size_t tl_cap;

static inline float kv_f32(const void *p, size_t i, const int bf16) {
    if (!bf16) return ((const float *)p)[i];
    const uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline __attribute__((always_inline)) int attend(float *out, const float *q, size_t qstride, const void *kc,
                                                        const void *vc, const int *pos, int Tq, int ctx, int C, int NH,
                                                        long t0, long t1, const int bf16) {
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    if ((size_t)ctx > tl_cap) {
        free(tl_s);
        tl_s = malloc(sizeof(float) * (size_t)ctx);
        tl_cap = tl_s ? (size_t)ctx : 0;
    }
    if (!tl_s) return 0; /* no memory: the caller falls back */
    float *s = tl_s;
    for (long task = t0; task < t1; task++) {
        const gpt2c_kv_task tk = gpt2c_kv_task_at(task, Tq, NH, hs, ctx, C, qstride, pos);
        const float *qh = q + tk.q;
        const size_t K = tk.kv, V = tk.kv; /* its keys (hs, ctx) and values (ctx, hs) start here */
        const int n = tk.n;
        memset(s, 0, sizeof(float) * (size_t)n);
        for (int i = 0; i < hs; i++) {
            const float qi = qh[i];
            const size_t kr = K + (size_t)i * ctx;
#pragma omp simd
            for (int j = 0; j < n; j++) s[j] = fmaf(qi, kv_f32(kc, kr + (size_t)j, bf16), s[j]);
        }
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int j = 0; j < n; j++) {
            s[j] *= scale;
            mx = s[j] > mx ? s[j] : mx;
        }
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < n; j++) {
            s[j] = vexp(s[j] - mx);
            sum += s[j];
        }
        float *o = out + tk.o;
        memset(o, 0, sizeof(float) * (size_t)hs);
        for (int j = 0; j < n; j++) {
            const float p = s[j];
            const size_t vr = V + (size_t)j * hs;
#pragma omp simd
            for (int i = 0; i < hs; i++) o[i] = fmaf(p, kv_f32(vc, vr + (size_t)i, bf16), o[i]);
        }
        const float inv = 1.0f / sum;
        for (int i = 0; i < hs; i++) o[i] *= inv;
    }
    return 1;
}

int gpt2c_cpu_attention_kv_avx2(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                                const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1) {
    (void)B;
    return attend(out, q, qstride, kc, vc, pos, Tq, ctx, C, NH, t0, t1, 0);
}

int gpt2c_cpu_attention_kv_bf16_avx2(float *out, const float *q, size_t qstride, const uint16_t *kc, const uint16_t *vc,
                                     const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1) {
    (void)B;
    return attend(out, q, qstride, kc, vc, pos, Tq, ctx, C, NH, t0, t1, 1);
}
