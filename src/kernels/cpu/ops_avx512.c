/* The cpu ops compiled for avx512 (see ops_impl.h). */
#define OPS_ISA GPT2C_ISA_AVX512
#define OPS_ISA_NAME "avx512"
#define OPS_TABLE gpt2c_cpu_ops_avx512
#include "kernels/cpu/ops_impl.h"
