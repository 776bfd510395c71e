/* Causal flash attention for 64-wide heads (every GPT-2 size), fp32 on CUDA
 * cores, as small register-tiled matrix products.  Included by
 * cuda_attention_tiled.cu (the launchers) and by
 * tests/test_cuda_attention_emu.cpp, which compiles this device code as C++
 * and runs it on the CPU in a SIMT emulator (tests/simt): so it uses only
 * float4, threadIdx/blockIdx/gridDim, __syncthreads, __shfl_xor_sync, expf,
 * logf, fmaxf and one extern __shared__ array.
 *
 * A block of 256 threads owns a tile of 64 rows (queries, or keys for dK/dV)
 * and walks the 64-row tiles of the other side that the causal mask lets
 * through.  Every product is 64 x 64 x 64 out of shared memory, with tiles
 * stored row-major, rows ATT64_LD = 68 floats apart (16-byte aligned rows).
 * Thread (ty, tx) = (tid / 16, tid % 16) holds a 4 x 4 block of the result:
 *   - for A . B^T (scores S = Q K^T, dP = dO V^T): rows ty + 16a, columns
 *     tx + 16c.  A row is read 4 dims at a time (broadcast to the 16 lanes
 *     of one ty); the B rows of lanes tx = 0..7 start 68 tx floats apart,
 *     4 banks apart mod 32: no conflicts.  A row's 64 scores lie in the 16
 *     lanes of one half-warp, so row max and sum are 4 xor-shuffles.
 *   - for P . V (out, dQ, dK, dV): rows ty + 16a, columns 4tx .. 4tx+3, so
 *     a V row is read as one float4 per lane, contiguous across lanes.
 * Scores and their gradients pass through shared memory between the two.
 *
 * The math is that of cuda_attention.cu (state = log-sum-exp per query; D =
 * rowsum(dout * out) computed before the backward); the summation order is
 * not, so results differ from the row kernels by rounding. */
#ifndef GPT2C_CUDA_ATTENTION_TILED_CUH
#define GPT2C_CUDA_ATTENTION_TILED_CUH

#define ATT64_HS 64
#define ATT64_ROWS 64
#define ATT64_LD 68
#define ATT64_TILE (ATT64_ROWS * ATT64_LD) /* floats per shared tile */
#define ATT64_THREADS 256

/* rows [r0, r0 + 64) of a head's (T, 64) slice (row 0 at src, rows `stride`
 * floats apart, 16-byte aligned) into a shared tile; zeros past T */
__device__ inline void att64_load(float *dst, const float *src, size_t stride, int r0, int T) {
    for (int k = threadIdx.x; k < ATT64_ROWS * 16; k += ATT64_THREADS) {
        const int r = k >> 4, c4 = k & 15;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r0 + r < T) v = *reinterpret_cast<const float4 *>(src + (size_t)(r0 + r) * stride + 4 * c4);
        *reinterpret_cast<float4 *>(dst + r * ATT64_LD + 4 * c4) = v;
    }
}

/* the next key tile of a query block: K and V rows [k0, k0 + 64) of the head
 * at base (q at base, k at base + C, v at base + 2C; rows 3C apart), once
 * every thread is done with the last ones */
__device__ inline void att64_next_kv(float *Ks, float *Vs, const float *base, int C, int k0, int T) {
    __syncthreads();
    att64_load(Ks, base + C, 3 * (size_t)C, k0, T);
    att64_load(Vs, base + 2 * C, 3 * (size_t)C, k0, T);
    __syncthreads();
}

__device__ inline void att64_zero(float acc[4][4]) {
    for (int a = 0; a < 4; a++)
        for (int c = 0; c < 4; c++) acc[a][c] = 0.0f;
}

/* acc[a][c] += A[ty + 16a] . B[tx + 16c] over the 64 dims, d in order */
__device__ inline void att64_abt(float acc[4][4], const float *A, const float *B) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    for (int d = 0; d < ATT64_HS; d += 4) {
        float4 a[4], b[4];
        for (int k = 0; k < 4; k++) {
            a[k] = *reinterpret_cast<const float4 *>(A + (ty + 16 * k) * ATT64_LD + d);
            b[k] = *reinterpret_cast<const float4 *>(B + (tx + 16 * k) * ATT64_LD + d);
        }
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++) {
                acc[r][c] += a[r].x * b[c].x;
                acc[r][c] += a[r].y * b[c].y;
                acc[r][c] += a[r].z * b[c].z;
                acc[r][c] += a[r].w * b[c].w;
            }
    }
}

