/* vdpbf16ps matrix-vector product (infer_bf16.h): per output, up to 4 input
 * rows share each 32-element load of the weight row; each (row, output)
 * keeps one 16-lane accumulator, summed by halves at the end. */
#include <immintrin.h>

#include "kernels/cpu/infer_bf16.h"

static inline float lanes_sum(__m512 v, const float *bias, int o) {
    float a[16];
    _mm512_storeu_ps(a, v);
    for (int h = 8; h >= 1; h /= 2)
        for (int j = 0; j < h; j++) a[j] += a[j + h];
    return bias ? a[0] + bias[o] : a[0];
}

void gpt2c_cpu_bf16_gemv_avx512bf16(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N,
                                    int IC, int OC, int o0, int o1) {
    const int full = IC / 32, rest = IC % 32;
    const __mmask32 tail = rest ? (__mmask32)((1u << rest) - 1u) : 0;
    for (int n0 = 0; n0 < N; n0 += 4) {
        const int nr = N - n0 < 4 ? N - n0 : 4;
        const uint16_t *x0 = xb + (size_t)n0 * ld;
        for (int o = o0; o < o1; o++) {
            const uint16_t *wr = w + (size_t)o * IC;
            __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
            if (o + 4 < o1) _mm_prefetch((const char *)(wr + 4 * (size_t)IC), _MM_HINT_T0);
            for (int c = 0; c <= full; c++) {
                if (c == full && !rest) break;
                const __m512i wv = c < full ? _mm512_loadu_si512(wr + 32 * c) : _mm512_maskz_loadu_epi16(tail, wr + 32 * c);
                for (int r = 0; r < nr; r++) {
                    const __m512i xv = _mm512_loadu_si512(x0 + (size_t)r * ld + 32 * c);
                    acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)xv, (__m512bh)wv);
                }
            }
            for (int r = 0; r < nr; r++) out[(size_t)(n0 + r) * OC + o] = lanes_sum(acc[r], bias, o);
        }
    }
}
