/* The bf16 GEMM (kernels/cpu/gemm_bf16.h) against its oracle gpt2c_ref_gemm_bf16,
 * for every kernel this CPU can run (vdpbf16ps, and the AVX-512F, AVX2 and
 * portable emulations), on ragged shapes (no multiple of any tile or block),
 * for the three GEMMs of a linear layer with the weight given as bf16 and as
 * fp32, with a bias and with accumulation.
 *
 * Every path computes the same pair arithmetic, so the comparison is bitwise;
 * so is the comparison between 1 and 2 threads and between two blockings.
 * The oracle itself is checked against a double-precision dot product of the
 * bf16-rounded inputs (|error| <= K * 2^-24 * sum |a b|, the bound of a
 * recursive fp32 sum), and the bf16 rounding against hand-worked values. */
#include <omp.h>
#include <stdint.h>

#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/kernels.h"
#include "kernels/cpu/cpu_caches.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/ref/ref_gemm_bf16.h"
#include "testutil.h"
#include "lib/bf16_order_bound.h"

static uint16_t *to_bf16(const float *x, size_t n) {
    uint16_t *y = malloc(sizeof(uint16_t) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) y[i] = gpt2c_bf16_from_f32(x[i]);
    return y;
}

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_rounding(void) {
    CHECK(gpt2c_bf16_from_f32(1.0f) == 0x3f80);
    CHECK(gpt2c_bf16_from_f32(bits_f(0x3f808000u)) == 0x3f80); /* tie, even below: down */
    CHECK(gpt2c_bf16_from_f32(bits_f(0x3f818000u)) == 0x3f82); /* tie, odd below: up */
    CHECK(gpt2c_bf16_from_f32(bits_f(0x3f808001u)) == 0x3f81); /* above the tie: up */
    CHECK(gpt2c_bf16_from_f32(-2.0f) == 0xc000);
    CHECK(gpt2c_bf16_from_f32(bits_f(0x7f800000u)) == 0x7f80);          /* inf stays inf */
    CHECK(gpt2c_bf16_from_f32(bits_f(0x7f7fffffu)) == 0x7f80);          /* FLT_MAX rounds to inf */
    CHECK((gpt2c_bf16_from_f32(bits_f(0x7f800001u)) & 0x7fff) > 0x7f80); /* NaN stays NaN */
    CHECK(gpt2c_bf16_to_f32(0x4049) == bits_f(0x40490000u));
}

/* ref against double on the rounded inputs */
static void test_oracle(void) {
    const int M = 5, N = 7, K = 301;
    float *A = tu_uniform((size_t)M * K, 1), *B = tu_uniform((size_t)K * N, 2), C[5 * 7];
    gpt2c_ref_gemm_bf16(M, N, K, A, K, 1, B, N, 1, C, N, NULL, 0);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, sa = 0;
            for (int k = 0; k < K; k++) {
                const double p = (double)gpt2c_bf16_round(A[i * K + k]) * gpt2c_bf16_round(B[k * N + j]);
                s += p, sa += fabs(p);
            }
            CHECK_MSG(fabs(C[i * N + j] - s) <= K * 0x1p-24 * sa, "ref (%d,%d): %g vs %g", i, j, C[i * N + j], s);
        }
    free(A), free(B);
}

static int g_fail_shown;
static void cmp(const char *what, const gemm_bf16_isa_kernel *kk, const float *got, const float *want, size_t n) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && !bad++) first = i;
    CHECK_MSG(bad == 0, "[%s] %s: %zu of %zu differ (first at %zu: %.9g vs %.9g)", kk->name, what, bad, n, first,
              bad ? got[first] : 0, bad ? want[first] : 0);
    if (bad) g_fail_shown++;
}

