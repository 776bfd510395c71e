/* q4 / nf4 with fp32 activations (AVX-512): a 4-bit code is an index into
 * 16 values, so the 16 values of a block times its scale sit in one register
 * (one multiply per block) and one vpermps turns 16 codes into 16 weights;
 * vpermps reads only the low 4 bits of each index, so the low nibbles need
 * no mask.  The weights are code value * scale with the single rounding of
 * gpt2c_quant_unpack: exactly the dequantized weights.
 *
 * 16 bytes of codes (32 weights) are widened to 16 dword lanes once; lane i
 * then gives its low nibble through one lookup and its high nibble (after a
 * shift) through another.  For q4 (byte j: element j low, j + 16 high) these
 * are elements k..k+15 and k+16..k+31 in order.  For nf4 (byte j: element 2j
 * high, 2j + 1 low) they are the odd and the even elements, so the decode
 * kernel reorders its activations once per call (each 32 as [odd, even])
 * instead of reordering every weight row. */
#include <immintrin.h>

#include "gpt2c/quant.h"
#include "quant/qmatmul_impl.h"

static const float Q4_VALUES[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

static inline __m512 values16(gpt2c_format f) {
    return _mm512_loadu_ps(f == GPT2C_FMT_Q4 ? Q4_VALUES : gpt2c_nf4_code);
}

static _Thread_local float xperm[QMM_VNNI_ROWS][QMM_MAX_IC] __attribute__((aligned(64)));

/* each 32 activations as [odd elements, even elements] (nf4's nibble order) */
static void permute_nf4(const float *inp, int N, int64_t IC) {
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int n = 0; n < N; n++)
        for (int64_t k = 0; k < IC; k += 32) {
            const __m512 a = _mm512_loadu_ps(inp + n * IC + k), b = _mm512_loadu_ps(inp + n * IC + k + 16);
            _mm512_store_ps(&xperm[n][k], _mm512_permutex2var_ps(a, odd, b));
            _mm512_store_ps(&xperm[n][k + 16], _mm512_permutex2var_ps(a, even, b));
        }
}

/* 32 weights from 16 bytes of codes against N activation rows (x: the 32
 * activations in the codes' order, rows xs apart), into two accumulators each */
#define QMM_INLINE static inline __attribute__((always_inline))
QMM_INLINE void chunk32(const uint8_t *c, __m512 lut, const float *x, const int N, int64_t xs, __m512 *alo,
                        __m512 *ahi) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)c));
    const __m512 wl = _mm512_permutexvar_ps(v, lut), wh = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), lut);
    for (int n = 0; n < N; n++) {
        alo[n] = _mm512_fmadd_ps(wl, _mm512_loadu_ps(x + n * xs), alo[n]);
        ahi[n] = _mm512_fmadd_ps(wh, _mm512_loadu_ps(x + n * xs + 16), ahi[n]);
    }
}

/* Output rows [o0, o1) against N (a constant after inlining) activation rows.
 * bc = block / 32: the lookup table is rescaled every bc chunks of 32 (no
 * division in the loop); two chunks per step, four accumulators per row. */
QMM_INLINE void rows_lut(float *out, const float *x, int64_t xs, const gpt2c_tensor *w, const float *bias, const int N,
                         int act, int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    const int b = gpt2c_quant_block(w->fmt, w->block), bc = b / 32;
    const int64_t nbr = IC / b;
    const __m512 vals = values16(w->fmt);
    for (int o = o0; o < o1; o++) {
        __m512 a0[QMM_VNNI_ROWS], a1[QMM_VNNI_ROWS], a2[QMM_VNNI_ROWS], a3[QMM_VNNI_ROWS];
        for (int n = 0; n < N; n++) a0[n] = a1[n] = a2[n] = a3[n] = _mm512_setzero_ps();
        const uint8_t *codes = (const uint8_t *)w->data + o * IC / 2;
        const float *sc = w->scales + o * nbr;
        __m512 lut = _mm512_mul_ps(vals, _mm512_set1_ps(sc[0]));
        int pos = 0;
        for (int64_t k = 0; k < IC; k += 64) {
            chunk32(codes + k / 2, lut, x + k, N, xs, a0, a1);
            if (++pos == bc) pos = 0, lut = _mm512_mul_ps(vals, _mm512_set1_ps(*++sc));
            chunk32(codes + k / 2 + 16, lut, x + k + 32, N, xs, a2, a3);
            if (++pos == bc && k + 64 < IC) pos = 0, lut = _mm512_mul_ps(vals, _mm512_set1_ps(*++sc));
        }
        for (int n = 0; n < N; n++) {
            const __m512 s = _mm512_add_ps(_mm512_add_ps(a0[n], a1[n]), _mm512_add_ps(a2[n], a3[n]));
            out[n * OC + o] = qmm_epilogue(_mm512_reduce_add_ps(s), bias, o, act);
        }
    }
}

int gpt2c_qmatmul_lut4_takes(const gpt2c_tensor *w, int N) {
    return (w->fmt == GPT2C_FMT_Q4 || w->fmt == GPT2C_FMT_NF4) && N <= QMM_VNNI_ROWS && w->cols <= QMM_MAX_IC &&
           w->cols % 64 == 0;
}

/* decode: up to QMM_VNNI_ROWS activation rows, rows a multiple of 64 long */
void gpt2c_qmatmul_lut4_avx512(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                               int o0, int o1) {
    const float *x = inp;
    int64_t xs = w->cols;
    if (w->fmt == GPT2C_FMT_NF4) {
        permute_nf4(inp, N, w->cols);
        x = &xperm[0][0], xs = QMM_MAX_IC;
    }
    if (N == 1)
        rows_lut(out, x, xs, w, bias, 1, act, o0, o1);
    else if (N == 2)
        rows_lut(out, x, xs, w, bias, 2, act, o0, o1);
    else
        rows_lut(out, x, xs, w, bias, 3, act, o0, o1);
}

/* Row r of a q4 / nf4 tensor dequantized into dst (cols a multiple of 32), in order. */
void gpt2c_quant_unpack4_row_avx512(const gpt2c_tensor *w, int64_t r, float *dst) {
    const int64_t IC = w->cols;
    const int b = gpt2c_quant_block(w->fmt, w->block);
    const __m512 vals = values16(w->fmt);
    const uint8_t *codes = (const uint8_t *)w->data + r * IC / 2;
    const float *sc = w->scales + r * (IC / b);
    const __m512i lo8 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi8 = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    for (int64_t k = 0; k < IC; k += 32) {
        const __m512 lut = _mm512_mul_ps(vals, _mm512_set1_ps(sc[k / b]));
        const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(codes + k / 2)));
        const __m512 wl = _mm512_permutexvar_ps(v, lut), wh = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), lut);
        if (w->fmt == GPT2C_FMT_Q4) {
            _mm512_storeu_ps(dst + k, wl);
            _mm512_storeu_ps(dst + k + 16, wh);
        } else { /* wh: even elements, wl: odd ones */
            _mm512_storeu_ps(dst + k, _mm512_permutex2var_ps(wh, lo8, wl));
            _mm512_storeu_ps(dst + k + 16, _mm512_permutex2var_ps(wh, hi8, wl));
        }
    }
}
