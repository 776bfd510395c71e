/* The cuda backend's op table.  Every entry is filled: a device backend never
 * inherits ref (gpt2c_kernels_get refuses an incomplete one), since ref's host
 * loops would dereference device pointers.  Nothing here touches the device;
 * device_init (called at selection) probes it. */
#include "kernels/cuda/cuda_ops.h"
#include "kernels/backends.h"

static const gpt2c_kernels CUDA = {
    .name = "cuda",
    .isa = "sm_90",
#define CUDA_ENTRY(ret, name, params, args) .name = gpt2c_cuda_##name,
    GPT2C_OPS_DEVICE_REQUIRED(CUDA_ENTRY)
#undef CUDA_ENTRY
};

const gpt2c_kernels *gpt2c_kernels_cuda(void) { return &CUDA; }

GPT2C_BACKEND_REGISTER(cuda, gpt2c_kernels_cuda, gpt2c_backend_always)
