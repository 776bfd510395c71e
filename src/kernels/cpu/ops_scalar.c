/* The cpu ops compiled for scalar (see ops_impl.h). */
#define OPS_ISA GPT2C_ISA_SCALAR
#define OPS_ISA_NAME "scalar"
#define OPS_TABLE gpt2c_cpu_ops_scalar
#include "kernels/cpu/ops_impl.h"
