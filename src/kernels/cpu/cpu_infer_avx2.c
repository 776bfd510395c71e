/* The decode matmul (few rows) on AVX2 + FMA: the portable loop of
 * cpu_infer.c (8 partial sums per dot product, lane k taking channels
 * i + k, summed as ((0+1)+(2+3))+((4+5)+(6+7)) then the bias) in a ymm
 * accumulator per dot product with FMAs, tiles of up to 2 outputs x 4 rows,
 * each weight row streamed with a prefetch 4 KiB ahead; the base build of
 * that loop (SSE2, no FMA) held decode to ~13 GB/s.  Many rows go to the
 * fp32 GEMM (cpu_infer.c). */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/cpu_infer.h"
#include "kernels/kernels.h"

#define PF_AHEAD 1024 /* floats ahead of the chunk being read (4 KiB) */

/* RO outputs (weight rows w0, IC apart) x RN input rows (x0, IC apart): one
 * accumulator per (row, output), each the same sequence of FMAs, tail and
 * reduction as a dot product computed alone, so the bits do not depend on the
 * tiling.  RO x RN independent FMA chains instead of one: a single chain ran
 * at one FMA per latency (4 cycles), an eighth of the core's FMA rate, at every
 * batch; each weight vector now also feeds RN rows.  pf: prefetch the weight
 * rows ahead (the first pass over them). */
static inline __attribute__((always_inline)) void dots(float *out, int OC, const float *x0, const float *w0, int IC,
                                                        const float *bias, int act, int o, const int pf, const int RN,
                                                        const int RO) {
    __m256 acc[2][4];
    for (int r = 0; r < RO; r++)
        for (int n = 0; n < RN; n++) acc[r][n] = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= IC; i += 8) {
        __m256 wv[2];
        for (int r = 0; r < RO; r++) {
            if (pf && i % 16 == 0) _mm_prefetch((const char *)(w0 + (size_t)r * IC + i + PF_AHEAD), _MM_HINT_T0);
            wv[r] = _mm256_loadu_ps(w0 + (size_t)r * IC + i);
        }
        for (int n = 0; n < RN; n++) {
            const __m256 xv = _mm256_loadu_ps(x0 + (size_t)n * IC + i);
            for (int r = 0; r < RO; r++) acc[r][n] = _mm256_fmadd_ps(xv, wv[r], acc[r][n]);
        }
    }
    for (int r = 0; r < RO; r++)
        for (int n = 0; n < RN; n++) {
            const float *x = x0 + (size_t)n * IC, *wr = w0 + (size_t)r * IC;
            float a[8];
            _mm256_storeu_ps(a, acc[r][n]);
            for (int k = i; k < IC; k++) a[0] = fmaf(x[k], wr[k], a[0]);
            float y = (bias ? bias[o + r] : 0.0f) + ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
            if (act == GPT2C_ACT_GELU) y = 0.5f * y * (1.0f + tanhf(0.7978845608028654f * (y + 0.044715f * y * y * y)));
            out[(size_t)n * OC + o + r] = y;
        }
}

#define DOTS_ROWS(RO)                                                                                                  \
    switch (N - n0 < 4 ? N - n0 : 4) {                                                                                 \
    case 4: dots(op, OC, x0, w0, IC, bias, act, o, n0 == 0, 4, RO); break;                                           \
    case 3: dots(op, OC, x0, w0, IC, bias, act, o, n0 == 0, 3, RO); break;                                           \
    case 2: dots(op, OC, x0, w0, IC, bias, act, o, n0 == 0, 2, RO); break;                                           \
    default: dots(op, OC, x0, w0, IC, bias, act, o, n0 == 0, 1, RO); break;                                          \
    }

void gpt2c_cpu_infer_matmul_avx2(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC,
                                 int act, int o0, int o1) {
    int o = o0;
    /* pairs of outputs from 4 rows on; fewer rows stream one weight row at a time (two interleaved rows ran
     * batch-1 decode at ~0.7x) */
    if (N >= 4)
        for (; o + 2 <= o1; o += 2)
            for (int n0 = 0; n0 < N; n0 += 4) {
                float *op = out + (size_t)n0 * OC;
                const float *x0 = inp + (size_t)n0 * IC, *w0 = w + (size_t)o * IC;
                DOTS_ROWS(2)
            }
    for (; o < o1; o++)
        for (int n0 = 0; n0 < N; n0 += 4) {
            float *op = out + (size_t)n0 * OC;
            const float *x0 = inp + (size_t)n0 * IC, *w0 = w + (size_t)o * IC;
            DOTS_ROWS(1)
        }
}
