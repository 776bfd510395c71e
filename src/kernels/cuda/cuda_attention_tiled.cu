/* Launchers of the 64-wide-head attention kernels (cuda_attention_tiled.cuh).
 * cuda_attention.cu hands them every call they can take: C = 64 NH,
 * 16-byte aligned tensors (float4 loads and stores), and a GPU that gives a
 * block 103 KiB of shared memory (sm_80, sm_90; not sm_86/89 or sm_75).  GPT2C_CUDA_ATT_SIMPLE=1
 * in the environment, or gpt2c_cuda_set_attention_tiled(0), keeps the row
 * kernels for every head size (to compare the two). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_attention_tiled.cuh"

static int g_tiled = -1; /* -1: the environment decides at the first call */
static int g_fits = -1;  /* -1: not asked yet; 1: the device gives a block the dK/dV kernel's shared memory */

/* the largest of the three kernels' shared memory (dK/dV) */
static const size_t SMEM_DKV = sizeof(float) * (6 * (size_t)ATT64_TILE + 2 * ATT64_ROWS);

extern "C" void gpt2c_cuda_set_attention_tiled(int on) { g_tiled = on != 0; }

int gpt2c_cuda_att64_takes(int C, int NH, const void *a, const void *b, const void *c, const void *d) {
    if (g_tiled < 0) {
        const char *e = getenv("GPT2C_CUDA_ATT_SIMPLE");
        g_tiled = !(e && strcmp(e, "1") == 0);
    }
    if (g_fits < 0) { /* 227 KiB on sm_90, 163 on sm_80; 99 on sm_86/89 and 64 on sm_75: the row kernels there */
        int dev = 0, optin = 0;
        g_fits = cudaGetDevice(&dev) == cudaSuccess &&
                 cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess &&
                 (size_t)optin >= SMEM_DKV;
        cudaGetLastError(); /* a failed query is not an op's error */
    }
    if (!g_tiled || !g_fits || NH <= 0 || C != NH * ATT64_HS) return 0;
    return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d) & 15) == 0;
}

/* the kernels use more than the default 48 KiB of shared memory: opt in once */
template <typename K> static int opt_in(K kernel, size_t bytes, int *done) {
    if (*done) return 1;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess) {
        gpt2c_cuda_latch(e, "attention (64-wide heads): shared memory");
        return 0;
    }
    *done = 1;
    return 1;
}

void gpt2c_cuda_att64_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH, float scale) {
    static int ready = 0;
    const size_t smem = 4 * sizeof(float) * ATT64_TILE;
    if (!opt_in(att64_forward_kernel, smem, &ready)) return;
    att64_forward_kernel<<<dim3(cdiv(T, ATT64_ROWS), B * NH), ATT64_THREADS, smem, gpt2c_cuda_stream()>>>(
        out, lse, qkv, T, C, NH, scale);
    CUDA_LAUNCHED("attention_forward (64-wide heads)");
}

void gpt2c_cuda_att64_backward(float *dqkv, const float *D, const float *dout, const float *qkv, const float *lse,
                               int B, int T, int C, int NH, float scale) {
    static int ready_dq = 0, ready_dkv = 0;
    const size_t smem_dq = 5 * sizeof(float) * ATT64_TILE;
    const size_t smem_dkv = SMEM_DKV;
    if (!opt_in(att64_backward_dq_kernel, smem_dq, &ready_dq) ||
        !opt_in(att64_backward_dkv_kernel, smem_dkv, &ready_dkv))
        return;
    const dim3 grid(cdiv(T, ATT64_ROWS), B * NH);
    cudaStream_t s = gpt2c_cuda_stream();
    att64_backward_dq_kernel<<<grid, ATT64_THREADS, smem_dq, s>>>(dqkv, dout, qkv, lse, D, T, C, NH, scale);
    att64_backward_dkv_kernel<<<grid, ATT64_THREADS, smem_dkv, s>>>(dqkv, dout, qkv, lse, D, T, C, NH, scale);
    CUDA_LAUNCHED("attention_backward (64-wide heads)");
}
