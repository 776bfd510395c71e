/* The cpu backend's per-ISA op tables (ops_impl.h compiled once per ISA);
 * cpu_backend.c dispatches to one of them on every call, so the ISA can be
 * forced at run time (gpt2c_cpu_force_isa). */
#ifndef GPT2C_CPU_OPS_H
#define GPT2C_CPU_OPS_H

#include "kernels/kernels.h"

extern const gpt2c_kernels gpt2c_cpu_ops_avx512; /* x86-64 only */
extern const gpt2c_kernels gpt2c_cpu_ops_avx2;   /* x86-64 only */
extern const gpt2c_kernels gpt2c_cpu_ops_scalar;

/* The table for the ISA in effect now. */
const gpt2c_kernels *gpt2c_cpu_ops_current(void);

/* Fills the cpu backend's inference entries (cpu_infer.c). */
void gpt2c_kernels_cpu_infer_fill(gpt2c_kernels *k);

#endif
