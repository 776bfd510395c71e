/* Flash attention (forward) over the KV cache for inference, AVX-512: the
 * queries of one head in blocks of up to 4, the keys in tiles of 256; per tile
 * the block's scores (at most 4 x 256, computed in registers 64 keys at a
 * time, 128 for 2 queries, 256 for one), their running maximum m and sum l
 * per query (online softmax), and the output accumulator O (4 x head size)
 * rescaled by e^(m_old - m_new) before the tile's P V is added.  Scratch is
 * those few KiB whatever the context: no score row, no T x T matrix, no
 * context limit.  (Tiles of 64 measured 10-20% slower than the two-pass
 * kernel: the per-tile reductions, exponential and rescaling of O cost that
 * much per 64 keys.)
 *
 * Every query's arithmetic is the same whichever block it is in: a tile that
 * lies wholly beyond a query's keys (the last tile of a block, for its earlier
 * queries) leaves its m, l and O exactly as they were (factor 1, p = 0), so
 * prefill in any chunking and decode give the same values bit for bit.
 *
 * A bf16 cache (gpt2c_kv_cache) is the same loop with each 16 keys or values
 * widened as they are loaded (zero-extend to 32 bits, shift left by 16: the
 * exact fp32 value), so it reads half the bytes for the same arithmetic. */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/avx512_exp.h"
#include "kernels/cpu/cpu_infer.h"
#include "kernels/kv_task.h"

#define FLASH_INLINE static inline __attribute__((always_inline))
enum { KT = 256, QB = 4, MAX_HS = 256 };
/* Decode (one query) streams the cache once from memory, and the hardware
 * prefetcher does not follow the score pass's walk down the transposed keys'
 * rows: the keys KPF_ROWS channel rows ahead and the values VPF_KEYS keys
 * ahead are prefetched in software. */
enum { KPF_ROWS = 4, VPF_KEYS = 16 };

static inline __mmask16 lanes(int k) {
    return k >= 16 ? (__mmask16)0xFFFF : k <= 0 ? (__mmask16)0 : (__mmask16)((1u << k) - 1);
}

/* 16 cache values from element i of p (fp32, or bf16 widened exactly), lanes beyond mask m zero */
FLASH_INLINE __m512 load16(const void *p, size_t i, __mmask16 m, const int bf16) {
    if (bf16)
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i)), 16));
    return _mm512_maskz_loadu_ps(m, (const float *)p + i);
}

