/* AMX bf16 throughput (TDPBF16PS) on 1 and 2 threads, beside the AVX-512 FMA
 * and vdpbf16ps loops' rates that `gpt2c bench peak` gives: the ceiling an
 * AMX bf16 GEMM would have on a CPU with AMX-BF16 (Intel Sapphire / Emerald
 * Rapids).  Not part of gpt2c (it has no AMX kernel): a measurement to size
 * that work.  Two loops per thread:
 *   regs:  4 independent 16x16 fp32 accumulator tiles, A and B tiles loaded
 *          once: the instruction's own rate;
 *   loads: the same with the two A and two B tiles (4 KiB, in L1) loaded
 *          before each group of four, as a GEMM micro-kernel would.
 * Each TDPBF16PS is 16 x 16 x 32 multiply-adds (16384 FLOPs).
 * Build: gcc -O2 -fopenmp -mamx-tile -mamx-bf16 bench/amx_peak.c -o amx_peak
 * Run:   ./amx_peak            (prints "unavailable: <why>" without AMX) */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed)) tile_config;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void configure(void) {
    tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) c.rows[t] = 16, c.colsb[t] = 64; /* 16 rows x 64 bytes: fp32 C, bf16 pairs A and B */
    _tile_loadconfig(&c);
}

/* GFLOP/s of `iters` groups of four TDPBF16PS on each of `threads` threads */
static double run(int threads, long iters, int loads) {
    double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
    {
        static __thread uint16_t a[2][16 * 32] __attribute__((aligned(64))), b[2][16 * 32] __attribute__((aligned(64)));
        static __thread float c[16 * 16] __attribute__((aligned(64)));
        for (int i = 0; i < 16 * 32; i++) a[0][i] = a[1][i] = 0x3c00, b[0][i] = b[1][i] = 0x3b80; /* 2^-7, 2^-8 */
        configure();
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        _tile_loadd(4, a[0], 64); _tile_loadd(5, a[1], 64); _tile_loadd(6, b[0], 64); _tile_loadd(7, b[1], 64);
#pragma omp barrier
#pragma omp master
        t0 = now();
        if (loads)
            for (long i = 0; i < iters; i++) {
                _tile_loadd(4, a[0], 64); _tile_loadd(5, a[1], 64); _tile_loadd(6, b[0], 64); _tile_loadd(7, b[1], 64);
                _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
            }
        else
            for (long i = 0; i < iters; i++) {
                _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
            }
        _tile_stored(0, c, 64);
#pragma omp barrier
#pragma omp master
        t1 = now();
        _tile_release();
    }
    return 4.0 * 16384.0 * (double)iters * threads / (t1 - t0) * 1e-9;
}

int main(void) {
    unsigned a, b, c, d;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    if (!((d >> 22) & 1) || !((d >> 24) & 1)) {
        printf("amx_peak: unavailable: this CPU has no AMX-BF16 / AMX-TILE (CPUID.7.0:EDX bits 22, 24)\n");
        return 0;
    }
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) {
        printf("amx_peak: unavailable: the kernel refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)\n");
        return 0;
    }
    for (int loads = 0; loads < 2; loads++)
        for (int th = 1; th <= 2; th++) {
            long iters = 1000;
            while (1) { /* calibrate to ~0.2 s */
                const double t = now();
                run(th, iters, loads);
                if (now() - t > 0.05) break;
                iters *= 4;
            }
            double best = 0;
            for (int r = 0; r < 5; r++) {
                const double g = run(th, iters * 4, loads);
                if (g > best) best = g;
            }
            printf("amx_peak: TDPBF16PS, %s, %d thread%s: %.1f GFLOP/s (fastest of 5)\n",
                   loads ? "tiles loaded from L1 each group" : "operands in tiles", th, th > 1 ? "s" : "", best);
        }
    return 0;
}