/* acc[a][e] += sum_j P[ty + 16a][j] V[j][4tx + e] over the 64 rows j, in order */
__device__ inline void att64_pv(float acc[4][4], const float *P, const float *V) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    for (int j = 0; j < ATT64_ROWS; j += 4) {
        float4 p[4], v[4];
        for (int k = 0; k < 4; k++) {
            p[k] = *reinterpret_cast<const float4 *>(P + (ty + 16 * k) * ATT64_LD + j);
            v[k] = *reinterpret_cast<const float4 *>(V + (j + k) * ATT64_LD + 4 * tx);
        }
        for (int r = 0; r < 4; r++) {
            const float pr[4] = {p[r].x, p[r].y, p[r].z, p[r].w};
            for (int k = 0; k < 4; k++) {
                acc[r][0] += pr[k] * v[k].x;
                acc[r][1] += pr[k] * v[k].y;
                acc[r][2] += pr[k] * v[k].z;
                acc[r][3] += pr[k] * v[k].w;
            }
        }
    }
}

/* a 4 x 4 register block (rows ty + 16a, columns tx + 16c) into a shared tile */
__device__ inline void att64_store_scores(float *dst, const float s[4][4]) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    for (int a = 0; a < 4; a++)
        for (int c = 0; c < 4; c++) dst[(ty + 16 * a) * ATT64_LD + tx + 16 * c] = s[a][c];
}

