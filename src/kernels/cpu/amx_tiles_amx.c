/* The AMX micro-kernel on the instructions (amx_block_impl.h); built with
 * -mamx-tile -mamx-bf16 where the compiler knows them, run only where
 * amx.h says the CPU and OS allow it. */
#include <immintrin.h>

#define TILE_CONFIG(cfg) _tile_loadconfig(cfg)
#define TILE_RELEASE() _tile_release()
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_LOAD(t, p, s) _tile_loadd(t, p, s)
#define TILE_STORE(t, p, s) _tile_stored(t, p, s)
#define TILE_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#define AMX_TILES_NAME "amx"
#define AMX_TILES_SYMBOL gpt2c_amx_tiles_hw

#include "kernels/cpu/amx_block_impl.h"
