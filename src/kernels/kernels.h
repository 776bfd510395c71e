/* The op table: every backend (ref, cpu, blas, cuda) fills one of these.
 *
 * Model code calls k->op(...) and never a backend routine directly.  The
 * entries, their shapes and conventions are listed once in ops.h; a host
 * backend leaves an entry NULL to inherit the ref implementation (the
 * registry fills the gaps), so a new backend can start with one fast op.
 * Backends register themselves in backends.h's list. */
#ifndef GPT2C_KERNELS_H
#define GPT2C_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/format.h"
#include "gpt2c/status.h"
#include "kernels/ops.h"

enum { GPT2C_ACT_NONE = 0, GPT2C_ACT_GELU = 1 }; /* epilogues of matmul_infer_range */
/* A flag OR'd into matmul_infer_range's act, only for a table with
 * infer_bf16_input set and a bf16 weight, or a quantized one while
 * gpt2c_qmatmul_bf16_prefill() (gpt2c/quant.h): inp then points to the N
 * input rows already rounded to bf16 in the table's form (kernels/bf16_rows.h:
 * bf16 values, or fp32 ones in the GEMM's pair order) -- rounded once per
 * matmul instead of once per range. */
enum { GPT2C_ACT_IN_BF16 = 0x100 };

struct gpt2c_profiler;

/* A device's peak rates (0 where unknown), for MFU and the roofline. */
typedef struct gpt2c_device_peaks {
    char name[96];                                  /* e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)" */
    double fp32_flops, tf32_flops, bf16_flops;      /* dense FLOP/s at the max clock */
    double mem_bytes_per_s;                         /* DRAM bandwidth */
    double matmul_flops;                            /* the peak of the precision the matmuls run in now */
    char matmul_precision[8];                       /* that precision: "fp32", "tf32" */
} gpt2c_device_peaks;

/* Which weight formats each typed op of a table takes, one bit per
 * gpt2c_format (GPT2C_FMT_BIT); f32 is always taken, so 0 means f32 only. */
typedef struct gpt2c_op_formats {
#define GPT2C_FORMAT_FIELD(name) uint32_t name;
    GPT2C_TYPED_OPS(GPT2C_FORMAT_FIELD)
#undef GPT2C_FORMAT_FIELD
} gpt2c_op_formats;

#define GPT2C_FMT_BIT(f) (1u << (unsigned)(f))

typedef struct gpt2c_kernels {
    const char *name; /* "ref", "cpu", "blas", "cuda" */
    const char *isa;  /* e.g. "avx512", "avx2", "scalar" (informational) */
    gpt2c_op_formats formats;
    /* 0, or the form of input matmul_infer_range takes with GPT2C_ACT_IN_BF16
     * (bf16 weights): GPT2C_BF16_IN_ROWS or GPT2C_BF16_IN_F32_SWAPPED */
    int infer_bf16_input;
    /* Optional (NULL: none): called by the inference before a pass of many
     * rows, outside its parallel region, with the thread count set: the cpu
     * backend's GEMMs take their first-use blocking (autotune or cache) there
     * rather than inside a range.  bf16: 1 when the model's matmul weights are
     * bf16, 2 when they are quantized (the cpu backend may multiply them in
     * bf16 or fp32: gpt2c/quant.h's prefill), else 0. */
    void (*infer_prepare)(int bf16);
    /* compute (ops.h), then device memory and profiler hooks (device backends only) */
#define GPT2C_TABLE_ENTRY(ret, name, params, args) ret(*name) params;
    GPT2C_OPS_COMPUTE(GPT2C_TABLE_ENTRY)
    GPT2C_OPS_DEVICE(GPT2C_TABLE_ENTRY)
    GPT2C_OPS_PROFILER(GPT2C_TABLE_ENTRY)
#undef GPT2C_TABLE_ENTRY
} gpt2c_kernels;

/* 1 if table k's typed op `op` takes weights of format f. */
#define GPT2C_KERNELS_TAKES(k, op, f) ((((k)->formats.op | GPT2C_FMT_BIT(GPT2C_FMT_F32)) >> (unsigned)(f)) & 1u)
/* The table to run typed op `op` with weight view *w on: k, or ref when k does
 * not take w's format (ref converts each weight row to fp32 as it reads it).
 * A device backend must take the formats of the weights it is given. */
#define GPT2C_KERNELS_FOR(k, op, w) (GPT2C_KERNELS_TAKES(k, op, (w)->fmt) ? (k) : gpt2c_kernels_ref())

/* The ref backend (plain scalar C, the oracle) */
const gpt2c_kernels *gpt2c_kernels_ref(void);

/* Looks a backend up by name (backends.h's list: "ref", "cpu", "blas",
 * "cuda"); entries a host backend leaves NULL are filled from ref.  Unknown
 * or not-built backends fail with a message saying why. */
gpt2c_status gpt2c_kernels_get(const char *name, const gpt2c_kernels **out);
/* 1 if `name` is in this build's list of backends (built or not). */
int gpt2c_kernels_known(const char *name);

/* Index (in GPT2C_OPS_DEVICE_REQUIRED order) of the first NULL entry a device
 * backend must fill, -1 if complete. */
long gpt2c_kernels_first_null(const gpt2c_kernels *k);

/* Names of the backends available in this build, comma-separated. */
const char *gpt2c_kernels_available(void);

/* The cpu backend's table, with its inference entries (blas builds on it). */
const gpt2c_kernels *gpt2c_kernels_cpu(void);
/* The raw cuda table (src/kernels/cuda/), NULL when built without CUDA; does
 * not touch the device (gpt2c_kernels_get("cuda") probes it). */
const gpt2c_kernels *gpt2c_kernels_cuda(void);
#endif
