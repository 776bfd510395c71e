/* The decode matmul (few rows) on AVX2 + FMA: the portable loop of
 * cpu_infer.c (8 partial sums per dot product, lane k taking channels
 * i + k, summed as ((0+1)+(2+3))+((4+5)+(6+7)) then the bias) in one ymm
 * accumulator with FMAs, each weight row streamed with a prefetch 4 KiB
 * ahead; the base build of that loop (SSE2, no FMA) held decode to ~13
 * GB/s.  Many rows go to the fp32 GEMM (cpu_infer.c). */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/cpu_infer.h"
#include "kernels/kernels.h"

#define PF_AHEAD 1024 /* floats ahead of the chunk being read (4 KiB) */

void gpt2c_cpu_infer_matmul_avx2(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC,
                                 int act, int o0, int o1) {
    for (int o = o0; o < o1; o++)
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * IC, *wr = w + (size_t)o * IC;
            __m256 acc = _mm256_setzero_ps();
            int i = 0;
            for (; i + 8 <= IC; i += 8) {
                if (n == 0 && i % 16 == 0) _mm_prefetch((const char *)(wr + i + PF_AHEAD), _MM_HINT_T0);
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(wr + i), acc);
            }
            float a[8];
            _mm256_storeu_ps(a, acc);
            for (; i < IC; i++) a[0] = fmaf(x[i], wr[i], a[0]);
            float y = (bias ? bias[o] : 0.0f) + ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
            if (act == GPT2C_ACT_GELU) y = 0.5f * y * (1.0f + tanhf(0.7978845608028654f * (y + 0.044715f * y * y * y)));
            out[(size_t)n * OC + o] = y;
        }
}
