/* bf16 matrix-vector product (infer_bf16.h) on AVX2 + FMA: the portable
 * path's arithmetic, 8 lanes at a time.  Its 16 lanes per chunk of 32
 * channels are two 8-lane accumulators here (pair words 0-7 and 8-15); each
 * pair word is split into its high (odd k) and low (even k) bf16 as fp32
 * values, the high product added first, as the portable loop does (a
 * product of two bf16 is exact in fp32, so an FMA rounds as its multiply and
 * add do).  The 16 lanes are then summed by the portable loop's tree, so
 * the bits are the same.  One output at a time against up to 4 input rows,
 * each weight row streamed front to back with a software prefetch ahead, as
 * the AVX-512F loop does. */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/infer_bf16.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* bf16 elements ahead of the chunk being read (4 KiB), as infer_bf16_avx512.c's PF_AHEAD */
#define PF_AHEAD 2048

ALWAYS_INLINE __m256 hi8(__m256i w) { return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xffff0000u))); }
ALWAYS_INLINE __m256 lo8(__m256i w) { return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)); }

/* acc (8 lanes) += the pair products of x and w (16 bf16 each; w split into wh, wl), high halves first */
ALWAYS_INLINE __m256 dot8(__m256 acc, __m256i x, __m256 wh, __m256 wl) {
    acc = _mm256_fmadd_ps(hi8(x), wh, acc);
    return _mm256_fmadd_ps(lo8(x), wl, acc);
}

/* the 16 lanes (a: 0-7, b: 8-15) summed by halves, then the bias */
static float lanes_sum(__m256 a, __m256 b, const float *bias, int o) {
    float s[16];
    _mm256_storeu_ps(s, a);
    _mm256_storeu_ps(s + 8, b);
    for (int h = 8; h >= 1; h /= 2)
        for (int j = 0; j < h; j++) s[j] += s[j + h];
    return bias ? s[0] + bias[o] : s[0];
}

/* One output (weight row wr, last chunk zero-padded in wt) against RN input
 * rows: each row's two accumulators get the FMAs a row alone gets (so the
 * bits do not depend on N), the weight chunk loaded and split once for all
 * RN rows: 2 x RN independent FMA chains (one row alone was two chains of
 * dependent FMAs, a quarter of the core's FMA rate). */
ALWAYS_INLINE void rows_dot(float *out, int OC, const uint16_t *x0, int ld, const uint16_t *wr, const uint16_t *wt, int full,
                            int rest, const float *bias, int o, const int pf, const int RN) {
    __m256 a[4], b[4];
    for (int n = 0; n < RN; n++) a[n] = _mm256_setzero_ps(), b[n] = _mm256_setzero_ps();
    for (int c = 0; c <= full; c++) {
        if (c == full && !rest) break;
        const uint16_t *wc = c < full ? wr + 32 * c : wt;
        if (pf && c < full) _mm_prefetch((const char *)(wr + 32 * c + PF_AHEAD), _MM_HINT_T0);
        const __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)wc);
        const __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(wc + 16));
        const __m256 w0h = hi8(w0), w0l = lo8(w0), w1h = hi8(w1), w1l = lo8(w1);
        for (int n = 0; n < RN; n++) {
            const uint16_t *xr = x0 + (size_t)n * ld + 32 * c; /* zero-padded to whole chunks */
            const __m256i xa = _mm256_loadu_si256((const __m256i *)(const void *)xr);
            const __m256i xb2 = _mm256_loadu_si256((const __m256i *)(const void *)(xr + 16));
            a[n] = dot8(a[n], xa, w0h, w0l);
            b[n] = dot8(b[n], xb2, w1h, w1l);
        }
    }
    for (int n = 0; n < RN; n++) out[(size_t)n * OC + o] = lanes_sum(a[n], b[n], bias, o);
}

void gpt2c_cpu_bf16_gemv_avx2(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N, int IC,
                              int OC, int o0, int o1) {
    const int full = IC / 32, rest = IC % 32;
    for (int o = o0; o < o1; o++) {
        const uint16_t *wr = w + (size_t)o * IC;
        uint16_t wt[32]; /* the row's last chunk, zero-padded: no read past the row */
        if (rest) {
            memcpy(wt, wr + 32 * full, sizeof(uint16_t) * (size_t)rest);
            memset(wt + rest, 0, sizeof(uint16_t) * (size_t)(32 - rest));
        }
        for (int n0 = 0; n0 < N; n0 += 4) {
            float *op = out + (size_t)n0 * OC;
            const uint16_t *x0 = xb + (size_t)n0 * ld;
            switch (N - n0 < 4 ? N - n0 : 4) {
            case 4: rows_dot(op, OC, x0, ld, wr, wt, full, rest, bias, o, n0 == 0, 4); break;
            case 3: rows_dot(op, OC, x0, ld, wr, wt, full, rest, bias, o, n0 == 0, 3); break;
            case 2: rows_dot(op, OC, x0, ld, wr, wt, full, rest, bias, o, n0 == 0, 2); break;
            default: rows_dot(op, OC, x0, ld, wr, wt, full, rest, bias, o, n0 == 0, 1); break;
            }
        }
    }
}
