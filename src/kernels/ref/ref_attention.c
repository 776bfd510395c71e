#include <math.h>
#include <string.h>

#include "kernels/ref/ref.h"

/* state: the softmax probabilities att (B,NH,T,T), zero above the diagonal */
size_t gpt2c_ref_attention_state_floats(int B, int T, int NH) { return (size_t)B * NH * T * T; }

void gpt2c_ref_attention_forward(float *out, float *state, const float *qkv, int B, int T, int C, int NH) {
    const int hs = C / NH;
    const double scale = 1.0 / sqrt((double)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                float *att = state + (((size_t)b * NH + h) * T + t) * T;
                /* scores s_j = q.k_j / sqrt(hs) for j <= t (causal), softmax over j */
                double maxs = -INFINITY;
                for (int j = 0; j <= t; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
                    double s = 0;
                    for (int i = 0; i < hs; i++) s += (double)q[i] * k[i];
                    s *= scale;
                    att[j] = (float)s;
                    if (s > maxs) maxs = s;
                }
                double sum = 0;
                for (int j = 0; j <= t; j++) sum += exp((double)att[j] - maxs);
                for (int j = 0; j < T; j++) att[j] = j <= t ? (float)(exp((double)att[j] - maxs) / sum) : 0.0f;
                /* out = sum_j att_j v_j */
                float *o = out + ((size_t)b * T + t) * C + h * hs;
                for (int i = 0; i < hs; i++) {
                    double acc = 0;
                    for (int j = 0; j <= t; j++) acc += (double)att[j] * qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * hs + i];
                    o[i] = (float)acc;
                }
            }
}

/* scratch: datt for one query row */
size_t gpt2c_ref_attention_scratch_floats(int B, int T, int NH) {
    (void)B;
    (void)NH;
    return (size_t)T;
}

/* Per query row t, with p = att row:
 *   dp_j = dout . v_j;   dv_j += p_j dout
 *   ds_j = p_j (dp_j - sum_k p_k dp_k)        (softmax backward)
 *   dq += ds_j k_j / sqrt(hs);   dk_j += ds_j q / sqrt(hs) */
void gpt2c_ref_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                            const float *state, int B, int T, int C, int NH) {
    (void)out;
    const int hs = C / NH;
    const double scale = 1.0 / sqrt((double)hs);
    memset(dqkv, 0, sizeof(float) * (size_t)B * T * 3 * C);
    float *dp = scratch;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *p = state + (((size_t)b * NH + h) * T + t) * T;
                const float *d = dout + ((size_t)b * T + t) * C + h * hs;
                const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                float *dq = dqkv + ((size_t)b * T + t) * 3 * C + h * hs;
                double pdp = 0;
                for (int j = 0; j <= t; j++) {
                    const float *v = qkv + ((size_t)b * T + j) * 3 * C + 2 * C + h * hs;
                    float *dv = dqkv + ((size_t)b * T + j) * 3 * C + 2 * C + h * hs;
                    double acc = 0;
                    for (int i = 0; i < hs; i++) {
                        acc += (double)d[i] * v[i];
                        dv[i] += p[j] * d[i];
                    }
                    dp[j] = (float)acc;
                    pdp += p[j] * acc;
                }
                for (int j = 0; j <= t; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
                    float *dk = dqkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
                    double ds = p[j] * ((double)dp[j] - pdp) * scale;
                    for (int i = 0; i < hs; i++) {
                        dq[i] += (float)(ds * k[i]);
                        dk[i] += (float)(ds * q[i]);
                    }
                }
            }
}

/* bf16 precision: ref has no bf16 attention of its own; it runs the fp32 one
 * (the cpu backend's rounds the products' operands to bf16). */
void gpt2c_ref_attention_forward_bf16(float *out, float *state, const float *qkv, int B, int T, int C, int NH) {
    gpt2c_ref_attention_forward(out, state, qkv, B, T, C, NH);
}

void gpt2c_ref_attention_backward_bf16(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                                       const float *state, int B, int T, int C, int NH) {
    gpt2c_ref_attention_backward(dqkv, scratch, dout, qkv, out, state, B, T, C, NH);
}
