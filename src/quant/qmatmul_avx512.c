/* AVX-512 fused dequantize-and-multiply (fp32 activations): 16 weights at a
 * time are expanded in a register from their codes and multiplied by their
 * block's scale (the same single rounding as gpt2c_quant_unpack, so these
 * are the dequantized weights exactly), then FMA'd with the activations.
 *   N < 4 (decode):  each weight row is dequantized in registers and used for
 *                    every activation row at once.
 *   N >= 4 (prefill): QMM_TILE_O rows are dequantized into a per-thread buffer
 *                    (4 rows, <= 128 KiB, L2-resident) and a 4x4 register
 *                    tile of dot products runs over it. */
#include <immintrin.h>

#include "gpt2c/quant.h"
#include "quant/qmatmul_impl.h"

typedef struct {
    const gpt2c_tensor *t;
    int b;       /* block */
    int64_t nbr; /* blocks per row */
    __m512 nf4;  /* the NF4 code */
} qctx;

/* 16 dequantized weights of row r at column k (k a multiple of 16). */
static inline __m512 dq16(const qctx *c, int64_t r, int64_t k) {
    const gpt2c_tensor *t = c->t;
    const int64_t C = t->cols;
    const __m512 d = _mm512_set1_ps(t->scales[r * c->nbr + k / c->b]);
    switch (t->fmt) {
    case GPT2C_FMT_Q8: {
        const __m128i q = _mm_loadu_si128((const __m128i *)((const int8_t *)t->data + r * C + k));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d);
    }
    case GPT2C_FMT_Q4: {
        const int64_t g = k & ~(int64_t)31; /* its group of 32: 16 bytes, low nibbles first */
        const __m128i bytes = _mm_loadu_si128((const __m128i *)((const uint8_t *)t->data + (r * C + g) / 2));
        const __m128i nib = _mm_and_si128(k & 16 ? _mm_srli_epi16(bytes, 4) : bytes, _mm_set1_epi8(15));
        const __m512i v = _mm512_sub_epi32(_mm512_cvtepu8_epi32(nib), _mm512_set1_epi32(8));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(v), d);
    }
    default: { /* nf4: 8 bytes, first element of each pair in the high nibble */
        const __m128i bytes = _mm_loadl_epi64((const __m128i *)((const uint8_t *)t->data + (r * C + k) / 2));
        const __m128i w16 = _mm_cvtepu8_epi16(bytes);
        const __m128i idx8 = _mm_or_si128(_mm_srli_epi16(w16, 4), _mm_slli_epi16(_mm_and_si128(w16, _mm_set1_epi16(15)), 8));
        const __m512 code = _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(idx8), c->nf4);
        return _mm512_mul_ps(code, d);
    }
    }
}

static _Thread_local float wbuf[QMM_TILE_O * QMM_MAX_IC] __attribute__((aligned(64)));

/* One weight row against N <= 3 activation rows, two accumulators each. */
static void row_direct(const qctx *c, float *out, const float *inp, const float *bias, int N, int act, int o,
                       int64_t IC, int64_t OC) {
    __m512 a0[3], a1[3];
    for (int n = 0; n < 3; n++) a0[n] = a1[n] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 32 <= IC; k += 32) {
        const __m512 w0 = dq16(c, o, k), w1 = dq16(c, o, k + 16);
        for (int n = 0; n < N; n++) {
            a0[n] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(inp + n * IC + k), a0[n]);
            a1[n] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(inp + n * IC + k + 16), a1[n]);
        }
    }
    for (; k < IC; k += 16) {
        const __m512 w0 = dq16(c, o, k);
        for (int n = 0; n < N; n++) a0[n] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(inp + n * IC + k), a0[n]);
    }
    for (int n = 0; n < N; n++)
        out[n * OC + o] = qmm_epilogue(_mm512_reduce_add_ps(_mm512_add_ps(a0[n], a1[n])), bias, o, act);
}

