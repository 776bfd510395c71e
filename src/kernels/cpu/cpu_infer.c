/* The cpu backend's inference ops (KV-cache attention, decode GEMV, ...). */
#include "kernels/kernels.h"

void gpt2c_kernels_cpu_infer_fill(gpt2c_kernels *k) { (void)k; }
