#include <math.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/ref/ref.h"

void gpt2c_ref_softmax_xent_forward(float *losses, float *logits_probs, const int32_t *targets, int N, int V, int Vp) {
    for (int n = 0; n < N; n++) {
        float *row = logits_probs + (size_t)n * Vp;
        double maxv = -INFINITY;
        for (int i = 0; i < V; i++)
            if (row[i] > maxv) maxv = row[i];
        double sum = 0;
        for (int i = 0; i < V; i++) sum += exp((double)row[i] - maxv);
        /* -log softmax[target] = log(sum) + max - logit[target], before the row is overwritten */
        losses[n] = (float)(log(sum) + maxv - row[targets[n]]);
        for (int i = 0; i < V; i++) row[i] = (float)(exp((double)row[i] - maxv) / sum);
        for (int i = V; i < Vp; i++) row[i] = 0.0f;
    }
}

void gpt2c_ref_softmax_xent_backward(float *probs_dlogits, const int32_t *targets, float dloss, int N, int V, int Vp) {
    for (int n = 0; n < N; n++) {
        float *row = probs_dlogits + (size_t)n * Vp;
        for (int i = 0; i < V; i++) row[i] = (row[i] - (i == targets[n] ? 1.0f : 0.0f)) * dloss;
        for (int i = V; i < Vp; i++) row[i] = 0.0f;
    }
}

/* the fp32 dlogits, then row by row rounded into the row's first half:
 * word i lands in bytes [2i, 2i+2) of the row, inside float i/2, which is
 * already read (i/2 <= i), so in place front to back is safe */
void gpt2c_ref_softmax_xent_backward_bf16(float *probs_dlogits, const int32_t *targets, float dloss, int N, int V,
                                          int Vp) {
    gpt2c_ref_softmax_xent_backward(probs_dlogits, targets, dloss, N, V, Vp);
    for (int n = 0; n < N; n++) {
        float *row = probs_dlogits + (size_t)n * Vp;
        for (int i = 0; i < Vp; i++) {
            const uint16_t h = gpt2c_bf16_from_f32(row[i]);
            memcpy((char *)row + 2 * (size_t)i, &h, 2);
        }
    }
}
