/* The oracle of the bf16 GEMMs: the plain loop of gemm_bf16.h's arithmetic.
 * A and B are fp32 (element (i,k) at A[i*rsa + k*csa], (k,j) at
 * B[k*rsb + j*csb]), each rounded to bf16 as it is read; for each pair of k,
 * the odd product is added first, then the even one, in fp32. */
#ifndef GPT2C_REF_GEMM_BF16_H
#define GPT2C_REF_GEMM_BF16_H

void gpt2c_ref_gemm_bf16(int M, int N, int K, const float *A, long rsa, long csa, const float *B, long rsb, long csb,
                   float *C, long ldc, const float *bias, int accumulate);

#endif
