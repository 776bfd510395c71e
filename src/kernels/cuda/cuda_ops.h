/* The cuda backend's entry points: C-callable, defined in the .cu files of
 * this folder, put into the op table by cuda_backend.c.  Semantics of each
 * are those of the op table (src/kernels/kernels.h) and of ref, on device
 * pointers; everything runs on the backend's one stream, in order. */
#ifndef GPT2C_CUDA_OPS_H
#define GPT2C_CUDA_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuda_runtime.cu: device, stream, memory, errors, workspace */
gpt2c_status cuda_device_init(void);
void *cuda_dev_alloc(size_t bytes, const char *what);
void cuda_dev_free(void *p);
gpt2c_status cuda_memcpy_h2d(void *dst, const void *src, size_t bytes);
gpt2c_status cuda_memcpy_d2h(void *dst, const void *src, size_t bytes);
gpt2c_status cuda_device_check(void);
/* cuda_profile.cu: GPU time in profiler scopes, NVTX, peaks */
struct gpt2c_profiler;
struct gpt2c_device_peaks;
gpt2c_status cuda_prof_attach(struct gpt2c_profiler *p);
gpt2c_status cuda_prof_resolve(struct gpt2c_profiler *p);
void cuda_prof_detach(struct gpt2c_profiler *p);
gpt2c_status cuda_device_peaks(struct gpt2c_device_peaks *out);
/* cuda_matmul.cu: matmul precision, 0 = fp32 (default), 1 = tf32 tensor cores */
void cuda_set_matmul_tf32(int on);

/* cuda_encoder.cu */
void cuda_encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe, int B, int T, int C);
void cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B, int T, int C);

/* cuda_layernorm.cu */
void cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                            int N, int C);
void cuda_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                             const float *mean, const float *rstd, int N, int C);
void cuda_residual_layernorm_forward(float *residual, float *out, float *mean, float *rstd, const float *a,
                                     const float *b, const float *w, const float *bias, int N, int C);

/* cuda_matmul.cu */
void cuda_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC);
void cuda_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp, const float *w,
                          int N, int IC, int OC);

/* cuda_attention.cu: flash attention, state = log-sum-exp (B,NH,T) */
size_t cuda_attention_state_floats(int B, int T, int NH);
void cuda_attention_forward(float *out, float *state, const float *qkv, int B, int T, int C, int NH);
size_t cuda_attention_scratch_floats(int B, int T, int NH);
void cuda_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                             const float *state, int B, int T, int C, int NH);

/* cuda_pointwise.cu */
void cuda_gelu_forward(float *out, const float *inp, size_t N);
void cuda_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N);
void cuda_residual_forward(float *out, const float *a, const float *b, size_t N);
void cuda_zero(float *x, size_t n);

/* cuda_xent.cu */
void cuda_softmax_xent_forward(float *losses, float *logits_probs, const int32_t *targets, int N, int V, int Vp);
void cuda_softmax_xent_backward(float *probs_dlogits, const int32_t *targets, float dloss, int N, int V, int Vp);

/* cuda_optim.cu */
double cuda_sumsq(const float *x, size_t n);
void cuda_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps,
                float wd, float grad_scale, int t);

#ifdef __cplusplus
}
#endif
#endif
