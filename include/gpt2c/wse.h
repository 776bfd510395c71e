/* gpt2c wse: GPT-2 on a simulated wafer-scale mesh of processing elements.
 *
 * A deterministic simulator of a Cerebras-like W x H mesh (public CSL model:
 * 48 KiB SRAM per PE, 24 colors with 21-23 reserved, routes with one upstream
 * per color, 1 wavelet/cycle/link, hop latency, DSD ops with setup cost and
 * SIMD widths, queues).  GPT-2 runs on it with real values (f32 / f16) checked
 * against the ref kernels, or cost-only (none) for full-wafer runs.  Every
 * machine constant is a named parameter with a source label (design brief
 * ../shared/design/wse.md; docs/WSE.md).  Nothing here describes a real CS-2's
 * measured speed. */
#ifndef GPT2C_WSE_H
#define GPT2C_WSE_H

#include <stdint.h>

#include "gpt2c/model.h"
#include "gpt2c/status.h"

/* ---- parameters ---------------------------------------------------------- */
enum {
    GPT2C_WSE_P_WIDTH, GPT2C_WSE_P_HEIGHT, GPT2C_WSE_P_CLOCK, GPT2C_WSE_P_CLOCK_ALT, GPT2C_WSE_P_HOP,
    GPT2C_WSE_P_TURN, GPT2C_WSE_P_SETUP, GPT2C_WSE_P_FMA32, GPT2C_WSE_P_SIMD16, GPT2C_WSE_P_SIMD32,
    GPT2C_WSE_P_SRAM, GPT2C_WSE_P_RESERVE, GPT2C_WSE_P_COLORS, GPT2C_WSE_P_RESERVED_COLORS,
    GPT2C_WSE_P_LINK, GPT2C_WSE_P_REDUCE_LAT, GPT2C_WSE_P_SPECIAL, GPT2C_WSE_P_TASK_SWITCH,
    GPT2C_WSE_P_IO_LAT_US, GPT2C_WSE_P_IO_GBPS, GPT2C_WSE_P_IO_CHANNELS, GPT2C_WSE_NPARAMS
};

typedef struct gpt2c_wse_params {
    double v[GPT2C_WSE_NPARAMS];
    int wse3; /* SIMD table of WSE-3 (else WSE-2) */
} gpt2c_wse_params;

/* "wse2" or "wse3": defaults of the design brief. */
gpt2c_status gpt2c_wse_params_preset(const char *name, gpt2c_wse_params *p);
/* name=value for one parameter (names as gpt2c_wse_param_name). */
gpt2c_status gpt2c_wse_param_set(gpt2c_wse_params *p, const char *name, double value);
const char *gpt2c_wse_param_name(int i);
const char *gpt2c_wse_param_source(int i); /* e.g. "[doc S6]" */
const char *gpt2c_wse_param_help(int i);

/* ---- a GPT-2 run ---------------------------------------------------------- */
typedef enum { GPT2C_WSE_VALUES_NONE, GPT2C_WSE_VALUES_F32, GPT2C_WSE_VALUES_F16 } gpt2c_wse_values;
typedef enum { GPT2C_WSE_FLOW, GPT2C_WSE_WAVELET } gpt2c_wse_fidelity;
typedef enum { GPT2C_WSE_CHAIN, GPT2C_WSE_TREE, GPT2C_WSE_GROUPS } gpt2c_wse_reduce;

typedef struct gpt2c_wse_run_cfg {
    char strategy;           /* 'a' whole mesh per op, 'b' one layer per region, 'c' k layers per region */
    int layers_per_region;   /* strategy c */
    int grid;                /* P of the P x P regions; 0 = largest that fits */
    int seq;                 /* prompt tokens T */
    int chunk;               /* prefill tokens per pipeline step; 0 = T */
    int decode;              /* greedy tokens after the prompt */
    char place;              /* region order: 'r' row-major, 'c' column-major, 's' snake */
    gpt2c_wse_reduce reduce; /* row reductions: chain, tree, or two-phase groups */
    int group_num;           /* groups for GPT2C_WSE_GROUPS */
    gpt2c_wse_values values;
    gpt2c_wse_fidelity fidelity;
    const int32_t *tokens;   /* seq prompt tokens; NULL: a fixed pseudo-random prompt */
    int trace_pes;           /* PEs recorded for the trace (0 = none) */
} gpt2c_wse_run_cfg;

