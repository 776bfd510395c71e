/* The cuda backend's op table.  Every entry is filled: a device backend never
 * inherits ref (gpt2c_kernels_get refuses an incomplete one), since ref's host
 * loops would dereference device pointers.  Nothing here touches the device;
 * device_init (called at selection) probes it. */
#include "kernels/cuda/cuda_ops.h"
#include "kernels/kernels.h"

static const gpt2c_kernels CUDA = {
    .name = "cuda",
    .isa = "sm_90",
    .encoder_forward = cuda_encoder_forward,
    .encoder_backward = cuda_encoder_backward,
    .layernorm_forward = cuda_layernorm_forward,
    .layernorm_backward = cuda_layernorm_backward,
    .residual_layernorm_forward = cuda_residual_layernorm_forward,
    .matmul_forward = cuda_matmul_forward,
    .matmul_backward = cuda_matmul_backward,
    .attention_state_floats = cuda_attention_state_floats,
    .attention_forward = cuda_attention_forward,
    .attention_scratch_floats = cuda_attention_scratch_floats,
    .attention_backward = cuda_attention_backward,
    .gelu_forward = cuda_gelu_forward,
    .gelu_backward = cuda_gelu_backward,
    .residual_forward = cuda_residual_forward,
    .softmax_xent_forward = cuda_softmax_xent_forward,
    .softmax_xent_backward = cuda_softmax_xent_backward,
    .sumsq = cuda_sumsq,
    .adamw = cuda_adamw,
    .zero = cuda_zero,
    .device_init = cuda_device_init,
    .dev_alloc = cuda_dev_alloc,
    .dev_free = cuda_dev_free,
    .memcpy_h2d = cuda_memcpy_h2d,
    .memcpy_d2h = cuda_memcpy_d2h,
    .device_check = cuda_device_check,
    .prof_attach = cuda_prof_attach,
    .prof_resolve = cuda_prof_resolve,
    .prof_detach = cuda_prof_detach,
    .device_peaks = cuda_device_peaks,
};

const gpt2c_kernels *gpt2c_kernels_cuda(void) { return &CUDA; }
