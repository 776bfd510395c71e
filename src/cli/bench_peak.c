/* `gpt2c bench peak`: this machine's FMA peak per ISA and memory bandwidth (read, scale, triad). */
#include <stdio.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/run_arg.h"
#include "gpt2c/cpu.h"
#include "gpt2c/peak.h"
#include "kernels/cpu/amx.h"
#include "kernels/cpu/bf16_engine.h"

int bench_peak(int argc, char **argv) {
    int threads = 0, remeasure = 0, reset = 0, runs = 5, nocache = 0;
    cli_opt opts[] = {
        THREADS_ARG_OPT(threads, "threads, 0 = all cores"),
        {"--remeasure", CLI_FLAG, &remeasure,
         "measure again (a cached bandwidth the new one falls short of is kept: a ceiling only rises)", 0, 0},
        {"--reset", CLI_FLAG, &reset, "measure again and replace the cached figures, lower ones too", 0, 0},
        {"--no-cache", CLI_FLAG, &nocache, "measure without reading or writing the cache", 0, 0},
        {"--runs", CLI_INT, &runs, "runs per figure when measuring, the fastest taken", 1, 32},
    };
    int rc = cli_parse("bench peak", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    gpt2c_peak p;
    if (reset) remeasure = GPT2C_PEAK_RESET;
    if ((nocache ? gpt2c_peak_measure(threads, runs, &p) : gpt2c_peak_get_runs(threads, runs, &p, remeasure)) != 0)
        return cli_fail_status("bench peak");
    printf("cpu        %s\nsignature  %s\nbuild      %s\nthreads    %d (FMA peaks)\n", p.cpu, p.signature, p.build, p.threads);
    for (int i = 0; i < GPT2C_ISA_COUNT; i++) {
        if (p.fma_gflops[i] > 0) printf("fp32 %-7s %10.1f GFLOP/s%s\n", gpt2c_isa_name((gpt2c_isa)i), p.fma_gflops[i], i == GPT2C_ISA_SCALAR ? "  (mul+add, no FMA)" : "  (FMA)");
        else printf("fp32 %-7s    unavailable: not supported by this CPU\n", gpt2c_isa_name((gpt2c_isa)i));
    }
    if (p.bf16_gflops > 0) {
        printf("bf16 avx512 %9.1f GFLOP/s  (vdpbf16ps)\n", p.bf16_gflops);
        if (gpt2c_cpu_isa() == GPT2C_ISA_AVX512) {
            gpt2c_cpu_bf16_use_dp(); /* decided (measured, or from gemm.json) before its note is read */
            printf("bf16 engine  %s\n", gpt2c_cpu_bf16_engine_note());
        }
    } else {
        printf("bf16 native    unavailable: no AVX512_BF16 (the bf16 GEMM runs emulated on fp32 FMAs)\n");
    }
    const char *amx_why = "";
    if (p.amx_gflops > 0) printf("bf16 amx    %9.1f GFLOP/s  (TDPBF16PS tiles)\n", p.amx_gflops);
    else if (!gpt2c_cpu_amx_usable(&amx_why)) printf("bf16 amx       unavailable: %s\n", amx_why);
    if (gpt2c_cpu_isa() == GPT2C_ISA_AVX512) {
        gpt2c_cpu_bf16_amx(); /* decided (self-check; measured, or from gemm.json) before its note is read */
        printf("bf16 gemm    %s\n", gpt2c_cpu_bf16_amx_note());
    }
    printf("read bw    %10.1f GB/s  (read stream, a sum: bounds decode)\n", p.read_gbs);
    printf("scale bw   %10.1f GB/s  (dst = s*src, bytes read + written)\n", p.scale_gbs);
    printf("triad bw   %10.1f GB/s  (dst = a + s*b, bytes read + written)\n", p.triad_gbs);
    printf("update bw  %10.1f GB/s  (x = s*x in place, as AdamW: bytes read + written)\n", p.update_gbs);
    printf("memory bw  %10.1f GB/s  (the best of the four: the roofline's memory ceiling; %d threads, %d MiB arrays)\n",
           p.mem_gbs, p.bw_threads, p.bw_mib);
    printf("ridge      %10.2f FLOP/byte (%s)\n", p.gflops / p.mem_gbs, p.best_isa);
    printf("source     %s%s (fastest of %d runs)\n", p.from_cache ? "cache " : "measured",
           p.from_cache ? p.cache_path : (p.cache_path[0] ? ", cached" : ", not cached"), p.runs);
    if (p.bw_kept)
        printf("bw kept    %d of the 4 bandwidths from the cache, faster than now (memory %.1f GB/s measured now; a "
               "ceiling only rises: --reset replaces them)\n",
               p.bw_kept, p.bw_now_gbs);
    if (p.from_cache && p.bw_spot_gbs > 0)
        printf("bw check   %10.1f GB/s  (update stream now, against the cache: %s)\n", p.bw_spot_gbs,
               p.bw_remeasured ? "faster, so the bandwidths were measured again and the cache rewritten"
                               : "within 5% or slower, the cached ceiling stands");
    return 0;
}

/* The compute peaks only: a cached entry as it is (gpt2c_peak_get would also
 * check its bandwidth, ~0.1 s between the timed runs of bench train and bench
 * gemm, for figures these callers do not use), else measured and cached. */
static int compute_peaks(int threads, gpt2c_peak *p) {
    return gpt2c_peak_cached(threads, p) || gpt2c_peak_get(threads, p, 0) == GPT2C_OK;
}

double bench_peak_gflops(int threads) {
    gpt2c_peak p;
    return compute_peaks(threads, &p) ? p.fma_gflops[gpt2c_cpu_isa()] : 0;
}

double bench_peak_bf16_gflops(int threads) {
    gpt2c_peak p;
    return compute_peaks(threads, &p) ? gpt2c_peak_bf16_roof(&p, gpt2c_cpu_isa()) : 0;
}
