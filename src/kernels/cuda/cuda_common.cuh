/* Shared by the .cu files of the cuda backend: the stream every op runs on,
 * error latching (ops return void: the first failure is remembered and
 * reported by gpt2c_cuda_device_check), a growable scratch workspace, and small
 * warp / block reduction helpers. */
#ifndef GPT2C_CUDA_COMMON_CUH
#define GPT2C_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stddef.h>

#include "kernels/cuda/cuda_ops.h"

/* the backend's stream (created by gpt2c_cuda_device_init) */
cudaStream_t gpt2c_cuda_stream(void);
/* Remembers the first error (what = the op or call that failed). */
void gpt2c_cuda_latch(cudaError_t e, const char *what);
void gpt2c_cuda_latch_msg(const char *what, const char *msg);
/* After a launch: latches a launch error (cheap, does not wait). */
#define CUDA_LAUNCHED(what) gpt2c_cuda_latch(cudaGetLastError(), what)

/* Scratch for one op at a time (ops run in stream order, so consecutive ops
 * may reuse it).  Grows by reallocation, which only happens while shapes are
 * new (the first step); NULL (error latched) on failure. */
void *gpt2c_cuda_scratch(size_t bytes);
/* cuBLASLt workspace and handle (opaque here, typed in cuda_matmul.cu) */
void *gpt2c_cuda_lt_handle(void);
void *gpt2c_cuda_lt_workspace(size_t *bytes);

/* cuda_attention_tiled.cu: the attention for 64-wide heads.  takes() says
 * whether it takes a call (C = 64 NH, the four tensors 16-byte aligned, not
 * turned off); backward wants D = rowsum(dout * out) (B,NH,T) already made. */
int gpt2c_cuda_att64_takes(int C, int NH, const void *a, const void *b, const void *c, const void *d);
void gpt2c_cuda_att64_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH, float scale);
void gpt2c_cuda_att64_backward(float *dqkv, const float *D, const float *dout, const float *qkv, const float *lse,
                               int B, int T, int C, int NH, float scale);

static inline unsigned cdiv(size_t a, size_t b) { return (unsigned)((a + b - 1) / b); }

template <typename F> __device__ inline F warp_sum(F v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
template <typename F> __device__ inline F warp_max(F v) {
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
/* Block-wide sum (fixed order: deterministic).  blockDim.x a multiple of 32,
 * <= 1024; `sh` has 32 elements; every thread gets the total. */
template <typename F> __device__ inline F block_sum(F v, F *sh) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads(); /* sh may still be read by a previous call */
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : F(0);
    return warp_sum(v);
}
template <typename F> __device__ inline F block_max(F v, F *sh) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : sh[0];
    return warp_max(v);
}

/* Deterministic column sums: out[c] += sum_n in[n*C + c] over n in [0,N),
 * in two fixed-order passes (row chunks, then the chunks).  Used by the bias
 * gradient and layernorm's db. */
void gpt2c_cuda_colsum_accumulate(float *out, const float *in, int N, int C);

#endif
