/* The cpu backend: OpenMP-parallel kernels.  Work is split by outputs so the
 * results do not depend on the thread count.  (The SIMD GEMM and fused
 * kernels slot in here; entries left NULL inherit ref.) */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"

static void cpu_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC,
                               int OC) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            const float *x = inp + (size_t)n * IC, *wr = w + (size_t)o * IC;
            float acc = bias ? bias[o] : 0.0f;
            for (int i = 0; i < IC; i++) acc += x[i] * wr[i];
            out[(size_t)n * OC + o] = acc;
        }
}

static void cpu_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                const float *w, int N, int IC, int OC) {
    if (dinp) {
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; n++) {
            float *dx = dinp + (size_t)n * IC;
            memset(dx, 0, sizeof(float) * IC);
            for (int o = 0; o < OC; o++) {
                const float d = dout[(size_t)n * OC + o];
                const float *wr = w + (size_t)o * IC;
                for (int i = 0; i < IC; i++) dx[i] += d * wr[i];
            }
        }
    }
#pragma omp parallel for schedule(static)
    for (int o = 0; o < OC; o++) {
        float *dwr = dw + (size_t)o * IC;
        float db = 0;
        for (int n = 0; n < N; n++) {
            const float d = dout[(size_t)n * OC + o];
            const float *x = inp + (size_t)n * IC;
            db += d;
            for (int i = 0; i < IC; i++) dwr[i] += d * x[i];
        }
        if (dbias) dbias[o] += db;
    }
}

static void cpu_attention_forward(float *out, float *state, const float *qkv, int B, int T, int C, int NH) {
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(3) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                float *att = state + (((size_t)b * NH + h) * T + t) * T;
                float maxs = -INFINITY;
                for (int j = 0; j <= t; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
                    float s = 0;
                    for (int i = 0; i < hs; i++) s += q[i] * k[i];
                    s *= scale;
                    att[j] = s;
                    if (s > maxs) maxs = s;
                }
                float sum = 0;
                for (int j = 0; j <= t; j++) {
                    att[j] = expf(att[j] - maxs);
                    sum += att[j];
                }
                const float inv = 1.0f / sum;
                for (int j = 0; j < T; j++) att[j] = j <= t ? att[j] * inv : 0.0f;
                float *o = out + ((size_t)b * T + t) * C + h * hs;
                memset(o, 0, sizeof(float) * hs);
                for (int j = 0; j <= t; j++) {
                    const float *v = qkv + ((size_t)b * T + j) * 3 * C + 2 * C + h * hs;
                    for (int i = 0; i < hs; i++) o[i] += att[j] * v[i];
                }
            }
}

static const gpt2c_kernels CPU = {
    .name = "cpu",
    .isa = "scalar+openmp",
    .matmul_forward = cpu_matmul_forward,
    .matmul_backward = cpu_matmul_backward,
    .attention_state_floats = ref_attention_state_floats,
    .attention_forward = cpu_attention_forward,
    .attention_scratch_floats = ref_attention_scratch_floats,
    .attention_backward = ref_attention_backward,
};

const gpt2c_kernels *gpt2c_kernels_cpu(void) { return &CPU; }
