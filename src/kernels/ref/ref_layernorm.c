#include <math.h>

#include "kernels/ref/ref.h"

#define LN_EPS 1e-5

void gpt2c_ref_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                           int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        double m = 0, v = 0;
        for (int i = 0; i < C; i++) m += x[i];
        m /= C;
        for (int i = 0; i < C; i++) v += ((double)x[i] - m) * ((double)x[i] - m);
        v /= C; /* biased variance, as PyTorch's layer_norm */
        double s = 1.0 / sqrt(v + LN_EPS);
        float *o = out + (size_t)n * C;
        for (int i = 0; i < C; i++) o[i] = (float)(((double)x[i] - m) * s) * w[i] + b[i];
        mean[n] = (float)m;
        rstd[n] = (float)s;
    }
}

/* With xhat = (x - mean) * rstd and g = dout * w:
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))  */
void gpt2c_ref_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                            const float *mean, const float *rstd, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C;
        double g_mean = 0, gx_mean = 0;
        for (int i = 0; i < C; i++) {
            double xhat = ((double)x[i] - mean[n]) * rstd[n];
            double g = (double)d[i] * w[i];
            g_mean += g;
            gx_mean += g * xhat;
        }
        g_mean /= C;
        gx_mean /= C;
        for (int i = 0; i < C; i++) {
            double xhat = ((double)x[i] - mean[n]) * rstd[n];
            double g = (double)d[i] * w[i];
            if (db) db[i] += d[i]; /* NULL: a frozen tensor */
            if (dw) dw[i] += (float)(xhat * d[i]);
            dx[i] += (float)(rstd[n] * (g - g_mean - xhat * gx_mean));
        }
    }
}

void gpt2c_ref_residual_layernorm_forward(float *residual, float *out, float *mean, float *rstd, const float *a,
                                    const float *b, const float *w, const float *bias, int N, int C) {
    gpt2c_ref_residual_forward(residual, a, b, (size_t)N * C);
    gpt2c_ref_layernorm_forward(out, mean, rstd, residual, w, bias, N, C);
}
