#include "kernels/ref/ref.h"

void gpt2c_ref_encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)b * T + t) * C;
            const float *we = wte + (size_t)tokens[b * T + t] * C;
            const float *pe = wpe + (size_t)t * C;
            for (int i = 0; i < C; i++) o[i] = we[i] + pe[i];
        }
}

void gpt2c_ref_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((size_t)b * T + t) * C;
            /* a NULL gradient (a frozen tensor) is skipped */
            float *dwe = dwte ? dwte + (size_t)tokens[b * T + t] * C : NULL;
            float *dpe = dwpe ? dwpe + (size_t)t * C : NULL;
            for (int i = 0; i < C; i++) {
                if (dwe) dwe[i] += d[i];
                if (dpe) dpe[i] += d[i];
            }
        }
}
