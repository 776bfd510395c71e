/* q8 / q4 decode with int8 activations (AVX-512 VNNI): llama.cpp's Q8_0 x
 * Q8_0 / Q4_0 x Q8_0 scheme.  Each activation row is quantized per block of
 * 32 (da = absmax / 127, qa = round-to-nearest(x / da)) and each block's dot
 * product is an integer one.  vpdpbusd multiplies unsigned by signed bytes,
 * so the weight codes go in as unsigned (q8: w + 128 by flipping the sign
 * bit; q4: its code 0..15, which is value + 8) and the surplus is taken off
 * once per output: per block of 32 it is bias * sum(qa) * da * dw (bias 128
 * or 8), so the correction of a row is a dot product of its scales with a
 * per-block vector of the activations (cb below), not a subtraction per
 * weight.
 *
 * q4's codes are unpacked with two instructions per 64 weights: the 32 bytes
 * of two groups are loaded into both halves of a register, the upper half is
 * shifted right by 4 (16-bit lanes) and both are masked to 4 bits, so the
 * register holds elements [0..15, 32..47, 16..31, 48..63] of the 64; the
 * activations are quantized into that same order instead of reordering the
 * weights.  Per 64 weights and activation row: vpdpbusd, one conversion, the
 * lane scales dw * da (one multiply) and one FMA. */
#include <immintrin.h>

#include "gpt2c/quant.h"
#include "quant/qmatmul_impl.h"

typedef struct {
    int8_t qa[QMM_VNNI_ROWS][QMM_MAX_IC] __attribute__((aligned(64))); /* in the weights' code order */
    float da[QMM_VNNI_ROWS][QMM_MAX_IC / 4] __attribute__((aligned(64))); /* each 4-byte lane's block scale */
    float cb[QMM_VNNI_ROWS][QMM_MAX_IC / 32] __attribute__((aligned(64))); /* bias * sum(qa) * da per block of 32 */
} act_q8;
static _Thread_local act_q8 aq;

/* 32 activations quantized: returns the int32 codes, writes the block scale */
static inline __m512i quant16(__m512 x, __m512 vid) { return _mm512_cvtps_epi32(_mm512_mul_ps(x, vid)); }

static void quantize_rows(const float *inp, int N, int64_t IC, int q4) {
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
                aq.cb[n][(k >> 5) + h] = bias * d[h] * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(q[2 * h], q[2 * h + 1]));
            }
            /* q8: natural order; q4: [0..15, 32..47, 16..31, 48..63] */
            const int ord[2][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}};
            for (int j = 0; j < 4; j++)
                _mm_store_si128((__m128i *)&aq.qa[n][k + 16 * j], _mm512_cvtsepi32_epi8(q[ord[q4][j]]));
            const __m512 d0 = _mm512_set1_ps(d[0]), d1 = _mm512_set1_ps(d[1]);
            _mm512_store_ps(&aq.da[n][k / 4], _mm512_mask_blend_ps(q4 ? 0xF0F0 : 0xFF00, d0, d1));
        }
    }
}

/* lanes of block 0 / block 1 of a 64-weight chunk: q8 [0 x8, 1 x8], q4 [0 x4, 1 x4, 0 x4, 1 x4].
 * N (activation rows) and q4 are constants after inlining, so the accumulators stay in registers. */
__attribute__((target("avx512vnni"), always_inline)) static inline void
rows_vnni(float *out, const gpt2c_tensor *w, const float *bias, const int N, const int q4, int act, int o0, int o1) {
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
        __m512 acc[QMM_VNNI_ROWS];
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
                const __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, _mm512_load_si512(&aq.qa[n][k]));
                acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), _mm512_mul_ps(dws, _mm512_load_ps(&aq.da[n][k / 4])), acc[n]);
            }
        }
        for (int n = 0; n < N; n++) {
            /* the surplus of the unsigned codes: sum over blocks of 32 of dw * cb */
            __m512 c = _mm512_setzero_ps();
            int64_t j = 0;
            if (b == 32)
                for (; j + 16 <= nb32; j += 16) c = _mm512_fmadd_ps(_mm512_loadu_ps(dw + j), _mm512_load_ps(&aq.cb[n][j]), c);
            float corr = _mm512_reduce_add_ps(c);
            for (; j < nb32; j++) corr += dw[blk32[j]] * aq.cb[n][j];
            out[n * OC + o] = qmm_epilogue(_mm512_reduce_add_ps(acc[n]) - corr, bias, o, act);
        }
    }
}

/* q4 with rows a multiple of 128: 64 bytes of codes (4 groups of 32) per step.
 * Group g's byte j holds element j (low nibble) and j + 16 (high), so the low
 * nibbles of the 64 bytes are elements 0..15 of each group and the high ones
 * elements 16..31: two vpdpbusd against the activations quantized into those
 * two orders ([g0 0..15, g1 0..15, g2 0..15, g3 0..15], then 16..31) add into
 * the same lanes, and 4-lane group g of the result is group g's whole dot
 * product.  Per 128 weights and activation row: one load, one shift, two
 * masks, two vpdpbusd, one conversion, one multiply (the lane scales dw *
 * da) and one FMA: about 60% of the instructions of two 64-weight steps. */
