/* Profiler integration: GPU time per op scope from CUDA events, NVTX ranges
 * named after the op (visible in Nsight Systems), and the device's peaks.
 *
 * Each scope i of the profiler's event buffer owns the event pair (2i, 2i+1),
 * created on first use and reused after a reset.  A reference event recorded
 * at a synchronised moment maps GPU time onto the host clock:
 *   t0 = ref_ns + elapsed(ref, begin_i),  t1 = t0 + elapsed(begin_i, end_i)
 * (durations measured pairwise, so they keep the events' ~0.5 us resolution
 * however far from ref they lie).  Host-only scopes (data loading) keep their
 * host times. */
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_common.cuh"
extern "C" {
#include "gpt2c/profile.h"
#include "kernels/kernels.h"
}

typedef struct {
    cudaEvent_t *ev;   /* 2 per event slot, NULL until first used */
    uint8_t *recorded; /* slot i has a recorded pair not yet resolved */
    size_t cap;
    cudaEvent_t ref;
    uint64_t ref_ns;
} prof_state;

static int on_gpu(const gpt2c_prof_event *e) { return e->op != GPT2C_OP_DATA_LOAD; }

/* records `ref` with the stream drained, so its GPU time is "now" on the host */
static gpt2c_status set_ref(prof_state *s) {
    cudaError_t e = cudaStreamSynchronize(gpt2c_cuda_stream());
    if (e == cudaSuccess) e = cudaEventRecord(s->ref, gpt2c_cuda_stream());
    if (e == cudaSuccess) e = cudaEventSynchronize(s->ref);
    s->ref_ns = gpt2c_now_ns();
    if (e != cudaSuccess) return gpt2c_fail(GPT2C_ERR_IO, "profiler (cuda): %s", cudaGetErrorString(e));
    return GPT2C_OK;
}

static void on_begin(gpt2c_profiler *p, gpt2c_prof_event *e) {
    prof_state *s = (prof_state *)p->ext;
    nvtxRangePushA(gpt2c_op_name((gpt2c_op)e->op));
    size_t i = (size_t)(e - p->events);
    if (!on_gpu(e) || i >= s->cap) return;
    if (!s->ev[2 * i]) {
        if (cudaEventCreate(&s->ev[2 * i]) != cudaSuccess || cudaEventCreate(&s->ev[2 * i + 1]) != cudaSuccess) {
            gpt2c_cuda_latch(cudaGetLastError(), "profiler events");
            return;
        }
    }
    gpt2c_cuda_latch(cudaEventRecord(s->ev[2 * i], gpt2c_cuda_stream()), "profiler");
    s->recorded[i] = 1;
}

static void on_end(gpt2c_profiler *p, gpt2c_prof_event *e) {
    prof_state *s = (prof_state *)p->ext;
    size_t i = (size_t)(e - p->events);
    if (on_gpu(e) && i < s->cap && s->recorded[i]) gpt2c_cuda_latch(cudaEventRecord(s->ev[2 * i + 1], gpt2c_cuda_stream()), "profiler");
    nvtxRangePop();
}

extern "C" void gpt2c_cuda_prof_detach(gpt2c_profiler *p) {
    if (p->on_begin != on_begin) return;
    prof_state *s = (prof_state *)p->ext;
    for (size_t i = 0; i < 2 * s->cap; i++)
        if (s->ev[i]) cudaEventDestroy(s->ev[i]);
    cudaEventDestroy(s->ref);
    free(s->ev);
    free(s->recorded);
    free(s);
    p->ext = NULL;
    p->on_begin = p->on_end = NULL;
}

