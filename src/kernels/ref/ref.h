/* The ref backend's functions, for kernels.c to put in the table and for
 * other backends that want to call a ref op directly on a path they do not
 * accelerate. */
#ifndef GPT2C_REF_H
#define GPT2C_REF_H

#include "kernels/kernels.h"

void ref_encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe, int B, int T, int C);
void ref_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B, int T, int C);
void ref_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                           int N, int C);
void ref_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                            const float *mean, const float *rstd, int N, int C);
void ref_residual_layernorm_forward(float *residual, float *out, float *mean, float *rstd, const float *a,
                                    const float *b, const float *w, const float *bias, int N, int C);
void ref_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC);
void ref_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp, const float *w,
                         int N, int IC, int OC);
size_t ref_attention_state_floats(int B, int T, int NH);
void ref_attention_forward(float *out, float *state, const float *qkv, int B, int T, int C, int NH);
size_t ref_attention_scratch_floats(int B, int T, int NH);
void ref_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                            const float *state, int B, int T, int C, int NH);
void ref_gelu_forward(float *out, const float *inp, size_t N);
void ref_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N);
void ref_residual_forward(float *out, const float *a, const float *b, size_t N);
void ref_softmax_xent_forward(float *losses, float *logits_probs, const int32_t *targets, int N, int V, int Vp);
void ref_softmax_xent_backward(float *probs_dlogits, const int32_t *targets, float dloss, int N, int V, int Vp);
double ref_sumsq(const float *x, size_t n);
void ref_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps,
               float wd, float grad_scale, int t);
void ref_zero(float *x, size_t n);
void ref_adamw_zero_grad(float *p, float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                         float eps, float wd, float grad_scale, int t);

#endif