static void quantize_rows_q4x128(const float *inp, int N, int64_t IC) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + n * IC;
        for (int64_t k = 0; k < IC; k += 128) {
            float d[4];
            for (int g = 0; g < 4; g++) {
                const __m512 x0 = _mm512_loadu_ps(x + k + 32 * g), x1 = _mm512_loadu_ps(x + k + 32 * g + 16);
                const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
                d[g] = amax / 127.0f;
                const __m512 vid = _mm512_set1_ps(d[g] != 0.0f ? 1.0f / d[g] : 0.0f);
                const __m512i q0 = quant16(x0, vid), q1 = quant16(x1, vid);
                aq.cb[n][(k >> 5) + g] = 8.0f * d[g] * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
                _mm_store_si128((__m128i *)&aq.qa[n][k + 16 * g], _mm512_cvtsepi32_epi8(q0));
                _mm_store_si128((__m128i *)&aq.qa[n][k + 64 + 16 * g], _mm512_cvtsepi32_epi8(q1));
            }
            _mm512_store_ps(&aq.da[n][k / 8], _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                                                  _mm512_castps128_ps512(_mm_loadu_ps(d))));
        }
    }
}

__attribute__((target("avx512vnni"), always_inline)) static inline void
rows_vnni_q4x128(float *out, const gpt2c_tensor *w, const float *bias, const int N, int act, int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    const int b = gpt2c_quant_block(w->fmt, w->block);
    const int64_t nbr = IC / b, nb32 = IC / 32;
    const __m512i by4 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), low4 = _mm512_set1_epi8(15);
    int32_t blk32[QMM_MAX_IC / 32];
    for (int64_t j = 0; j < nb32; j++) blk32[j] = (int32_t)(j * 32 / b);
    for (int o = o0; o < o1; o++) {
        __m512 acc[QMM_VNNI_ROWS];
        for (int n = 0; n < N; n++) acc[n] = _mm512_setzero_ps();
        const float *dw = w->scales + o * nbr;
        const uint8_t *codes = (const uint8_t *)w->data + o * IC / 2;
        for (int64_t k = 0; k < IC; k += 128) {
            const __m512i v = _mm512_loadu_si512(codes + k / 2);
            const __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
            __m128 d4;
            if (b == 32)
                d4 = _mm_loadu_ps(dw + (k >> 5));
            else
                d4 = _mm_setr_ps(dw[blk32[k >> 5]], dw[blk32[(k >> 5) + 1]], dw[blk32[(k >> 5) + 2]], dw[blk32[(k >> 5) + 3]]);
            const __m512 dws = _mm512_permutexvar_ps(by4, _mm512_castps128_ps512(d4));
            for (int n = 0; n < N; n++) {
                __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_load_si512(&aq.qa[n][k]));
                dp = _mm512_dpbusd_epi32(dp, hi, _mm512_load_si512(&aq.qa[n][k + 64]));
                acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), _mm512_mul_ps(dws, _mm512_load_ps(&aq.da[n][k / 8])), acc[n]);
            }
        }
        for (int n = 0; n < N; n++) {
            /* the surplus of the unsigned codes (value + 8): sum over blocks of 32 of dw * cb */
            __m512 c = _mm512_setzero_ps();
            int64_t j = 0;
            if (b == 32)
                for (; j + 16 <= nb32; j += 16) c = _mm512_fmadd_ps(_mm512_loadu_ps(dw + j), _mm512_load_ps(&aq.cb[n][j]), c);
            float corr = _mm512_reduce_add_ps(c);
            for (; j < nb32; j++) corr += dw[blk32[j]] * aq.cb[n][j];
            out[n * OC + o] = qmm_epilogue(_mm512_reduce_add_ps(acc[n]) - corr, bias, o, act);
        }
    }
}

int gpt2c_qmatmul_vnni_takes(const gpt2c_tensor *w, int N) {
    return (w->fmt == GPT2C_FMT_Q8 || w->fmt == GPT2C_FMT_Q4) && N <= QMM_VNNI_ROWS && w->cols <= QMM_MAX_IC &&
           w->cols % 64 == 0;
}

__attribute__((target("avx512vnni"))) void gpt2c_qmatmul_avx512_vnni(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                               int o0, int o1) {
    const int q4 = w->fmt == GPT2C_FMT_Q4;
    if (q4 && w->cols % 128 == 0) { /* 128 weights per step */
        quantize_rows_q4x128(inp, N, w->cols);
        switch (N) {
        case 1: rows_vnni_q4x128(out, w, bias, 1, act, o0, o1); break;
        case 2: rows_vnni_q4x128(out, w, bias, 2, act, o0, o1); break;
        default: rows_vnni_q4x128(out, w, bias, 3, act, o0, o1); break;
        }
        return;
    }
    quantize_rows(inp, N, w->cols, q4);
    switch (N * 2 + q4) {
    case 2: rows_vnni(out, w, bias, 1, 0, act, o0, o1); break;
    case 3: rows_vnni(out, w, bias, 1, 1, act, o0, o1); break;
    case 4: rows_vnni(out, w, bias, 2, 0, act, o0, o1); break;
    case 5: rows_vnni(out, w, bias, 2, 1, act, o0, o1); break;
    case 6: rows_vnni(out, w, bias, 3, 0, act, o0, o1); break;
    default: rows_vnni(out, w, bias, 3, 1, act, o0, o1); break;
    }
}