/* queries [n0 - 1, n0 + Q - 1) of one head: query qi sees keys [0, n0 + qi); K, V fp32 or (bf16) bf16 */
FLASH_INLINE void flash_block(float *o, size_t ldo, const float *q, size_t ldq, const void *K, const void *V, int hs,
                              int ctx, int n0, const int Q, const int bf16) {
    float acc[QB][MAX_HS] __attribute__((aligned(64)));
    float p[QB][KT] __attribute__((aligned(64)));
    float m[QB], l[QB], f[QB];
    const int n = n0 + Q - 1;
    const int NV = Q == 1 ? 16 : Q == 2 ? 8 : 4; /* score vectors per query and pass: at most 16 accumulators */
    const size_t esz = bf16 ? 2 : 4;
    const __m512 scale = _mm512_set1_ps(1.0f / sqrtf((float)hs));
    for (int qi = 0; qi < Q; qi++) {
        m[qi] = -INFINITY, l[qi] = 0.0f;
        for (int c = 0; c < hs; c += 16) _mm512_store_ps(&acc[qi][c], _mm512_setzero_ps());
    }
    for (int j0 = 0; j0 < n; j0 += KT) {
        const int kt = n - j0 < KT ? n - j0 : KT; /* keys of the block's last query in this tile */
        /* S = q K^T for this tile, NV x 16 keys at a time (K is stored transposed: row i holds channel i of
         * every key); one query (decode) takes 256 keys per pass, so each channel row is read in runs of 8
         * (bf16) or 16 (fp32) cache lines rather than 2 or 4 */
        for (int jb = 0; jb < kt; jb += 16 * NV) {
            __m512 s[QB][16];
            __mmask16 mt[16];
            for (int c = 0; c < NV; c++) mt[c] = lanes(kt - jb - 16 * c);
            const int nv = kt - jb >= 16 * NV ? NV : (kt - jb + 15) / 16; /* vectors holding keys */
#pragma GCC unroll 4
            for (int qi = 0; qi < Q; qi++)
#pragma GCC unroll 16
                for (int c = 0; c < NV; c++) s[qi][c] = _mm512_setzero_ps();
            for (int i = 0; i < hs; i++) {
                const size_t kr = (size_t)i * ctx + j0 + jb;
                if (Q == 1) /* decode: the same keys of channel row i + KPF_ROWS into L1 */
                    for (int c = 0; c < nv * 16; c += 64 / esz)
                        _mm_prefetch((const char *)K + (kr + (size_t)KPF_ROWS * ctx + c) * esz, _MM_HINT_T0);
#pragma GCC unroll 16
                for (int c = 0; c < NV; c++) {
                    if (c >= nv) break;
                    const __m512 kv = load16(K, kr + 16 * c, mt[c], bf16);
#pragma GCC unroll 4
                    for (int qi = 0; qi < Q; qi++) s[qi][c] = _mm512_fmadd_ps(_mm512_set1_ps(q[qi * ldq + i]), kv, s[qi][c]);
                }
            }
#pragma GCC unroll 4
            for (int qi = 0; qi < Q; qi++)
#pragma GCC unroll 16
                for (int c = 0; c < NV; c++) _mm512_store_ps(&p[qi][jb + 16 * c], _mm512_mul_ps(s[qi][c], scale));
        }
        /* online softmax: new maximum, the factor for what came before, p = e^(s - m) (0 beyond the query's keys) */
#pragma GCC unroll 4
        for (int qi = 0; qi < Q; qi++) {
            const int valid = n0 + qi - j0; /* this query's keys in the tile */
            if (valid <= 0) { /* wholly beyond this query: nothing changes */
                f[qi] = 1.0f;
                for (int j = 0; j < kt; j += 16) _mm512_store_ps(&p[qi][j], _mm512_setzero_ps());
                continue;
            }
            __m512 mx = _mm512_set1_ps(-INFINITY);
            for (int j = 0; j < kt; j += 16) mx = _mm512_mask_max_ps(mx, lanes(valid - j), mx, _mm512_load_ps(&p[qi][j]));
            const float mnew = fmaxf(m[qi], _mm512_reduce_max_ps(mx));
            f[qi] = expf(m[qi] - mnew); /* 0 on the first tile (m = -inf) */
            const __m512 vm = _mm512_set1_ps(mnew);
            __m512 sum = _mm512_setzero_ps();
            for (int j = 0; j < kt; j += 16) {
                const __m512 e = _mm512_maskz_mov_ps(lanes(valid - j), gpt2c_exp512(_mm512_sub_ps(_mm512_load_ps(&p[qi][j]), vm)));
                _mm512_store_ps(&p[qi][j], e);
                sum = _mm512_add_ps(sum, e);
            }
            l[qi] = l[qi] * f[qi] + _mm512_reduce_add_ps(sum);
            m[qi] = mnew;
        }
        /* O = O * f + P V over the tile's keys, 64 channels per pass */
        for (int c0 = 0; c0 < hs; c0 += 64) {
            __mmask16 mc[4];
            for (int c = 0; c < 4; c++) mc[c] = lanes(hs - c0 - 16 * c);
            __m512 a[QB][4];
#pragma GCC unroll 4
            for (int qi = 0; qi < Q; qi++) {
                const __m512 fq = _mm512_set1_ps(f[qi]);
                for (int c = 0; c < 4; c++) a[qi][c] = _mm512_mul_ps(_mm512_maskz_load_ps(mc[c], &acc[qi][c0 + 16 * c]), fq);
            }
            for (int j = 0; j < kt; j++) {
                const size_t vr = (size_t)(j0 + j) * hs + c0;
                if (Q == 1) /* decode: value row j + VPF_KEYS into L1 (the part this pass reads) */
                    for (int c = 0; c < 64 && c < hs - c0; c += 64 / esz)
                        _mm_prefetch((const char *)V + (vr + (size_t)VPF_KEYS * hs + c) * esz, _MM_HINT_T0);
                const __m512 v0 = load16(V, vr, mc[0], bf16), v1 = load16(V, vr + 16, mc[1], bf16);
                const __m512 v2 = load16(V, vr + 32, mc[2], bf16), v3 = load16(V, vr + 48, mc[3], bf16);
#pragma GCC unroll 4
                for (int qi = 0; qi < Q; qi++) {
                    const __m512 pb = _mm512_set1_ps(p[qi][j]);
                    a[qi][0] = _mm512_fmadd_ps(pb, v0, a[qi][0]);
                    a[qi][1] = _mm512_fmadd_ps(pb, v1, a[qi][1]);
                    a[qi][2] = _mm512_fmadd_ps(pb, v2, a[qi][2]);
                    a[qi][3] = _mm512_fmadd_ps(pb, v3, a[qi][3]);
                }
            }
#pragma GCC unroll 4
            for (int qi = 0; qi < Q; qi++)
                for (int c = 0; c < 4; c++) _mm512_mask_store_ps(&acc[qi][c0 + 16 * c], mc[c], a[qi][c]);
        }
    }
#pragma GCC unroll 4
    for (int qi = 0; qi < Q; qi++) {
        const __m512 inv = _mm512_set1_ps(1.0f / l[qi]);
        for (int c = 0; c < hs; c += 16)
            _mm512_mask_storeu_ps(o + qi * ldo + c, lanes(hs - c), _mm512_mul_ps(_mm512_load_ps(&acc[qi][c]), inv));
    }
}

