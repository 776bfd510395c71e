/* q8 / q4 decode with int8 activations (AVX-512 VNNI): llama.cpp's Q8_0 x
 * Q8_0 / Q4_0 x Q8_0 scheme.  Each activation row is quantized per block of
 * 32 (da = absmax / 127, qa = round-to-nearest(x / da)) and each block's dot
 * product is an integer one.  vpdpbusd multiplies unsigned by signed bytes,
 * so the weight codes go in as unsigned (q8: w + 128 by flipping the sign
 * bit; q4: its code 0..15, which is value + 8) and the surplus is taken off
 * per 4-byte lane of a product: lane L of vpdpbusd(u, qa) exceeds the signed
 * dot product by bias * (sum of the lane's 4 qa) (bias 128 or 8), which does
 * not depend on the weights, so each lane's "bias * that sum * da" (cl below)
 * is computed once with the activations and the kernel accumulates
 * dw * (dp * da - cl) with one fmsub and one FMA: no correction pass per
 * output, one reduction per output.
 *
 * q4's codes are unpacked with two instructions per 64 weights: the 32 bytes
 * of two groups are loaded into both halves of a register, the upper half is
 * shifted right by 4 (16-bit lanes) and both are masked to 4 bits, so the
 * register holds elements [0..15, 32..47, 16..31, 48..63] of the 64; the
 * activations are quantized into that same order instead of reordering the
 * weights.  Per 64 weights and activation row: vpdpbusd, one conversion, one
 * fmsub and one FMA. */
#include <immintrin.h>
#include <string.h>

#include "gpt2c/quant.h"
#include "quant/qmatmul_impl.h"

typedef struct {
    int8_t qa[QMM_VNNI_MAX_ROWS][QMM_MAX_IC] __attribute__((aligned(64))); /* in the weights' code order */
    float da[QMM_VNNI_MAX_ROWS][QMM_MAX_IC / 4] __attribute__((aligned(64))); /* each 4-byte lane's block scale */
    float cl[QMM_VNNI_MAX_ROWS][QMM_MAX_IC / 4] __attribute__((aligned(64))); /* each lane's bias * sum(its 4 qa) * da */
} act_q8;
static _Thread_local act_q8 aq;

/* The activations aq was last quantized from (a copy), in which layout: the
 * stages call the kernel once per range of 64-256 outputs with the same
 * activations, so each thread quantizes them once per stage, not once per
 * range (at 768-wide rows that was ~20% of a range's instructions).  Equal
 * inputs give equal codes, so reusing them on an exact match changes nothing. */
static _Thread_local struct {
    float x[QMM_VNNI_MAX_ROWS * QMM_MAX_IC] __attribute__((aligned(64)));
    int n, layout; /* rows, 0: none yet, 1: q8, 2: q4 by 64, 3: q4 by 128, 4: nf4 */
    int64_t ic;
} aq_src;

/* 1 if aq holds the quantization of inp (N, IC) in `layout`; else records inp as its source (the caller quantizes) */
static int aq_reuse(const float *inp, int N, int64_t IC, int layout) {
    const size_t bytes = sizeof(float) * (size_t)N * (size_t)IC;
    if (aq_src.layout == layout && aq_src.n == N && aq_src.ic == IC && memcmp(aq_src.x, inp, bytes) == 0) return 1;
    memcpy(aq_src.x, inp, bytes);
    aq_src.layout = layout, aq_src.n = N, aq_src.ic = IC;
    return 0;
}

/* 32 activations quantized: returns the int32 codes, writes the block scale */
static inline __m512i quant16(__m512 x, __m512 vid) { return _mm512_cvtps_epi32(_mm512_mul_ps(x, vid)); }

/* the sum of each 4-byte lane's 4 signed bytes, as floats (exact) */
__attribute__((target("avx512vnni"))) static inline __m512 lane_sums(__m512i q) {
    return _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), q));
}

