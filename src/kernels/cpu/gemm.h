/* The cpu backend's packed, cache-blocked, multi-threaded SGEMM.
 *
 *   C (M,N) [row-major, ldc] = (accumulate ? C : 0) + bias (N, may be NULL) + A (M,K) B (K,N)
 *
 * A and B are given by strides, so one routine serves the three GEMMs of a
 * linear layer (weights W stored (OC,IC)) without transposing anything:
 *   forward  out(N,OC)  = inp(N,IC) W^T : A = inp  (rs IC, cs 1),  B = W^T (rs 1, cs IC)
 *   dinp     dinp(N,IC) = dout(N,OC) W  : A = dout (rs OC, cs 1),  B = W   (rs IC, cs 1)
 *   dweight  dW(OC,IC) += dout^T inp    : A = dout^T (rs 1, cs OC), B = inp (rs IC, cs 1)
 *
 * Determinism: every element of C is summed over K in the same fixed order
 * (bias or C, then one FMA per k, k in order: K blocks in order, each by one
 * micro-kernel call, C stored and reloaded exactly between blocks) whatever
 * the number of threads and the blocking; threads split C into tiles. */
#ifndef GPT2C_CPU_GEMM_H
#define GPT2C_CPU_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/cpu.h"

#define GEMM_KC 256 /* the default K block (tunable: it does not change the sums, see above) */

/* A micro-kernel: C tile (MR,NR) [ldc] = (load_c ? C : bias ? bias : 0) + A B over k < K.
 * A is read in place by strides: element (r,k) at a[r*rsa + k*csa], where
 * either csa == 1 (rows of A contiguous: inp, dout) or rsa == 1 (columns
 * contiguous: dout^T, or an edge panel copied to a[k*MR + r]).  B is MR-free:
 * row k of the NR-wide panel at b + k*ldb (a packed panel: ldb = NR; or the
 * matrix itself when its rows are contiguous).  bias has NR floats. */
typedef void (*gemm_kernel_fn)(int K, const float *a, long rsa, long csa, const float *b, long ldb, float *C,
                               long ldc, int load_c, const float *bias);

/* Packs NR columns of a "transposed" B (column j at src + j*ld, contiguous in
 * k): dst[k*NR + j] for k < kc, j < nb, zeros for nb <= j < NR. */
typedef void (*gemm_pack_bt_fn)(float *dst, const float *src, long ld, int nb, int kc, int NR);

typedef struct {
    int mr, nr;
    gemm_kernel_fn kern;
    gemm_pack_bt_fn pack_bt; /* NULL: the generic loop */
    /* Optional: kern on the first `rows` (1..mr-1) rows of A (read at the
     * same strides) and of the C tile, full NR columns.  With it a unit's
     * last rows cost rows/mr of a tile (without it, a whole tile on a
     * zero-padded panel, through a buffer), so the driver splits rows evenly,
     * not in whole tiles (B*T = 256 rows on 2 threads: 128 + 128, 21 tiles and
     * 2 rows each, where 132 + 124 gave one thread 22 tiles). */
    void (*kern_rows)(int rows, int K, const float *a, long rsa, long csa, const float *b, long ldb, float *C, long ldc,
                      int load_c, const float *bias);
} gemm_isa_kernel;

/* A thread's float buffer (*buf, *cap floats) grown to at least n floats,
 * 64-byte aligned, by reallocation (contents not kept); NULL, with *cap 0,
 * when it cannot be had.  Kept between calls: no allocation once shapes repeat. */
float *gpt2c_cpu_grow_buffer(float **buf, size_t *cap, size_t n);

/* Per-ISA micro-kernels (gemm_avx512.c, gemm_avx2.c; the scalar one is in gemm.c). */
extern const gemm_isa_kernel gpt2c_gemm_kernel_avx512;
extern const gemm_isa_kernel gpt2c_gemm_kernel_avx2;

/* The micro-kernel gpt2c_cpu_gemm uses for `isa` (for callers that tile small
 * products themselves, e.g. attention: MR divides 12, NR divides 64). */
const gemm_isa_kernel *gpt2c_cpu_gemm_kernel(gpt2c_isa isa);

/* One MR-row panel of A (element (r,k) at a[r*rsa + k*csa], mr valid rows)
 * into dst[k*MR + r], k < kc, rows past mr zero: the zero-padded edge panel
 * a micro-kernel takes with strides (1, MR). */
