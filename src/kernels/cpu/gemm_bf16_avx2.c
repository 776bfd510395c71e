/* The AVX2+FMA bf16 GEMM (gemm_bf16.h): no pair micro-kernel of its own.  The
 * driver and the bf16 attention expand their pair panels to fp32 (each pair
 * word's high half, odd k, then its low half, even k: the order of
 * vdpbf16ps) and run the fp32 6 x 16 kernel on them, the same arithmetic
 * with no unpacking in the inner loop. */
#include "kernels/cpu/gemm_bf16.h"

/* the driver runs its GEMMs on fp32 panels with the fp32 6 x 16 kernel */
const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_avx2 = {"avx2-fp32", 6,    16,   NULL, NULL,
                                                          NULL,        NULL, NULL, &gpt2c_gemm_kernel_avx2, NULL, NULL};
