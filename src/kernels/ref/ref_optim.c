#include <math.h>

#include "kernels/bf16.h"
#include "kernels/ref/ref.h"

double gpt2c_ref_sumsq(const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

/* Same order of operations as torch.optim.AdamW (single-tensor path):
 * decoupled decay p *= 1 - lr*wd, then p -= (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps). */
void gpt2c_ref_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps,
               float wd, float grad_scale, int t) {
    const double bc1 = 1.0 - pow(beta1, t), bc2 = 1.0 - pow(beta2, t);
    const float step = (float)(lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * grad_scale;
        m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
        v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        p[i] *= 1.0f - lr * wd;
        p[i] -= step * m[i] / (sqrtf(v[i]) / bc2_sqrt + eps);
    }
}

void gpt2c_ref_adamw_zero_grad(float *p, float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                         float eps, float wd, float grad_scale, int t) {
    gpt2c_ref_adamw(p, g, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, t);
    for (size_t i = 0; i < n; i++) g[i] = 0.0f;
}

void gpt2c_ref_adamw_bf16(float *p, const float *g, float *m, float *v, uint16_t *pb, size_t n, float lr, float beta1,
                          float beta2, float eps, float wd, float grad_scale, int t) {
    gpt2c_ref_adamw(p, g, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, t);
    for (size_t i = 0; i < n; i++) pb[i] = gpt2c_bf16_from_f32(p[i]);
}

void gpt2c_ref_adamw_zero_grad_bf16(float *p, float *g, float *m, float *v, uint16_t *pb, size_t n, float lr,
                                    float beta1, float beta2, float eps, float wd, float grad_scale, int t) {
    gpt2c_ref_adamw_bf16(p, g, m, v, pb, n, lr, beta1, beta2, eps, wd, grad_scale, t);
    for (size_t i = 0; i < n; i++) g[i] = 0.0f;
}

/* ref keeps no panel copy (width 0); the layout below is the oracle of the
 * backends that do (ops.h: bf16_panels) */
int gpt2c_ref_bf16_panel_width(int rows, int cols) {
    (void)rows, (void)cols;
    return 0;
}

void gpt2c_ref_bf16_panels(uint32_t *pd, const uint16_t *pb, int rows, int cols, int width) {
    const size_t kq = (size_t)rows / 2;
    for (int j = 0; j < cols; j++)
        for (size_t q = 0; q < kq; q++)
            pd[(size_t)(j / width) * kq * width + q * width + (size_t)(j % width)] =
                pb[2 * q * cols + j] | (uint32_t)pb[(2 * q + 1) * cols + j] << 16;
}

void gpt2c_ref_adamw_bf16_panels(float *p, const float *g, float *m, float *v, uint16_t *pb, uint32_t *pd, int rows,
                                 int cols, int width, float lr, float beta1, float beta2, float eps, float wd,
                                 float grad_scale, int t) {
    gpt2c_ref_adamw_bf16(p, g, m, v, pb, (size_t)rows * cols, lr, beta1, beta2, eps, wd, grad_scale, t);
    gpt2c_ref_bf16_panels(pd, pb, rows, cols, width);
}
