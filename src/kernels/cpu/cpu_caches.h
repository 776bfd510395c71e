/* Data-cache sizes of the CPU this runs on, for choosing GEMM blocking and
 * sizing bandwidth probes.  x86: CPUID's deterministic cache parameters
 * (leaf 4 on Intel, 0x8000001D on AMD/Hygon: ways x partitions x line size x
 * sets, and how many logical CPUs share each level), which a VM passes
 * through even where sysconf reports the whole host's L3; elsewhere, or when
 * CPUID has no such leaf, sysconf; a level nothing reports is 0. */
#ifndef GPT2C_CPU_CACHES_H
#define GPT2C_CPU_CACHES_H

typedef struct {
    long l1d, l2, l3;  /* bytes, per instance (0: unknown) */
    int l2_share;      /* logical CPUs sharing one L2 (1 if unknown) */
    int l3_share;      /* logical CPUs sharing one L3 (1 if unknown) */
    const char *source; /* "cpuid leaf 4", "cpuid leaf 0x8000001d", "sysconf" */
} gpt2c_cpu_cache_sizes;

/* Read once, then cached (the struct is static). */
const gpt2c_cpu_cache_sizes *gpt2c_cpu_caches(void);

#endif