/* no (<= 4) dequantized rows in wbuf against activation rows [n0, n0 + nn), nn <= 4 */
static void tile(float *out, const float *inp, const float *bias, int act, int o, int no, int n0, int nn,
                 int64_t IC, int64_t OC) {
    __m512 acc[QMM_TILE_O][QMM_TILE_N];
    for (int i = 0; i < QMM_TILE_O; i++)
        for (int j = 0; j < QMM_TILE_N; j++) acc[i][j] = _mm512_setzero_ps();
    if (no == QMM_TILE_O && nn == QMM_TILE_N) {
        const float *x0 = inp + (int64_t)n0 * IC;
        for (int64_t k = 0; k < IC; k += 16) {
            __m512 x[QMM_TILE_N], w[QMM_TILE_O];
            for (int j = 0; j < QMM_TILE_N; j++) x[j] = _mm512_loadu_ps(x0 + j * IC + k);
            for (int i = 0; i < QMM_TILE_O; i++) w[i] = _mm512_load_ps(wbuf + i * IC + k);
            for (int i = 0; i < QMM_TILE_O; i++)
                for (int j = 0; j < QMM_TILE_N; j++) acc[i][j] = _mm512_fmadd_ps(w[i], x[j], acc[i][j]);
        }
    } else {
        for (int64_t k = 0; k < IC; k += 16)
            for (int j = 0; j < nn; j++) {
                const __m512 x = _mm512_loadu_ps(inp + (int64_t)(n0 + j) * IC + k);
                for (int i = 0; i < no; i++) acc[i][j] = _mm512_fmadd_ps(_mm512_load_ps(wbuf + i * IC + k), x, acc[i][j]);
            }
    }
    for (int i = 0; i < no; i++)
        for (int j = 0; j < nn; j++)
            out[(int64_t)(n0 + j) * OC + o + i] = qmm_epilogue(_mm512_reduce_add_ps(acc[i][j]), bias, o + i, act);
}

/* ---- q8 / q4 with int8 activations (AVX-512 VNNI), decode rows ----------
 * llama.cpp's Q8_0 x Q8_0 / Q4_0 x Q8_0 scheme: each activation row is
 * quantized per block of 32 (da = absmax / 127, qa = round-to-nearest(x / da)),
 * and each block's dot product is an integer one: vpdpbusd multiplies
 * unsigned by signed bytes, so the weight codes go in as unsigned (q8: w + 128
 * by flipping the sign bit; q4: its code 0..15 = value + 8) and the surplus
 * (128 or 8 times the sum of qa over each 4-byte lane) is subtracted; that
 * correction depends on the activations only, so it is computed once per row.
 * Per 64 weights: sum over lanes of (dp - corr) * dw * da. */
typedef struct {
    int8_t qa[QMM_VNNI_ROWS][QMM_MAX_IC] __attribute__((aligned(64)));
    int32_t corr[QMM_VNNI_ROWS][QMM_MAX_IC / 4] __attribute__((aligned(64))); /* 16 lanes per 64 activations */
    float da[QMM_VNNI_ROWS][QMM_MAX_IC / 4] __attribute__((aligned(64)));     /* each lane's block scale */
} act_q8;
static _Thread_local act_q8 aq;

__attribute__((target("avx512vnni"))) static void quantize_rows(const float *inp, int N, int64_t IC, int bias_code) {
    const __m512i cbias = _mm512_set1_epi8((char)bias_code);
    for (int n = 0; n < N; n++) {
        const float *x = inp + n * IC;
        for (int64_t k = 0; k < IC; k += 32) {
            const __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            const __m512 vid = _mm512_set1_ps(id);
            const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, vid)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, vid));
            _mm_store_si128((__m128i *)&aq.qa[n][k], _mm512_cvtsepi32_epi8(q0));
            _mm_store_si128((__m128i *)&aq.qa[n][k + 16], _mm512_cvtsepi32_epi8(q1));
            _mm256_store_ps(&aq.da[n][k / 4], _mm256_set1_ps(d)); /* the 8 lanes of this block */
        }
        for (int64_t k = 0; k < IC; k += 64)
            _mm512_store_si512((__m512i *)&aq.corr[n][k / 4],
                               _mm512_dpbusd_epi32(_mm512_setzero_si512(), cbias, _mm512_load_si512(&aq.qa[n][k])));
    }
}

