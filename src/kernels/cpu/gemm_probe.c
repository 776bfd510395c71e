/* The in-L2 GEMM probe (gemm_tune.h): the fp32 micro-kernel over a
 * 96 x 256 x 256 product whose operands stay in L2 (A and B rows in place,
 * C written), on every thread at once, each with its own operands.  It uses
 * the caches the way the GEMMs do, so it sees what slows them and a
 * register-only FMA burst does not: on the Cascade Lake VM the probe's kind
 * of loop ran at 0.58-0.70 of the FMA burst for seconds at a time, then at
 * 0.87-0.92 (bench/gemm_hierarchy.sh ... trace, BENCHMARKS.md).  The
 * micro-kernel is called directly, so the probe does not depend on the
 * blocking being tuned. */
#include <omp.h>
#include <stdlib.h>

#include "gpt2c/core.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_tune.h"

enum { PM = 96, PN = 256, PK = 256 }; /* multiples of every MR (6, 4) and NR (64, 16) */

/* one pass over the product: for each NR-column panel of B, each MR-row tile */
static void probe_pass(const gemm_isa_kernel *kk, const float *A, const float *B, float *C) {
    for (int jr = 0; jr < PN; jr += kk->nr)
        for (int ir = 0; ir < PM; ir += kk->mr)
            kk->kern(PK, A + (size_t)ir * PK, PK, 1, B + jr, PN, C + (size_t)ir * PN + jr, PN, 0, NULL);
}

double gpt2c_cpu_gemm_probe_gflops(gpt2c_isa isa, int threads, double seconds) {
    const gemm_isa_kernel *kk = gpt2c_cpu_gemm_kernel(isa);
    if (threads <= 0) threads = omp_get_num_procs();
    const double pass_flop = 2.0 * PM * PN * PK;
    int ok = 1;
    long passes = 0;
    double elapsed = 0;
#pragma omp parallel num_threads(threads) reduction(+ : passes) reduction(max : elapsed) reduction(& : ok)
    {
        float *A = aligned_alloc(64, sizeof(float) * PM * PK), *B = aligned_alloc(64, sizeof(float) * PK * PN);
        float *C = aligned_alloc(64, sizeof(float) * PM * PN);
        const int mine = A && B && C;
        if (mine) {
            for (int i = 0; i < PM * PK; i++) A[i] = (float)(i % 17) * 0.01f;
            for (int i = 0; i < PK * PN; i++) B[i] = (float)(i % 13) * 0.01f;
            probe_pass(kk, A, B, C); /* warm: operands into L2 */
        }
#pragma omp barrier
        if (mine) {
            const uint64_t t0 = gpt2c_now_ns(), stop = t0 + (uint64_t)(seconds * 1e9);
            uint64_t t = t0;
            do {
                for (int r = 0; r < 4; r++) probe_pass(kk, A, B, C);
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
