/* Descriptors of the optional backends this build was configured without
 * (each built backend registers itself in its folder). */
#include "gpt2c/cpu.h"
#include "kernels/backends.h"

const char *gpt2c_backend_always(void) { return ""; }

#if !defined(GPT2C_HAVE_BLAS) || !defined(GPT2C_HAVE_CUDA)
static const gpt2c_kernels *absent(void) { return NULL; }
#endif

#ifndef GPT2C_HAVE_BLAS
GPT2C_BACKEND_REGISTER(blas, absent, gpt2c_blas_describe)
#endif

#ifndef GPT2C_HAVE_CUDA
static const char *cuda_why(void) {
    return "built without CUDA (nvcc not found at configure time, or -DGPT2C_CUDA=OFF)";
}
GPT2C_BACKEND_REGISTER(cuda, absent, cuda_why)
const gpt2c_kernels *gpt2c_kernels_cuda(void) { return NULL; }
#endif
