/* AMX availability (amx.h): CPUID, XCR0 and the Linux tile-state permission. */
#include "kernels/cpu/amx.h"

#include <stdio.h>

#include "gpt2c/cpu.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
#endif

static int g_usable = -1;
static char g_why[160];

static int decide(void) {
#if defined(__x86_64__) && defined(__linux__)
    unsigned a, b, c, d;
    if (!gpt2c_cpu_amx_built()) {
        snprintf(g_why, sizeof g_why, "this build has no AMX kernel (its compiler lacks -mamx-tile)");
        return 0;
    }
    if (gpt2c_cpu_best_isa() != GPT2C_ISA_AVX512 || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 22) & 1) ||
        !((d >> 24) & 1)) {
        snprintf(g_why, sizeof g_why, "no AMX-BF16 on this CPU (CPUID.(7,0):EDX bits 22, 24)");
        return 0;
    }
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) {
        snprintf(g_why, sizeof g_why, "the OS does not save the AMX tile state (XCR0 bits 17, 18)");
        return 0;
    }
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) {
        snprintf(g_why, sizeof g_why, "the kernel refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)");
        return 0;
    }
    snprintf(g_why, sizeof g_why, "AMX-BF16: yes");
    return 1;
#else
    snprintf(g_why, sizeof g_why, "AMX needs x86-64 Linux");
    return 0;
#endif
}

int gpt2c_cpu_amx_usable(const char **why) {
    if (__atomic_load_n(&g_usable, __ATOMIC_ACQUIRE) < 0) {
#pragma omp critical(gpt2c_amx_usable)
        {
            if (__atomic_load_n(&g_usable, __ATOMIC_ACQUIRE) < 0) __atomic_store_n(&g_usable, decide(), __ATOMIC_RELEASE);
        }
    }
    if (why) *why = g_why;
    return g_usable;
}

int gpt2c_cpu_amx_built(void) {
#ifdef GPT2C_HAVE_AMX_KERNEL
    return 1;
#else
    return 0;
#endif
}
