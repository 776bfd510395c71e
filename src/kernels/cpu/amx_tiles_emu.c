/* A plain-C model of the eight AMX tile registers and TDPBF16PS (Intel's
 * description: per pair, c += a0 b0 then c += a1 b1, exact products, each
 * add rounded to nearest even, bf16 denormal inputs read as zero, denormal
 * results flushed to zero), under the AMX micro-kernel (amx_block_impl.h).
 * It runs on any CPU, slowly: the tests of the AMX driver everywhere, and
 * GPT2C_BF16_ENGINE=amx-emulated.  A tile operation outside begin/end (on
 * hardware: #UD, the process killed) is counted (gpt2c_amx_emulated_misuse). */
#include <float.h>
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

/* a denormal result flushed to a signed zero (branch-free: the loops below vectorise) */
static inline float ftz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

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
/* C += A B: per output, for each pair in order, the even product added,
 * then the odd one; operands widened (and flushed) once per call, the
 * 16 outputs of a row updated together. */
static void emu_dp(int c, int a, int b) {
    check();
    float bv[16][2][16], av[16][2], acc[16]; /* [pair][half][column], [pair][half] */
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 16; n++) {
            bv[k][0][n] = daz_bf16(tl_tile[b][k][n]);
            bv[k][1][n] = daz_bf16(tl_tile[b][k][n] >> 16);
        }
    for (int m = 0; m < 16; m++) {
        for (int k = 0; k < 16; k++) av[k][0] = daz_bf16(tl_tile[a][m][k]), av[k][1] = daz_bf16(tl_tile[a][m][k] >> 16);
        memcpy(acc, tl_tile[c][m], sizeof acc);
        for (int k = 0; k < 16; k++) {
            for (int n = 0; n < 16; n++) acc[n] = ftz(acc[n] + av[k][0] * bv[k][0][n]);
            for (int n = 0; n < 16; n++) acc[n] = ftz(acc[n] + av[k][1] * bv[k][1][n]);
        }
        memcpy(tl_tile[c][m], acc, sizeof acc);
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
