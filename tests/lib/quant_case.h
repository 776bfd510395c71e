/* One random quantized matmul case, shared by the quantized-kernel tests:
 * W (OC x IC, values in +-0.1), inputs x (N x IC, +-1) and a bias (+-0.1),
 * drawn in that order from the caller's generator; W packed in format f with
 * blocks of `block` and dequantized again; and the product with the
 * dequantized weights in double, with its error scale:
 *   exact[n*OC + o] = (bias_o) + sum_i deq[o][i] x[n][i]   (before any activation)
 *   mag[n*OC + o]   = |bias_o| + sum_i |deq[o][i] x[n][i]| + 1e-6
 * so a kernel's error can be stated relative to the sum of its terms' sizes. */
#ifndef GPT2C_TESTS_QUANT_CASE_H
#define GPT2C_TESTS_QUANT_CASE_H

#include <math.h>
#include <stdlib.h>

#include "gpt2c/quant.h"

typedef struct {
    gpt2c_tensor t;             /* W packed (owns codes, scales) */
    float *W, *x, *bias, *deq;
    double *exact, *mag;
} quant_case;

static inline quant_case quant_case_new(gpt2c_format f, int block, int N, int IC, int OC, int with_bias,
                                        float (*frand)(void)) {
    quant_case c;
    c.W = malloc(sizeof(float) * IC * OC), c.x = malloc(sizeof(float) * N * IC), c.bias = malloc(sizeof(float) * OC);
    for (int i = 0; i < IC * OC; i++) c.W[i] = frand() * 0.1f;
    for (int i = 0; i < N * IC; i++) c.x[i] = frand();
    for (int i = 0; i < OC; i++) c.bias[i] = frand() * 0.1f;
    void *codes = malloc(gpt2c_quant_code_bytes(f, OC, IC, block));
    float *scales = malloc(sizeof(float) * gpt2c_quant_nscales(f, OC, IC, block));
    gpt2c_quant_pack(f, block, c.W, OC, IC, codes, scales);
    c.t = (gpt2c_tensor){f, OC, IC, codes, scales, NULL, block};
    c.deq = malloc(sizeof(float) * IC * OC);
    c.exact = malloc(sizeof(double) * N * OC), c.mag = malloc(sizeof(double) * N * OC);
    gpt2c_quant_unpack(&c.t, c.deq);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = with_bias ? c.bias[o] : 0, m = fabs(s);
            for (int i = 0; i < IC; i++) {
                const double p = (double)c.deq[(size_t)o * IC + i] * c.x[(size_t)n * IC + i];
                s += p, m += fabs(p);
            }
            c.exact[n * OC + o] = s;
            c.mag[n * OC + o] = m + 1e-6;
        }
    return c;
}

static inline void quant_case_free(quant_case *c) {
    free(c->W), free(c->x), free(c->bias), free(c->deq), free(c->exact), free(c->mag);
    free(c->t.data), free(c->t.scales);
}

#endif