void gpt2c_cpu_gemm_pack_a_panel(float *dst, const float *a, long rsa, long csa, int mr, int kc, int MR);

/* Rows (mc) and columns (nc) per unit: first from this core's L2 (CPUID),
 * then, at the first top-level GEMM, from a short autotune cached per CPU
 * signature (gemm_tune.c; GPT2C_GEMM_AUTOTUNE=0 keeps the L2 guess), as is
 * the K block kc (GEMM_KC until tuned: fewer C reloads per FLOP with a
 * longer one).  They change speed only, never the sums. */
int gpt2c_cpu_gemm_fp32_kc(void);
/* Sets kc (clamped to 64..2048, rounded up to a multiple of 16); returns it. */
int gpt2c_cpu_gemm_fp32_set_kc(int kc);
void gpt2c_cpu_gemm_fp32_blocking(int *mc, int *nc);
/* Sets mc, nc (rounded and clamped to valid values, written back). */
void gpt2c_cpu_gemm_fp32_set_blocking(int *mc, int *nc);
/* The guess from this core's L2 (and sets it). */
void gpt2c_cpu_gemm_fp32_blocking_from_caches(int *mc, int *nc);
/* gemm_tune.c: the autotune (cached per CPU signature, kernel, threads and
 * build unless `force`; sets what it returns; *gflops: the tuned rate, 0
 * from the cache) and the first-use hook gpt2c_cpu_gemm calls. */
void gpt2c_cpu_gemm_fp32_autotune(gpt2c_isa isa, int force, int *mc, int *nc, int *from_cache, double *gflops);
void gpt2c_cpu_gemm_fp32_first_use(gpt2c_isa isa);

/* The GEMMs' trivial cases: nothing to do (M or N <= 0), or no K (C = bias
 * or 0 unless accumulating).  1 if it was one of them (handled). */
static inline int gpt2c_gemm_trivial(int M, int N, int K, float *C, long ldc, const float *bias, int accumulate) {
    if (M <= 0 || N <= 0) return 1;
    if (K > 0) return 0;
    if (!accumulate)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = bias ? bias[j] : 0.0f;
    return 1;
}

void gpt2c_cpu_gemm(gpt2c_isa isa, int M, int N, int K, const float *A, long rsa, long csa, const float *B, long rsb,
              long csb, float *C, long ldc, const float *bias, int accumulate);

/* The GEMMs of a linear layer (for benchmarks), by the strides above:
 *   GEMM_FWD:    C = out (N,OC)   = X (N,IC) W^T      (A = X,    B = W)
 *   GEMM_DINP:   C = dinp (N,IC)  = dout (N,OC) W     (A = dout, B = W)
 *   GEMM_DW:     C = dW (OC,IC)   = dout^T X          (A = dout, B = X):
 *                the weight gradient as training writes it, over the stale
 *                one (model_internal.h's grads_stale)
 *   GEMM_DW_ACC: C = dW (OC,IC)  += dout^T X          (later micro-steps of
 *                gradient accumulation) */
typedef enum { GEMM_FWD, GEMM_DINP, GEMM_DW, GEMM_DW_ACC } gemm_linear_op;
void gpt2c_cpu_linear_gemm(gpt2c_isa isa, gemm_linear_op op, float *C, const float *A, const float *B, int N, int IC, int OC);

/* The cache lines of a block of an operand as a list of runs (stride bytes
 * apart, len bytes each), walked a few lines at a time to prefetch them into
 * L2 while the micro-kernels compute (the fp32 and bf16 GEMMs). */
typedef struct {
    const char *base;
    long stride;   /* bytes between runs */
    int runs, len; /* runs, bytes per run */
    int run, off;  /* cursor */
} line_walk;

static inline void walk_prefetch(line_walk *w, int lines) {
    for (; lines > 0 && w->run < w->runs; lines--) {
        const uintptr_t a = (uintptr_t)(w->base + (size_t)w->run * w->stride);
        const int nl = (int)(((a & 63) + (uintptr_t)w->len + 63) / 64); /* lines the run touches */
        __builtin_prefetch((const void *)((a & ~(uintptr_t)63) + (size_t)w->off * 64), 0, 2);
        if (++w->off >= nl) w->run++, w->off = 0;
    }
}

#endif
