/* The bf16 GEMM's vector packing helpers (gemm_bf16.h: f32_pairs, f32_2rows,
 * bf16_2rows, set by the AVX-512 kernels) against the one rounding every bf16
 * path uses (kernels/bf16.h: nearest even, NaN kept and quieted, denormals
 * kept, no flush), bitwise, on every length 0..70 (masked tails) and on the
 * values where a vector shortcut would differ: ties, values rounding up into
 * the next binade or to infinity, denormals, signed zeros, infinities,
 * quiet and signalling NaNs with payloads.  The GEMMs that use these helpers
 * are checked against the oracle in test_gemm_bf16 and test_gemm_prepack. */
#include <stdint.h>

#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "kernels/bf16.h"
#include "kernels/cpu/gemm_bf16.h"
#include "testutil.h"

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static const uint32_t special[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x00007fffu, 0x00008000u, 0x00018000u, 0x0000ffffu,
    0x007fffffu, 0x807f8000u, 0x00800000u, 0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x3f7fffffu, 0x7f7fffffu,
    0xff7f8000u, 0x7f7f7fffu, 0x7f800000u, 0xff800000u, 0x7f800001u, 0x7fc00000u, 0xffc00001u, 0x7fbfffffu,
    0xff80ffffu, 0x7fffffffu, 0x3eaaaaabu, 0xbf000000u, 0x40490fdbu, 0x80400000u, 0x7f808000u, 0x0001ffffu,
};
#define NSPEC (sizeof special / sizeof special[0])

/* value i of a test vector: the specials, then pseudo-random bit patterns */
static uint32_t val(size_t i, uint64_t *s) {
    if (i < NSPEC) return special[i];
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

static void check_kernel(const gemm_bf16_isa_kernel *kk) {
    if (!kk->f32_pairs && !kk->f32_2rows && !kk->bf16_2rows) {
        printf("  kernel %s: no vector packing helpers\n", kk->name);
        return;
    }
    printf("  kernel %s: vector packing helpers\n", kk->name);
    enum { NMAX = 70 };
    float s0[2 * NMAX + 8], s1[NMAX + 8];
    uint16_t h0[NMAX + 8], h1[NMAX + 8];
    uint32_t d[NMAX + 24];
    for (int rot = 0; rot < 3; rot++) { /* the specials at several lane positions */
        uint64_t seed = 17 + rot;
        for (size_t i = 0; i < 2 * NMAX + 8; i++) s0[i] = bits_f(val((i + 7 * rot) % (2 * NMAX + 8), &seed));
        for (size_t i = 0; i < NMAX + 8; i++) s1[i] = bits_f(val((i + 11 * rot + 3) % (NMAX + 8), &seed));
        for (size_t i = 0; i < NMAX + 8; i++) h0[i] = (uint16_t)val(i + 5 * rot, &seed), h1[i] = (uint16_t)(val(i, &seed) >> 7);
        for (int n = 0; n <= NMAX; n++) {
            const uint32_t canary = 0xdeadbeefu;
            if (kk->f32_pairs) {
                for (int i = 0; i < NMAX + 24; i++) d[i] = canary;
                kk->f32_pairs(d, s0 + rot, n);
                for (int q = 0; q < n; q++) {
                    const uint32_t want = gpt2c_bf16_from_f32(s0[rot + 2 * q]) | (uint32_t)gpt2c_bf16_from_f32(s0[rot + 2 * q + 1]) << 16;
                    CHECK_MSG(d[q] == want, "%s f32_pairs n=%d q=%d: %08x, want %08x", kk->name, n, q, d[q], want);
                }
                CHECK_MSG(d[n] == canary, "%s f32_pairs n=%d wrote past its end", kk->name, n);
            }
            if (kk->f32_2rows) {
                for (int i = 0; i < NMAX + 24; i++) d[i] = canary;
                kk->f32_2rows(d, s0 + rot, s1, n);
                for (int i = 0; i < n; i++) {
                    const uint32_t want = gpt2c_bf16_from_f32(s0[rot + i]) | (uint32_t)gpt2c_bf16_from_f32(s1[i]) << 16;
                    CHECK_MSG(d[i] == want, "%s f32_2rows n=%d i=%d: %08x, want %08x", kk->name, n, i, d[i], want);
                }
                CHECK_MSG(d[n] == canary, "%s f32_2rows n=%d wrote past its end", kk->name, n);
            }
            if (kk->bf16_2rows) {
                for (int i = 0; i < NMAX + 24; i++) d[i] = canary;
                kk->bf16_2rows(d, h0 + rot, h1, n);
                for (int i = 0; i < n; i++) {
                    const uint32_t want = h0[rot + i] | (uint32_t)h1[i] << 16;
                    CHECK_MSG(d[i] == want, "%s bf16_2rows n=%d i=%d: %08x, want %08x", kk->name, n, i, d[i], want);
                }
                CHECK_MSG(d[n] == canary, "%s bf16_2rows n=%d wrote past its end", kk->name, n);
            }
        }
    }
}

int main(void) {
    /* the reference rounding on a few hand-worked specials (a test of the test) */
    CHECK(gpt2c_bf16_from_f32(bits_f(0x3f808000u)) == 0x3f80); /* tie, even stays */
    CHECK(gpt2c_bf16_from_f32(bits_f(0x3f818000u)) == 0x3f82); /* tie, odd rounds up */
    CHECK(gpt2c_bf16_from_f32(bits_f(0x7f7fffffu)) == 0x7f80); /* max float rounds to inf */
    CHECK(gpt2c_bf16_from_f32(bits_f(0x00018000u)) == 0x0002); /* denormal kept, not flushed */
    CHECK(gpt2c_bf16_from_f32(bits_f(0x7f800001u)) == 0x7fc0); /* signalling NaN quieted, not inf */
    check_kernel(&gpt2c_gemm_bf16_kernel_scalar);
#if defined(__x86_64__) || defined(_M_X64)
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX2)) check_kernel(&gpt2c_gemm_bf16_kernel_avx2);
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX512)) check_kernel(&gpt2c_gemm_bf16_kernel_avx512f);
    else printf("  (no AVX-512 on this CPU: its packing helpers not tested)\n");
    if (gpt2c_cpu_has_avx512bf16()) check_kernel(&gpt2c_gemm_bf16_kernel_avx512bf16);
#endif
    return tu_finish("test_gemm_bf16_pack");
}
