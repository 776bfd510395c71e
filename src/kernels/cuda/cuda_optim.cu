/* Optimizer side: sum of squares for the global grad norm (deterministic
 * two-pass reduction) and AdamW with ref's exact order of float operations. */
#include <math.h>

#include "kernels/cuda/cuda_common.cuh"

#define SUMSQ_BLOCKS 512 /* fixed: the reduction tree does not depend on the GPU */
#define SUMSQ_THREADS 256

static __global__ void sumsq_partial(double *part, const float *x, size_t n) {
    __shared__ double sh[32];
    double s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s += (double)x[i] * x[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

static __global__ void sumsq_finish(double *out, const double *part, int nparts) {
    __shared__ double sh[32];
    double s = 0;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) s += part[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) *out = s;
}

extern "C" double gpt2c_cuda_sumsq(const float *x, size_t n) {
    double *part = (double *)gpt2c_cuda_scratch(sizeof(double) * (SUMSQ_BLOCKS + 1));
    if (!part) return NAN;
    sumsq_partial<<<SUMSQ_BLOCKS, SUMSQ_THREADS, 0, gpt2c_cuda_stream()>>>(part, x, n);
    sumsq_finish<<<1, SUMSQ_THREADS, 0, gpt2c_cuda_stream()>>>(part + SUMSQ_BLOCKS, part, SUMSQ_BLOCKS);
    CUDA_LAUNCHED("sumsq");
    double r = NAN;
    cudaError_t e = cudaMemcpyAsync(&r, part + SUMSQ_BLOCKS, sizeof r, cudaMemcpyDeviceToHost, gpt2c_cuda_stream());
    if (e == cudaSuccess) e = cudaStreamSynchronize(gpt2c_cuda_stream());
    gpt2c_cuda_latch(e, "sumsq");
    return e == cudaSuccess ? r : NAN;
}

/* The _rn intrinsics forbid FMA contraction: each product and sum is rounded
 * as in ref's plain C, so the update matches ref bit for bit. */
static __global__ void adamw_kernel(float *p, const float *g, float *m, float *v, size_t n, float beta1, float beta2,
                             float eps, float decay, float step, float bc2_sqrt, float grad_scale) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = __fmul_rn(g[i], grad_scale);
    float mi = __fadd_rn(__fmul_rn(beta1, m[i]), __fmul_rn(1.0f - beta1, gi));
    float vi = __fadd_rn(__fmul_rn(beta2, v[i]), __fmul_rn(__fmul_rn(1.0f - beta2, gi), gi));
    float pi = __fmul_rn(p[i], decay);
    pi = __fsub_rn(pi, __fdiv_rn(__fmul_rn(step, mi), __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2_sqrt), eps)));
    m[i] = mi;
    v[i] = vi;
    p[i] = pi;
}

extern "C" void gpt2c_cuda_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                           float eps, float wd, float grad_scale, int t) {
    if (!n) return;
    /* host scalars computed exactly as ref does */
    const double bc1 = 1.0 - pow(beta1, t), bc2 = 1.0 - pow(beta2, t);
    const float step = (float)(lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    const float decay = 1.0f - lr * wd;
    adamw_kernel<<<cdiv(n, 256), 256, 0, gpt2c_cuda_stream()>>>(p, g, m, v, n, beta1, beta2, eps, decay, step, bc2_sqrt,
                                                          grad_scale);
    CUDA_LAUNCHED("adamw");
}
