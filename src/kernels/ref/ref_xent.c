#include <math.h>

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