__attribute__((target("avx512vnni"))) static void quantize_rows(const float *inp, int N, int64_t IC, int q4) {
    const float bias = q4 ? 8.0f : 128.0f;
    for (int n = 0; n < N; n++) {
        const float *x = inp + n * IC;
        for (int64_t k = 0; k < IC; k += 64) {
            __m512i q[4];
            float d[2];
            for (int h = 0; h < 2; h++) {
                const __m512 x0 = _mm512_loadu_ps(x + k + 32 * h), x1 = _mm512_loadu_ps(x + k + 32 * h + 16);
                const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
                d[h] = amax / 127.0f;
                const __m512 vid = _mm512_set1_ps(d[h] != 0.0f ? 1.0f / d[h] : 0.0f);
                q[2 * h] = quant16(x0, vid), q[2 * h + 1] = quant16(x1, vid);
            }
            /* q8: natural order; q4: [0..15, 32..47, 16..31, 48..63] */
            const int ord[2][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}};
            for (int j = 0; j < 4; j++)
                _mm_store_si128((__m128i *)&aq.qa[n][k + 16 * j], _mm512_cvtsepi32_epi8(q[ord[q4][j]]));
            const __m512 d0 = _mm512_set1_ps(d[0]), d1 = _mm512_set1_ps(d[1]);
            const __m512 da = _mm512_mask_blend_ps(q4 ? 0xF0F0 : 0xFF00, d0, d1);
            _mm512_store_ps(&aq.da[n][k / 4], da);
            _mm512_store_ps(&aq.cl[n][k / 4], _mm512_mul_ps(_mm512_mul_ps(lane_sums(_mm512_load_si512(&aq.qa[n][k])),
                                                                          _mm512_set1_ps(bias)), da));
        }
    }
}

/* lanes of block 0 / block 1 of a 64-weight chunk: q8 [0 x8, 1 x8], q4 [0 x4, 1 x4, 0 x4, 1 x4].
 * N (activation rows) and q4 are constants after inlining, so the accumulators stay in registers. */
__attribute__((target("avx512vnni"), always_inline)) static inline void
rows_vnni(float *out, const gpt2c_tensor *w, const float *bias, const int r0, const int N, const int q4, int act, int o0,
          int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    const int b = gpt2c_quant_block(w->fmt, w->block);
    const int64_t nbr = IC / b, nb32 = IC / 32;
    const __mmask16 m1 = q4 ? 0xF0F0 : 0xFF00;
    const __m512i lanes = q4 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)
                             : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const int64_t s4 = 0x0004000400040004; /* a shift of 4 in each 16-bit lane, upper half only */
    const __m512i shift = _mm512_setr_epi64(0, 0, 0, 0, s4, s4, s4, s4), low4 = _mm512_set1_epi8(15);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    /* the block of each 32-weight chunk (b / 32 chunks a block), without a division in the loop */
    int32_t blk32[QMM_MAX_IC / 32];
    for (int64_t j = 0; j < nb32; j++) blk32[j] = (int32_t)(j * 32 / b);
    for (int o = o0; o < o1; o++) {
        __m512 acc[QMM_VNNI_MAX_ROWS];
        for (int n = 0; n < N; n++) acc[n] = _mm512_setzero_ps();
        const float *dw = w->scales + o * nbr;
        const uint8_t *codes = (const uint8_t *)w->data + (q4 ? o * IC / 2 : o * IC);
        for (int64_t k = 0; k < IC; k += 64) {
            __m512i u;
            if (q4)
                u = _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(codes + k / 2))), shift), low4);
            else
                u = _mm512_xor_si512(_mm512_loadu_si512(codes + k), flip);
            __m512 dws;
            if (b == 32)
                dws = _mm512_permutexvar_ps(lanes, _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd((const double *)(dw + (k >> 5))))));
            else
                dws = _mm512_mask_blend_ps(m1, _mm512_set1_ps(dw[blk32[k >> 5]]), _mm512_set1_ps(dw[blk32[(k >> 5) + 1]]));
            for (int n = 0; n < N; n++) {
                const __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, _mm512_load_si512(&aq.qa[r0 + n][k]));
                const __m512 p = _mm512_fmsub_ps(_mm512_cvtepi32_ps(dp), _mm512_load_ps(&aq.da[r0 + n][k / 4]),
                                                 _mm512_load_ps(&aq.cl[r0 + n][k / 4]));
                acc[n] = _mm512_fmadd_ps(dws, p, acc[n]);
            }
        }
        for (int n = 0; n < N; n++) out[(r0 + n) * OC + o] = qmm_epilogue(_mm512_reduce_add_ps(acc[n]), bias, o, act);
    }
}

