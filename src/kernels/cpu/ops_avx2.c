/* The cpu ops compiled for avx2 (see ops_impl.h). */
#define OPS_ISA GPT2C_ISA_AVX2
#define OPS_ISA_NAME "avx2"
#define OPS_TABLE gpt2c_cpu_ops_avx2
#include "kernels/cpu/ops_impl.h"
