/* Causal flash attention in fp32: forward with online softmax keeping only the
 * log-sum-exp per query (state = lse (B,NH,T)), backward recomputing the
 * probabilities from it.  No (T,T) matrix is ever stored.
 *
 * Layout: qkv (B,T,3C) with q|k|v per token, head h at [h*hs, (h+1)*hs).
 * Work split: one warp per query row (forward, dQ) or per key row (dK, dV);
 * blocks of 8 warps share tiles of 32 rows of the other side in shared
 * memory.  Inside a warp, lane j owns key (or query) j of the tile for the
 * dot products, and lane d owns head dims d, d+32, d+64, d+96 for the
 * accumulators (so hs <= 128).  Backward is two kernels (dQ by queries, dK/dV
 * by keys) so every output has one owner: no atomics, same bits every run.
 *
 * Per query row t, with s_j = q.k_j * scale for j <= t:
 *   forward:  m = max s, l = sum exp(s - m), out = sum exp(s_j - m) v_j / l,
 *             lse = m + log l   (m, l, out updated tile by tile)
 *   backward: p_j = exp(s_j - lse),  D = dout . out,  dp_j = dout . v_j,
 *             ds_j = p_j (dp_j - D),  dq = scale sum_j ds_j k_j,
 *             dk_j = scale sum_t ds_j q_t,  dv_j = sum_t p_j dout_t */
#include <math.h>

#include "kernels/cuda/cuda_common.cuh"

#define TILE 32   /* rows of the other side per shared-memory tile */
#define WARPS 8   /* rows of this side per block */
#define HS_MAX 128
#define DPL (HS_MAX / 32) /* head dims per lane */

extern "C" size_t gpt2c_cuda_attention_state_floats(int B, int T, int NH) { return (size_t)B * NH * T; }
/* backward scratch: D = rowsum(dout * out) per (b, h, t) */
extern "C" size_t gpt2c_cuda_attention_scratch_floats(int B, int T, int NH) { return (size_t)B * NH * T; }

/* Loads rows [r0, r0+TILE) of one q/k/v section of head h into dst (TILE x ld),
 * zero past T.  `sec` is 0 (q), 1 (k) or 2 (v); src is this batch's (T,3C). */
__device__ inline void load_tile(float *dst, int ld, const float *src, int r0, int T, int C, int hs, int sec, int h) {
    for (int i = threadIdx.x; i < TILE * hs; i += blockDim.x) {
        int r = i / hs, d = i % hs;
        dst[r * ld + d] = r0 + r < T ? src[(size_t)(r0 + r) * 3 * C + sec * C + h * hs + d] : 0.0f;
    }
}

static __global__ void flash_forward_kernel(float *out, float *lse, const float *qkv, int T, int C, int NH, float scale) {
    extern __shared__ float sm[];
    const int hs = C / NH, ld = hs + 1; /* +1: lane j reading row j hits distinct banks */
    float *Ks = sm, *Vs = Ks + TILE * ld, *Qs = Vs + TILE * hs;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int t = blockIdx.x * WARPS + warp;
    const float *base = qkv + (size_t)b * T * 3 * C;
    float *q = Qs + warp * hs;
    if (t < T)
        for (int d = lane; d < hs; d += 32) q[d] = base[(size_t)t * 3 * C + h * hs + d];
    float o[DPL] = {0, 0, 0, 0};
    float m = -INFINITY, l = 0.0f;
    const int t_last = min(T - 1, (int)blockIdx.x * WARPS + WARPS - 1);
    for (int j0 = 0; j0 <= t_last; j0 += TILE) {
        __syncthreads();
        load_tile(Ks, ld, base, j0, T, C, hs, 1, h);
        load_tile(Vs, hs, base, j0, T, C, hs, 2, h);
        __syncthreads();
        if (t >= T || j0 > t) continue; /* warp-uniform */
        const int j = j0 + lane;
        float s = -INFINITY;
        if (j <= t) {
            float dot = 0.0f;
            for (int d = 0; d < hs; d++) dot += q[d] * Ks[lane * ld + d];
            s = dot * scale;
        }
        const float m_new = fmaxf(m, warp_max(s)); /* finite: key j0 <= t is in this tile */
        const float p = j <= t ? expf(s - m_new) : 0.0f;
        const float alpha = expf(m - m_new); /* 0 on the first tile (m = -inf) */
        l = l * alpha + warp_sum(p);
        for (int r = 0; r < DPL; r++) o[r] *= alpha;
        const int jn = min(TILE, t - j0 + 1);
        for (int jj = 0; jj < jn; jj++) {
            const float pj = __shfl_sync(0xffffffffu, p, jj);
            for (int r = 0; r < DPL; r++) {
                int d = lane + 32 * r;
                if (d < hs) o[r] += pj * Vs[jj * hs + d];
            }
        }
        m = m_new;
    }
    if (t >= T) return;
    float *orow = out + ((size_t)b * T + t) * C + h * hs;
    for (int r = 0; r < DPL; r++) {
        int d = lane + 32 * r;
        if (d < hs) orow[d] = o[r] / l;
    }
    if (lane == 0) lse[(size_t)bh * T + t] = m + logf(l);
}