/* how far ahead of the codes being read the next ones are prefetched: 8 KiB
 * (1-8 KiB measured alike on weights out of cache, 0 slower; one thread,
 * bench/qmatmul_micro.c) */
enum { QMM_PF_BYTES = 8192 };

/* For the 128-element kernels below: one group of 32 activations (a, b: its
 * two halves in the order the weights' codes want) quantized to int8 at
 * bytes k + 16g and k + 64 + 16g of row n, nearest, with d = absmax / 127
 * (the max over the same 32 values whatever their order); returns d. */
__attribute__((target("avx512vnni"), always_inline)) static inline float quantize_group32(int n, int64_t k, int g, __m512 a,
                                                                                       __m512 b) {
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
    const float d = amax / 127.0f;
    const __m512 vid = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    _mm_store_si128((__m128i *)&aq.qa[n][k + 16 * g], _mm512_cvtsepi32_epi8(quant16(a, vid)));
    _mm_store_si128((__m128i *)&aq.qa[n][k + 64 + 16 * g], _mm512_cvtsepi32_epi8(quant16(b, vid)));
    return d;
}

/* The scales of those 128 (4 groups of 32): da = d[group] * wscale per 8-element
 * lane, and the unsigned codes' correction cl = (sum of the lane's int8
 * activations) * surplus * da. */
__attribute__((target("avx512vnni"), always_inline)) static inline void store_x128_scales(int n, int64_t k, const float d[4],
                                                                                      float wscale, float surplus) {
    const __m512 da = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                                          _mm512_castps128_ps512(_mm_loadu_ps(d))),
                                    _mm512_set1_ps(wscale));
    _mm512_store_ps(&aq.da[n][k / 8], da);
    const __m512 sums = _mm512_add_ps(lane_sums(_mm512_load_si512(&aq.qa[n][k])), lane_sums(_mm512_load_si512(&aq.qa[n][k + 64])));
    _mm512_store_ps(&aq.cl[n][k / 8], _mm512_mul_ps(_mm512_mul_ps(sums, _mm512_set1_ps(surplus)), da));
}

/* q4 with rows a multiple of 128: 64 bytes of codes (4 groups of 32) per step.
 * Group g's byte j holds element j (low nibble) and j + 16 (high), so the low
 * nibbles of the 64 bytes are elements 0..15 of each group and the high ones
 * elements 16..31: two vpdpbusd against the activations quantized into those
 * two orders ([g0 0..15, g1 0..15, g2 0..15, g3 0..15], then 16..31) add into
 * the same lanes, and 4-lane group g of the result is group g's whole dot
 * product.  Per 128 weights and activation row: one load, one shift, two
 * masks, two vpdpbusd, one conversion, one fmsub and one FMA: about 60% of
 * the instructions of two 64-weight steps. */
__attribute__((target("avx512vnni"))) static void quantize_rows_q4x128(const float *inp, int N, int64_t IC) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + n * IC;
        for (int64_t k = 0; k < IC; k += 128) {
            float d[4];
            for (int g = 0; g < 4; g++)
                d[g] = quantize_group32(n, k, g, _mm512_loadu_ps(x + k + 32 * g), _mm512_loadu_ps(x + k + 32 * g + 16));
            store_x128_scales(n, k, d, 1.0f, 8.0f); /* x 1.0f: exact */
        }
    }
}

