/* Layernorm forward (optionally fused with the residual add before it) and
 * backward.  One warp per row; statistics in double as ref computes them,
 * so the outputs agree with ref to a few ulps.  Parameter gradients reduce
 * over rows in two fixed-order passes (no atomics: same bits every run). */
#include "kernels/cuda/cuda_common.cuh"

#define LN_EPS 1e-5
#define ROWS_PER_BLOCK 8 /* warps per block */

/* If a2 != NULL: residual = a + a2 is written first and normalised (the
 * fused residual + layernorm); otherwise x = a. */
static __global__ void ln_forward_kernel(float *out, float *mean, float *rstd, float *residual, const float *a,
                                  const float *a2, const float *w, const float *b, int N, int C) {
    const int lane = threadIdx.x & 31, row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= N) return;
    const float *x = a + (size_t)row * C;
    if (a2) { /* each lane re-reads only what it wrote: no sync needed */
        const float *y = a2 + (size_t)row * C;
        float *r = residual + (size_t)row * C;
        for (int i = lane; i < C; i += 32) r[i] = x[i] + y[i];
        x = r;
    }
    double s = 0;
    for (int i = lane; i < C; i += 32) s += x[i];
    const double m = warp_sum(s) / C;
    double v = 0;
    for (int i = lane; i < C; i += 32) v += ((double)x[i] - m) * ((double)x[i] - m);
    const double rs = 1.0 / sqrt(warp_sum(v) / C + LN_EPS); /* biased variance, as PyTorch */
    float *o = out + (size_t)row * C;
    /* the _rn intrinsics keep nvcc from fusing into an FMA: ref rounds the product */
    for (int i = lane; i < C; i += 32) o[i] = __fadd_rn(__fmul_rn((float)(((double)x[i] - m) * rs), w[i]), b[i]);
    if (lane == 0) {
        mean[row] = (float)m;
        rstd[row] = (float)rs;
    }
}

extern "C" void gpt2c_cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                       const float *b, int N, int C) {
    if (N <= 0) return;
    ln_forward_kernel<<<cdiv(N, ROWS_PER_BLOCK), 32 * ROWS_PER_BLOCK, 0, gpt2c_cuda_stream()>>>(out, mean, rstd, NULL, inp,
                                                                                          NULL, w, b, N, C);
    CUDA_LAUNCHED("layernorm_forward");
}

extern "C" void gpt2c_cuda_residual_layernorm_forward(float *residual, float *out, float *mean, float *rstd, const float *a,
                                                const float *b, const float *w, const float *bias, int N, int C) {
    if (N <= 0) return;
    ln_forward_kernel<<<cdiv(N, ROWS_PER_BLOCK), 32 * ROWS_PER_BLOCK, 0, gpt2c_cuda_stream()>>>(out, mean, rstd, residual, a,
                                                                                          b, w, bias, N, C);
    CUDA_LAUNCHED("residual_layernorm_forward");
}

/* dx += rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dout * w */
static __global__ void ln_backward_dx_kernel(float *dinp, const float *dout, const float *inp, const float *w,
                                      const float *mean, const float *rstd, int N, int C) {
    const int lane = threadIdx.x & 31, row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= N) return;
    const float *x = inp + (size_t)row * C, *d = dout + (size_t)row * C;
    float *dx = dinp + (size_t)row * C;
    const double mu = mean[row], rs = rstd[row];
    double gs = 0, gxs = 0;
    for (int i = lane; i < C; i += 32) {
        double xhat = ((double)x[i] - mu) * rs, g = (double)d[i] * w[i];
        gs += g;
        gxs += g * xhat;
    }
    const double g_mean = warp_sum(gs) / C, gx_mean = warp_sum(gxs) / C;
    for (int i = lane; i < C; i += 32) {
        double xhat = ((double)x[i] - mu) * rs, g = (double)d[i] * w[i];
        dx[i] += (float)(rs * (g - g_mean - xhat * gx_mean));
    }
}

/* Pass 1 of dw, db: block (x: 128 columns, y: a chunk of LN_ROWS rows). */
#define LN_ROWS 256
static __global__ void ln_backward_dwdb_chunks(double *part, const float *dout, const float *inp, const float *mean,
                                        const float *rstd, int N, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int n0 = blockIdx.y * LN_ROWS, n1 = min(N, n0 + LN_ROWS);
    double dw = 0, db = 0;
    for (int n = n0; n < n1; n++) {
        double d = dout[(size_t)n * C + c];
        dw += ((double)inp[(size_t)n * C + c] - mean[n]) * rstd[n] * d;
        db += d;
    }
    part[(size_t)blockIdx.y * 2 * C + c] = dw;
    part[(size_t)blockIdx.y * 2 * C + C + c] = db;
}

static __global__ void ln_backward_dwdb_finish(float *dw, float *db, const double *part, int nchunks, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    double sw = 0, sb = 0;
    for (int k = 0; k < nchunks; k++) {
        sw += part[(size_t)k * 2 * C + c];
        sb += part[(size_t)k * 2 * C + C + c];
    }
    if (dw) dw[c] += (float)sw; /* NULL: a frozen tensor */
    if (db) db[c] += (float)sb;
}

extern "C" void gpt2c_cuda_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                        const float *w, const float *mean, const float *rstd, int N, int C) {
    if (N <= 0) return;
    cudaStream_t s = gpt2c_cuda_stream();
    ln_backward_dx_kernel<<<cdiv(N, ROWS_PER_BLOCK), 32 * ROWS_PER_BLOCK, 0, s>>>(dinp, dout, inp, w, mean, rstd, N, C);
    if (!dw && !db) {
        CUDA_LAUNCHED("layernorm_backward");
        return;
    }
    const int nchunks = (int)cdiv(N, LN_ROWS);
    double *part = (double *)gpt2c_cuda_scratch(sizeof(double) * 2 * (size_t)nchunks * C);
    if (!part) return;
    ln_backward_dwdb_chunks<<<dim3(cdiv(C, 128), nchunks), 128, 0, s>>>(part, dout, inp, mean, rstd, N, C);
    ln_backward_dwdb_finish<<<cdiv(C, 128), 128, 0, s>>>(dw, db, part, nchunks, C);
    CUDA_LAUNCHED("layernorm_backward");
}
