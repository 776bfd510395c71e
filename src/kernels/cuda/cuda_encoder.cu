/* Token + position embedding, forward and backward.
 *
 * Backward without atomics: dwpe has one thread per (t, c) summing over b in
 * order.  For dwte, the positions are sorted by (token, position) (a bitonic
 * sort of unique 64-bit keys, so the result is fully determined), and each
 * run of equal tokens is owned by one block that adds its dout rows in
 * position order: exactly ref's order of float additions. */
#include <stdint.h>

#include "kernels/cuda/cuda_common.cuh"

static __global__ void encoder_forward_kernel(float *out, const int32_t *tokens, const float *wte, const float *wpe, int T,
                                       int C, size_t total) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    size_t n = i / C;
    int c = (int)(i % C), t = (int)(n % T);
    out[i] = wte[(size_t)tokens[n] * C + c] + wpe[(size_t)t * C + c];
}

extern "C" void gpt2c_cuda_encoder_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe, int B,
                                     int T, int C) {
    size_t total = (size_t)B * T * C;
    if (!total) return;
    encoder_forward_kernel<<<cdiv(total, 256), 256, 0, gpt2c_cuda_stream()>>>(out, tokens, wte, wpe, T, C, total);
    CUDA_LAUNCHED("encoder_forward");
}

static __global__ void dwpe_kernel(float *dwpe, const float *dout, int B, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    float acc = dwpe[i];
    for (int b = 0; b < B; b++) acc += dout[(size_t)b * T * C + i];
    dwpe[i] = acc;
}

/* key = token << 32 | position; padding keys (beyond N) are all ones */
static __global__ void make_keys(uint64_t *keys, const int32_t *tokens, int N, int P) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < P) keys[i] = i < N ? ((uint64_t)(uint32_t)tokens[i] << 32) | (uint32_t)i : ~0ull;
}

/* one compare-exchange step (k, j) of the bitonic network over P = 2^p keys */
static __global__ void bitonic_step(uint64_t *keys, int j, int k, int P) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int l = i ^ j;
    if (i >= P || l <= i) return;
    uint64_t a = keys[i], b = keys[l];
    int ascending = (i & k) == 0;
    if ((a > b) == ascending) {
        keys[i] = b;
        keys[l] = a;
    }
}

/* Block s owns the run of equal tokens starting at sorted index s (if one
 * starts there); threads stride over channels. */
static __global__ void dwte_runs(float *dwte, const float *dout, const uint64_t *keys, int N, int C) {
    int s = blockIdx.x;
    uint32_t tok = (uint32_t)(keys[s] >> 32);
    if (s > 0 && (uint32_t)(keys[s - 1] >> 32) == tok) return;
    int e = s;
    while (e < N && (uint32_t)(keys[e] >> 32) == tok) e++;
    float *row = dwte + (size_t)tok * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float acc = row[c];
        for (int r = s; r < e; r++) acc += dout[(size_t)(uint32_t)keys[r] * C + c];
        row[c] = acc;
    }
}

extern "C" void gpt2c_cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B, int T,
                                      int C) {
    const int N = B * T;
    if (N <= 0) return;
    cudaStream_t st = gpt2c_cuda_stream();
    /* a NULL gradient (a frozen tensor) is skipped */
    if (dwpe) dwpe_kernel<<<cdiv((size_t)T * C, 256), 256, 0, st>>>(dwpe, dout, B, T, C);
    if (!dwte) {
        CUDA_LAUNCHED("encoder_backward");
        return;
    }
    int P = 1;
    while (P < N) P <<= 1;
    uint64_t *keys = (uint64_t *)gpt2c_cuda_scratch(sizeof(uint64_t) * (size_t)P);
    if (!keys) return;
    make_keys<<<cdiv(P, 256), 256, 0, st>>>(keys, tokens, N, P);
    for (int k = 2; k <= P; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) bitonic_step<<<cdiv(P, 256), 256, 0, st>>>(keys, j, k, P);
    dwte_runs<<<N, 128, 0, st>>>(dwte, dout, keys, N, C);
    CUDA_LAUNCHED("encoder_backward");
}