/* D[bh, t] = dout_t . out_t  (one warp per row) */
static __global__ void flash_backward_dot_kernel(float *D, const float *dout, const float *out, int B, int T, int C, int NH) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int t = blockIdx.x * WARPS + warp, bh = blockIdx.y, b = bh / NH, h = bh % NH, hs = C / NH;
    if (t >= T) return;
    const size_t off = ((size_t)b * T + t) * C + h * hs;
    float s = 0.0f;
    for (int d = lane; d < hs; d += 32) s += dout[off + d] * out[off + d];
    s = warp_sum(s);
    if (lane == 0) D[(size_t)bh * T + t] = s;
}

/* dQ: one warp per query row t, looping over key tiles j0 <= t */
static __global__ void flash_backward_dq_kernel(float *dqkv, const float *dout, const float *qkv, const float *lse,
                                         const float *D, int T, int C, int NH, float scale) {
    extern __shared__ float sm[];
    const int hs = C / NH, ld = hs + 1;
    float *Ks = sm, *Vs = Ks + TILE * ld, *Qs = Vs + TILE * ld, *dOs = Qs + WARPS * hs;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int t = blockIdx.x * WARPS + warp;
    const float *base = qkv + (size_t)b * T * 3 * C;
    float *q = Qs + warp * hs, *dO = dOs + warp * hs;
    float lse_t = 0.0f, D_t = 0.0f;
    if (t < T) {
        for (int d = lane; d < hs; d += 32) {
            q[d] = base[(size_t)t * 3 * C + h * hs + d];
            dO[d] = dout[((size_t)b * T + t) * C + h * hs + d];
        }
        lse_t = lse[(size_t)bh * T + t];
        D_t = D[(size_t)bh * T + t];
    }
    float dq[DPL] = {0, 0, 0, 0};
    const int t_last = min(T - 1, (int)blockIdx.x * WARPS + WARPS - 1);
    for (int j0 = 0; j0 <= t_last; j0 += TILE) {
        __syncthreads();
        load_tile(Ks, ld, base, j0, T, C, hs, 1, h);
        load_tile(Vs, ld, base, j0, T, C, hs, 2, h);
        __syncthreads();
        if (t >= T || j0 > t) continue;
        const int j = j0 + lane;
        float ds = 0.0f;
        if (j <= t) {
            float s = 0.0f, dp = 0.0f;
            for (int d = 0; d < hs; d++) {
                s += q[d] * Ks[lane * ld + d];
                dp += dO[d] * Vs[lane * ld + d];
            }
            const float p = expf(s * scale - lse_t);
            ds = p * (dp - D_t);
        }
        const int jn = min(TILE, t - j0 + 1);
        for (int jj = 0; jj < jn; jj++) {
            const float dsj = __shfl_sync(0xffffffffu, ds, jj);
            for (int r = 0; r < DPL; r++) {
                int d = lane + 32 * r;
                if (d < hs) dq[r] += dsj * Ks[jj * ld + d];
            }
        }
    }
    if (t >= T) return;
    float *dqrow = dqkv + ((size_t)b * T + t) * 3 * C + h * hs;
    for (int r = 0; r < DPL; r++) {
        int d = lane + 32 * r;
        if (d < hs) dqrow[d] = dq[r] * scale;
    }
}

