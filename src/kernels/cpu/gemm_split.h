/* Where the cpu GEMMs' threads spend their time, for the profiler: packing
 * operands into panels, and running micro-kernel tiles (what is left of a
 * matmul's thread time is waiting at its barrier, edge handling and
 * scheduling).  Off by default (one branch per panel); `gpt2c profile`
 * turns it on for its session.  Summed per OpenMP thread slot, so reading it
 * adds every thread's time (ns). */
#ifndef GPT2C_KERNELS_CPU_GEMM_SPLIT_H
#define GPT2C_KERNELS_CPU_GEMM_SPLIT_H

#include <stdint.h>

#include "gpt2c/core.h"

enum { GEMM_SPLIT_PACK, GEMM_SPLIT_KERNEL, GEMM_SPLIT_COUNT };

extern int gpt2c_gemm_split_on; /* read on the hot path; set by gpt2c_cpu_gemm_split_enable */
void gpt2c_cpu_gemm_split_enable(int on);
/* adds ns to this thread's slot of `what` */
void gpt2c_cpu_gemm_split_add(int what, uint64_t ns);
/* the sums over all slots since the start, ns: out[GEMM_SPLIT_PACK], out[GEMM_SPLIT_KERNEL] */
void gpt2c_cpu_gemm_split_read(double out[GEMM_SPLIT_COUNT]);

/* t0 for a timed section (0 when off), and its end */
static inline uint64_t gemm_split_t0(void) { return gpt2c_gemm_split_on ? gpt2c_now_ns() : 0; }
static inline void gemm_split_end(int what, uint64_t t0) {
    if (t0) gpt2c_cpu_gemm_split_add(what, gpt2c_now_ns() - t0);
}

#endif
