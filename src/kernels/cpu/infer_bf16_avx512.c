/* bf16 matrix-vector product (infer_bf16.h) on AVX-512: vdpbf16ps where the
 * CPU has AVX512_BF16, else the same pair arithmetic by FMAs (AVX-512F: each
 * pair word split into its high (odd k) and low (even k) bf16, fp32 values
 * with 16 zero bits; the high product added first, as vdpbf16ps and the
 * portable path do, so the bits are the same).  Tiles of 4 outputs x up
 * to 4 input rows: per 32 channels, 4 weight loads and one load per row feed
 * 16 vdpbf16ps into 16 independent accumulators (one per (output, row));
 * the 4 weight rows (a few KiB) stay in L1 while every group of 4 input rows
 * passes over them.  The 16 accumulators are then summed by halves in one
 * transposed tree (4 levels of shuffles and adds for all 16, instead of a
 * scalar 15-add tree each): every lane sees exactly the adds of the scalar
 * tree (j + 8, + 4, + 2, + 1), so the bits are those of the portable path.
 * Fewer than 4 rows, and outputs left over, take the one-output loop. */
#include <immintrin.h>

#include "kernels/cpu/bf16_split_avx512.h"
#include "kernels/cpu/infer_bf16.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* The one-output loop's software prefetch, in bf16 elements ahead of the
 * chunk it reads (4 KiB: into the next rows, which are contiguous).  Only
 * the emulated path has it, measured on Cascade Lake (batch-1 decode, one
 * thread by CPU time: 25-31 -> 37 tok/s; 2 threads 1.14x at the median;
 * 1 KiB ahead gained less); the vdpbf16ps path is left as tuned on Zen 4. */
#define PF_AHEAD 2048
/* The tiles' software prefetch of later tiles' weight rows, during the first
 * pass over the input rows: vdpbf16ps into L2, two tiles (8 outputs) ahead
 * (Zen 4, batch-8 decode at 2 threads: 1.40x; without it the weight loads
 * held half the kernel's samples, the hardware prefetchers not keeping 4
 * row streams ahead; into L1 or one tile ahead gained 0-10%); the emulated
 * path into L1, one tile ahead, as measured on Cascade Lake (below). */
#define PF_TILES_DP 2
#define PF_TILES_EMU 1

/* acc (16 lanes) += the pair dot products of x and w (32 bf16 each): one
 * vdpbf16ps (native), or two FMAs on the split halves (the compiler keeps a
 * split operand that several calls share) */
ALWAYS_INLINE __m512 dot_pairs(__m512 acc, __m512i x, __m512i w, const int native) {
    if (native) return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
    acc = _mm512_fmadd_ps(gpt2c_bf16_hi_ps(x), gpt2c_bf16_hi_ps(w), acc);
    return _mm512_fmadd_ps(gpt2c_bf16_lo_ps(x), gpt2c_bf16_lo_ps(w), acc);
}

static inline float lanes_sum(__m512 v, const float *bias, int o) {
    float a[16];
    _mm512_storeu_ps(a, v);
    for (int h = 8; h >= 1; h /= 2)
        for (int j = 0; j < h; j++) a[j] += a[j + h];
    return bias ? a[0] + bias[o] : a[0];
}

/* lanes j of u and v summed with lanes j + 8: [u 0..3, u 4..7, v 0..3, v 4..7] */
ALWAYS_INLINE __m512 fold8(__m512 u, __m512 v) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(u, v, 0x44), _mm512_shuffle_f32x4(u, v, 0xEE));
}
/* each 8-lane partial (two quarters) summed with lanes j + 4: quarters [w 0, w 1, x 0, x 1] */
ALWAYS_INLINE __m512 fold4(__m512 w, __m512 x) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(w, x, 0x88), _mm512_shuffle_f32x4(w, x, 0xDD));
}
/* in each quarter, lanes [0,1] + [2,3] of x, then of y: [x0+x2, x1+x3, y0+y2, y1+y3] */
ALWAYS_INLINE __m512 fold2(__m512 x, __m512 y) {
    return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x44), _mm512_shuffle_ps(x, y, 0xEE));
}
/* in each quarter, [s0+s1, s2+s3, t0+t1, t2+t3] */
ALWAYS_INLINE __m512 fold1(__m512 s, __m512 t) {
    return _mm512_add_ps(_mm512_shuffle_ps(s, t, 0x88), _mm512_shuffle_ps(s, t, 0xDD));
}