/* dK, dV: one warp per key row j, looping over query tiles that reach j */
static __global__ void flash_backward_dkv_kernel(float *dqkv, const float *dout, const float *qkv, const float *lse,
                                          const float *D, int T, int C, int NH, float scale) {
    extern __shared__ float sm[];
    const int hs = C / NH, ld = hs + 1;
    float *Qs = sm, *dOs = Qs + TILE * ld, *Ks = dOs + TILE * ld, *Vs = Ks + WARPS * hs;
    float *lses = Vs + WARPS * hs, *Ds = lses + TILE;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int j = blockIdx.x * WARPS + warp;
    const float *base = qkv + (size_t)b * T * 3 * C;
    const float *dbase = dout + (size_t)b * T * C;
    float *k = Ks + warp * hs, *v = Vs + warp * hs;
    if (j < T)
        for (int d = lane; d < hs; d += 32) {
            k[d] = base[(size_t)j * 3 * C + C + h * hs + d];
            v[d] = base[(size_t)j * 3 * C + 2 * C + h * hs + d];
        }
    float dk[DPL] = {0, 0, 0, 0}, dv[DPL] = {0, 0, 0, 0};
    const int j_first = blockIdx.x * WARPS;
    for (int i0 = j_first / TILE * TILE; i0 < T; i0 += TILE) {
        __syncthreads();
        load_tile(Qs, ld, base, i0, T, C, hs, 0, h);
        for (int i = threadIdx.x; i < TILE * hs; i += blockDim.x) { /* dout rows: stride C, not 3C */
            int r = i / hs, d = i % hs;
            dOs[r * ld + d] = i0 + r < T ? dbase[(size_t)(i0 + r) * C + h * hs + d] : 0.0f;
        }
        for (int i = threadIdx.x; i < TILE; i += blockDim.x) {
            lses[i] = i0 + i < T ? lse[(size_t)bh * T + i0 + i] : 0.0f;
            Ds[i] = i0 + i < T ? D[(size_t)bh * T + i0 + i] : 0.0f;
        }
        __syncthreads();
        if (j >= T || i0 + TILE - 1 < j) continue; /* warp-uniform: no query of this tile sees key j */
        const int i = i0 + lane;
        float p = 0.0f, ds = 0.0f;
        if (i < T && i >= j) {
            float s = 0.0f, dp = 0.0f;
            for (int d = 0; d < hs; d++) {
                s += Qs[lane * ld + d] * k[d];
                dp += dOs[lane * ld + d] * v[d];
            }
            p = expf(s * scale - lses[lane]);
            ds = p * (dp - Ds[lane]);
        }
        for (int ii = 0; ii < TILE; ii++) {
            const float pi = __shfl_sync(0xffffffffu, p, ii), dsi = __shfl_sync(0xffffffffu, ds, ii);
            for (int r = 0; r < DPL; r++) {
                int d = lane + 32 * r;
                if (d < hs) {
                    dv[r] += pi * dOs[ii * ld + d];
                    dk[r] += dsi * Qs[ii * ld + d];
                }
            }
        }
    }
    if (j >= T) return;
    float *row = dqkv + ((size_t)b * T + j) * 3 * C + h * hs;
    for (int r = 0; r < DPL; r++) {
        int d = lane + 32 * r;
        if (d < hs) {
            row[C + d] = dk[r] * scale;
            row[2 * C + d] = dv[r];
        }
    }
}

static int check_shape(int C, int NH, const char *what) {
    if (NH > 0 && C % NH == 0 && C / NH <= HS_MAX) return 1;
    gpt2c_cuda_latch_msg(what, "head size must divide C and be at most 128");
    return 0;
}

extern "C" void gpt2c_cuda_attention_forward(float *out, float *state, const float *qkv, int B, int T, int C, int NH) {
    if (B <= 0 || T <= 0 || !check_shape(C, NH, "attention_forward")) return;
    const int hs = C / NH;
    const size_t smem = sizeof(float) * ((size_t)TILE * (hs + 1) + (size_t)TILE * hs + (size_t)WARPS * hs);
    flash_forward_kernel<<<dim3(cdiv(T, WARPS), B * NH), 32 * WARPS, smem, gpt2c_cuda_stream()>>>(
        out, state, qkv, T, C, NH, (float)(1.0 / sqrt((double)hs)));
    CUDA_LAUNCHED("attention_forward");
}

extern "C" void gpt2c_cuda_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                        const float *out, const float *state, int B, int T, int C, int NH) {
    if (B <= 0 || T <= 0 || !check_shape(C, NH, "attention_backward")) return;
    const int hs = C / NH;
    const float scale = (float)(1.0 / sqrt((double)hs));
    const dim3 grid(cdiv(T, WARPS), B * NH);
    cudaStream_t s = gpt2c_cuda_stream();
    flash_backward_dot_kernel<<<grid, 32 * WARPS, 0, s>>>(scratch, dout, out, B, T, C, NH);
    const size_t smem_dq = sizeof(float) * (2 * (size_t)TILE * (hs + 1) + 2 * (size_t)WARPS * hs);
    flash_backward_dq_kernel<<<grid, 32 * WARPS, smem_dq, s>>>(dqkv, dout, qkv, state, scratch, T, C, NH, scale);
    const size_t smem_dkv = sizeof(float) * (2 * (size_t)TILE * (hs + 1) + 2 * (size_t)WARPS * hs + 2 * TILE);
    flash_backward_dkv_kernel<<<grid, 32 * WARPS, smem_dkv, s>>>(dqkv, dout, qkv, state, scratch, T, C, NH, scale);
    CUDA_LAUNCHED("attention_backward");
}
