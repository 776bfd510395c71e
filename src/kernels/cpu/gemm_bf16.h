/* The cpu backend's bf16 GEMM: bf16 operands, fp32 accumulation.
 *
 *   C (M,N) fp32 [ldc] = (accumulate ? C : bias (N, may be NULL) or 0) + A (M,K) B (K,N)
 *
 * A and B are each fp32 or bf16 (gemm_operand: pointer, format, row and
 * column strides in elements, as cpu_gemm's), so the three GEMMs of a linear
 * layer need no transposes or conversions: an fp32 operand (an activation, a
 * gradient) is rounded to bf16 (round to nearest even, kernels/bf16.h) as it
 * is packed; a bf16 operand (a weight copy) is packed as it is.
 *
 * Every path computes the same thing, the arithmetic of vdpbf16ps: K is taken
 * in pairs (2p, 2p+1) (an odd K gets a zero partner), and for each pair
 *   c += a[2p+1] * b[2p+1];   c += a[2p] * b[2p];
 * each product is exact in fp32 (8-bit x 8-bit significands) and each add is
 * rounded to fp32 (nearest even).  So the result does not depend on the
 * blocking (KC, MC, NC) or the number of threads, and the emulated paths
 * (AVX-512F, AVX2, portable C: an FMA of an exact product is the same add)
 * give the same bits as vdpbf16ps, except that vdpbf16ps flushes denormal
 * inputs and results to zero.  gpt2c_ref_gemm_bf16 (test oracle) is this loop. */
#ifndef GPT2C_CPU_GEMM_BF16_H
#define GPT2C_CPU_GEMM_BF16_H

#include <stdint.h>

#include "gpt2c/cpu.h"
#include "gpt2c/format.h"
#include "kernels/cpu/gemm.h"

typedef struct {
    const void *p;
    gpt2c_format fmt; /* GPT2C_FMT_F32 or GPT2C_FMT_BF16 */
    long rs, cs;      /* element (i,k) at p[i*rs + k*cs] (for B: (k,j) at p[k*rs + j*cs]) */
} gemm_operand;

/* A micro-kernel on packed pair panels: a[p*MR + r] and b[p*NR + j] are 32-bit
 * words holding bf16 (row r / column j, k = 2p) in the low half and k = 2p+1
 * in the high half; kp pairs.  C tile (MR,NR) [ldc] = (load_c ? C : bias ?
 * bias : 0) + the pair sums above. */
typedef void (*gpt2c_gemm_bf16_kernel_fn)(int kp, const uint32_t *a, const uint32_t *b, float *C, long ldc, int load_c,
                                    const float *bias);

