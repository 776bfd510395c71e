#include <math.h>
#include <string.h>

#include "kernels/ref/ref.h"

#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */

/* gelu(x) = 0.5 x (1 + tanh(k (x + 0.044715 x^3))) */
void gpt2c_ref_gelu_forward(float *out, const float *inp, size_t N) {
    for (size_t i = 0; i < N; i++) {
        double x = inp[i];
        out[i] = (float)(0.5 * x * (1.0 + tanh(GELU_K * (x + 0.044715 * x * x * x))));
    }
}

/* gelu'(x) = 0.5 (1 + tanh(u)) + 0.5 x sech^2(u) k (1 + 3 * 0.044715 x^2),  u = k (x + 0.044715 x^3) */
void gpt2c_ref_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N) {
    for (size_t i = 0; i < N; i++) {
        double x = inp[i];
        double u = GELU_K * (x + 0.044715 * x * x * x);
        double th = tanh(u);
        double grad = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
        dinp[i] = (float)(grad * dout[i]);
    }
}

void gpt2c_ref_residual_forward(float *out, const float *a, const float *b, size_t N) {
    for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

void gpt2c_ref_zero(float *x, size_t n) { memset(x, 0, n * sizeof(float)); }
