/* The blas backend: the cpu backend with its three GEMMs done by cblas_sgemm
 * (OpenBLAS, BLIS, ...), so `--backend blas` vs `--backend cpu` compares
 * exactly the GEMMs.  Determinism across thread counts is what the BLAS
 * library gives (OpenBLAS splits M and N, not K, for sgemm). */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "kernels/blas/blas.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/kernels.h"

#if defined(OPENBLAS_VERSION)
#define HAVE_OPENBLAS 1
#endif

/* OpenBLAS keeps its own thread pool: follow our thread count. */
static void sync_threads(void) {
#ifdef HAVE_OPENBLAS
    static int last = -1;
    int n = omp_get_max_threads();
    if (n != last) {
        openblas_set_num_threads(n);
        last = n;
    }
#endif
}

/* out (N,OC) = inp (N,IC) W^T + bias: rows start at bias, then sgemm with beta = 1 */
static void blas_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC,
                                int OC) {
    sync_threads();
    if (bias)
        for (int n = 0; n < N; n++) memcpy(out + (size_t)n * OC, bias, sizeof(float) * OC);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, w, IC, bias ? 1.0f : 0.0f, out, OC);
}

static void blas_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                 const float *w, int N, int IC, int OC) {
    sync_threads();
    if (dinp) /* dinp (N,IC) = dout (N,OC) W (OC,IC) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, w, IC, 0.0f, dinp, IC);
    /* dW (OC,IC) += dout^T inp */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dw, IC);
    if (!dbias) return;
    const int strips = (OC + 63) / 64;
#pragma omp parallel for schedule(static) if ((size_t)N * OC >= 16384)
    for (int s = 0; s < strips; s++) { /* column sums, rows in order */
        const int c0 = s * 64, c1 = c0 + 64 < OC ? c0 + 64 : OC;
        float acc[64] = {0};
        for (int n = 0; n < N; n++)
            for (int i = c0; i < c1; i++) acc[i - c0] += dout[(size_t)n * OC + i];
        for (int i = c0; i < c1; i++) dbias[i] += acc[i - c0];
    }
}

const gpt2c_kernels *gpt2c_kernels_blas(void) {
    static gpt2c_kernels t;
    static int ready;
    if (!ready) {
        t = *gpt2c_kernels_cpu(); /* every other op: the cpu backend's */
        t.name = "blas";
        t.isa = "cblas";
        t.matmul_forward = blas_matmul_forward;
        t.matmul_backward = blas_matmul_backward;
        ready = 1;
    }
    return &t;
}

const char *gpt2c_blas_describe(void) {
#ifdef HAVE_OPENBLAS
    static char buf[256];
    const char *env = getenv("OPENBLAS_CORETYPE");
    snprintf(buf, sizeof buf, "%s (core %s; OPENBLAS_CORETYPE=%s)", openblas_get_config(), openblas_get_corename(),
             env ? env : "unset");
    return buf;
#else
    return "cblas (not OpenBLAS: core type unknown)";
#endif
}

const char *gpt2c_blas_better_coretype(void) {
#ifdef HAVE_OPENBLAS
    const char *core = openblas_get_corename();
    if (gpt2c_cpu_best_isa() == GPT2C_ISA_AVX512 && core &&
        !(strstr(core, "SkylakeX") || strstr(core, "Cooperlake") || strstr(core, "Sapphire") ||
          strstr(core, "skylakex") || strstr(core, "cooperlake") || strstr(core, "sapphire")))
        return "SkylakeX";
#endif
    return NULL;
}

void blas_linear_gemm(gemm_linear_op op, float *C, const float *A, const float *B, int N, int IC, int OC) {
    sync_threads();
    switch (op) {
    case GEMM_FWD: cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, A, IC, B, IC, 0.0f, C, OC); break;
    case GEMM_DINP: cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, A, OC, B, IC, 0.0f, C, IC); break;
    case GEMM_DW: cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, A, OC, B, IC, 1.0f, C, IC); break;
    }
}