/* One linear layer's three GEMMs with kernel kk, weight in format wf. */
static void test_linear(const gemm_bf16_isa_kernel *kk, int N, int IC, int OC, gpt2c_format wf, uint64_t seed) {
    char what[128];
    float *X = tu_uniform((size_t)N * IC, seed), *W = tu_uniform((size_t)OC * IC, seed + 1), *D = tu_uniform((size_t)N * OC, seed + 2);
    float *bias = tu_uniform(OC, seed + 3);
    uint16_t *Wb = to_bf16(W, (size_t)OC * IC);
    const void *Wp = wf == GPT2C_FMT_BF16 ? (const void *)Wb : (const void *)W;
    float *out = malloc(sizeof(float) * N * OC), *ref = malloc(sizeof(float) * N * OC);
    float *dX = malloc(sizeof(float) * N * IC), *rdX = malloc(sizeof(float) * N * IC);
    float *dW = tu_uniform((size_t)OC * IC, seed + 4), *rdW = malloc(sizeof(float) * OC * IC), *dW2 = malloc(sizeof(float) * OC * IC);
    memcpy(rdW, dW, sizeof(float) * OC * IC);
    memcpy(dW2, dW, sizeof(float) * OC * IC);
    const char *wn = wf == GPT2C_FMT_BF16 ? "bf16" : "f32";

    /* forward with bias: out = X W^T + b */
    const gemm_operand ax = {X, GPT2C_FMT_F32, IC, 1}, bw = {Wp, wf, 1, IC};
    gpt2c_cpu_gemm_bf16_with(kk, N, OC, IC, ax, bw, out, OC, bias, 0);
    gpt2c_ref_gemm_bf16(N, OC, IC, X, IC, 1, W, 1, IC, ref, OC, bias, 0);
    snprintf(what, sizeof what, "fwd N=%d IC=%d OC=%d W %s", N, IC, OC, wn);
    cmp(what, kk, out, ref, (size_t)N * OC);
    /* dinp = dout W */
    const gemm_operand ad = {D, GPT2C_FMT_F32, OC, 1}, bw2 = {Wp, wf, IC, 1};
    gpt2c_cpu_gemm_bf16_with(kk, N, IC, OC, ad, bw2, dX, IC, NULL, 0);
    gpt2c_ref_gemm_bf16(N, IC, OC, D, OC, 1, W, IC, 1, rdX, IC, NULL, 0);
    snprintf(what, sizeof what, "dinp N=%d IC=%d OC=%d W %s", N, IC, OC, wn);
    cmp(what, kk, dX, rdX, (size_t)N * IC);
    /* dW += dout^T X (X in the weight's format: a bf16 activation copy) */
    uint16_t *Xb = to_bf16(X, (size_t)N * IC);
    const gemm_operand adt = {D, GPT2C_FMT_F32, 1, OC}, bx = {wf == GPT2C_FMT_BF16 ? (const void *)Xb : (const void *)X, wf, IC, 1};
    gpt2c_cpu_gemm_bf16_with(kk, OC, IC, N, adt, bx, dW, IC, NULL, 1);
    gpt2c_ref_gemm_bf16(OC, IC, N, D, 1, OC, X, IC, 1, rdW, IC, NULL, 1);
    snprintf(what, sizeof what, "dweight N=%d IC=%d OC=%d X %s", N, IC, OC, wn);
    cmp(what, kk, dW, rdW, (size_t)OC * IC);

    /* 1 thread and a small blocking (many K blocks, units, edges): same bits */
    const int nth = omp_get_max_threads();
    const gemm_bf16_blocking keep = gpt2c_cpu_gemm_bf16_get_blocking(), small = {16, 12, 64};
    omp_set_num_threads(1);
    gpt2c_cpu_gemm_bf16_set_blocking(small);
    gpt2c_cpu_gemm_bf16_with(kk, OC, IC, N, adt, bx, dW2, IC, NULL, 1);
    gpt2c_cpu_gemm_bf16_set_blocking(keep);
    omp_set_num_threads(nth);
    snprintf(what, sizeof what, "dweight 1 thread, kc 16 vs %d threads, kc %d", nth, keep.kc);
    cmp(what, kk, dW2, dW, (size_t)OC * IC);

    free(X), free(W), free(D), free(bias), free(Wb), free(Xb), free(out), free(ref), free(dX), free(rdX), free(dW),
        free(rdW), free(dW2);
}

/* The cpu backend's matmul ops take bf16 weight views and run these GEMMs
 * (same bits as the oracle; on AMX tiles within the order bound); the blas
 * backend sends them to ref. */
