/* CPU feature detection and the SIMD path (ISA) the cpu backend uses.
 *
 * The best ISA is read from CPUID once (x86-64: AVX-512F/BW/VL/DQ, else
 * AVX2+FMA, else scalar; other architectures: scalar, i.e. portable C that
 * the compiler vectorises for the baseline).  A lower one can be forced for
 * tests and benchmarks (`--isa`, or the environment variable GPT2C_ISA read
 * at the first query). */
#ifndef GPT2C_CPU_H
#define GPT2C_CPU_H

#include "gpt2c/status.h"

typedef enum gpt2c_isa { GPT2C_ISA_SCALAR = 0, GPT2C_ISA_AVX2 = 1, GPT2C_ISA_AVX512 = 2, GPT2C_ISA_COUNT = 3 } gpt2c_isa;

/* The best ISA this CPU (and OS) supports and this build has code for. */
gpt2c_isa gpt2c_cpu_best_isa(void);
/* The ISA in effect: the best one unless forced. */
gpt2c_isa gpt2c_cpu_isa(void);
/* "auto", "avx512", "avx2" or "scalar".  Fails (GPT2C_ERR_UNSUPPORTED) for
 * an ISA this CPU cannot run, GPT2C_ERR_ARG for an unknown name. */
gpt2c_status gpt2c_cpu_force_isa(const char *name);
const char *gpt2c_isa_name(gpt2c_isa isa);
/* Is this ISA runnable here? */
int gpt2c_cpu_has_isa(gpt2c_isa isa);
/* CPU brand string from CPUID ("unknown" where unavailable); the buffer is static. */
const char *gpt2c_cpu_brand(void);
/* The OpenBLAS core type matching this CPU for its sgemm ("SkylakeX" for any
 * AVX-512 CPU, "Haswell" for AVX2, NULL when there is no better advice). */
const char *gpt2c_cpu_openblas_coretype(void);

/* ---- the optional BLAS backend (src/kernels/blas; stubs when not built) ----
 * OpenBLAS picks its kernels from OPENBLAS_CORETYPE when the process starts
 * (in a library constructor, before main), so a wrong value in the
 * environment (e.g. Haswell on an AVX-512 CPU: about half the sgemm speed)
 * can only be fixed by re-executing with the right one.
 * gpt2c_blas_better_coretype() says which value to re-exec with, or NULL when
 * the running core is fine (or the BLAS is not OpenBLAS). */
const char *gpt2c_blas_describe(void); /* "OpenBLAS 0.3.21 ... (core Haswell)", or "unavailable: <why>" */
const char *gpt2c_blas_better_coretype(void);

#endif
