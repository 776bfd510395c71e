/* The in-L2 GEMM probes (gemm_tune.h): a micro-kernel over a 96 x 256 x 256
 * product whose operands stay in L2 (C written), on every thread at once,
 * each with its own operands.  It uses the caches the way the GEMMs do, so it
 * sees what slows them and a register-only FMA burst does not: on the Cascade
 * Lake VM the probe's kind of loop ran at 0.58-0.70 of the FMA burst for
 * seconds at a time, then at 0.87-0.92 (bench/gemm_hierarchy.sh ... trace,
 * BENCHMARKS.md).  The micro-kernels are called directly, so the probes do
 * not depend on the blocking being tuned.
 *   fp32: the fp32 micro-kernel, A and B rows read in place.
 *   bf16: the bf16 GEMM's pair engine (gemm_bf16.h: vdpbf16ps, or FMAs on
 *         expanded panels) on packed panels, as the bf16 GEMM runs it after
 *         packing. */
#include <omp.h>
#include <stdlib.h>

#include "gpt2c/core.h"
#include "kernels/bf16.h"
#include "kernels/cpu/bf16_engine.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_tune.h"

enum { PM = 96, PN = 256, PK = 256 }; /* multiples of every MR (6, 4) and NR (64, 16) */

/* One probe: its operands (per thread, in L2) and one pass over the product. */
typedef struct {
    const gemm_isa_kernel *f32;     /* fp32 probe: this kernel on rows in place */
    const gemm_bf16_isa_kernel *bf; /* bf16 probe: this engine on packed panels */
} probe_kind;

/* words (fp32: floats) of A and B for kind k */
static size_t a_words(const probe_kind *k) { return k->f32 ? (size_t)PM * PK : (size_t)PM * PK / 2 * gpt2c_gemm_bf16_words_per_pair(k->bf); }
static size_t b_words(const probe_kind *k) { return k->f32 ? (size_t)PK * PN : (size_t)PK * PN / 2 * gpt2c_gemm_bf16_words_per_pair(k->bf); }

/* An operand of n words of small normal values, 0.01 x (1 + i % mod): fp32
 * (bf16-valued) where the kernel reads floats, else pair words of their
 * bf16 (the layout does not matter to the timing, only the sizes and the
 * values' kind: no denormals). */
static void fill(const probe_kind *k, uint32_t *dst, size_t n, int mod) {
    const int floats = k->f32 || k->bf->fp32;
    for (size_t i = 0; i < n; i++) {
        const float v = (float)(i % (size_t)mod) * 0.01f + 0.01f;
        if (floats) ((float *)dst)[i] = gpt2c_bf16_round(v);
        else dst[i] = gpt2c_bf16_from_f32(v) | gpt2c_bf16_f32_bits(v);
    }
}

/* one pass over the product: for each NR-column panel of B, each MR-row tile */
static void probe_pass(const probe_kind *k, const uint32_t *A, const uint32_t *B, float *C) {
    if (k->f32) {
        const gemm_isa_kernel *kk = k->f32;
        for (int jr = 0; jr < PN; jr += kk->nr)
            for (int ir = 0; ir < PM; ir += kk->mr)
                kk->kern(PK, (const float *)A + (size_t)ir * PK, PK, 1, (const float *)B + jr, PN, C + (size_t)ir * PN + jr,
                         PN, 0, NULL);
        return;
    }
    const gemm_bf16_isa_kernel *kk = k->bf;
    const int MR = kk->mr, NR = kk->nr, kp = PK / 2;
    const size_t xw = (size_t)gpt2c_gemm_bf16_words_per_pair(kk);
    for (int jr = 0; jr < PN; jr += NR) {
        const uint32_t *b = B + (size_t)jr * kp * xw; /* panel jr / NR: kp pair rows of NR */
        for (int ir = 0; ir < PM; ir += MR) {
            const uint32_t *a = A + (size_t)ir * kp * xw;
            float *c = C + (size_t)ir * PN + jr;
            if (kk->fp32)
                kk->fp32->kern(2 * kp, (const float *)a, 1, MR, (const float *)b, NR, c, PN, 0, NULL);
            else
                kk->kern(kp, a, b, c, PN, 0, NULL);
        }
    }
}

static double probe_run(const probe_kind *k, int threads, double seconds) {
    if (threads <= 0) threads = omp_get_num_procs();
    const double pass_flop = 2.0 * PM * PN * PK;
    int ok = 1;
    long passes = 0;
    double elapsed = 0;
#pragma omp parallel num_threads(threads) reduction(+ : passes) reduction(max : elapsed) reduction(& : ok)
    {
        uint32_t *A = aligned_alloc(64, sizeof(uint32_t) * a_words(k)), *B = aligned_alloc(64, sizeof(uint32_t) * b_words(k));
        float *C = aligned_alloc(64, sizeof(float) * PM * PN);
        const int mine = A && B && C;
        if (mine) {
            fill(k, A, a_words(k), 17), fill(k, B, b_words(k), 13);
            probe_pass(k, A, B, C); /* warm: operands into L2 */
        }
#pragma omp barrier
        if (mine) {
            const uint64_t t0 = gpt2c_now_ns(), stop = t0 + (uint64_t)(seconds * 1e9);
            uint64_t t = t0;
            do {
                for (int r = 0; r < 4; r++) probe_pass(k, A, B, C);
                passes += 4;
                t = gpt2c_now_ns();
            } while (t < stop);
            elapsed = (double)(t - t0) * 1e-9;
        } else {
            ok = 0;
        }
        free(A), free(B), free(C);
    }
    return ok && elapsed > 0 ? pass_flop * (double)passes / elapsed * 1e-9 : 0;
}

double gpt2c_cpu_gemm_probe_gflops(gpt2c_isa isa, int threads, double seconds) {
    const probe_kind k = {gpt2c_cpu_gemm_kernel(isa), NULL};
    return probe_run(&k, threads, seconds);
}

double gpt2c_cpu_gemm_bf16_probe_gflops(gpt2c_isa isa, int threads, double seconds) {
    if (gpt2c_cpu_bf16_amx_hw()) return 0; /* the bf16 GEMMs run on AMX tiles: the pair engine would not stand for them */
    const probe_kind k = {NULL, gpt2c_cpu_gemm_bf16_kernel(isa)};
    return probe_run(&k, threads, seconds);
}
