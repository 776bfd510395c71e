/* Cache sizes from CPUID (see cpu_caches.h). */
#include "kernels/cpu/cpu_caches.h"

#include <stddef.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
/* Walks the sub-leaves of a deterministic-cache-parameters leaf (4 or
 * 0x8000001D share the layout); returns 1 if it described any data cache. */
static int from_cpuid(unsigned leaf, gpt2c_cpu_cache_sizes *c) {
    unsigned a, b, cx, d, max;
    __cpuid(leaf & 0x80000000u, max, b, cx, d);
    if (max < leaf) return 0;
    int found = 0;
    for (unsigned i = 0; i < 16; i++) {
        __cpuid_count(leaf, i, a, b, cx, d);
        const unsigned type = a & 31; /* 0 none (end), 1 data, 2 instruction, 3 unified */
        if (type == 0) break;
        if (type == 2) continue;
        const unsigned level = (a >> 5) & 7, share = ((a >> 14) & 0xfff) + 1;
        const long bytes = (long)(((b >> 22) & 0x3ff) + 1) * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * ((long)cx + 1);
        if (level == 1) c->l1d = bytes;
        else if (level == 2) c->l2 = bytes, c->l2_share = (int)share;
        else if (level == 3) c->l3 = bytes, c->l3_share = (int)share;
        found = 1;
    }
    return found && c->l2 > 0;
}
#endif

const gpt2c_cpu_cache_sizes *gpt2c_cpu_caches(void) {
    static gpt2c_cpu_cache_sizes c;
    static int done;
    if (done) return &c;
    c.l2_share = c.l3_share = 1;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, cx, d;
    __cpuid(0, a, b, cx, d);
    const int amd = b == 0x68747541u || b == 0x6f677948u; /* "Auth"enticAMD, "Hygo"nGenuine (EBX, little-endian) */
    if (amd ? from_cpuid(0x8000001Du, &c) : from_cpuid(4, &c)) c.source = amd ? "cpuid leaf 0x8000001d" : "cpuid leaf 4";
#endif
    if (!c.source) {
        c = (gpt2c_cpu_cache_sizes){0, 0, 0, 1, 1, "sysconf"};
#ifdef _SC_LEVEL1_DCACHE_SIZE
        c.l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
        c.l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        c.l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
        if (c.l1d < 0) c.l1d = 0;
        if (c.l2 < 0) c.l2 = 0;
        if (c.l3 < 0) c.l3 = 0;
    }
    done = 1;
    return &c;
}
