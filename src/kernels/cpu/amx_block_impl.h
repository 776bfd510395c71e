/* The AMX micro-kernel and tile set-up (gemm_bf16_amx.h), written once on
 * tile operations that the including file defines:
 *   TILE_CONFIG(cfg)        load the 64-byte configuration cfg
 *   TILE_RELEASE()          release the tile state
 *   TILE_ZERO(t)            tile t = 0
 *   TILE_LOAD(t, p, s)      tile t = 16 rows of 64 bytes from p, rows s bytes apart
 *   TILE_STORE(t, p, s)     the reverse
 *   TILE_DP(c, a, b)        TDPBF16PS: tile c += tile a x tile b (bf16 pairs)
 * and AMX_TILES_NAME / AMX_TILES_SYMBOL, the gpt2c_amx_tiles it defines.
 * amx_tiles_amx.c maps them on the instructions, amx_tiles_emu.c on a
 * plain-C model.  Tiles: 0-3 C (rows 0-15 | 16-31 x columns 0-15 | 16-31),
 * 4-5 A, 6-7 B. */
#include <string.h>

#include "kernels/cpu/amx.h"
#include "kernels/cpu/gemm_bf16_amx.h"

static void amx_begin(void) {
    gpt2c_amx_config c;
    gpt2c_amx_config_16x64(&c);
    TILE_CONFIG(&c);
}

static void amx_end(void) { TILE_RELEASE(); }

static void amx_block(int nch, const uint32_t *a0, const uint32_t *a1, long lda, long astep, const uint32_t *b0,
                      const uint32_t *b1, float *C, long ldc, int load_c, const float *bias) {
    const long cs = ldc * (long)sizeof(float);
    if (load_c) {
        TILE_LOAD(0, C, cs);
        TILE_LOAD(1, C + 16, cs);
        TILE_LOAD(2, C + 16 * ldc, cs);
        TILE_LOAD(3, C + 16 * ldc + 16, cs);
    } else if (bias) { /* each C row starts as the bias */
        float rows[16][32] __attribute__((aligned(64)));
        for (int r = 0; r < 16; r++) memcpy(rows[r], bias, sizeof rows[r]);
        TILE_LOAD(0, rows[0], 128);
        TILE_LOAD(1, rows[0] + 16, 128);
        TILE_LOAD(2, rows[0], 128);
        TILE_LOAD(3, rows[0] + 16, 128);
    } else {
        TILE_ZERO(0);
        TILE_ZERO(1);
        TILE_ZERO(2);
        TILE_ZERO(3);
    }
    for (int c = 0; c < nch; c++) {
        const size_t o = (size_t)c * GPT2C_AMX_TILE_WORDS, oa = (size_t)c * astep;
        TILE_LOAD(4, a0 + oa, lda);
        TILE_LOAD(5, a1 + oa, lda);
        TILE_LOAD(6, b0 + o, 64);
        TILE_LOAD(7, b1 + o, 64);
        TILE_DP(0, 4, 6);
        TILE_DP(1, 4, 7);
        TILE_DP(2, 5, 6);
        TILE_DP(3, 5, 7);
    }
    TILE_STORE(0, C, cs);
    TILE_STORE(1, C + 16, cs);
    TILE_STORE(2, C + 16 * ldc, cs);
    TILE_STORE(3, C + 16 * ldc + 16, cs);
}

const gpt2c_amx_tiles AMX_TILES_SYMBOL = {AMX_TILES_NAME, amx_begin, amx_end, amx_block};
