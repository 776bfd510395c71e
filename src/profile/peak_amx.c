/* The AMX bf16 peak loop (peak_kernels.h): TDPBF16PS on four independent
 * accumulator tiles, operands held in tiles (bench/amx_peak.c measured the
 * same loop with tile loads from L1 within 2% of it).  Built with the AMX
 * flags; run only where kernels/cpu/amx.h says the CPU and OS allow it. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/amx.h"
#include "profile/peak_kernels.h"

/* 4 TDPBF16PS of 16 x 16 x 32 multiply-adds each */
const double gpt2c_peak_amx_flops_per_iter = 4.0 * 16 * 16 * 32 * 2;

float gpt2c_peak_amx_bf16(long iters) {
    gpt2c_amx_config cfg;
    gpt2c_amx_config_16x64(&cfg);
    uint16_t a[16 * 32] __attribute__((aligned(64))), b[16 * 32] __attribute__((aligned(64)));
    float c[16 * 16] __attribute__((aligned(64)));
    for (int i = 0; i < 16 * 32; i++) a[i] = 0x3c00, b[i] = 0x3b80; /* 2^-7, 2^-8: no overflow */
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a, 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, b, 64);
    for (long i = 0; i < iters; i++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    _tile_release();
    return c[0];
}