/* tasks (b*NH + h)*Tq + t in [t0, t1): consecutive tasks of one (b, h) go in blocks of 4 queries;
 * kc, vc: fp32 or (bf16) bf16 caches */
static inline __attribute__((always_inline)) void flash_tasks(float *out, const float *q, size_t qstride, const void *kc,
                                                              const void *vc, const int *pos, int Tq, int ctx, int C,
                                                              int NH, long t0, long t1, const int bf16) {
    const int hs = C / NH;
    const size_t esz = bf16 ? 2 : 4;
    for (long task = t0; task < t1;) {
        const gpt2c_kv_task tk = gpt2c_kv_task_at(task, Tq, NH, hs, ctx, C, qstride, pos);
        long Q = Tq - tk.t; /* queries left in this (b, h) */
        if (Q > t1 - task) Q = t1 - task;
        if (Q > QB) Q = QB;
        const void *K = (const char *)kc + tk.kv * esz, *V = (const char *)vc + tk.kv * esz;
        float *o = out + tk.o;
        const float *qq = q + tk.q;
        const int n0 = tk.n;
        switch (Q) {
        case 4: flash_block(o, (size_t)C, qq, qstride, K, V, hs, ctx, n0, 4, bf16); break;
        case 3: flash_block(o, (size_t)C, qq, qstride, K, V, hs, ctx, n0, 3, bf16); break;
        case 2: flash_block(o, (size_t)C, qq, qstride, K, V, hs, ctx, n0, 2, bf16); break;
        default: flash_block(o, (size_t)C, qq, qstride, K, V, hs, ctx, n0, 1, bf16); break;
        }
        task += Q;
    }
}

int gpt2c_cpu_flash_attention_avx512(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                                     const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1) {
    (void)B;
    if (C / NH > MAX_HS) return 0;
    flash_tasks(out, q, qstride, kc, vc, pos, Tq, ctx, C, NH, t0, t1, 0);
    return 1;
}

int gpt2c_cpu_flash_attention_bf16_avx512(float *out, const float *q, size_t qstride, const uint16_t *kc,
                                          const uint16_t *vc, const int *pos, int B, int Tq, int ctx, int C, int NH,
                                          long t0, long t1) {
    (void)B;
    if (C / NH > MAX_HS) return 0;
    flash_tasks(out, q, qstride, kc, vc, pos, Tq, ctx, C, NH, t0, t1, 1);
    return 1;
}
