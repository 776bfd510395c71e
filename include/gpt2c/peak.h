/* This machine's peaks, for roofline charts and "% of peak" figures.
 *
 * FMA peak: fp32 fused multiply-adds on independent accumulators (enough to
 * cover the FMA latency on every pipe), on all requested threads, per ISA the
 * CPU supports (avx512, avx2, scalar).  Each figure (these and the
 * bandwidths) is the fastest of several runs: a ceiling, which a neighbour
 * on the machine can only lower, so an op measured later does not exceed
 * it.  bf16 peak: the same with vdpbf16ps where the CPU has AVX512_BF16 (0
 * elsewhere: the bf16 GEMM is then emulated with fp32 FMAs and its ceiling
 * is the fp32 FMA peak; gpt2c_peak_bf16_roof).  Results are cached in
 * $XDG_CACHE_HOME/gpt2c/peak.json (else ~/.cache/gpt2c/peak.json; JSON, with
 * jansson: without it nothing is cached), keyed by the CPU signature
 * (gpt2c_cpu_signature: vendor, family, model, stepping, ISA flags), the
 * thread count and the build (gpt2c_peak_build: a Release and an ASan build
 * never share figures). */
#ifndef GPT2C_PEAK_H
#define GPT2C_PEAK_H

#include "gpt2c/cpu.h"
#include "gpt2c/status.h"

typedef struct gpt2c_peak {
    char cpu[128];       /* brand string, for display */
    char signature[160]; /* the cache key (with threads) */
    int threads;
    double fma_gflops[GPT2C_ISA_COUNT]; /* indexed by gpt2c_isa; 0 = ISA not supported here */
    double gflops;                      /* best of the above */
    double bf16_gflops;                 /* vdpbf16ps peak; 0 without AVX512_BF16 */
    double amx_gflops;                  /* TDPBF16PS (AMX tiles) peak; 0 where AMX cannot run */
    const char *best_isa;
    /* Memory bandwidth, GB/s (1e9 bytes), measured on all cores whatever
     * `threads` is, over arrays far larger than the last-level cache: */
    double read_gbs;  /* read stream (a sum): the bound of decode, which streams the weights */
    double scale_gbs; /* dst = s*src: bytes read + written */
    double triad_gbs; /* dst = a + s*b: bytes read + written */
    double update_gbs; /* x = s*x in place (AdamW's pattern): bytes read + written */
    double mem_gbs;   /* the memory ceiling: the best of the four (rooflines, % of peak bandwidth) */
    int bw_threads;   /* threads the bandwidth probes ran on */
    int bw_mib;       /* MiB per probe array */
    char build[64];   /* the build these were measured with (part of the cache key): type, sanitizers */
    int runs;           /* runs per figure (the fastest taken) */
    int from_cache;     /* 1 if read from the cache file */
    double bw_spot_gbs; /* from the cache: the update-stream check that ran on reading it (gpt2c_peak_get) */
    int bw_remeasured;  /* from the cache: 1 if that check beat the cached ceiling and the bandwidths were measured again */
    int bw_kept;        /* measured again over a cached entry: bandwidths the cache held higher, kept (of 4) */
    double bw_now_gbs;  /* ... and the memory ceiling this measurement alone gave */
    char cache_path[512];
} gpt2c_peak;

/* Peaks for `threads` threads (<= 0: all cores): from the cache unless
 * `remeasure`, else measured (a few seconds) and cached.  A cached entry's
 * memory ceiling is checked first (a short update stream, ~0.1 s) and its
 * bandwidths measured again if the machine now beats them (bw_remeasured).
 * remeasure 1 measures everything again but keeps each cached bandwidth the
 * new one falls short of (a ceiling only rises: bw_kept, bw_now_gbs);
 * remeasure 2 (GPT2C_PEAK_RESET) replaces the entry with the new figures.
 * A cache that cannot be written is not an error (cache_path is then empty). */
#define GPT2C_PEAK_RESET 2
gpt2c_status gpt2c_peak_get(int threads, gpt2c_peak *out, int remeasure);
/* The same, measuring with `runs` runs per figure (gpt2c_peak_get: 5). */
gpt2c_status gpt2c_peak_get_runs(int threads, int runs, gpt2c_peak *out, int remeasure);

/* The cached peaks for `threads` threads (<= 0: all cores) without
 * measuring: 1 if this CPU signature, thread count and build have an entry,
 * else 0 (out untouched beyond scratch). */
int gpt2c_peak_cached(int threads, gpt2c_peak *out);

/* The build tag peaks are keyed by: "<CMake build type>[+asan][+ubsan]", e.g. "Release". */
const char *gpt2c_peak_build(void);

/* The ceiling of the cpu backend's bf16 matmuls on `isa`: the AMX peak
 * where its bf16 GEMM runs on AMX tiles (kernels/cpu/bf16_engine.h), the vdpbf16ps peak
 * where they run on vdpbf16ps (the CPU has it and it is the faster there),
 * else the FMA peak of `isa` (they then run on fp32 FMAs). */
double gpt2c_peak_bf16_roof(const gpt2c_peak *p, gpt2c_isa isa);

/* A memory probe to run beside timed work (profile: one before and after
 * each trial): one array far larger than the last-level cache (4x the L3 the
 * cores span, 128..512 MiB; `mib` > 0 another size), 2 MiB-aligned, advised
 * into huge pages and first-touched by the threads that stream it, as the
 * peak's arrays are, kept between runs so a run costs only its streams.
 * read / update: the read stream and the in-place update stream (AdamW's
 * pattern) on all cores, GB/s, the faster of two double passes (~10 ms each
 * at 128 MiB and 50 GB/s).  A VM's memory bandwidth moves with its host:
 * beside a trial, these say what the memory gave at that moment, where the
 * cached peak says what it gave at its best.  NULL: no memory. */
typedef struct gpt2c_mem_probe gpt2c_mem_probe;
gpt2c_mem_probe *gpt2c_mem_probe_new(int mib);
double gpt2c_mem_probe_read(gpt2c_mem_probe *p);
double gpt2c_mem_probe_update(gpt2c_mem_probe *p);
int gpt2c_mem_probe_mib(const gpt2c_mem_probe *p);
void gpt2c_mem_probe_free(gpt2c_mem_probe *p);

/* Measures without touching the cache. */
gpt2c_status gpt2c_peak_measure(int threads, int runs, gpt2c_peak *out);

/* The FMA peak of `isa` (bf16: the vdpbf16ps loop's where the CPU has
 * AVX512_BF16, else the FMA one, the ceiling of the emulated bf16 GEMM) on
 * `threads` threads, from a short burst of about `seconds` (the fastest of
 * three), uncached: a "local peak" taken right next to a timed operation, so
 * its % of peak follows a shared machine's drift (one thread: thread CPU
 * time; more: wall time).  0 if the ISA is not supported. */
double gpt2c_peak_burst_gflops(gpt2c_isa isa, int bf16, int threads, double seconds);
/* bf16 = this: the AMX TDPBF16PS loop instead (0 where AMX cannot run) */
#define GPT2C_PEAK_BURST_AMX 2

#endif