typedef struct {
    const char *name; /* "avx512bf16", "avx512f-fp32", "avx2-fp32", "scalar" */
    int mr, nr; /* the tile the driver and the attention pack for: kern's, or fp32's where that is set (below) */
    gpt2c_gemm_bf16_kernel_fn kern; /* NULL where fp32 is set */
    /* Optional fast packing of a bf16 B read "transposed" (the forward's
     * W^T): pair words of columns j (word rows j*ld apart) into
     * dst[q*NR + j], i.e. a 32-bit transpose (gemm.h's pack_bt on words). */
    gemm_pack_bt_fn pack_words;
    /* Optional vector packing of fp32 operands (NULL: the portable loops).
     * They round exactly as gpt2c_bf16_from_f32 (kernels/bf16.h: nearest even,
     * NaN kept quiet, denormals kept), so results do not depend on them:
     *   f32_pairs:   d[q] = bf(s[2q]) | bf(s[2q+1]) << 16, q < nq
     *   f32_2rows:   d[i] = bf(s0[i]) | bf(s1[i]) << 16,   i < n
     *   bf16_2rows:  d[i] = s0[i] | s1[i] << 16,           i < n */
    void (*f32_pairs)(uint32_t *d, const float *s, int nq);
    void (*f32_2rows)(uint32_t *d, const float *s0, const float *s1, int n);
    void (*bf16_2rows)(uint32_t *d, const uint16_t *s0, const uint16_t *s1, int n);
    /* Non-NULL (CPUs without AVX512_BF16): the driver (gpt2c_cpu_gemm_bf16*)
     * and the bf16 attention expand their packed panels to fp32 and run
     * this fp32 micro-kernel (gemm.h, its own MR x NR) instead of a pair
     * kernel: each pair row q of a panel becomes two fp32 rows, 2q the high
     * halves (k = 2q+1) and 2q+1 the low halves (k = 2q), each bf16 shifted
     * to its fp32 value, run as 2*kp steps of k: the same adds in the same
     * order as vdpbf16ps, with no unpacking in the inner loop (a pair kernel
     * on FMAs spent as many vector ops unpacking as on the FMAs: ~52% of the
     * FMA peak in the GEMMs; 1.3x the time in the attention). */
    const gemm_isa_kernel *fp32;
    /* Optional vector form of that expansion (in place, `rows` packed rows of
     * P words into 2*rows rows of P floats); returns 0 for a P it does not
     * handle (the portable loop then runs). */
    int (*expand)(uint32_t *buf, long rows, int P);
    /* Optional: kern on the first `rows` (1..mr-1) rows of a tile, full NR
     * columns, A still an mr-row panel; writes those rows of C only.  With
     * it a unit's last rows cost rows/mr of a tile (without it, a whole
     * tile on zero-padded rows, through a buffer), so the driver splits rows
     * evenly, not in whole tiles (B*T = 256 rows on 2 threads: 128 + 128, 21
     * tiles and 2 rows each, where 132 + 124 gave one thread 22 tiles). */
    void (*kern_rows)(int rows, int kp, const uint32_t *a, const uint32_t *b, float *C, long ldc, int load_c,
                      const float *bias);
} gemm_bf16_isa_kernel;

/* 32-bit words per packed element pair in kk's panels: 1 (a pair word), or 2
 * where they are expanded to fp32 (kk->fp32) */
static inline int gpt2c_gemm_bf16_words_per_pair(const gemm_bf16_isa_kernel *kk) { return kk->fp32 ? 2 : 1; }

extern const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_avx512bf16; /* vdpbf16ps */
extern const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_avx512f;    /* emulated with FMAs */
extern const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_avx2;       /* emulated with FMAs */
extern const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_scalar;     /* portable C */

/* The kernel gpt2c_cpu_gemm_bf16 uses for `isa` (avx512 -> vdpbf16ps when the CPU
 * has AVX512_BF16 and it is the faster there (bf16_engine.h), else the
 * emulated one). */
const gemm_bf16_isa_kernel *gpt2c_cpu_gemm_bf16_kernel(gpt2c_isa isa);

/* Blocking of the driver (elements; any values give the same results). */
typedef struct {
    int kc; /* K block (even) */
    int mc; /* rows per unit (a multiple of every MR: 48) */
    int nc; /* columns per unit (a multiple of every NR: 64) */
} gemm_bf16_blocking;
gemm_bf16_blocking gpt2c_cpu_gemm_bf16_get_blocking(void);
/* Sets the blocking (rounded to valid values); returns the one in effect. */
gemm_bf16_blocking gpt2c_cpu_gemm_bf16_set_blocking(gemm_bf16_blocking b);

/* gemm_tune.c: the blocking guessed from the cache sizes (and set); the
 * autotune (cached per CPU signature, kernel and threads unless `force`;
 * sets the blocking it returns; *gflops: the tuned rate, 0 from the cache);
 * the first-use hook gpt2c_cpu_gemm_bf16 calls (autotune unless cached, or the
 * cache-size guess with GPT2C_GEMM_AUTOTUNE=0). */
gemm_bf16_blocking gpt2c_cpu_gemm_bf16_blocking_from_caches(gpt2c_isa isa); /* for the kernel isa runs */
gemm_bf16_blocking gpt2c_cpu_gemm_bf16_autotune(gpt2c_isa isa, int force, int *from_cache, double *gflops);
void gpt2c_cpu_gemm_bf16_first_use(gpt2c_isa isa);

