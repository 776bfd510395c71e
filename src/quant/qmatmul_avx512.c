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
    int sh;      /* log2(b) when b is a power of two (the usual case: no division per 16 weights), else -1 */
} qctx;

static inline int64_t blk_of(const qctx *c, int64_t k) { return c->sh >= 0 ? k >> c->sh : k / c->b; }
static inline int pow2_shift(int b) { return (b & (b - 1)) == 0 ? __builtin_ctz((unsigned)b) : -1; }

/* 16 dequantized weights of row r at column k (k a multiple of 16). */
static inline __m512 dq16(const qctx *c, int64_t r, int64_t k) {
    const gpt2c_tensor *t = c->t;
    const int64_t C = t->cols;
    const __m512 d = _mm512_set1_ps(t->scales[r * c->nbr + blk_of(c, k)]);
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

void gpt2c_quant_unpack_rows_avx512(const gpt2c_tensor *w, int64_t r0, int64_t r1, float *dst) {
    qctx c = {w, gpt2c_quant_block(w->fmt, w->block), 0, _mm512_loadu_ps(gpt2c_nf4_code), 0};
    c.nbr = w->cols / c.b, c.sh = pow2_shift(c.b);
    for (int64_t r = r0; r < r1; r++) {
        if (w->fmt != GPT2C_FMT_Q8) {
            gpt2c_quant_unpack4_row_avx512(w, r, dst + (r - r0) * w->cols);
            continue;
        }
        for (int64_t k = 0; k < w->cols; k += 16) _mm512_storeu_ps(dst + (r - r0) * w->cols + k, dq16(&c, r, k));
    }
}

/* fp32 -> bf16, round to nearest even, NaN kept quiet: kernels/bf16.h's
 * gpt2c_bf16_from_f32 lane by lane in integers (vcvtneps2bf16 would flush
 * denormals), so a weight rounded here is the one the bf16 GEMM would pack
 * from the dequantized fp32 row. */
static inline __m256i bf16_of(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i r = _mm512_add_epi32(
        u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x400000)), 16));
}

static _Thread_local float rowbuf[QMM_MAX_IC] __attribute__((aligned(64)));

void gpt2c_quant_unpack_rows_bf16_avx512(const gpt2c_tensor *w, int64_t r0, int64_t r1, uint16_t *dst) {
    qctx c = {w, gpt2c_quant_block(w->fmt, w->block), 0, _mm512_loadu_ps(gpt2c_nf4_code), 0};
    c.nbr = w->cols / c.b, c.sh = pow2_shift(c.b);
    const int64_t IC = w->cols;
    for (int64_t r = r0; r < r1; r++) {
        uint16_t *d = dst + (r - r0) * IC;
        if (w->fmt != GPT2C_FMT_Q8 && IC <= QMM_MAX_IC) { /* the lookup kernel's row, then rounded from L1 */
            gpt2c_quant_unpack4_row_avx512(w, r, rowbuf);
            for (int64_t k = 0; k < IC; k += 16) _mm256_storeu_si256((__m256i *)(d + k), bf16_of(_mm512_load_ps(rowbuf + k)));
            continue;
        }
        for (int64_t k = 0; k < IC; k += 16) _mm256_storeu_si256((__m256i *)(d + k), bf16_of(dq16(&c, r, k)));
    }
}

void gpt2c_qmatmul_avx512(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                          int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    qctx c = {w, gpt2c_quant_block(w->fmt, w->block), 0, _mm512_loadu_ps(gpt2c_nf4_code), 0};
    c.nbr = IC / c.b, c.sh = pow2_shift(c.b);
    if (N < 4 || IC > QMM_MAX_IC || (IC & 15)) {
        for (int o = o0; o < o1; o++)
            for (int n0 = 0; n0 < N; n0 += 3)
                row_direct(&c, out + (int64_t)n0 * OC, inp + (int64_t)n0 * IC, bias, N - n0 < 3 ? N - n0 : 3, act, o,
                           IC, OC);
        return;
    }
    for (int o = o0; o < o1; o += QMM_TILE_O) {
        const int no = o1 - o < QMM_TILE_O ? o1 - o : QMM_TILE_O;
        for (int i = 0; i < no; i++) {
            if (w->fmt != GPT2C_FMT_Q8) {
                gpt2c_quant_unpack4_row_avx512(w, o + i, wbuf + i * IC);
                continue;
            }
            for (int64_t k = 0; k < IC; k += 16) _mm512_store_ps(wbuf + i * IC + k, dq16(&c, o + i, k));
        }
        for (int n0 = 0; n0 < N; n0 += QMM_TILE_N)
            tile(out, inp, bias, act, o, no, n0, N - n0 < QMM_TILE_N ? N - n0 : QMM_TILE_N, IC, OC);
    }
}
