/* See ref_gemm_bf16.h. */
#include "kernels/ref/ref_gemm_bf16.h"

#include <stddef.h>

#include "kernels/bf16.h"

void gpt2c_ref_gemm_bf16(int M, int N, int K, const float *A, long rsa, long csa, const float *B, long rsb, long csb,
                   float *C, long ldc, const float *bias, int accumulate) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = accumulate ? C[(size_t)i * ldc + j] : (bias ? bias[j] : 0.0f);
            for (int k = 0; k < K; k += 2) {
                /* products of two bf16 are exact in fp32: only the adds round */
                if (k + 1 < K) {
                    const float p = gpt2c_bf16_round(A[(size_t)i * rsa + (size_t)(k + 1) * csa]) *
                                    gpt2c_bf16_round(B[(size_t)(k + 1) * rsb + (size_t)j * csb]);
                    acc += p;
                }
                const float p = gpt2c_bf16_round(A[(size_t)i * rsa + (size_t)k * csa]) *
                                gpt2c_bf16_round(B[(size_t)k * rsb + (size_t)j * csb]);
                acc += p;
            }
            C[(size_t)i * ldc + j] = acc;
        }
}
