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
 * Tiles are loaded a row per warp (lanes along the head dims: coalesced, no
 * index division).  When hs % 4 == 0 tile rows are hs + 4 floats apart and
 * the dot products read 4 dims per shared-memory load: a quarter warp's 8
 * lanes then read 8 rows whose starts fall 4 banks apart (no conflicts).
 * Otherwise rows are hs + 1 apart and read a float at a time.  Both sum
 * d = 0, 1, 2, ... in order: the same bits either way.
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

/* Tile row stride in shared memory (see the top). */
__host__ __device__ inline int tile_ld(int hs) { return hs & 3 ? hs + 1 : hs + 4; }

/* Loads rows [r0, r0+TILE) of a head's (T, hs) slice into dst (TILE x ld),
 * zero past T: src is row 0 of the slice, rows `stride` floats apart.  Warp w
 * loads rows w, w + WARPS, ...; its lanes the dims. */
__device__ inline void load_tile(float *dst, int ld, const float *src, size_t stride, int r0, int T, int hs) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int r = warp; r < TILE; r += WARPS) {
        const float *row = src + (size_t)(r0 + r) * stride;
        for (int d = lane; d < hs; d += 32) dst[r * ld + d] = r0 + r < T ? row[d] : 0.0f;
    }
}

/* a . b over hs dims, summed in order d = 0, 1, ...: a is a row every lane
 * reads (broadcast), b this lane's tile row; 4 dims per load when hs % 4 == 0
 * (both 16-byte aligned then: see the shared-memory layouts) */
__device__ inline float dot_row(const float *a, const float *b, int hs) {
    float s = 0.0f;
    if (hs & 3) {
        for (int d = 0; d < hs; d++) s += a[d] * b[d];
    } else {
        for (int d = 0; d < hs; d += 4) {
            const float4 x = *reinterpret_cast<const float4 *>(a + d), y = *reinterpret_cast<const float4 *>(b + d);
            s += x.x * y.x;
            s += x.y * y.y;
            s += x.z * y.z;
            s += x.w * y.w;
        }
    }
    return s;
}
/* the two dots of the backward, a1 . b1 and a2 . b2, in one pass */
__device__ inline void dot_rows2(const float *a1, const float *b1, const float *a2, const float *b2, int hs, float *s1,
                                 float *s2) {
    float x1 = 0.0f, x2 = 0.0f;
    if (hs & 3) {
        for (int d = 0; d < hs; d++) {
            x1 += a1[d] * b1[d];
            x2 += a2[d] * b2[d];
        }
    } else {
        for (int d = 0; d < hs; d += 4) {
            const float4 p = *reinterpret_cast<const float4 *>(a1 + d), q = *reinterpret_cast<const float4 *>(b1 + d);
            const float4 u = *reinterpret_cast<const float4 *>(a2 + d), v = *reinterpret_cast<const float4 *>(b2 + d);
            x1 += p.x * q.x;
            x2 += u.x * v.x;
            x1 += p.y * q.y;
            x2 += u.y * v.y;
            x1 += p.z * q.z;
            x2 += u.z * v.z;
            x1 += p.w * q.w;
            x2 += u.w * v.w;
        }
    }
    *s1 = x1;
    *s2 = x2;
}

static __global__ void flash_forward_kernel(float *out, float *lse, const float *qkv, int T, int C, int NH, float scale) {
    extern __shared__ float4 smem4[]; /* 16-byte aligned */
    float *sm = reinterpret_cast<float *>(smem4);
    const int hs = C / NH, ld = tile_ld(hs);
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
        load_tile(Ks, ld, base + C + h * hs, 3 * (size_t)C, j0, T, hs);
        load_tile(Vs, hs, base + 2 * C + h * hs, 3 * (size_t)C, j0, T, hs);
        __syncthreads();
        if (t >= T || j0 > t) continue; /* warp-uniform */
        const int j = j0 + lane;
        float s = -INFINITY;
        if (j <= t) s = dot_row(q, Ks + lane * ld, hs) * scale;
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
    extern __shared__ float4 smem4[];
    float *sm = reinterpret_cast<float *>(smem4);
    const int hs = C / NH, ld = tile_ld(hs);
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
        load_tile(Ks, ld, base + C + h * hs, 3 * (size_t)C, j0, T, hs);
        load_tile(Vs, ld, base + 2 * C + h * hs, 3 * (size_t)C, j0, T, hs);
        __syncthreads();
        if (t >= T || j0 > t) continue;
        const int j = j0 + lane;
        float ds = 0.0f;
        if (j <= t) {
            float s, dp;
            dot_rows2(q, Ks + lane * ld, dO, Vs + lane * ld, hs, &s, &dp);
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
    extern __shared__ float4 smem4[];
    float *sm = reinterpret_cast<float *>(smem4);
    const int hs = C / NH, ld = tile_ld(hs);
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
        load_tile(Qs, ld, base + h * hs, 3 * (size_t)C, i0, T, hs);
        load_tile(dOs, ld, dbase + h * hs, C, i0, T, hs); /* dout rows: stride C, not 3C */
        for (int i = threadIdx.x; i < TILE; i += blockDim.x) {
            lses[i] = i0 + i < T ? lse[(size_t)bh * T + i0 + i] : 0.0f;
            Ds[i] = i0 + i < T ? D[(size_t)bh * T + i0 + i] : 0.0f;
        }
        __syncthreads();
        if (j >= T || i0 + TILE - 1 < j) continue; /* warp-uniform: no query of this tile sees key j */
        const int i = i0 + lane;
        float p = 0.0f, ds = 0.0f;
        if (i < T && i >= j) {
            float s, dp;
            dot_rows2(Qs + lane * ld, k, dOs + lane * ld, v, hs, &s, &dp);
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
    if (gpt2c_cuda_att64_takes(C, NH, out, qkv, out, qkv)) {
        gpt2c_cuda_att64_forward(out, state, qkv, B, T, C, NH, (float)(1.0 / sqrt((double)hs)));
        return;
    }
    const size_t smem = sizeof(float) * ((size_t)TILE * (size_t)tile_ld(hs) + (size_t)TILE * hs + (size_t)WARPS * hs);
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
    if (gpt2c_cuda_att64_takes(C, NH, dqkv, dout, qkv, out)) {
        CUDA_LAUNCHED("attention_backward");
        gpt2c_cuda_att64_backward(dqkv, scratch, dout, qkv, state, B, T, C, NH, scale);
        return;
    }
    const size_t smem_dq = sizeof(float) * (2 * (size_t)TILE * (size_t)tile_ld(hs) + 2 * (size_t)WARPS * hs);
    flash_backward_dq_kernel<<<grid, 32 * WARPS, smem_dq, s>>>(dqkv, dout, qkv, state, scratch, T, C, NH, scale);
    const size_t smem_dkv = sizeof(float) * (2 * (size_t)TILE * (size_t)tile_ld(hs) + 2 * (size_t)WARPS * hs + 2 * TILE);
    flash_backward_dkv_kernel<<<grid, 32 * WARPS, smem_dkv, s>>>(dqkv, dout, qkv, state, scratch, T, C, NH, scale);
    CUDA_LAUNCHED("attention_backward");
}
