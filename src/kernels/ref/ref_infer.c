/* The ref backend's inference ops: plain scalar C in double precision, the
 * oracle the cpu backend's decode kernels are tested against. */
#include <math.h>
#include <stdlib.h>

#include "gpt2c/dtype.h"
#include "kernels/ref/ref.h"
#include "kernels/kv_task.h"

/* element i of a KV cache of fp32 (bf16 = 0) or bf16 values, as a double */
static inline double kv_at(const void *p, size_t i, int bf16) {
    if (!bf16) return ((const float *)p)[i];
    union { uint32_t u; float f; } v = {(uint32_t)((const uint16_t *)p)[i] << 16};
    return v.f;
}

void gpt2c_ref_matmul_infer_range(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int IC,
                            int OC, int act, int o0, int o1) {
    /* a non-f32 weight: each row of the range decoded once (a NaN row if it cannot be) */
    float *tmp = w->fmt == GPT2C_FMT_F32 ? NULL : malloc(sizeof(float) * (size_t)IC);
    for (int o = o0; o < o1; o++) {
        const float *wr = (const float *)w->data + (size_t)o * IC;
        if (w->fmt != GPT2C_FMT_F32) wr = tmp && gpt2c_tensor_row_f32(w, o, tmp) == 0 ? tmp : NULL;
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * IC;
            double acc = bias ? bias[o] : 0.0;
            for (int i = 0; wr && i < IC; i++) acc += (double)x[i] * wr[i];
            float y = wr ? (float)acc : NAN;
            if (act == GPT2C_ACT_GELU) gpt2c_ref_gelu_forward(&y, &y, 1);
            out[(size_t)n * OC + o] = y;
        }
    }
    free(tmp);
}

static void kv_write(void *kc, void *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C, int NH,
                     int h0, int h1, int bf16) {
    const int hs = C / NH;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < Tq; t++) {
            const size_t p = (size_t)pos[b] + t;
            const float *k = qkv + ((size_t)b * Tq + t) * 3 * C + C, *v = k + C;
            for (int h = h0; h < h1; h++)
                for (int i = 0; i < hs; i++) {
                    const size_t ki = (((size_t)b * NH + h) * hs + i) * ctx + p, vi = (((size_t)b * NH + h) * ctx + p) * hs + i;
                    if (bf16) {
                        ((uint16_t *)kc)[ki] = gpt2c_f32_to_bf16(k[h * hs + i]);
                        ((uint16_t *)vc)[vi] = gpt2c_f32_to_bf16(v[h * hs + i]);
                    } else {
                        ((float *)kc)[ki] = k[h * hs + i];
                        ((float *)vc)[vi] = v[h * hs + i];
                    }
                }
        }
}

/* kc (B, NH, hs, ctx): kc[b][h][i][p] = k_i of head h of the token at position p;
 * vc (B, NH, ctx, hs):  vc[b][h][p][i] = v_i */
void gpt2c_ref_kv_write(float *kc, float *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C, int NH,
                        int h0, int h1) {
    kv_write(kc, vc, qkv, pos, B, Tq, ctx, C, NH, h0, h1, 0);
}

/* The same layout in bf16, each value rounded to nearest even. */
void gpt2c_ref_kv_write_bf16(uint16_t *kc, uint16_t *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C,
                             int NH, int h0, int h1) {
    kv_write(kc, vc, qkv, pos, B, Tq, ctx, C, NH, h0, h1, 1);
}

static void attention_kv(float *out, const float *q, size_t qstride, const void *kc, const void *vc, const int *pos,
                         int B, int Tq, int ctx, int C, int NH, long t0, long t1, int bf16) {
    const int hs = C / NH;
    const double scale = 1.0 / sqrt((double)hs);
    (void)B;
    for (long task = t0; task < t1; task++) {
        const gpt2c_kv_task tk = gpt2c_kv_task_at(task, Tq, NH, hs, ctx, C, qstride, pos);
        const float *qh = q + tk.q;
        const size_t K = tk.kv, V = tk.kv; /* its keys (hs, ctx) and values (ctx, hs) start here */
        const int n = tk.n;
        /* softmax over j of s_j = q.k_j / sqrt(hs), two passes: max, then sum */
        double maxs = -INFINITY;
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int i = 0; i < hs; i++) s += (double)qh[i] * kv_at(kc, K + (size_t)i * ctx + j, bf16);
            if (s * scale > maxs) maxs = s * scale;
        }
        double sum = 0;
        double acc[1024]; /* hs <= 1024 */
        for (int i = 0; i < hs; i++) acc[i] = 0;
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int i = 0; i < hs; i++) s += (double)qh[i] * kv_at(kc, K + (size_t)i * ctx + j, bf16);
            double e = exp(s * scale - maxs);
            sum += e;
            for (int i = 0; i < hs; i++) acc[i] += e * kv_at(vc, V + (size_t)j * hs + i, bf16);
        }
        float *o = out + tk.o;
        for (int i = 0; i < hs; i++) o[i] = (float)(acc[i] / sum);
    }
}

void gpt2c_ref_attention_kv_range(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                                  const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1) {
    attention_kv(out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1, 0);
}

void gpt2c_ref_attention_kv_bf16_range(float *out, const float *q, size_t qstride, const uint16_t *kc,
                                       const uint16_t *vc, const int *pos, int B, int Tq, int ctx, int C, int NH,
                                       long t0, long t1) {
    attention_kv(out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1, 1);
}
