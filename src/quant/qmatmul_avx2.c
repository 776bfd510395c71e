/* AVX2 + FMA fused dequantize-and-multiply (fp32 activations): the AVX-512
 * kernels' structure (qmatmul_avx512.c) with 8-wide vectors.  The 16-entry
 * NF4 lookup is two 8-entry permutes and a blend on the index's bit 3. */
#include <immintrin.h>

#include "gpt2c/quant.h"
#include "quant/qmatmul_impl.h"

typedef struct {
    const gpt2c_tensor *t;
    int b;
    int64_t nbr;
    __m256 nf4lo, nf4hi;
} qctx;

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 8 dequantized weights of row r at column k (k a multiple of 8). */
static inline __m256 dq8(const qctx *c, int64_t r, int64_t k) {
    const gpt2c_tensor *t = c->t;
    const int64_t C = t->cols;
    const __m256 d = _mm256_set1_ps(t->scales[r * c->nbr + k / c->b]);
    switch (t->fmt) {
    case GPT2C_FMT_Q8: {
        const __m128i q = _mm_loadl_epi64((const __m128i *)((const int8_t *)t->data + r * C + k));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
    }
    case GPT2C_FMT_Q4: {
        const int64_t g = k & ~(int64_t)31, j = k & 15; /* element g+j (+16 for the high nibbles) */
        const __m128i bytes = _mm_loadl_epi64((const __m128i *)((const uint8_t *)t->data + (r * C + g) / 2 + j));
        const __m128i nib = _mm_and_si128(k & 16 ? _mm_srli_epi16(bytes, 4) : bytes, _mm_set1_epi8(15));
        const __m256i v = _mm256_sub_epi32(_mm256_cvtepu8_epi32(nib), _mm256_set1_epi32(8));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(v), d);
    }
    default: { /* nf4: 4 bytes */
        int32_t raw;
        __builtin_memcpy(&raw, (const uint8_t *)t->data + (r * C + k) / 2, 4);
        const __m128i w16 = _mm_cvtepu8_epi16(_mm_cvtsi32_si128(raw));
        const __m128i idx8 =
            _mm_or_si128(_mm_srli_epi16(w16, 4), _mm_slli_epi16(_mm_and_si128(w16, _mm_set1_epi16(15)), 8));
        const __m256i idx = _mm256_cvtepu8_epi32(idx8);
        const __m256 lo = _mm256_permutevar8x32_ps(c->nf4lo, idx), hi = _mm256_permutevar8x32_ps(c->nf4hi, idx);
        const __m256 high = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)); /* bit 3 -> sign bit */
        return _mm256_mul_ps(_mm256_blendv_ps(lo, hi, high), d);
    }
    }
}

static _Thread_local float wbuf[QMM_TILE_O * QMM_MAX_IC] __attribute__((aligned(32)));

static void row_direct(const qctx *c, float *out, const float *inp, const float *bias, int N, int act, int o,
                       int64_t IC, int64_t OC) {
    __m256 a0[3], a1[3];
    for (int n = 0; n < 3; n++) a0[n] = a1[n] = _mm256_setzero_ps();
    for (int64_t k = 0; k < IC; k += 16) { /* IC is a multiple of 32 */
        const __m256 w0 = dq8(c, o, k), w1 = dq8(c, o, k + 8);
        for (int n = 0; n < N; n++) {
            a0[n] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(inp + n * IC + k), a0[n]);
            a1[n] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(inp + n * IC + k + 8), a1[n]);
        }
    }
    for (int n = 0; n < N; n++) out[n * OC + o] = qmm_epilogue(hsum8(_mm256_add_ps(a0[n], a1[n])), bias, o, act);
}

static void tile(float *out, const float *inp, const float *bias, int act, int o, int no, int n0, int nn,
                 int64_t IC, int64_t OC) {
    __m256 acc[QMM_TILE_O][QMM_TILE_N];
    for (int i = 0; i < QMM_TILE_O; i++)
        for (int j = 0; j < QMM_TILE_N; j++) acc[i][j] = _mm256_setzero_ps();
    for (int64_t k = 0; k < IC; k += 8)
        for (int j = 0; j < nn; j++) {
            const __m256 x = _mm256_loadu_ps(inp + (int64_t)(n0 + j) * IC + k);
            for (int i = 0; i < no; i++) acc[i][j] = _mm256_fmadd_ps(_mm256_load_ps(wbuf + i * IC + k), x, acc[i][j]);
        }
    for (int i = 0; i < no; i++)
        for (int j = 0; j < nn; j++)
            out[(int64_t)(n0 + j) * OC + o + i] = qmm_epilogue(hsum8(acc[i][j]), bias, o + i, act);
}

void gpt2c_qmatmul_avx2(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                        int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    qctx c = {w, gpt2c_quant_block(w->fmt, w->block), 0, _mm256_loadu_ps(gpt2c_nf4_code),
              _mm256_loadu_ps(gpt2c_nf4_code + 8)};
    c.nbr = IC / c.b;
    if (N < 4 || IC > QMM_MAX_IC) {
        for (int o = o0; o < o1; o++)
            for (int n0 = 0; n0 < N; n0 += 3)
                row_direct(&c, out + (int64_t)n0 * OC, inp + (int64_t)n0 * IC, bias, N - n0 < 3 ? N - n0 : 3, act, o,
                           IC, OC);
        return;
    }
    for (int o = o0; o < o1; o += QMM_TILE_O) {
        const int no = o1 - o < QMM_TILE_O ? o1 - o : QMM_TILE_O;
        for (int i = 0; i < no; i++)
            for (int64_t k = 0; k < IC; k += 8) _mm256_store_ps(wbuf + i * IC + k, dq8(&c, o + i, k));
        for (int n0 = 0; n0 < N; n0 += QMM_TILE_N)
            tile(out, inp, bias, act, o, no, n0, N - n0 < QMM_TILE_N ? N - n0 : QMM_TILE_N, IC, OC);
    }
}
