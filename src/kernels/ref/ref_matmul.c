#include "kernels/ref/ref.h"

/* out[n][o] = bias[o] + sum_i inp[n][i] * w[o][i]   (double accumulation: the oracle) */
void ref_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * IC;
        for (int o = 0; o < OC; o++) {
            const float *wr = w + (size_t)o * IC;
            double acc = bias ? bias[o] : 0.0;
            for (int i = 0; i < IC; i++) acc += (double)x[i] * wr[i];
            out[(size_t)n * OC + o] = (float)acc;
        }
    }
}

void ref_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp, const float *w,
                         int N, int IC, int OC) {
    if (dinp) /* dinp[n][i] = sum_o dout[n][o] * w[o][i] */
        for (int n = 0; n < N; n++)
            for (int i = 0; i < IC; i++) {
                double acc = 0;
                for (int o = 0; o < OC; o++) acc += (double)dout[(size_t)n * OC + o] * w[(size_t)o * IC + i];
                dinp[(size_t)n * IC + i] = (float)acc;
            }
    /* dw[o][i] += sum_n dout[n][o] * inp[n][i] */
    for (int o = 0; o < OC; o++)
        for (int i = 0; i < IC; i++) {
            double acc = 0;
            for (int n = 0; n < N; n++) acc += (double)dout[(size_t)n * OC + o] * inp[(size_t)n * IC + i];
            dw[(size_t)o * IC + i] += (float)acc;
        }
    if (dbias)
        for (int o = 0; o < OC; o++) {
            double acc = 0;
            for (int n = 0; n < N; n++) acc += dout[(size_t)n * OC + o];
            dbias[o] += (float)acc;
        }
}