static void test_op_table(void) {
    const gpt2c_kernels *cpu = NULL;
    CHECK_OK(gpt2c_kernels_get("cpu", &cpu));
    if (!cpu) return;
    CHECK(GPT2C_KERNELS_TAKES(cpu, matmul_forward, GPT2C_FMT_BF16));
    CHECK(GPT2C_KERNELS_TAKES(cpu, matmul_backward, GPT2C_FMT_BF16));
    const int N = 19, IC = 45, OC = 70;
    float *X = tu_uniform((size_t)N * IC, 7), *W = tu_uniform((size_t)OC * IC, 8), *D = tu_uniform((size_t)N * OC, 9), *bias = tu_uniform(OC, 10);
    uint16_t *Wb = to_bf16(W, (size_t)OC * IC);
    gpt2c_tensor wt = {.fmt = GPT2C_FMT_BF16, .rows = OC, .cols = IC, .data = Wb};
    float *out = malloc(sizeof(float) * N * OC), *ref = malloc(sizeof(float) * N * OC);
    float *dX = malloc(sizeof(float) * N * IC), *rdX = malloc(sizeof(float) * N * IC);
    float *dW = calloc((size_t)OC * IC, sizeof(float)), *rdW = calloc((size_t)OC * IC, sizeof(float));
    float *db = calloc(OC, sizeof(float));
    /* the oracle's bits, or on AMX tiles within the order bound (lib/bf16_order_bound.h) */
#define SAME(M_, N_, K_, A_, ars, acs, B_, brs, bcs, bias_, got, want)                                                    \
    (tu_bf16_gemm_on_amx(M_) ? tu_bf16_order_err(M_, N_, K_, A_, ars, acs, B_, brs, bcs, bias_, NULL, got, want, N_) <= 1 \
                             : memcmp(got, want, sizeof(float) * (M_) * (N_)) == 0)
    cpu->matmul_forward(out, X, &wt, bias, N, IC, OC);
    gpt2c_ref_gemm_bf16(N, OC, IC, X, IC, 1, W, 1, IC, ref, OC, bias, 0);
    CHECK_MSG(SAME(N, OC, IC, X, IC, 1, W, 1, IC, bias, out, ref), "cpu matmul_forward with a bf16 weight");
    cpu->matmul_backward(dX, dW, db, D, X, &wt, N, IC, OC, 1);
    gpt2c_ref_gemm_bf16(N, IC, OC, D, OC, 1, W, IC, 1, rdX, IC, NULL, 0);
    gpt2c_ref_gemm_bf16(OC, IC, N, D, 1, OC, X, IC, 1, rdW, IC, NULL, 1);
    CHECK_MSG(SAME(N, IC, OC, D, OC, 1, W, IC, 1, NULL, dX, rdX), "cpu matmul_backward dinp with a bf16 weight");
    CHECK_MSG(SAME(OC, IC, N, D, 1, OC, X, IC, 1, NULL, dW, rdW), "cpu matmul_backward dweight with a bf16 weight");
    for (int i = 0; i < OC * IC; i++) dW[i] = NAN; /* overwritten (dw_acc 0): never read */
    cpu->matmul_backward(NULL, dW, NULL, D, X, &wt, N, IC, OC, 0);
    CHECK_MSG(SAME(OC, IC, N, D, 1, OC, X, IC, 1, NULL, dW, rdW), "cpu matmul_backward dweight overwritten with a bf16 weight");
#undef SAME
    free(X), free(W), free(D), free(bias), free(Wb), free(out), free(ref), free(dX), free(rdX), free(dW), free(rdW), free(db);
}

/* A and B both bf16 with contiguous K (the prefill: rows of X already
 * rounded, W^T), every row count 1..13 (A panels of 1..MR rows) and K with
 * and without a tail of a 16-word vector, against the oracle on the same
 * values as fp32; once with the K block cut to 32 (panels of 16 words). */
