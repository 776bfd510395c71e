/* The ref backend's inference ops: plain scalar C in double precision, the
 * oracle the cpu backend's decode kernels are tested against. */
#include <math.h>
#include <stdlib.h>

#include "kernels/ref/ref.h"

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

/* kc (B, NH, hs, ctx): kc[b][h][i][p] = k_i of head h of the token at position p;
 * vc (B, NH, ctx, hs):  vc[b][h][p][i] = v_i */
void gpt2c_ref_kv_write(float *kc, float *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C, int NH) {
    const int hs = C / NH;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < Tq; t++) {
            const size_t p = (size_t)pos[b] + t;
            const float *k = qkv + ((size_t)b * Tq + t) * 3 * C + C, *v = k + C;
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < hs; i++) {
                    kc[(((size_t)b * NH + h) * hs + i) * ctx + p] = k[h * hs + i];
                    vc[(((size_t)b * NH + h) * ctx + p) * hs + i] = v[h * hs + i];
                }
        }
}

void gpt2c_ref_attention_kv_range(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                            const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1) {
    const int hs = C / NH;
    const double scale = 1.0 / sqrt((double)hs);
    (void)B;
    for (long task = t0; task < t1; task++) {
        const int t = (int)(task % Tq), h = (int)(task / Tq % NH), b = (int)(task / Tq / NH);
        const float *qh = q + ((size_t)b * Tq + t) * qstride + h * hs;
        const float *K = kc + ((size_t)b * NH + h) * hs * ctx; /* (hs, ctx) */
        const float *V = vc + ((size_t)b * NH + h) * ctx * hs; /* (ctx, hs) */
        const int n = pos[b] + t + 1;                          /* keys 0 .. pos+t */
        /* softmax over j of s_j = q.k_j / sqrt(hs), two passes: max, then sum */
        double maxs = -INFINITY;
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int i = 0; i < hs; i++) s += (double)qh[i] * K[(size_t)i * ctx + j];
            if (s * scale > maxs) maxs = s * scale;
        }
        double sum = 0;
        double acc[1024]; /* hs <= 1024 */
        for (int i = 0; i < hs; i++) acc[i] = 0;
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int i = 0; i < hs; i++) s += (double)qh[i] * K[(size_t)i * ctx + j];
            double e = exp(s * scale - maxs);
            sum += e;
            for (int i = 0; i < hs; i++) acc[i] += e * V[(size_t)j * hs + i];
        }
        float *o = out + ((size_t)b * Tq + t) * C + h * hs;
        for (int i = 0; i < hs; i++) o[i] = (float)(acc[i] / sum);
    }
}
