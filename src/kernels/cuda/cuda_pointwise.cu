/* Elementwise ops: GELU (tanh form) forward and backward, residual add, zero. */
#include "kernels/cuda/cuda_common.cuh"

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

static __global__ void gelu_forward_kernel(float *out, const float *inp, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
}

/* gelu'(x) = 0.5 (1 + tanh u) + 0.5 x sech^2(u) k (1 + 3 * 0.044715 x^2) */
static __global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = inp[i];
    float th = tanhf(GELU_K * (x + 0.044715f * x * x * x));
    float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = grad * dout[i]; /* dinp may alias dout: read before write, same thread */
}

static __global__ void residual_kernel(float *out, const float *a, const float *b, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

extern "C" void gpt2c_cuda_gelu_forward(float *out, const float *inp, size_t N) {
    if (!N) return;
    gelu_forward_kernel<<<cdiv(N, 256), 256, 0, gpt2c_cuda_stream()>>>(out, inp, N);
    CUDA_LAUNCHED("gelu_forward");
}
extern "C" void gpt2c_cuda_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N) {
    if (!N) return;
    gelu_backward_kernel<<<cdiv(N, 256), 256, 0, gpt2c_cuda_stream()>>>(dinp, inp, dout, N);
    CUDA_LAUNCHED("gelu_backward");
}
extern "C" void gpt2c_cuda_residual_forward(float *out, const float *a, const float *b, size_t N) {
    if (!N) return;
    residual_kernel<<<cdiv(N, 256), 256, 0, gpt2c_cuda_stream()>>>(out, a, b, N);
    CUDA_LAUNCHED("residual_forward");
}
extern "C" void gpt2c_cuda_zero(float *x, size_t n) {
    if (n) gpt2c_cuda_latch(cudaMemsetAsync(x, 0, n * sizeof(float), gpt2c_cuda_stream()), "zero");
}