__attribute__((target("avx512vnni"), always_inline)) static inline void
rows_vnni_q4x128(float *out, const gpt2c_tensor *w, const float *bias, const int r0, const int N, int act, int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    const int b = gpt2c_quant_block(w->fmt, w->block);
    const int64_t nbr = IC / b, nb32 = IC / 32;
    const __m512i by4 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), low4 = _mm512_set1_epi8(15);
    int32_t blk32[QMM_MAX_IC / 32];
    for (int64_t j = 0; j < nb32; j++) blk32[j] = (int32_t)(j * 32 / b);
    for (int o = o0; o < o1; o++) {
        __m512 acc[QMM_VNNI_MAX_ROWS];
        for (int n = 0; n < N; n++) acc[n] = _mm512_setzero_ps();
        const float *dw = w->scales + o * nbr;
        const uint8_t *codes = (const uint8_t *)w->data + o * IC / 2;
        /* the first pass of 4 activation rows reads the weights from memory: prefetch as rows4_vnni_n1 does
         * (the next row's scales, the codes QMM_PF_BYTES ahead); later passes find them in L1 */
        if (r0 == 0) _mm_prefetch((const char *)(dw + nbr), _MM_HINT_T0);
        for (int64_t k = 0; k < IC; k += 128) {
            if (r0 == 0) _mm_prefetch((const char *)codes + k / 2 + QMM_PF_BYTES, _MM_HINT_T0);
            const __m512i v = _mm512_loadu_si512(codes + k / 2);
            const __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
            __m128 d4;
            if (b == 32)
                d4 = _mm_loadu_ps(dw + (k >> 5));
            else
                d4 = _mm_setr_ps(dw[blk32[k >> 5]], dw[blk32[(k >> 5) + 1]], dw[blk32[(k >> 5) + 2]], dw[blk32[(k >> 5) + 3]]);
            const __m512 dws = _mm512_permutexvar_ps(by4, _mm512_castps128_ps512(d4));
            for (int n = 0; n < N; n++) {
                __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_load_si512(&aq.qa[r0 + n][k]));
                dp = _mm512_dpbusd_epi32(dp, hi, _mm512_load_si512(&aq.qa[r0 + n][k + 64]));
                const __m512 p = _mm512_fmsub_ps(_mm512_cvtepi32_ps(dp), _mm512_load_ps(&aq.da[r0 + n][k / 8]),
                                                 _mm512_load_ps(&aq.cl[r0 + n][k / 8]));
                acc[n] = _mm512_fmadd_ps(dws, p, acc[n]);
            }
        }
        for (int n = 0; n < N; n++) out[(r0 + n) * OC + o] = qmm_epilogue(_mm512_reduce_add_ps(acc[n]), bias, o, act);
    }
}

/* nf4 rows of a multiple of 128 (blocks of 64): the 16 NF4 values as int8,
 * round(127 * value) (gpt2c_nf4_code_i8), so a weight is taken as
 * code_i8 * absmax / 127: within 0.5 / 127 of the block's absmax of its
 * dequantized value (a rounding of the same size as the int8 activations').
 * vpshufb looks the 64 low and the 64 high nibbles of 64 bytes up in that
 * table (+ 128: unsigned, as q8); byte j holds element 2j in its high nibble
 * and 2j + 1 in the low one, so the activations are quantized as [the odd
 * elements of 128 (bytes' low nibbles), then the even ones]; lane L of both
 * products covers elements 8L..8L+7 (group L / 4 of the activations, block
 * L / 8 of the weights). */
__attribute__((target("avx512vnni"))) static void quantize_rows_nf4x128(const float *inp, int N, int64_t IC) {
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int n = 0; n < N; n++) {
        const float *x = inp + n * IC;
        for (int64_t k = 0; k < IC; k += 128) {
            float d[4];
            for (int g = 0; g < 4; g++) { /* the group's 16 odd, then 16 even elements */
                const __m512 x0 = _mm512_loadu_ps(x + k + 32 * g), x1 = _mm512_loadu_ps(x + k + 32 * g + 16);
                d[g] = quantize_group32(n, k, g, _mm512_permutex2var_ps(x0, odd, x1), _mm512_permutex2var_ps(x0, even, x1));
            }
            /* da / 127: the weights' scale is absmax / 127, folded in here once */
            store_x128_scales(n, k, d, 1.0f / 127.0f, 128.0f);
        }
    }
}

