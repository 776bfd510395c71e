/* The cpu backend: SIMD (AVX-512, AVX2 or portable C) + OpenMP.  Each entry
 * forwards to the op table of the ISA in effect (chosen from CPUID, or forced
 * with gpt2c_cpu_force_isa), looked up on every call: one predictable branch.
 * Results do not depend on the thread count (see ops_impl.h, gemm.h). */
#include "gpt2c/cpu.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/kernels.h"

const gpt2c_kernels *cpu_ops_current(void) {
#if defined(__x86_64__) || defined(_M_X64)
    switch (gpt2c_cpu_isa()) {
    case GPT2C_ISA_AVX512: return &cpu_ops_avx512;
    case GPT2C_ISA_AVX2: return &cpu_ops_avx2;
    default: break;
    }
#endif
    return &cpu_ops_scalar;
}

#define K (cpu_ops_current())

static void encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe, int B, int T,
                            int C) {
    K->encoder_forward(out, tokens, wte, wpe, B, T, C);
}
static void encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B, int T,
                             int C) {
    K->encoder_backward(dwte, dwpe, dout, tokens, B, T, C);
}
static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                              int N, int C) {
    K->layernorm_forward(out, mean, rstd, inp, w, b, N, C);
}
static void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *mean, const float *rstd, int N, int C) {
    K->layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
static void residual_layernorm_forward(float *residual, float *out, float *mean, float *rstd, const float *a,
                                       const float *b, const float *w, const float *bias, int N, int C) {
    K->residual_layernorm_forward(residual, out, mean, rstd, a, b, w, bias, N, C);
}
static void matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC) {
    K->matmul_forward(out, inp, w, bias, N, IC, OC);
}
static void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                            const float *w, int N, int IC, int OC) {
    K->matmul_backward(dinp, dw, dbias, dout, inp, w, N, IC, OC);
}
/* the state layout (log-sum-exp) is the same for every ISA */
static size_t attention_state_floats(int B, int T, int NH) { return cpu_ops_scalar.attention_state_floats(B, T, NH); }
static size_t attention_scratch_floats(int B, int T, int NH) {
    return cpu_ops_scalar.attention_scratch_floats(B, T, NH);
}
static void attention_forward(float *out, float *state, const float *qkv, int B, int T, int C, int NH) {
    K->attention_forward(out, state, qkv, B, T, C, NH);
}
static void attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                               const float *state, int B, int T, int C, int NH) {
    K->attention_backward(dqkv, scratch, dout, qkv, out, state, B, T, C, NH);
}
static void gelu_forward(float *out, const float *inp, size_t N) { K->gelu_forward(out, inp, N); }
static void gelu_backward(float *dinp, const float *inp, const float *dout, size_t N) {
    K->gelu_backward(dinp, inp, dout, N);
}
static void residual_forward(float *out, const float *a, const float *b, size_t N) { K->residual_forward(out, a, b, N); }
static void softmax_xent_forward(float *losses, float *logits_probs, const int32_t *targets, int N, int V, int Vp) {
    K->softmax_xent_forward(losses, logits_probs, targets, N, V, Vp);
}
static void softmax_xent_backward(float *probs_dlogits, const int32_t *targets, float dloss, int N, int V, int Vp) {
    K->softmax_xent_backward(probs_dlogits, targets, dloss, N, V, Vp);
}
static double sumsq(const float *x, size_t n) { return K->sumsq(x, n); }
static void adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                  float eps, float wd, float grad_scale, int t) {
    K->adamw(p, g, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, t);
}
static void zero(float *x, size_t n) { K->zero(x, n); }
static void adamw_zero_grad(float *p, float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                            float eps, float wd, float grad_scale, int t) {
    K->adamw_zero_grad(p, g, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, t);
}

static gpt2c_kernels CPU = {
    .name = "cpu",
    .isa = "auto",
    .encoder_forward = encoder_forward,
    .encoder_backward = encoder_backward,
    .layernorm_forward = layernorm_forward,
    .layernorm_backward = layernorm_backward,
    .residual_layernorm_forward = residual_layernorm_forward,
    .matmul_forward = matmul_forward,
    .matmul_backward = matmul_backward,
    .attention_state_floats = attention_state_floats,
    .attention_forward = attention_forward,
    .attention_scratch_floats = attention_scratch_floats,
    .attention_backward = attention_backward,
    .gelu_forward = gelu_forward,
    .gelu_backward = gelu_backward,
    .residual_forward = residual_forward,
    .softmax_xent_forward = softmax_xent_forward,
    .softmax_xent_backward = softmax_xent_backward,
    .sumsq = sumsq,
    .adamw = adamw,
    .zero = zero,
    .adamw_zero_grad = adamw_zero_grad,
};

const gpt2c_kernels *gpt2c_kernels_cpu(void) {
    CPU.isa = gpt2c_isa_name(gpt2c_cpu_best_isa()); /* informational: the ISA dispatched by default */
    return &CPU;
}