/* 64 weight codes of row r at column k as unsigned bytes in element order */
static inline __m512i codes64(const gpt2c_tensor *t, int64_t r, int64_t k) {
    if (t->fmt == GPT2C_FMT_Q8)
        return _mm512_xor_si512(_mm512_loadu_si512((const int8_t *)t->data + r * t->cols + k), _mm512_set1_epi8((char)0x80));
    /* q4: two groups of 32 (16 bytes each: low nibbles = elements 0..15, high = 16..31) */
    const __m256i v = _mm256_loadu_si256((const __m256i *)((const uint8_t *)t->data + (r * t->cols + k) / 2));
    const __m256i m = _mm256_set1_epi8(15);
    const __m256i lo = _mm256_and_si256(v, m), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
    const __m512i x = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); /* g0lo g1lo g0hi g1hi */
    return _mm512_shuffle_i64x2(x, x, _MM_SHUFFLE(3, 1, 2, 0));              /* g0lo g0hi g1lo g1hi */
}

__attribute__((target("avx512vnni"))) static void rows_vnni(float *out, const gpt2c_tensor *w, const float *bias,
                                                           int N, int act, int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    const int b = gpt2c_quant_block(w->fmt, w->block);
    const int64_t nbr = IC / b;
    for (int o = o0; o < o1; o++) {
        __m512 acc[QMM_VNNI_ROWS];
        for (int n = 0; n < QMM_VNNI_ROWS; n++) acc[n] = _mm512_setzero_ps();
        const float *dw = w->scales + o * nbr;
        for (int64_t k = 0; k < IC; k += 64) {
            const __m512i u = codes64(w, o, k);
            const __m512 dws = _mm512_mask_blend_ps((__mmask16)0xFF00, _mm512_set1_ps(dw[k / b]), _mm512_set1_ps(dw[(k + 32) / b]));
            for (int n = 0; n < N; n++) {
                const __m512i dp = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, _mm512_load_si512(&aq.qa[n][k])),
                                                    _mm512_load_si512(&aq.corr[n][k / 4]));
                acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), _mm512_mul_ps(dws, _mm512_load_ps(&aq.da[n][k / 4])), acc[n]);
            }
        }
        for (int n = 0; n < N; n++) out[n * OC + o] = qmm_epilogue(_mm512_reduce_add_ps(acc[n]), bias, o, act);
    }
}

int gpt2c_qmatmul_vnni_takes(const gpt2c_tensor *w, int N) {
    return (w->fmt == GPT2C_FMT_Q8 || w->fmt == GPT2C_FMT_Q4) && N <= QMM_VNNI_ROWS && w->cols <= QMM_MAX_IC &&
           w->cols % 64 == 0;
}

void gpt2c_qmatmul_avx512_vnni(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                               int o0, int o1) {
    quantize_rows(inp, N, w->cols, w->fmt == GPT2C_FMT_Q8 ? 0x80 : 0x08);
    rows_vnni(out, w, bias, N, act, o0, o1);
}

void gpt2c_quant_unpack_rows_avx512(const gpt2c_tensor *w, int64_t r0, int64_t r1, float *dst) {
    qctx c = {w, gpt2c_quant_block(w->fmt, w->block), 0, _mm512_loadu_ps(GPT2C_NF4_CODE)};
    c.nbr = w->cols / c.b;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t k = 0; k < w->cols; k += 16) _mm512_storeu_ps(dst + (r - r0) * w->cols + k, dq16(&c, r, k));
}

void gpt2c_qmatmul_avx512(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                          int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    qctx c = {w, gpt2c_quant_block(w->fmt, w->block), 0, _mm512_loadu_ps(GPT2C_NF4_CODE)};
    c.nbr = IC / c.b;
    if (N < 4 || IC > QMM_MAX_IC || (IC & 15)) {
        for (int o = o0; o < o1; o++)
            for (int n0 = 0; n0 < N; n0 += 3)
                row_direct(&c, out + (int64_t)n0 * OC, inp + (int64_t)n0 * IC, bias, N - n0 < 3 ? N - n0 : 3, act, o,
                           IC, OC);
        return;
    }
    for (int o = o0; o < o1; o += QMM_TILE_O) {
        const int no = o1 - o < QMM_TILE_O ? o1 - o : QMM_TILE_O;
        for (int i = 0; i < no; i++)
            for (int64_t k = 0; k < IC; k += 16) _mm512_store_ps(wbuf + i * IC + k, dq16(&c, o + i, k));
        for (int n0 = 0; n0 < N; n0 += QMM_TILE_N)
            tile(out, inp, bias, act, o, no, n0, N - n0 < QMM_TILE_N ? N - n0 : QMM_TILE_N, IC, OC);
    }
}
