/* Peak-measurement inner loops, one per ISA (peak_avx512.c, peak_avx2.c are
 * compiled with their ISA flags; called only after a CPUID check). */
#ifndef GPT2C_PROFILE_PEAK_KERNELS_H
#define GPT2C_PROFILE_PEAK_KERNELS_H

#include <stddef.h>

#include "gpt2c/peak.h"

/* The largest of v[0..n) (n >= 1): a peak is the fastest of its runs (peak.c,
 * peak_bw.c), as nothing runs the loops faster than the machine can. */
double gpt2c_peak_fastest(const double *v, int n);

/* Runs `iters` rounds of independent FMAs; returns a value that depends on
 * every accumulator (so the loop is not optimised away).  FLOPs done:
 * iters * peak_fma_flops_per_iter_<isa>. */
float gpt2c_peak_fma_avx512(long iters);
float gpt2c_peak_fma_avx2(long iters);
extern const double gpt2c_peak_fma_flops_per_iter_avx512;
extern const double gpt2c_peak_fma_flops_per_iter_avx2;
/* The same with vdpbf16ps (AVX512_BF16 only). */
float gpt2c_peak_dpbf16_avx512(long iters);
extern const double gpt2c_peak_dpbf16_flops_per_iter_avx512;
/* The same with TDPBF16PS on AMX tiles (peak_amx.c; built where the
 * compiler has -mamx-tile: GPT2C_HAVE_AMX_KERNEL; run only where
 * kernels/cpu/amx.h says the CPU and OS allow it). */
float gpt2c_peak_amx_bf16(long iters);
extern const double gpt2c_peak_amx_flops_per_iter;
/* Sum of n floats (n a multiple of 64), with several independent accumulators. */
float gpt2c_peak_sum_avx512(const float *x, size_t n);
float gpt2c_peak_sum_avx2(const float *x, size_t n);
/* dst = s * src ("scale": one read stream, one write stream) and dst = a + s * b
 * ("triad": two read streams, one write); n a multiple of 64, arrays 64-byte aligned. */
void gpt2c_peak_scale_avx512(float *dst, const float *src, float s, size_t n);
void gpt2c_peak_scale_avx2(float *dst, const float *src, float s, size_t n);
void gpt2c_peak_triad_avx512(float *dst, const float *a, const float *b, float s, size_t n);
void gpt2c_peak_triad_avx2(float *dst, const float *a, const float *b, float s, size_t n);
/* x = s * x in place ("update": one stream read and written back, as AdamW's
 * tensors are; no write-allocate read), n a multiple of 64, 64-byte aligned. */
void gpt2c_peak_update_avx512(float *x, float s, size_t n);
void gpt2c_peak_update_avx2(float *x, float s, size_t n);

/* peak_bw.c: fills read_gbs, scale_gbs, triad_gbs, update_gbs, mem_gbs, bw_threads, bw_mib
 * (all cores; median of `runs`). */
gpt2c_status gpt2c_peak_measure_bw(int runs, gpt2c_peak *o);
/* The in-place update stream's GB/s on all cores over one array of `mib`
 * MiB (GPT2C_PEAK_ARRAY_MIB overrides it, as for the probes above), the
 * faster of two double passes: a quick check of a cached memory ceiling
 * (~0.1 s at 256 MiB). */
double gpt2c_peak_update_spot(int mib);
/* mem_gbs = the best of the four streams */
void gpt2c_peak_set_mem(gpt2c_peak *o);

#endif