static void test_bf16_rows(const gemm_bf16_isa_kernel *kk) {
    static const int Ks[] = {2, 30, 32, 34, 64, 98, 33};
    const int N = 70;
    const gemm_bf16_blocking keep = gpt2c_cpu_gemm_bf16_get_blocking();
    for (int blk = 0; blk < 2; blk++) {
        if (blk) gpt2c_cpu_gemm_bf16_set_blocking((gemm_bf16_blocking){32, keep.mc, keep.nc});
        for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
            for (int M = 1; M <= 13; M++) {
                const int K = Ks[ki];
                float *A = tu_uniform((size_t)M * K, 700 + M), *B = tu_uniform((size_t)N * K, 800 + K), *bias = tu_uniform(N, 9);
                uint16_t *Ab = to_bf16(A, (size_t)M * K), *Bb = to_bf16(B, (size_t)N * K);
                for (size_t i = 0; i < (size_t)M * K; i++) A[i] = gpt2c_bf16_to_f32(Ab[i]);
                for (size_t i = 0; i < (size_t)N * K; i++) B[i] = gpt2c_bf16_to_f32(Bb[i]);
                float *got = malloc(sizeof(float) * M * N), *want = malloc(sizeof(float) * M * N);
                const gemm_operand a = {Ab, GPT2C_FMT_BF16, K, 1}, b = {Bb, GPT2C_FMT_BF16, 1, K};
                gpt2c_cpu_gemm_bf16_with(kk, M, N, K, a, b, got, N, bias, 0);
                gpt2c_ref_gemm_bf16(M, N, K, A, K, 1, B, 1, K, want, N, bias, 0);
                char what[64];
                snprintf(what, sizeof what, "bf16 rows M=%d K=%d kc=%d", M, K, blk ? 32 : keep.kc);
                cmp(what, kk, got, want, (size_t)M * N);
                /* A as swapped fp32 rows (kernels/bf16_rows.h), read in place */
                float *xs = malloc(gpt2c_bf16_in_row_bytes(GPT2C_BF16_IN_F32_SWAPPED, K) * M);
                gpt2c_bf16_in_rows(xs, A, (size_t)M, K, GPT2C_BF16_IN_F32_SWAPPED);
                memset(got, 0, sizeof(float) * M * N);
                gpt2c_cpu_gemm_bf16_swapped_a(kk, M, N, K, xs, K + (K & 1), b, got, N, bias, 0);
                snprintf(what, sizeof what, "swapped rows M=%d K=%d kc=%d", M, K, blk ? 32 : keep.kc);
                cmp(what, kk, got, want, (size_t)M * N);
                free(A), free(B), free(bias), free(Ab), free(Bb), free(got), free(want), free(xs);
            }
    }
    /* swapped rows with many units and K cut into slices (a small
     * pre-pack limit), accumulating into C */
    gpt2c_cpu_gemm_bf16_set_blocking((gemm_bf16_blocking){32, 12, 64});
    gpt2c_cpu_gemm_bf16_set_prepack_max(4096);
    for (int K = 97; K <= 98; K++) {
        const int M = 131;
        float *A = tu_uniform((size_t)M * K, 901), *B = tu_uniform((size_t)N * K, 902), *C0 = tu_uniform((size_t)M * N, 903);
        uint16_t *Bb = to_bf16(B, (size_t)N * K);
        for (size_t i = 0; i < (size_t)N * K; i++) B[i] = gpt2c_bf16_to_f32(Bb[i]);
        float *got = malloc(sizeof(float) * M * N), *want = malloc(sizeof(float) * M * N);
        memcpy(got, C0, sizeof(float) * M * N), memcpy(want, C0, sizeof(float) * M * N);
        float *xs = malloc(gpt2c_bf16_in_row_bytes(GPT2C_BF16_IN_F32_SWAPPED, K) * M);
        gpt2c_bf16_in_rows(xs, A, (size_t)M, K, GPT2C_BF16_IN_F32_SWAPPED);
        const gemm_operand b = {Bb, GPT2C_FMT_BF16, 1, K};
        gpt2c_cpu_gemm_bf16_swapped_a(kk, M, N, K, xs, K + (K & 1), b, got, N, NULL, 1);
        gpt2c_ref_gemm_bf16(M, N, K, A, K, 1, B, 1, K, want, N, NULL, 1);
        char what[64];
        snprintf(what, sizeof what, "swapped rows sliced M=%d K=%d", M, K);
        cmp(what, kk, got, want, (size_t)M * N);
        free(A), free(B), free(C0), free(Bb), free(got), free(want), free(xs);
    }
    gpt2c_cpu_gemm_bf16_set_prepack_max(0);
    gpt2c_cpu_gemm_bf16_set_blocking(keep);
}

/* A C larger than the last-level cache with kc < K <= 2 kc runs K as one
 * block in units of fewer rows (gemm_bf16.c): the same bits as K in three
 * blocks and as one block under a larger kc (C stored and reloaded exactly) */
