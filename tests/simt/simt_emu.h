/* A small SIMT emulator for tests: runs the device code of a CUDA kernel on
 * the CPU, one block at a time, its threads as coroutines (ucontext) that
 * switch at __syncthreads() and at warp shuffles.  Enough of CUDA's surface
 * for kernels written against it (cuda_attention_tiled.cuh): the qualifiers,
 * float4, threadIdx/blockIdx/gridDim, __syncthreads, __shfl_xor_sync, and
 * `extern __shared__` arrays, which become ordinary globals the test defines.
 *
 * It checks a kernel's arithmetic and indexing, and its barriers: threads run
 * between barriers one after another, in ascending or (SIMT_EMU_REVERSE=1)
 * descending order, so a missing __syncthreads shows up as a wrong result in
 * one order or the other.  A warp whose lanes meet different barriers, or a
 * block that can go no further, stops the test.  It says nothing of speed. */
#ifndef GPT2C_TESTS_SIMT_EMU_H
#define GPT2C_TESTS_SIMT_EMU_H

#include <math.h>

#include <functional>

#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
#define __shared__

struct float4 {
    float x, y, z, w;
};
static inline float4 make_float4(float a, float b, float c, float d) { return float4{a, b, c, d}; }
struct simt_dim3 {
    unsigned x, y, z;
};
extern simt_dim3 threadIdx, blockIdx, blockDim, gridDim;

void __syncthreads();
float __shfl_xor_sync(unsigned mask, float v, int lane_mask);

/* Runs body (which calls the kernel) for every block of grid, with `threads`
 * threads per block (a multiple of 32, at most 1024). */
void simt_launch(simt_dim3 grid, unsigned threads, const std::function<void()> &body);

#endif