/* 4 outputs (weight rows wr, IC apart) x RN rows (xb rows ld apart): out rows OC apart */
ALWAYS_INLINE void tile4(float *out, int OC, const uint16_t *x0, int ld, const uint16_t *wr, int IC, const float *bias,
                         int full, __mmask32 tail, const uint16_t *pf, const int RN, const int native) {
    __m512 acc[4][4]; /* [output][row] */
    for (int q = 0; q < 4; q++)
        for (int r = 0; r < 4; r++) acc[q][r] = _mm512_setzero_ps();
    for (int c = 0; c <= full; c++) {
        if (c == full && !tail) break;
        __m512i wv[4];
        if (pf) /* a later tile's 4 rows (IC / 8 lines, contiguous): 4 lines per 32 channels */
            for (int q = 0; q < 4; q++) {
                if (native)
                    _mm_prefetch((const char *)(pf + (size_t)(4 * c + q) * 32), _MM_HINT_T1);
                else
                    _mm_prefetch((const char *)(pf + (size_t)(4 * c + q) * 32), _MM_HINT_T0);
            }
        for (int q = 0; q < 4; q++)
            wv[q] = c < full ? _mm512_loadu_si512(wr + (size_t)q * IC + 32 * c)
                             : _mm512_maskz_loadu_epi16(tail, wr + (size_t)q * IC + 32 * c);
#pragma GCC unroll 4
        for (int r = 0; r < RN; r++) {
            const __m512i xv = _mm512_loadu_si512(x0 + (size_t)r * ld + 32 * c);
            for (int q = 0; q < 4; q++) acc[q][r] = dot_pairs(acc[q][r], xv, wv[q], native);
        }
    }
    /* accumulator k = 4 q + r; after the 4 folds lane 4 r + q holds accumulator 4 q + r's sum:
     * quarter r = row r's 4 outputs, in order */
    const __m512 w0 = fold8(acc[0][0], acc[0][1]), w1 = fold8(acc[0][2], acc[0][3]);
    const __m512 w2 = fold8(acc[1][0], acc[1][1]), w3 = fold8(acc[1][2], acc[1][3]);
    const __m512 w4 = fold8(acc[2][0], acc[2][1]), w5 = fold8(acc[2][2], acc[2][3]);
    const __m512 w6 = fold8(acc[3][0], acc[3][1]), w7 = fold8(acc[3][2], acc[3][3]);
    const __m512 x0v = fold4(w0, w1), x1v = fold4(w2, w3), x2v = fold4(w4, w5), x3v = fold4(w6, w7);
    __m512 sum = fold1(fold2(x0v, x1v), fold2(x2v, x3v));
    if (bias) sum = _mm512_add_ps(sum, _mm512_broadcast_f32x4(_mm_loadu_ps(bias)));
    _mm_storeu_ps(out, _mm512_castps512_ps128(sum));
    if (RN > 1) _mm_storeu_ps(out + OC, _mm512_extractf32x4_ps(sum, 1));
    if (RN > 2) _mm_storeu_ps(out + 2 * (size_t)OC, _mm512_extractf32x4_ps(sum, 2));
    if (RN > 3) _mm_storeu_ps(out + 3 * (size_t)OC, _mm512_extractf32x4_ps(sum, 3));
}

ALWAYS_INLINE void gemv(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N, int IC, int OC,
                       int o0, int o1, const int native) {
    const int full = IC / 32, rest = IC % 32;
    const __mmask32 tail = rest ? (__mmask32)((1u << rest) - 1u) : 0;
    int o = o0;
    /* fewer than 4 rows: the one-output loop below streams each weight row
     * front to back, which decode at batch 1 needs (4 interleaved rows ran
     * batch-1 decode at ~0.65x); the tiles pay from 4 rows on */
    for (; N >= 4 && o + 4 <= o1; o += 4) {
        const uint16_t *wr = w + (size_t)o * IC;
        const float *b = bias ? bias + o : NULL;
        for (int n0 = 0; n0 < N; n0 += 4) {
            float *op = out + (size_t)n0 * OC + o;
            const uint16_t *x0 = xb + (size_t)n0 * ld;
            /* the first pass over these rows prefetches a later tile's (PF_TILES_*).  Emulated
             * path, Cascade Lake: without it the tiles streamed their weights at 8-12 GB/s, the
             * one-output loop at 17-20; batch-4/8 decode 1.39x / 1.29x with it; two tiles ahead
             * (into L1) was 5% slower */
            const int ahead = 4 * (native ? PF_TILES_DP : PF_TILES_EMU);
            const uint16_t *pf = n0 == 0 && o + 4 + ahead <= o1 ? wr + (size_t)ahead * IC : NULL;
            switch (N - n0 < 4 ? N - n0 : 4) {
            case 4: tile4(op, OC, x0, ld, wr, IC, b, full, tail, pf, 4, native); break;
            case 3: tile4(op, OC, x0, ld, wr, IC, b, full, tail, pf, 3, native); break;
            case 2: tile4(op, OC, x0, ld, wr, IC, b, full, tail, pf, 2, native); break;
            default: tile4(op, OC, x0, ld, wr, IC, b, full, tail, pf, 1, native); break;
            }
        }
    }
    for (; o < o1; o++) { /* the last outputs, one at a time */
        const uint16_t *wr = w + (size_t)o * IC;
        for (int n0 = 0; n0 < N; n0 += 4) {
            const int nr = N - n0 < 4 ? N - n0 : 4;
            const uint16_t *x0 = xb + (size_t)n0 * ld;
            __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
            for (int c = 0; c <= full; c++) {
                if (c == full && !rest) break;
                const __m512i wv = c < full ? _mm512_loadu_si512(wr + 32 * c) : _mm512_maskz_loadu_epi16(tail, wr + 32 * c);
                if (!native) _mm_prefetch((const char *)(wr + 32 * c + PF_AHEAD), _MM_HINT_T0);
                for (int r = 0; r < nr; r++) {
                    const __m512i xv = _mm512_loadu_si512(x0 + (size_t)r * ld + 32 * c);
                    acc[r] = dot_pairs(acc[r], xv, wv, native);
                }
            }
            for (int r = 0; r < nr; r++) out[(size_t)(n0 + r) * OC + o] = lanes_sum(acc[r], bias, o);
        }
    }
}

void gpt2c_cpu_bf16_gemv_avx512bf16(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N,
                                    int IC, int OC, int o0, int o1) {
    gemv(out, xb, ld, w, bias, N, IC, OC, o0, o1, 1);
}

void gpt2c_cpu_bf16_gemv_avx512f(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N,
                                 int IC, int OC, int o0, int o1) {
    gemv(out, xb, ld, w, bias, N, IC, OC, o0, o1, 0);
}
