/* CPUID-based ISA detection and the forced-ISA switch (see gpt2c/cpu.h). */
#include "gpt2c/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#define GPT2C_X86 1
#include <cpuid.h>
#endif

static int g_forced = -1; /* -1: not forced */
static int g_env_read = 0;

#ifdef GPT2C_X86
/* XCR0: the OS saves the register state the ISA needs (YMM: bits 1-2; ZMM/opmask: 5-7). */
static unsigned long long xgetbv0(void) {
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

gpt2c_isa gpt2c_cpu_best_isa(void) {
    static int cached = -1;
    if (cached >= 0) return (gpt2c_isa)cached;
    int best = GPT2C_ISA_SCALAR;
#ifdef GPT2C_X86
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, avx = (c >> 28) & 1;
        unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
        int ymm_ok = (xcr0 & 0x6) == 0x6, zmm_ok = (xcr0 & 0xe6) == 0xe6;
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            int avx2 = (b >> 5) & 1;
            int avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1); /* F DQ BW VL */
            if (avx && avx2 && fma && ymm_ok) best = GPT2C_ISA_AVX2;
            if (best == GPT2C_ISA_AVX2 && avx512 && zmm_ok) best = GPT2C_ISA_AVX512;
        }
    }
#endif
    cached = best;
    return (gpt2c_isa)best;
}

int gpt2c_cpu_has_avx512bf16(void) {
#ifdef GPT2C_X86
    unsigned a, b, c, d;
    if (gpt2c_cpu_best_isa() != GPT2C_ISA_AVX512 || !__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 5) & 1; /* CPUID.(7,1):EAX bit 5 */
#else
    return 0;
#endif
}

int gpt2c_cpu_has_isa(gpt2c_isa isa) { return (int)isa <= (int)gpt2c_cpu_best_isa(); }

const char *gpt2c_isa_name(gpt2c_isa isa) {
    switch (isa) {
    case GPT2C_ISA_AVX512: return "avx512";
    case GPT2C_ISA_AVX2: return "avx2";
    case GPT2C_ISA_SCALAR: return "scalar";
    case GPT2C_ISA_COUNT: break;
    }
    return "?";
}

gpt2c_status gpt2c_cpu_force_isa(const char *name) {
    g_env_read = 1; /* an explicit choice wins over the environment */
    if (!name || strcmp(name, "auto") == 0) {
        g_forced = -1;
        return GPT2C_OK;
    }
    for (int i = 0; i <= GPT2C_ISA_AVX512; i++)
        if (strcmp(name, gpt2c_isa_name((gpt2c_isa)i)) == 0) {
            if (!gpt2c_cpu_has_isa((gpt2c_isa)i))
                return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "ISA %s: this CPU cannot run it (best here: %s)", name,
                                  gpt2c_isa_name(gpt2c_cpu_best_isa()));
            g_forced = i;
            return GPT2C_OK;
        }
    return gpt2c_fail(GPT2C_ERR_ARG, "unknown ISA '%s' (auto, avx512, avx2, scalar)", name);
}

gpt2c_isa gpt2c_cpu_isa(void) {
    if (!g_env_read) {
        g_env_read = 1;
        const char *e = getenv("GPT2C_ISA");
        if (e && *e && gpt2c_cpu_force_isa(e) != GPT2C_OK) g_forced = -1; /* bad value: keep auto */
    }
    return g_forced >= 0 ? (gpt2c_isa)g_forced : gpt2c_cpu_best_isa();
}

const char *gpt2c_cpu_signature(void) {
    static char sig[160];
    if (sig[0]) return sig;
#ifdef GPT2C_X86
    unsigned a, b, c, d, vendor[4] = {0};
    __get_cpuid(0, &a, &vendor[0], &vendor[2], &vendor[1]); /* EBX, EDX, ECX spell the vendor */
    unsigned fam = 0, model = 0, step = 0;
    char flags[96] = "";
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        const unsigned base_fam = (a >> 8) & 0xf;
        fam = base_fam + (base_fam == 0xf ? (a >> 20) & 0xff : 0);
        model = ((a >> 4) & 0xf) | (base_fam == 0x6 || base_fam == 0xf ? ((a >> 16) & 0xf) << 4 : 0);
        step = a & 0xf;
    }
    const gpt2c_isa best = gpt2c_cpu_best_isa();
    if (best >= GPT2C_ISA_AVX2) strcat(flags, "avx2,fma");
    if (best >= GPT2C_ISA_AVX512) {
        strcat(flags, ",avx512f");
        if (gpt2c_cpu_has_avx512bf16()) strcat(flags, ",avx512bf16");
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            if ((c >> 11) & 1) strcat(flags, ",avx512vnni");
            if ((d >> 22) & 1) strcat(flags, ",amxbf16");
        }
    }
    snprintf(sig, sizeof sig, "%.12s/%u/%u/%u/%s", (const char *)vendor, fam, model, step, flags[0] ? flags : "sse2");
#elif defined(__aarch64__)
    snprintf(sig, sizeof sig, "other/aarch64");
#else
    snprintf(sig, sizeof sig, "other/unknown");
#endif
    return sig;
}

const char *gpt2c_cpu_brand(void) {
    static char brand[49];
    if (brand[0]) return brand;
    strcpy(brand, "unknown");
#ifdef GPT2C_X86
    unsigned r[12];
    if (__get_cpuid(0x80000000u, &r[0], &r[1], &r[2], &r[3]) && r[0] >= 0x80000004u) {
        for (unsigned i = 0; i < 3; i++) __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
        memcpy(brand, r, 48);
        brand[48] = 0;
        char *p = brand;
        while (*p == ' ') p++;
        memmove(brand, p, strlen(p) + 1);
    }
#endif
    return brand;
}


#ifndef GPT2C_HAVE_BLAS
const char *gpt2c_blas_describe(void) {
    return "unavailable: built without a cblas library (apt-get install libopenblas-dev and rebuild)";
}
#endif