static void test_one_k_block(void) {
    const long l3 = gpt2c_cpu_caches()->l3 > 0 ? gpt2c_cpu_caches()->l3 : 32L << 20;
    if (l3 > (128L << 20)) {
        printf("  (last-level cache %ld MiB: one-K-block case skipped)\n", l3 >> 20);
        return;
    }
    const int N = 64, K = 40, M = (int)(l3 / (N * (long)sizeof(float))) + 67; /* C just past the cache */
    const gpt2c_isa isa = gpt2c_cpu_isa();
    float *A = tu_uniform((size_t)M * K, 7), *B = tu_uniform((size_t)K * N, 8);
    float *C[3];
    const gemm_bf16_blocking keep = gpt2c_cpu_gemm_bf16_get_blocking();
    static const int kcs[3] = {32, 16, 48}; /* one block by the rule; three blocks (16, 16, 8); one block by kc */
    for (int v = 0; v < 3; v++) {
        C[v] = malloc(sizeof(float) * (size_t)M * N);
        gpt2c_cpu_gemm_bf16_set_blocking((gemm_bf16_blocking){kcs[v], keep.mc, keep.nc});
        const gemm_operand a = {A, GPT2C_FMT_F32, 1, M}, b = {B, GPT2C_FMT_F32, N, 1}; /* A as dout^T: a weight gradient */
        gpt2c_cpu_gemm_bf16(isa, M, N, K, a, b, C[v], N, NULL, 0);
    }
    gpt2c_cpu_gemm_bf16_set_blocking(keep);
    const gemm_bf16_isa_kernel *kk = gpt2c_cpu_gemm_bf16_kernel(isa);
    cmp("one K block (C past the last-level cache) vs three", kk, C[0], C[1], (size_t)M * N);
    cmp("one K block (C past the last-level cache) vs kc > K", kk, C[0], C[2], (size_t)M * N);
    free(A), free(B);
    for (int v = 0; v < 3; v++) free(C[v]);
}

int main(void) {
    test_op_table();
    test_rounding();
    test_oracle();
    omp_set_num_threads(2);
    const gemm_bf16_isa_kernel *kernels[4];
    int nk = 0;
    kernels[nk++] = &gpt2c_gemm_bf16_kernel_scalar;
#if defined(__x86_64__) || defined(_M_X64)
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX2)) kernels[nk++] = &gpt2c_gemm_bf16_kernel_avx2;
    if (gpt2c_cpu_has_isa(GPT2C_ISA_AVX512)) kernels[nk++] = &gpt2c_gemm_bf16_kernel_avx512f;
    if (gpt2c_cpu_has_avx512bf16()) kernels[nk++] = &gpt2c_gemm_bf16_kernel_avx512bf16;
    else printf("  (no AVX512_BF16 on this CPU: vdpbf16ps kernel not tested)\n");
#endif
    static const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 29, 13}, {37, 67, 101}, {50, 130, 71}, {9, 200, 515}, {130, 33, 64}};
    for (int k = 0; k < nk; k++) {
        printf("  kernel %s (%dx%d)\n", kernels[k]->name, kernels[k]->mr, kernels[k]->nr);
        /* the driver and the attention tile by mr x nr: for fp32 panels, the fp32 kernel's tile */
        if (kernels[k]->fp32)
            CHECK_MSG(kernels[k]->mr == kernels[k]->fp32->mr && kernels[k]->nr == kernels[k]->fp32->nr,
                      "[%s] tile %dx%d is not its fp32 kernel's %dx%d", kernels[k]->name, kernels[k]->mr, kernels[k]->nr,
                      kernels[k]->fp32->mr, kernels[k]->fp32->nr);
        else
            CHECK(kernels[k]->kern != NULL);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int wf = 0; wf < 2; wf++)
                test_linear(kernels[k], shapes[s][0], shapes[s][1], shapes[s][2], wf ? GPT2C_FMT_BF16 : GPT2C_FMT_F32,
                            100 + 10 * s);
        test_bf16_rows(kernels[k]);
    }
    test_one_k_block();
    /* the dispatcher picks a kernel for every ISA */
    for (int i = 0; i < GPT2C_ISA_COUNT; i++)
        if (gpt2c_cpu_has_isa((gpt2c_isa)i)) CHECK(gpt2c_cpu_gemm_bf16_kernel((gpt2c_isa)i) != NULL);
    return tu_finish("test_gemm_bf16");
}