__attribute__((target("avx512vnni"), always_inline)) static inline void
rows_vnni_nf4x128(float *out, const gpt2c_tensor *w, const float *bias, const int r0, const int N, int act, int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    const int b = gpt2c_quant_block(w->fmt, w->block);
    const int64_t nbr = IC / b;
    int8_t t[16];
    for (int i = 0; i < 16; i++) t[i] = (int8_t)(gpt2c_nf4_code_i8[i] + 128); /* as unsigned: value + 128 */
    const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t)), low4 = _mm512_set1_epi8(15);
    const __m512i by8 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    int32_t blk64[QMM_MAX_IC / 64];
    for (int64_t j = 0; j < IC / 64; j++) blk64[j] = (int32_t)(j * 64 / b);
    for (int o = o0; o < o1; o++) {
        __m512 acc[QMM_VNNI_MAX_ROWS];
        for (int n = 0; n < N; n++) acc[n] = _mm512_setzero_ps();
        const float *dw = w->scales + o * nbr;
        const uint8_t *codes = (const uint8_t *)w->data + o * IC / 2;
        if (r0 == 0) _mm_prefetch((const char *)(dw + nbr), _MM_HINT_T0); /* as rows_vnni_q4x128 */
        for (int64_t k = 0; k < IC; k += 128) {
            if (r0 == 0) _mm_prefetch((const char *)codes + k / 2 + QMM_PF_BYTES, _MM_HINT_T0);
            const __m512i v = _mm512_loadu_si512(codes + k / 2);
            const __m512i ulo = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, low4));                         /* odd elements */
            const __m512i uhi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4)); /* even ones */
            const __m128 d2 = b == 64 ? _mm_castpd_ps(_mm_load_sd((const double *)(dw + (k >> 6))))
                                      : _mm_setr_ps(dw[blk64[k >> 6]], dw[blk64[(k >> 6) + 1]], 0.0f, 0.0f);
            const __m512 dws = _mm512_permutexvar_ps(by8, _mm512_castps128_ps512(d2));
            for (int n = 0; n < N; n++) {
                __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ulo, _mm512_load_si512(&aq.qa[r0 + n][k]));
                dp = _mm512_dpbusd_epi32(dp, uhi, _mm512_load_si512(&aq.qa[r0 + n][k + 64]));
                const __m512 p = _mm512_fmsub_ps(_mm512_cvtepi32_ps(dp), _mm512_load_ps(&aq.da[r0 + n][k / 8]),
                                                 _mm512_load_ps(&aq.cl[r0 + n][k / 8]));
                acc[n] = _mm512_fmadd_ps(dws, p, acc[n]);
            }
        }
        for (int n = 0; n < N; n++) out[(r0 + n) * OC + o] = qmm_epilogue(_mm512_reduce_add_ps(acc[n]), bias, o, act);
    }
}

/* Decode (one activation row): 4 outputs at a time, each row's codes read in
 * memory order (interleaving the 4 rows' loads, to share the activations'
 * loads, read 1.2-1.6x slower from memory: it breaks the hardware
 * prefetchers' streams), the codes prefetched QMM_PF_BYTES ahead (a hardware
 * prefetcher stops at each 4 KiB page; the stages' 64-row chunks are 24-96
 * KiB), the next 4 rows' scales at the start, and the 4 sums reduced
 * together.  reduce4 adds in the same pairs as _mm512_reduce_add_ps (256-bit
 * halves, 128-bit halves, then [0,1] + [2,3], then 0 + 1), so each output is
 * bit for bit that of rows_vnni*.
 * kind: 0 q8 (64 weights a step), 1 q4 by 128, 2 nf4 by 128. */
__attribute__((target("avx512vnni"), always_inline)) static inline __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
    const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2))); /* [a 256-sum, b 256-sum] */
    const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1))); /* a, b, c, d 128-sums */
    const __m512 y = _mm512_add_ps(x, _mm512_permute_ps(x, _MM_SHUFFLE(1, 0, 3, 2)));
    const __m512 z = _mm512_add_ps(y, _mm512_permute_ps(y, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), z));
}


