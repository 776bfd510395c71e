/* The blas backend's GEMMs, exposed for `gpt2c bench gemm` (only built with GPT2C_HAVE_BLAS). */
#ifndef GPT2C_BLAS_H
#define GPT2C_BLAS_H

#include "kernels/cpu/gemm.h"

/* as gpt2c_cpu_linear_gemm (gemm.h), through cblas_sgemm */
void gpt2c_blas_linear_gemm(gemm_linear_op op, float *C, const float *A, const float *B, int N, int IC, int OC);
/* whether the loaded cblas library has cblas_sbgemm (a bf16 GEMM), in words */
const char *gpt2c_blas_sbgemm_status(void);

#endif
