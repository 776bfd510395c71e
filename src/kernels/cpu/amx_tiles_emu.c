/* A plain-C model of the eight AMX tile registers and TDPBF16PS (Intel's
 * description: per pair, c += a0 b0 then c += a1 b1, exact products, each
 * add rounded to nearest even, bf16 denormal inputs read as zero, denormal
 * results flushed to zero), under the AMX micro-kernel (amx_block_impl.h).
 * It runs on any CPU, slowly: the tests of the AMX driver everywhere, and
 * GPT2C_BF16_ENGINE=amx-emulated.  A tile operation outside begin/end (on
 * hardware: #UD, the process killed) is counted (gpt2c_amx_emulated_misuse). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/gemm_bf16_amx.h"

static _Thread_local uint32_t tl_tile[8][16][16];
static _Thread_local int tl_configured;
static int g_misuse;

int gpt2c_amx_emulated_misuse(void) { return __atomic_load_n(&g_misuse, __ATOMIC_RELAXED); }

static void check(void) {
    if (!tl_configured) __atomic_store_n(&g_misuse, 1, __ATOMIC_RELAXED);
}

static float daz_bf16(uint32_t h) { /* bf16 (16 bits) to fp32, a denormal read as a signed zero */
    uint32_t u = (h & 0xffffu) << 16;
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float ftz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }

static void emu_config(const void *cfg) {
    (void)cfg; /* the kernel always asks for eight 16 x 64-byte tiles */
    tl_configured = 1;
}
static void emu_release(void) { tl_configured = 0; }
static void emu_zero(int t) {
    check();
    memset(tl_tile[t], 0, sizeof tl_tile[t]);
}
static void emu_load(int t, const void *p, long s) {
    check();
    for (int r = 0; r < 16; r++) memcpy(tl_tile[t][r], (const char *)p + r * s, 64);
}
static void emu_store(int t, void *p, long s) {
    check();
    for (int r = 0; r < 16; r++) memcpy((char *)p + r * s, tl_tile[t][r], 64);
}
static void emu_dp(int c, int a, int b) {
    check();
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            float acc;
            memcpy(&acc, &tl_tile[c][m][n], 4);
            for (int k = 0; k < 16; k++) {
                const uint32_t aw = tl_tile[a][m][k], bw = tl_tile[b][k][n];
                acc = ftz(acc + daz_bf16(aw) * daz_bf16(bw));
                acc = ftz(acc + daz_bf16(aw >> 16) * daz_bf16(bw >> 16));
            }
            memcpy(&tl_tile[c][m][n], &acc, 4);
        }
}

#define TILE_CONFIG(cfg) emu_config(cfg)
#define TILE_RELEASE() emu_release()
#define TILE_ZERO(t) emu_zero(t)
#define TILE_LOAD(t, p, s) emu_load(t, p, s)
#define TILE_STORE(t, p, s) emu_store(t, p, s)
#define TILE_DP(c, a, b) emu_dp(c, a, b)
#define AMX_TILES_NAME "amx-emulated"
#define AMX_TILES_SYMBOL gpt2c_amx_tiles_emulated

#include "kernels/cpu/amx_block_impl.h"