void gpt2c_cpu_gemm_bf16(gpt2c_isa isa, int M, int N, int K, gemm_operand A, gemm_operand B, float *C, long ldc,
                   const float *bias, int accumulate);
/* The same with kk's packing, on the AMX tiles where the engine chose them
 * (bf16_engine.h: gpt2c_cpu_gemm_bf16_amx_tiles), else on kk (prefill's
 * matmuls; no first-use tuning: callable in parallel regions). */
void gpt2c_cpu_gemm_bf16_auto(gpt2c_isa isa, const gemm_bf16_isa_kernel *kk, int M, int N, int K, gemm_operand A,
                              gemm_operand B, float *C, long ldc, const float *bias, int accumulate);
/* Tests: the size (bytes) above which an operand is no longer packed once for
 * the whole GEMM but per slice of K (0: the default, 16 MiB). */
void gpt2c_cpu_gemm_bf16_set_prepack_max(size_t bytes);
/* The same with an explicit kernel (tests: every path this CPU can run). */
void gpt2c_cpu_gemm_bf16_with(const gemm_bf16_isa_kernel *kk, int M, int N, int K, gemm_operand A, gemm_operand B, float *C,
                        long ldc, const float *bias, int accumulate);

/* The same with A (M, K) given as "swapped rows" (kernels.h's
 * GPT2C_BF16_IN_F32_SWAPPED): bf16 values held as fp32, row i at xa + i*lda,
 * each pair (2p, 2p+1) stored as (2p+1, 2p), a zero partner for an odd K's
 * last k.  That is the order in which an fp32-panel kernel (`fp32` above)
 * runs the pair adds, so it reads A in place: no packing or expansion per
 * call (a prefill runs one GEMM per range of outputs on the same input).
 * The same bits as gpt2c_cpu_gemm_bf16_with on A's bf16 values; a kernel
 * without `fp32` runs the unpacked loop (correct, slow). */
void gpt2c_cpu_gemm_bf16_swapped_a(const gemm_bf16_isa_kernel *kk, int M, int N, int K, const float *xa, long lda,
                                   gemm_operand B, float *C, long ldc, const float *bias, int accumulate);

/* B already in kk's pair panels, for all of K ("paneled"): a weight W (K
 * rows, N columns; bf16, row-major) as the B of its data-gradient GEMM
 * (dinp = dout W), kept in that form beside its row-major copy so that the
 * GEMM packs nothing of it.  Panel j/w (w = the panel width), pair row q:
 *   bp[(j/w) * (K/2) * w + q*w + j%w] = W[2q][j] | W[2q+1][j] << 16
 * (ops.h's bf16_panels writes it).  The width is the kernel's NR
 * where the GEMM on `isa` runs a pair kernel (vdpbf16ps) and not the AMX
 * tiles, else 0 (no form helps).  Deciding it may time the bf16 engines
 * (bf16_engine.h): call it outside parallel regions first. */
int gpt2c_cpu_gemm_bf16_panel_width(gpt2c_isa isa);
/* C (M,N) [ldc] = (accumulate ? C : bias or 0) + A (M,K) B, B in panels of
 * `width` as above: the numbers of gpt2c_cpu_gemm_bf16 on W's row-major copy.
 * Returns 0, computing nothing, where it does not apply (width not this
 * CPU's panel width, N not a multiple of it, K odd, or M's GEMM on AMX). */
int gpt2c_cpu_gemm_bf16_paneled_b(gpt2c_isa isa, int M, int N, int K, gemm_operand A, const uint32_t *bp, int width,
                                  float *C, long ldc, const float *bias, int accumulate);

/* The three GEMMs of a linear layer (gemm.h's gemm_linear_op), A and B of
 * formats fa and fb (W is B for fwd/dinp, X is B for dweight). */
void gpt2c_cpu_linear_gemm_bf16(gpt2c_isa isa, gemm_linear_op op, float *C, const void *A, gpt2c_format fa, const void *B,
                          gpt2c_format fb, int N, int IC, int OC);

#endif