extern "C" gpt2c_status gpt2c_cuda_prof_attach(gpt2c_profiler *p) {
    if (p->on_begin == on_begin) return GPT2C_OK;
    if (p->on_begin || p->on_end || p->ext)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "profiler: GPU timing cannot attach: the profiler's hooks are in use");
    prof_state *s = (prof_state *)calloc(1, sizeof *s);
    if (!s) return gpt2c_fail(GPT2C_ERR_NOMEM, "profiler (cuda): out of memory");
    s->cap = p->cap;
    s->ev = (cudaEvent_t *)calloc(2 * (p->cap ? p->cap : 1), sizeof(cudaEvent_t));
    s->recorded = (uint8_t *)calloc(p->cap ? p->cap : 1, 1);
    cudaError_t e = cudaEventCreate(&s->ref);
    if (!s->ev || !s->recorded || e != cudaSuccess) {
        free(s->ev);
        free(s->recorded);
        free(s);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "profiler (cuda): cannot create events");
    }
    p->ext = s;
    p->on_begin = on_begin;
    p->on_end = on_end;
    gpt2c_status st = set_ref(s);
    if (st != GPT2C_OK) gpt2c_cuda_prof_detach(p);
    return st;
}

extern "C" gpt2c_status gpt2c_cuda_prof_resolve(gpt2c_profiler *p) {
    if (p->on_begin != on_begin) return gpt2c_fail(GPT2C_ERR_ARG, "profiler: GPU timing is not attached");
    prof_state *s = (prof_state *)p->ext;
    cudaError_t e = cudaStreamSynchronize(gpt2c_cuda_stream());
    if (e != cudaSuccess) return gpt2c_fail(GPT2C_ERR_IO, "profiler (cuda): %s", cudaGetErrorString(e));
    for (size_t i = 0; i < p->n && i < s->cap; i++) {
        gpt2c_prof_event *ev = &p->events[i];
        if (!s->recorded[i]) continue;
        s->recorded[i] = 0;
        if (ev->t1_ns == 0) continue; /* scope never closed */
        float start_ms = 0, dur_ms = 0;
        if (cudaEventElapsedTime(&start_ms, s->ref, s->ev[2 * i]) != cudaSuccess ||
            cudaEventElapsedTime(&dur_ms, s->ev[2 * i], s->ev[2 * i + 1]) != cudaSuccess) {
            cudaGetLastError();
            continue; /* e.g. recorded before this ref: keep the host times */
        }
        ev->t0_ns = s->ref_ns + (uint64_t)((double)start_ms * 1e6);
        ev->t1_ns = ev->t0_ns + (uint64_t)((double)dur_ms * 1e6);
    }
    return set_ref(s); /* re-anchor: the next step's offsets stay small */
}

/* Dense FLOPs per clock per SM: fp32 (CUDA cores) and bf16 tensor cores
 * (TF32 is half of bf16 on these parts). */
static void per_sm_rates(int major, int minor, double *fp32, double *bf16) {
    int cc = major * 10 + minor;
    *fp32 = cc == 80 ? 128 : 256;
    if (cc >= 100) *bf16 = 8192;
    else if (cc >= 90) *bf16 = 4096;
    else if (cc == 80) *bf16 = 2048;
    else if (cc == 89) *bf16 = 1024;
    else if (cc == 86 || cc == 87) *bf16 = 512;
    else *bf16 = 0;
}

extern "C" gpt2c_status gpt2c_cuda_device_peaks(gpt2c_device_peaks *out) {
    memset(out, 0, sizeof *out);
    int dev = 0, sms = 0, clk_khz = 0, memclk_khz = 0, bus_bits = 0;
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&memclk_khz, cudaDevAttrMemoryClockRate, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
    if (e != cudaSuccess) return gpt2c_fail(GPT2C_ERR_IO, "backend 'cuda': device peaks: %s", cudaGetErrorString(e));
    double f32, b16;
    per_sm_rates(prop.major, prop.minor, &f32, &b16);
    const double clk = clk_khz * 1e3;
    snprintf(out->name, sizeof out->name, "%.60s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor, sms);
    out->fp32_flops = f32 * sms * clk;
    out->bf16_flops = b16 * sms * clk;
    out->tf32_flops = out->bf16_flops / 2;
    out->mem_bytes_per_s = 2.0 * memclk_khz * 1e3 * bus_bits / 8; /* double data rate */
    const int tf32 = gpt2c_cuda_matmul_tf32();
    out->matmul_flops = tf32 ? out->tf32_flops : out->fp32_flops;
    snprintf(out->matmul_precision, sizeof out->matmul_precision, "%s", tf32 ? "tf32" : "fp32");
    return GPT2C_OK;
}
