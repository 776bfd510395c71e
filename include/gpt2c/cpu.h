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
/* 1 if the CPU (and OS) can run AVX512_BF16 (vdpbf16ps); the bf16 GEMM
 * emulates it with FMAs elsewhere. */
int gpt2c_cpu_has_avx512bf16(void);
/* This CPU's signature, the key of every per-CPU cache (peak figures, GEMM
 * blocking): "vendor/family/model/stepping/flags", e.g.
 * "AuthenticAMD/25/17/1/avx2,fma,avx512f,avx512bf16,avx512vnni", from CPUID
 * (family and model are the displayed ones, extended fields folded in), so
 * two CPUs with the same marketing name still differ.  "other/<arch>" off
 * x86.  The buffer is static. */
const char *gpt2c_cpu_signature(void);
/* CPU brand string from CPUID ("unknown" where unavailable); the buffer is static. */
const char *gpt2c_cpu_brand(void);

/* ---- the optional BLAS backend (src/kernels/blas) ----
 * "path (config, core X)" of the cblas library the blas backend loaded (it
 * is loaded on first use, after correcting an OPENBLAS_CORETYPE that lacks
 * this CPU's AVX-512 kernels, which it then mentions), or "unavailable: why". */
const char *gpt2c_blas_describe(void);

#endif