typedef struct gpt2c_wse_result gpt2c_wse_result; /* opaque: cycles, stats, logits, tokens */

/* Lays the model out on the mesh and runs the prompt (+ decode).  Fails with a
 * one-line reason naming the PE and resource when a limit is broken. */
gpt2c_status gpt2c_wse_run(const gpt2c_model *model, const gpt2c_wse_params *p, const gpt2c_wse_run_cfg *cfg,
                           gpt2c_wse_result **out);
void gpt2c_wse_result_free(gpt2c_wse_result *r);
uint64_t gpt2c_wse_result_cycles(const gpt2c_wse_result *r);
uint64_t gpt2c_wse_result_prefill_cycles(const gpt2c_wse_result *r);
/* logits (seq, Vp) of the prompt (values mode; NULL in none mode) */
const float *gpt2c_wse_result_logits(const gpt2c_wse_result *r);
/* the decode tokens (cfg->decode of them) */
const int32_t *gpt2c_wse_result_tokens(const gpt2c_wse_result *r);
/* Compares with the ref kernels (values mode): max |wse - ref| / max |ref| over
 * the prompt's logits, and whether the greedy tokens match ref's. */
gpt2c_status gpt2c_wse_check_ref(gpt2c_wse_result *r, const gpt2c_model *model, double *max_rel_err,
                                 int *tokens_match);
/* report.json, report.html (SVG heatmaps), trace.json (Perfetto) in dir. */
gpt2c_status gpt2c_wse_write_report(const gpt2c_wse_result *r, const char *dir);
/* A one-paragraph text summary (static buffer of the result). */
const char *gpt2c_wse_result_summary(const gpt2c_wse_result *r);

/* ---- kernel studies (src/wse/kernels.c) ---------------------------------- */
typedef struct gpt2c_wse_kernel_row {
    uint64_t cycles;        /* makespan */
    uint64_t compute;       /* busiest PE's DSD cycles */
    uint64_t comm;          /* cycles - compute */
    int max_hops_per_step;  /* longest stream of one step (GEMMs) or of the whole reduction */
    int colors_max;         /* colors on the busiest PE */
    double max_rel_err;     /* vs a double-precision host product (values); -1 when not computed */
} gpt2c_wse_kernel_row;
/* C (P*t x P*t) = A B on a P x P grid with t x t fp32 tiles: "summa" (gemm-collectives_2d:
 * P steps of row + column broadcasts, no overlap) or "meshgemm" (Cannon on interleaved rings:
 * every shift moves a tile <= 2 hops, double-buffered).  values: compute and check. */
gpt2c_status gpt2c_wse_gemm(const gpt2c_wse_params *p, gpt2c_wse_fidelity f, const char *algo, int P, int tile,
                            int values, gpt2c_wse_kernel_row *row);
/* The gemv-collectives_2d example: y = A x + b, Mt x Nt tiles on P x P (values checked) */
gpt2c_status gpt2c_wse_gemv_example(const gpt2c_wse_params *p, gpt2c_wse_fidelity f, int P, int Mt, int Nt,
                                    gpt2c_wse_kernel_row *row);
/* The residual example, ported task by task (src/wse/ex_residual.c): |b - A x|_inf on 2 x 2
 * PEs with Mt x Nt tiles; max_rel_err against the host */
gpt2c_status gpt2c_wse_example_residual(const gpt2c_wse_params *p, int Mt, int Nt, gpt2c_wse_kernel_row *row);
/* The gemv-checkerboard-pattern example, ported task by task (src/wse/ex_checkerboard.c):
 * y = A x + b in fp16 (run.py: 32 x 16 on 4 x 4 PEs); max_rel_err against the host */
gpt2c_status gpt2c_wse_example_checkerboard(const gpt2c_wse_params *p, int kernel_cols, int kernel_rows,
                                            int matrix_rows, int matrix_cols, gpt2c_wse_kernel_row *row);
/* n wavelets from each of P PEs of a row reduced into its middle PE */
gpt2c_status gpt2c_wse_reduce_study(const gpt2c_wse_params *p, gpt2c_wse_fidelity f, gpt2c_wse_reduce algo,
                                    int groups, int P, long n, gpt2c_wse_kernel_row *row);

#endif