/* over the 16 lanes holding one row (a half-warp) */
__device__ inline float att64_row_max(float v) {
    for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ inline float att64_row_sum(float v) {
    for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* out (B,T,C), lse (B,NH,T) from qkv (B,T,3C); grid (tiles of T, B*NH), the
 * heaviest query tiles (the last ones) first */
static __global__ void __launch_bounds__(ATT64_THREADS) att64_forward_kernel(float *out, float *lse, const float *qkv, int T,
                                                                      int C, int NH, float scale) {
    extern __shared__ float4 att64_smem[];
    float *Qs = reinterpret_cast<float *>(att64_smem), *Ks = Qs + ATT64_TILE, *Vs = Ks + ATT64_TILE,
          *Ps = Vs + ATT64_TILE;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int qt = gridDim.x - 1 - blockIdx.x, q0 = qt * ATT64_ROWS;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const size_t C3 = 3 * (size_t)C;
    const float *base = qkv + (size_t)b * T * C3 + h * ATT64_HS;
    att64_load(Qs, base, C3, q0, T);
    float o[4][4], m[4], l[4];
    att64_zero(o);
    for (int a = 0; a < 4; a++) {
        m[a] = -INFINITY;
        l[a] = 0.0f;
    }
    for (int kt = 0; kt <= qt; kt++) {
        const int k0 = kt * ATT64_ROWS;
        att64_next_kv(Ks, Vs, base, C, k0, T);
        float s[4][4];
        att64_zero(s);
        att64_abt(s, Qs, Ks);
        for (int a = 0; a < 4; a++) {
            const int i = q0 + ty + 16 * a;
            float mx = -INFINITY;
            for (int c = 0; c < 4; c++) {
                s[a][c] = k0 + tx + 16 * c <= i ? s[a][c] * scale : -INFINITY;
                mx = fmaxf(mx, s[a][c]);
            }
            /* finite: key k0 <= q0 <= i is in every tile this row sees */
            const float m_new = fmaxf(m[a], att64_row_max(mx));
            const float alpha = expf(m[a] - m_new); /* 0 on the first tile */
            float sum = 0.0f;
            for (int c = 0; c < 4; c++) {
                s[a][c] = expf(s[a][c] - m_new);
                sum += s[a][c];
            }
            l[a] = l[a] * alpha + att64_row_sum(sum);
            for (int e = 0; e < 4; e++) o[a][e] *= alpha;
            m[a] = m_new;
        }
        att64_store_scores(Ps, s);
        __syncthreads();
        att64_pv(o, Ps, Vs);
    }
    for (int a = 0; a < 4; a++) {
        const int i = q0 + ty + 16 * a;
        if (i >= T) continue;
        const float4 r = make_float4(o[a][0] / l[a], o[a][1] / l[a], o[a][2] / l[a], o[a][3] / l[a]);
        *reinterpret_cast<float4 *>(out + ((size_t)b * T + i) * C + h * ATT64_HS + 4 * tx) = r;
        if (tx == 0) lse[(size_t)bh * T + i] = m[a] + logf(l[a]);
    }
}

/* dQ: a block per 64 queries, over the key tiles they see */
static __global__ void __launch_bounds__(ATT64_THREADS) att64_backward_dq_kernel(float *dqkv, const float *dout,
                                                                          const float *qkv, const float *lse,
                                                                          const float *D, int T, int C, int NH,
                                                                          float scale) {
    extern __shared__ float4 att64_smem[];
    float *Qs = reinterpret_cast<float *>(att64_smem), *dOs = Qs + ATT64_TILE, *Ks = dOs + ATT64_TILE,
          *Vs = Ks + ATT64_TILE, *dSs = Vs + ATT64_TILE;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int qt = gridDim.x - 1 - blockIdx.x, q0 = qt * ATT64_ROWS;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const size_t C3 = 3 * (size_t)C;
    const float *base = qkv + (size_t)b * T * C3 + h * ATT64_HS;
    att64_load(Qs, base, C3, q0, T);
    att64_load(dOs, dout + (size_t)b * T * C + h * ATT64_HS, C, q0, T);
    float lse_r[4], D_r[4], dq[4][4];
    att64_zero(dq);
    for (int a = 0; a < 4; a++) {
        const int i = q0 + ty + 16 * a;
        lse_r[a] = i < T ? lse[(size_t)bh * T + i] : 0.0f;
        D_r[a] = i < T ? D[(size_t)bh * T + i] : 0.0f;
    }
    for (int kt = 0; kt <= qt; kt++) {
        const int k0 = kt * ATT64_ROWS;
        att64_next_kv(Ks, Vs, base, C, k0, T);
        float s[4][4], dp[4][4];
        att64_zero(s);
        att64_zero(dp);
        att64_abt(s, Qs, Ks);
        att64_abt(dp, dOs, Vs);
        for (int a = 0; a < 4; a++) {
            const int i = q0 + ty + 16 * a;
            for (int c = 0; c < 4; c++) {
                const float p = k0 + tx + 16 * c <= i ? expf(s[a][c] * scale - lse_r[a]) : 0.0f;
                s[a][c] = p * (dp[a][c] - D_r[a]); /* ds */
            }
        }
        att64_store_scores(dSs, s);
        __syncthreads();
        att64_pv(dq, dSs, Ks);
    }
    for (int a = 0; a < 4; a++) {
        const int i = q0 + ty + 16 * a;
        if (i >= T) continue;
        const float4 r = make_float4(dq[a][0] * scale, dq[a][1] * scale, dq[a][2] * scale, dq[a][3] * scale);
        *reinterpret_cast<float4 *>(dqkv + ((size_t)b * T + i) * C3 + h * ATT64_HS + 4 * tx) = r;
    }
}

/* dK, dV: a block per 64 keys, over the query tiles that see them (the
 * first key tiles, the heaviest, are the first blocks) */
static __global__ void __launch_bounds__(ATT64_THREADS) att64_backward_dkv_kernel(float *dqkv, const float *dout,
                                                                           const float *qkv, const float *lse,
                                                                           const float *D, int T, int C, int NH,
                                                                           float scale) {
    extern __shared__ float4 att64_smem[];
    float *Ks = reinterpret_cast<float *>(att64_smem), *Vs = Ks + ATT64_TILE, *Qs = Vs + ATT64_TILE,
          *dOs = Qs + ATT64_TILE, *Ps = dOs + ATT64_TILE, *dSs = Ps + ATT64_TILE, *lses = dSs + ATT64_TILE,
          *Ds = lses + ATT64_ROWS;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int kt = blockIdx.x, k0 = kt * ATT64_ROWS, ntiles = gridDim.x;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const size_t C3 = 3 * (size_t)C;
    const float *base = qkv + (size_t)b * T * C3 + h * ATT64_HS;
    const float *dbase = dout + (size_t)b * T * C + h * ATT64_HS;
    att64_load(Ks, base + C, C3, k0, T);
    att64_load(Vs, base + 2 * C, C3, k0, T);
    float dk[4][4], dv[4][4];
    att64_zero(dk);
    att64_zero(dv);
    for (int qt = kt; qt < ntiles; qt++) {
        const int q0 = qt * ATT64_ROWS;
        __syncthreads();
        att64_load(Qs, base, C3, q0, T);
        att64_load(dOs, dbase, C, q0, T);
        if (threadIdx.x < ATT64_ROWS) {
            const int i = q0 + threadIdx.x;
            lses[threadIdx.x] = i < T ? lse[(size_t)bh * T + i] : 0.0f;
            Ds[threadIdx.x] = i < T ? D[(size_t)bh * T + i] : 0.0f;
        }
        __syncthreads();
        float s[4][4], dp[4][4]; /* transposed: row = key ty + 16a, column = query tx + 16c */
        att64_zero(s);
        att64_zero(dp);
        att64_abt(s, Ks, Qs);
        att64_abt(dp, Vs, dOs);
        for (int a = 0; a < 4; a++) {
            const int j = k0 + ty + 16 * a;
            for (int c = 0; c < 4; c++) {
                const int il = tx + 16 * c, i = q0 + il;
                const float p = i >= j && i < T ? expf(s[a][c] * scale - lses[il]) : 0.0f;
                s[a][c] = p;
                dp[a][c] = p * (dp[a][c] - Ds[il]); /* ds */
            }
        }
        att64_store_scores(Ps, s);
        att64_store_scores(dSs, dp);
        __syncthreads();
        att64_pv(dv, Ps, dOs);
        att64_pv(dk, dSs, Qs);
    }
    for (int a = 0; a < 4; a++) {
        const int j = k0 + ty + 16 * a;
        if (j >= T) continue;
        float *row = dqkv + ((size_t)b * T + j) * C3 + h * ATT64_HS + 4 * tx;
        *reinterpret_cast<float4 *>(row + C) =
            make_float4(dk[a][0] * scale, dk[a][1] * scale, dk[a][2] * scale, dk[a][3] * scale);
        *reinterpret_cast<float4 *>(row + 2 * C) = make_float4(dv[a][0], dv[a][1], dv[a][2], dv[a][3]);
    }
}

#endif
