#include <math.h>
#include <stdlib.h>

#include "kernels/bf16.h"
#include "kernels/ref/ref.h"

const float *gpt2c_ref_weight_f32(const gpt2c_tensor *w, float **owned) {
    *owned = NULL;
    if (w->fmt == GPT2C_FMT_F32) return (const float *)w->data;
    float *f = malloc(sizeof(float) * (size_t)w->rows * (size_t)w->cols);
    if (!f) return NULL;
    for (int64_t r = 0; r < w->rows; r++)
        if (gpt2c_tensor_row_f32(w, r, f + (size_t)r * (size_t)w->cols) != 0) {
            free(f);
            return NULL;
        }
    *owned = f;
    return f;
}

static void fill_nan(float *x, size_t n) {
    for (size_t i = 0; x && i < n; i++) x[i] = NAN;
}

/* out[n][o] = bias[o] + sum_i inp[n][i] * w[o][i]   (double accumulation: the oracle) */
void gpt2c_ref_matmul_forward(float *out, const float *inp, const gpt2c_tensor *wt, const float *bias, int N, int IC,
                        int OC) {
    float *owned;
    const float *w = gpt2c_ref_weight_f32(wt, &owned);
    if (!w) {
        fill_nan(out, (size_t)N * OC);
        return;
    }
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * IC;
        for (int o = 0; o < OC; o++) {
            const float *wr = w + (size_t)o * IC;
            double acc = bias ? bias[o] : 0.0;
            for (int i = 0; i < IC; i++) acc += (double)x[i] * wr[i];
            out[(size_t)n * OC + o] = (float)acc;
        }
    }
    free(owned);
}

void gpt2c_ref_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                         const gpt2c_tensor *wt, int N, int IC, int OC, int dw_acc) {
    if (dinp) { /* dinp[n][i] = sum_o dout[n][o] * w[o][i] */
        float *owned;
        const float *w = gpt2c_ref_weight_f32(wt, &owned);
        if (!w) {
            fill_nan(dinp, (size_t)N * IC);
        } else {
            for (int n = 0; n < N; n++)
                for (int i = 0; i < IC; i++) {
                    double acc = 0;
                    for (int o = 0; o < OC; o++) acc += (double)dout[(size_t)n * OC + o] * w[(size_t)o * IC + i];
                    dinp[(size_t)n * IC + i] = (float)acc;
                }
            free(owned);
        }
    }
    /* dw[o][i] += sum_n dout[n][o] * inp[n][i] (= when !dw_acc) */
    if (dw)
        for (int o = 0; o < OC; o++)
            for (int i = 0; i < IC; i++) {
                double acc = 0;
                for (int n = 0; n < N; n++) acc += (double)dout[(size_t)n * OC + o] * inp[(size_t)n * IC + i];
                dw[(size_t)o * IC + i] = (dw_acc ? dw[(size_t)o * IC + i] : 0.0f) + (float)acc;
            }
    if (dbias)
        for (int o = 0; o < OC; o++) {
            double acc = 0;
            for (int n = 0; n < N; n++) acc += dout[(size_t)n * OC + o];
            dbias[o] += (float)acc;
        }
}

/* dout widened to fp32 (exact), then matmul_backward */
void gpt2c_ref_matmul_backward_dout_bf16(float *dinp, float *dw, const uint16_t *dout, long ld, const float *inp,
                                         const gpt2c_tensor *wt, int N, int IC, int OC, int dw_acc) {
    float *d = malloc(sizeof(float) * ((size_t)N * OC + 1));
    if (!d) {
        fill_nan(dinp, (size_t)N * IC);
        fill_nan(dw, (size_t)OC * IC);
        return;
    }
    gpt2c_bf16_widen_rows(d, dout, (size_t)N, (size_t)OC, (size_t)ld);
    gpt2c_ref_matmul_backward(dinp, dw, NULL, d, inp, wt, N, IC, OC, dw_acc);
    free(d);
}
