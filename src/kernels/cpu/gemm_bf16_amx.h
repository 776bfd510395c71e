/* The bf16 GEMM on AMX tiles (amx.h): the same product as gemm_bf16.h's
 *
 *   C (M,N) fp32 [ldc] = (accumulate ? C : bias (N, may be NULL) or 0) + A (M,K) B (K,N)
 *
 * with A and B fp32 or bf16 operands (gemm_operand, rounded to bf16 as they
 * are packed), on TDPBF16PS instead of vdpbf16ps or FMAs.
 *
 * Layout.  A tile register holds 16 rows of 64 bytes.  TDPBF16PS C += A B
 * takes A as 16 rows x 16 pair words (row i, pairs q: k = 2q, 2q+1) and B as
 * 16 pair rows x 16 columns (pair q of column j), the "pair word" of
 * gemm_bf16.h.  An A of bf16 rows (a prefill's rounded input) is already
 * that: its tiles are loaded in place (K a multiple of 32; the rows of a last
 * partial 32 are packed).  Else the driver packs A once per GEMM into tiles
 * of 16 rows x 32 k (1 KiB each, contiguous) and B,
 * unit by unit and K block by K block, into tiles of 32 k x 16 columns; K is
 * zero-padded to a multiple of 32, rows and columns to multiples of 32.  The
 * micro-kernel (amx_block_impl.h) runs 2 x 2 tiles of C (32 x 32) over a K
 * block: per 32 k, two A and two B tile loads and four TDPBF16PS.
 *
 * Arithmetic.  Intel's description of TDPBF16PS: per pair, c += a0 b0 then
 * c += a1 b1, each product exact, each add rounded to nearest even, inputs
 * and outputs denormal-flushed.  This is not the order of vdpbf16ps and the
 * emulated paths (odd k first), and the hardware's internal order is not
 * promised beyond that text, so the AMX path is tested against the pair
 * loop within the recursive-sum bound (|error| <= K 2^-24 sum |a b|), not
 * bitwise.  It is deterministic all the same: every C element is summed
 * over K in 32-k chunks from k = 0, in order, by one thread, with C stored
 * and reloaded exactly between K blocks, whatever the thread count and the
 * blocking (so the same seed gives the same numbers on any thread count).
 *
 * Tiles.  gpt2c_amx_tiles_hw runs the instructions (built where the compiler
 * knows -mamx-tile; usable where amx.h says so); gpt2c_amx_tiles_emulated is
 * a plain-C model of the same eight tile registers and of Intel's text (any
 * CPU; slow: tests, and GPT2C_BF16_ENGINE=amx-emulated), so the driver and
 * the micro-kernel, which are shared, are tested on every machine. */
#ifndef GPT2C_CPU_GEMM_BF16_AMX_H
#define GPT2C_CPU_GEMM_BF16_AMX_H

#include <stdint.h>

#include "kernels/cpu/gemm_bf16.h"

/* 16 x 16 words per tile, pair chunks of 32 k */
enum { GPT2C_AMX_TILE_WORDS = 256, GPT2C_AMX_KCHUNK = 32 };

typedef struct {
    const char *name; /* "amx", "amx-emulated" */
    /* Per thread, around its use of the tiles: the tile configuration
     * (eight 16 x 64-byte tiles), and its release (TILERELEASE). */
    void (*begin)(void);
    void (*end)(void);
    /* C (32 x 32) [ldc] = (load_c ? C : bias (32) or 0) + sum over nch
     * chunks of A0|A1 (rows 0-15 | 16-31) x B0|B1 (columns 0-15 | 16-31),
     * chunk c's tiles at a0 + c*astep, a1 + c*astep (rows lda bytes apart:
     * packed tiles 64 and 256 words; A's own bf16 rows their stride and
     * 16 words), b0 + 256c, b1 + 256c (packed). */
    void (*block)(int nch, const uint32_t *a0, const uint32_t *a1, long lda, long astep, const uint32_t *b0,
                  const uint32_t *b1, float *C, long ldc, int load_c, const float *bias);
} gpt2c_amx_tiles;

extern const gpt2c_amx_tiles gpt2c_amx_tiles_emulated;
/* Tests: 1 once an emulated tile operation ran outside begin/end. */
int gpt2c_amx_emulated_misuse(void);
#ifdef GPT2C_HAVE_AMX_KERNEL
extern const gpt2c_amx_tiles gpt2c_amx_tiles_hw;
#endif

/* The GEMM on tiles t; kk supplies the vector packing helpers (f32_pairs,
 * f32_2rows, bf16_2rows, pack_words: gemm_bf16.h; NULL entries: portable
 * loops).  Threads: OpenMP's (one inside a parallel region). */
void gpt2c_cpu_gemm_bf16_amx(const gpt2c_amx_tiles *t, const gemm_bf16_isa_kernel *kk, int M, int N, int K,
                             gemm_operand A, gemm_operand B, float *C, long ldc, const float *bias, int accumulate);

/* The AMX GEMM on tiles t against the portable pair loop on a small
 * ragged problem (40 x 72 x 200, bias, fp32 A, bf16 B^T): 1 if every
 * output is within twice the recursive-sum bound of it, else 0 (a
 * kernel that must not be used).  *worst (may be NULL): the largest
 * error as a fraction of its bound. */
int gpt2c_cpu_gemm_bf16_amx_check(const gpt2c_amx_tiles *t, const gemm_bf16_isa_kernel *kk, double *worst);

/* Tests: the K block (a multiple of 32; 0: the default, 512) and the size
 * (bytes) above which packed A is not kept whole but sliced (0: 32 MiB). */
void gpt2c_cpu_gemm_bf16_amx_set_kc(int kc);
void gpt2c_cpu_gemm_bf16_amx_set_pack_max(size_t bytes);

#endif
