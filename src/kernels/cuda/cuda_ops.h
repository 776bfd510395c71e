/* The cuda backend's entry points: C-callable, defined in the .cu files of
 * this folder, put into the op table by cuda_backend.c.  Semantics of each
 * are those of the op table (src/kernels/kernels.h) and of ref, on device
 * pointers; everything runs on the backend's one stream, in order. */
#ifndef GPT2C_CUDA_OPS_H
#define GPT2C_CUDA_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/status.h"
#include "kernels/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every training op, device entry and profiler hook of ops.h as cuda_<name>:
 * cuda_runtime.cu (device, stream, memory, errors), cuda_profile.cu (GPU
 * time in profiler scopes, NVTX, peaks), cuda_encoder.cu, cuda_layernorm.cu,
 * cuda_matmul.cu, cuda_attention.cu (flash attention, state = log-sum-exp
 * (B,NH,T)), cuda_pointwise.cu, cuda_xent.cu, cuda_optim.cu. */
#define GPT2C_CUDA_DECLARE(ret, name, params, args) ret gpt2c_cuda_##name params;
GPT2C_OPS_DEVICE_REQUIRED(GPT2C_CUDA_DECLARE)
#undef GPT2C_CUDA_DECLARE

/* cuda_runtime.cu: the backend's stream (a cudaStream_t), for NCCL to order
 * its collectives after the ops (src/dist/nccl.c); and the device this process
 * uses, chosen before the backend starts (its index modulo the device count;
 * default 0): ranks on one machine take its GPUs in turn */
void *gpt2c_cuda_stream_handle(void);
void gpt2c_cuda_select_device(int index);

/* cuda_matmul.cu: matmul precision, 0 = fp32 (default), 1 = tf32 tensor cores.
 * Until --precision tf32 exists, GPT2C_CUDA_TF32=1 in the environment turns it
 * on when the backend starts (cuda_runtime.cu). */
void gpt2c_cuda_set_matmul_tf32(int on);
int gpt2c_cuda_matmul_tf32(void);

/* cuda_attention_tiled.cu: 1 (default) = the register-tiled kernels take the
 * attention of 64-wide heads, 0 = the row kernels take every head size
 * (GPT2C_CUDA_ATT_SIMPLE=1 in the environment starts at 0) */
void gpt2c_cuda_set_attention_tiled(int on);

#ifdef __cplusplus
}
#endif
#endif