__attribute__((target("avx512vnni"), always_inline)) static inline void
rows4_vnni_n1(float *out, const gpt2c_tensor *w, const float *bias, const int kind, int act, int o0, int o1) {
    const int64_t IC = w->cols;
    const int b = gpt2c_quant_block(w->fmt, w->block);
    const int64_t nbr = IC / b, rb = kind ? IC / 2 : IC; /* scales and code bytes per row */
    const int step = kind ? 128 : 64;
    const __m512i low4 = _mm512_set1_epi8(15), flip = _mm512_set1_epi8((char)0x80);
    const __m512i lanes8 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i by4 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    int8_t t[16];
    for (int i = 0; i < 16; i++) t[i] = (int8_t)(gpt2c_nf4_code_i8[i] + 128);
    const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t));
    /* the block of each 32 weights (q8, q4) or 64 (nf4), without a division in the loop */
    int32_t blk[QMM_MAX_IC / 32];
    const int unit = kind == 2 ? 64 : 32;
    for (int64_t j = 0; j < IC / unit; j++) blk[j] = (int32_t)(j * unit / b);
    const int native = b == unit; /* one scale per 32 (q8, q4) or 64 (nf4) weights */
    for (int o = o0; o + 4 <= o1; o += 4) {
        __m512 acc[4];
        const uint8_t *c0 = (const uint8_t *)w->data + o * rb;
        const float *d0 = w->scales + o * nbr;
        /* the next 4 rows' scales (4 x nbr floats) */
        for (int64_t s = 0; s < 4 * nbr; s += 16) _mm_prefetch((const char *)(d0 + 4 * nbr + s), _MM_HINT_T0);
        for (int r = 0; r < 4; r++) { /* row after row: the codes are read in memory order */
            const uint8_t *crow = c0 + r * rb;
            const float *dw = d0 + r * nbr;
            __m512 a = _mm512_setzero_ps();
            for (int64_t k = 0; k < IC; k += step) {
                const __m512i qlo = _mm512_load_si512(&aq.qa[0][k]);
                const __m512i qhi = kind ? _mm512_load_si512(&aq.qa[0][k + 64]) : qlo;
                const __m512 da = _mm512_load_ps(&aq.da[0][kind ? k / 8 : k / 4]);
                const __m512 cl = _mm512_load_ps(&aq.cl[0][kind ? k / 8 : k / 4]);
                const uint8_t *codes = crow + (kind ? k / 2 : k);
                _mm_prefetch((const char *)codes + QMM_PF_BYTES, _MM_HINT_T0);
                const __m512i v = _mm512_loadu_si512(codes);
                __m512i dp;
                __m512 dws;
                if (kind == 0) {
                    dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(v, flip), qlo);
                    dws = native ? _mm512_permutexvar_ps(lanes8, _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd((const double *)(dw + (k >> 5))))))
                                 : _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(dw[blk[k >> 5]]), _mm512_set1_ps(dw[blk[(k >> 5) + 1]]));
                } else if (kind == 1) {
                    const __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
                    dp = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, qlo), hi, qhi);
                    const __m128 d4 = native ? _mm_loadu_ps(dw + (k >> 5))
                                             : _mm_setr_ps(dw[blk[k >> 5]], dw[blk[(k >> 5) + 1]], dw[blk[(k >> 5) + 2]], dw[blk[(k >> 5) + 3]]);
                    dws = _mm512_permutexvar_ps(by4, _mm512_castps128_ps512(d4));
                } else {
                    const __m512i ulo = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, low4));
                    const __m512i uhi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
                    dp = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ulo, qlo), uhi, qhi);
                    const __m128 d2 = native ? _mm_castpd_ps(_mm_load_sd((const double *)(dw + (k >> 6))))
                                             : _mm_setr_ps(dw[blk[k >> 6]], dw[blk[(k >> 6) + 1]], 0.0f, 0.0f);
                    dws = _mm512_permutexvar_ps(lanes8, _mm512_castps128_ps512(d2));
                }
                a = _mm512_fmadd_ps(dws, _mm512_fmsub_ps(_mm512_cvtepi32_ps(dp), da, cl), a);
            }
            acc[r] = a;
        }
        float s[4];
        _mm_storeu_ps(s, reduce4(acc[0], acc[1], acc[2], acc[3]));
        for (int r = 0; r < 4; r++) out[o + r] = qmm_epilogue(s[r], bias, o + r, act);
    }
}

