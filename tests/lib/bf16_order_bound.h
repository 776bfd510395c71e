/* Comparing a bf16 GEMM that may sum in another order than the oracle
 * (gpt2c_ref_gemm_bf16: odd product of a pair first).  Where the cpu
 * backend's bf16 GEMM runs on AMX tiles (kernels/cpu/gemm_bf16_amx.h: even
 * product first, and the hardware's internal order is not promised) the
 * tests that hold the other engines to the oracle's bits hold it to the
 * recursive-sum bound instead: each of two orders is within
 * K 2^-24 (sum |a b| + |c0|) of the exact sum, so they are within twice
 * that of each other.  Include after testutil.h. */
#ifndef GPT2C_TESTS_BF16_ORDER_BOUND_H
#define GPT2C_TESTS_BF16_ORDER_BOUND_H

#include "kernels/bf16.h"
#include "kernels/cpu/bf16_engine.h"

/* 1 if gpt2c_cpu_gemm_bf16 would run an M-row GEMM on AMX tiles */
static inline int tu_bf16_gemm_on_amx(int M) { return gpt2c_cpu_gemm_bf16_amx_tiles(gpt2c_cpu_isa(), M) != NULL; }

/* max over C (M x N, row stride ldc) of |got - want| / (2 (K+2) 2^-24 S),
 * S = sum_k |bf(A(i,k)) bf(B(k,j))| + |c0(i,j) or bias(j)| (c0, bias may be
 * NULL); > 1: outside the bound (NaN counts as outside). */
static inline double tu_bf16_order_err(int M, int N, int K, const float *A, long ars, long acs, const float *B, long brs,
                                       long bcs, const float *bias, const float *c0, const float *got, const float *want,
                                       long ldc) {
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = c0 ? fabs(c0[i * ldc + j]) : bias ? fabs(bias[j]) : 0;
            for (int k = 0; k < K; k++)
                s += fabs((double)gpt2c_bf16_round(A[i * ars + k * acs]) * gpt2c_bf16_round(B[k * brs + j * bcs]));
            const double e = fabs((double)got[i * ldc + j] - want[i * ldc + j]), b = 2.0 * (K + 2) * 0x1p-24 * s + 1e-30;
            const double r = e == e ? e / b : 1e30;
            if (r > worst) worst = r;
        }
    return worst;
}

#endif
