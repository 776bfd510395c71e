/* The cuda backend's runtime side: device probe, the one stream, device
 * memory and copies, error latching, the scratch workspace, cuBLASLt handle. */
#include <cublasLt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/status.h"
#include "kernels/cuda/cuda_common.cuh"

static cudaStream_t g_stream;
static cublasLtHandle_t g_lt;
static void *g_lt_ws;
static const size_t LT_WS_BYTES = (size_t)32 << 20;
static void *g_scratch;
static size_t g_scratch_bytes;
static int g_ready;
static int g_device_hint; /* gpt2c_cuda_select_device: this process's device, modulo the count */
static char g_err[256];

cudaStream_t gpt2c_cuda_stream(void) { return g_stream; }
extern "C" void *gpt2c_cuda_stream_handle(void) { return (void *)g_stream; }
extern "C" void gpt2c_cuda_select_device(int index) { g_device_hint = index < 0 ? 0 : index; }
void *gpt2c_cuda_lt_handle(void) { return (void *)g_lt; }
void *gpt2c_cuda_lt_workspace(size_t *bytes) {
    *bytes = LT_WS_BYTES;
    return g_lt_ws;
}

void gpt2c_cuda_latch_msg(const char *what, const char *msg) {
    if (!g_err[0]) snprintf(g_err, sizeof g_err, "%s: %s", what, msg);
}
void gpt2c_cuda_latch(cudaError_t e, const char *what) {
    if (e != cudaSuccess) gpt2c_cuda_latch_msg(what, cudaGetErrorString(e));
}

gpt2c_status gpt2c_cuda_device_check(void) {
    gpt2c_cuda_latch(cudaGetLastError(), "cuda");
    if (!g_err[0]) return GPT2C_OK;
    gpt2c_status st = gpt2c_fail(GPT2C_ERR_IO, "backend 'cuda': %s", g_err);
    g_err[0] = 0;
    return st;
}

gpt2c_status gpt2c_cuda_device_sync(void) {
    gpt2c_cuda_latch(cudaStreamSynchronize(g_stream), "cuda");
    return gpt2c_cuda_device_check();
}

/* An empty kernel: if the binary has no image for this GPU, launching it
 * says so at selection rather than at the first op. */
static __global__ void probe_kernel(void) {}

gpt2c_status gpt2c_cuda_device_init(void) {
    if (g_ready) return GPT2C_OK;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend 'cuda': no CUDA device available (cudaGetDeviceCount: %s)",
                          cudaGetErrorString(e));
    if (n == 0)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend 'cuda': no CUDA device available (cudaGetDeviceCount: 0 devices)");
    cudaDeviceProp prop;
    const int dev = g_device_hint % n;
    if ((e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess || (e = cudaSetDevice(dev)) != cudaSuccess)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend 'cuda': device %d: %s", dev, cudaGetErrorString(e));
    probe_kernel<<<1, 1>>>();
    if ((e = cudaGetLastError()) != cudaSuccess || (e = cudaDeviceSynchronize()) != cudaSuccess)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                          "backend 'cuda': %s (sm_%d%d) cannot run this build's kernels: %s (rebuild with "
                          "-DGPT2C_CUDA_ARCHITECTURES=%d%d)",
                          prop.name, prop.major, prop.minor, cudaGetErrorString(e), prop.major, prop.minor);
    if ((e = cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking)) != cudaSuccess)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend 'cuda': cudaStreamCreate: %s", cudaGetErrorString(e));
    cublasStatus_t bs = cublasLtCreate(&g_lt);
    if (bs != CUBLAS_STATUS_SUCCESS)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend 'cuda': cublasLtCreate: %s", cublasLtGetStatusString(bs));
    if ((e = cudaMalloc(&g_lt_ws, LT_WS_BYTES)) != cudaSuccess)
        return gpt2c_fail(GPT2C_ERR_NOMEM, "backend 'cuda': cuBLASLt workspace: %s", cudaGetErrorString(e));
    const char *tf32 = getenv("GPT2C_CUDA_TF32"); /* until --precision tf32: TF32 tensor cores in the matmuls */
    if (tf32) gpt2c_cuda_set_matmul_tf32(strcmp(tf32, "1") == 0);
    g_ready = 1;
    return GPT2C_OK;
}

void *gpt2c_cuda_dev_alloc(size_t bytes, const char *what) {
    void *p = NULL;
    size_t rounded = bytes ? bytes : 256;
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* out of memory is not sticky: clear it */
        gpt2c_fail(GPT2C_ERR_NOMEM, "%s: cannot allocate %.1f MiB on the GPU (%s)", what, bytes / 1048576.0,
                   cudaGetErrorString(e));
        return NULL;
    }
    if ((e = cudaMemsetAsync(p, 0, rounded, g_stream)) != cudaSuccess) {
        cudaFree(p);
        gpt2c_fail(GPT2C_ERR_IO, "%s: cudaMemset: %s", what, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

void gpt2c_cuda_dev_free(void *p) {
    if (p) gpt2c_cuda_latch(cudaFree(p), "cudaFree");
}

gpt2c_status gpt2c_cuda_memcpy_h2d(void *dst, const void *src, size_t bytes) {
    /* from pageable memory this returns once src has been staged */
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream);
    if (e != cudaSuccess) {
        gpt2c_cuda_latch(e, "upload");
        return gpt2c_fail(GPT2C_ERR_IO, "backend 'cuda': upload of %zu bytes: %s", bytes, cudaGetErrorString(e));
    }
    return GPT2C_OK;
}

gpt2c_status gpt2c_cuda_memcpy_d2h(void *dst, const void *src, size_t bytes) {
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g_stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(g_stream);
    if (e != cudaSuccess)
        return gpt2c_fail(GPT2C_ERR_IO, "backend 'cuda': download of %zu bytes: %s", bytes, cudaGetErrorString(e));
    return GPT2C_OK;
}

void *gpt2c_cuda_scratch(size_t bytes) {
    if (bytes <= g_scratch_bytes) return g_scratch;
    if (g_scratch) cudaFree(g_scratch); /* waits for the device: only while shapes are new */
    g_scratch = NULL;
    g_scratch_bytes = 0;
    size_t want = bytes + bytes / 4; /* a little headroom against creeping growth */
    cudaError_t e = cudaMalloc(&g_scratch, want);
    if (e != cudaSuccess) {
        cudaGetLastError();
        gpt2c_cuda_latch(e, "scratch workspace");
        g_scratch = NULL;
        return NULL;
    }
    g_scratch_bytes = want;
    return g_scratch;
}