int gpt2c_qmatmul_vnni_takes(const gpt2c_tensor *w, int N) {
    if (w->cols > QMM_MAX_IC || w->cols % 64) return 0;
    /* q4 / nf4 by 128 up to 8 rows (q4 at batch 8 measured 1.35x the fp32 tile); q8 up to 3 (at batch 8: 0.6x) */
    if ((w->fmt == GPT2C_FMT_Q4 || w->fmt == GPT2C_FMT_NF4) && w->cols % 128 == 0) return N <= QMM_VNNI_MAX_ROWS;
    return (w->fmt == GPT2C_FMT_Q8 || w->fmt == GPT2C_FMT_Q4) && N <= QMM_VNNI_ROWS;
}

/* Activation rows [r0, r0 + n) (n 1..4, a constant of each instantiation) against outputs [o0, o1). */
#define QMM_ROWS_SWITCH(n, CALL)                                                                                       \
    switch (n) {                                                                                                       \
    case 1: CALL(1); break;                                                                                            \
    case 2: CALL(2); break;                                                                                            \
    case 3: CALL(3); break;                                                                                            \
    default: CALL(4); break;                                                                                           \
    }

__attribute__((target("avx512vnni"))) void gpt2c_qmatmul_avx512_vnni(float *out, const float *inp, const gpt2c_tensor *w,
                                                                     const float *bias, int N, int act, int o0, int o1) {
    const int q4 = w->fmt == GPT2C_FMT_Q4, nf4 = w->fmt == GPT2C_FMT_NF4;
    const int by128 = q4 && w->cols % 128 == 0; /* q4: 128 weights per step (nf4 always) */
    const int layout = nf4 ? 4 : by128 ? 3 : q4 ? 2 : 1;
    if (!aq_reuse(inp, N, w->cols, layout)) {
        if (nf4)
            quantize_rows_nf4x128(inp, N, w->cols);
        else if (by128)
            quantize_rows_q4x128(inp, N, w->cols);
        else
            quantize_rows(inp, N, w->cols, q4);
    }
    /* up to 4 activation rows per pass (more spill the accumulators); with more, passes of 4 rows over 16
     * outputs at a time, so the later passes find those weights in L1 */
    if (N == 1 && (nf4 || by128 || !q4) && o1 - o0 >= 4) { /* decode: 4 outputs at a time, the rest below */
        const int o4 = o0 + (o1 - o0) / 4 * 4;
        if (nf4)
            rows4_vnni_n1(out, w, bias, 2, act, o0, o4);
        else if (by128)
            rows4_vnni_n1(out, w, bias, 1, act, o0, o4);
        else
            rows4_vnni_n1(out, w, bias, 0, act, o0, o4);
        o0 = o4;
    }
    const int step = N <= 4 ? o1 - o0 : 16;
    for (int a = o0; a < o1; a += step) {
        const int b = a + step < o1 ? a + step : o1;
        for (int r0 = 0; r0 < N; r0 += 4) {
            const int n = N - r0 < 4 ? N - r0 : 4;
#define NF4X128(nn) rows_vnni_nf4x128(out, w, bias, r0, nn, act, a, b)
#define Q4X128(nn) rows_vnni_q4x128(out, w, bias, r0, nn, act, a, b)
#define Q64(nn) (q4 ? rows_vnni(out, w, bias, r0, nn, 1, act, a, b) : rows_vnni(out, w, bias, r0, nn, 0, act, a, b))
            if (nf4) {
                QMM_ROWS_SWITCH(n, NF4X128)
            } else if (by128) {
                QMM_ROWS_SWITCH(n, Q4X128)
            } else {
                QMM_ROWS_SWITCH(n, Q64)
            }
#undef NF4X128
#undef Q4X128
#undef Q64
        }
    }
}
