/* The cpu backend: SIMD (AVX-512, AVX2 or portable C) + OpenMP.  Each entry
 * forwards to the op table of the ISA in effect (chosen from CPUID, or forced
 * with gpt2c_cpu_force_isa), looked up on every call: one predictable branch.
 * Results do not depend on the thread count (see ops_impl.h, gemm.h). */
#include "gpt2c/cpu.h"
#include "kernels/backends.h"
#include "kernels/cpu/cpu_ops.h"

const gpt2c_kernels *gpt2c_cpu_ops_current(void) {
#if defined(__x86_64__) || defined(_M_X64)
    switch (gpt2c_cpu_isa()) {
    case GPT2C_ISA_AVX512: return &gpt2c_cpu_ops_avx512;
    case GPT2C_ISA_AVX2: return &gpt2c_cpu_ops_avx2;
    default: break;
    }
#endif
    return &gpt2c_cpu_ops_scalar;
}

/* one pass-through per training and fused op of ops.h */
#define CPU_PASS(ret, name, params, args) static ret name params { GPT2C_RETURN_##ret gpt2c_cpu_ops_current()->name args; }
GPT2C_OPS_TRAIN(CPU_PASS)
GPT2C_OPS_FUSED(CPU_PASS)
#undef CPU_PASS

static gpt2c_kernels CPU = {
    .name = "cpu",
    .isa = "auto",
    /* bf16 weights: bf16 GEMMs (gemm_bf16.h) */
    .formats = {.matmul_forward = GPT2C_FMT_BIT(GPT2C_FMT_BF16), .matmul_backward = GPT2C_FMT_BIT(GPT2C_FMT_BF16)},
#define CPU_ENTRY(ret, name, params, args) .name = name,
    GPT2C_OPS_TRAIN(CPU_ENTRY) GPT2C_OPS_FUSED(CPU_ENTRY)
#undef CPU_ENTRY
};

const gpt2c_kernels *gpt2c_kernels_cpu(void) {
    static int ready;
    if (!ready) {
        gpt2c_kernels_cpu_infer_fill(&CPU);
        ready = 1;
    }
    CPU.isa = gpt2c_isa_name(gpt2c_cpu_best_isa()); /* informational: the ISA dispatched by default */
    return &CPU;
}

GPT2C_BACKEND_REGISTER(cpu, gpt2c_kernels_cpu, gpt2c_backend_always)
