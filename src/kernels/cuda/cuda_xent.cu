/* Softmax cross-entropy over the first V of Vp columns, in place as ref:
 * forward turns logits into probabilities (pad columns 0) and writes the
 * per-row loss; backward turns probabilities into dlogits.  One block per row;
 * the sum of exponentials accumulates in double. */
#include <math.h>
#include <stdint.h>

#include "kernels/cuda/cuda_common.cuh"

#define XENT_THREADS 512

static __global__ void xent_forward_kernel(float *losses, float *logits, const int32_t *targets, int V, int Vp) {
    __shared__ float shf[32];
    __shared__ double shd[32];
    float *row = logits + (size_t)blockIdx.x * Vp;
    float mx = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, row[i]);
    mx = block_max(mx, shf);
    double s = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) s += exp((double)row[i] - mx);
    s = block_sum(s, shd);
    /* -log p[target] = log(sum) + max - logit[target], read before the row is overwritten */
    if (threadIdx.x == 0) losses[blockIdx.x] = (float)(log(s) + mx - row[targets[blockIdx.x]]);
    __syncthreads();
    const double inv = 1.0 / s;
    for (int i = threadIdx.x; i < Vp; i += blockDim.x) row[i] = i < V ? (float)(exp((double)row[i] - mx) * inv) : 0.0f;
}

static __global__ void xent_backward_kernel(float *dlogits, const int32_t *targets, float dloss, int V, int Vp) {
    float *row = dlogits + (size_t)blockIdx.y * Vp;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= Vp) return;
    row[i] = i < V ? (row[i] - (i == targets[blockIdx.y] ? 1.0f : 0.0f)) * dloss : 0.0f;
}

extern "C" void gpt2c_cuda_softmax_xent_forward(float *losses, float *logits_probs, const int32_t *targets, int N, int V,
                                          int Vp) {
    if (N <= 0) return;
    xent_forward_kernel<<<N, XENT_THREADS, 0, gpt2c_cuda_stream()>>>(losses, logits_probs, targets, V, Vp);
    CUDA_LAUNCHED("softmax_xent_forward");
}

extern "C" void gpt2c_cuda_softmax_xent_backward(float *probs_dlogits, const int32_t *targets, float dloss, int N, int V,
                                           int Vp) {
    if (N <= 0) return;
    xent_backward_kernel<<<dim3(cdiv(Vp, 256), N), 256, 0, gpt2c_cuda_stream()>>>(probs_dlogits, targets, dloss, V, Vp);
    CUDA_LAUNCHED("softmax_xent_backward");
}
