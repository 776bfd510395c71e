/* The bf16 GEMM's blocking paths against its oracle, bitwise: operands
 * packed once per GEMM (A when C has several column groups, B when three or
 * more row groups) or per unit (B at two row groups: N=37 under mc 24),
 * by columns where two row groups within 1.5 mc would each pack B (N=40
 * under mc 36 on 2 threads, outputs 160 and 200 wide), K blocks, edge panels, 1 and 2 threads, for the three GEMMs of a
 * linear layer (fwd: W read transposed; dinp: W rows interleaved in pairs;
 * dweight: fp32 dout^T and X converted), and the blocking guessed from this
 * CPU's caches, and operands too large to pack once (K sliced).  Also: the
 * cache sizes that guess uses are plausible. */
#include <omp.h>
#include <stdint.h>

#include "gpt2c/core.h"
#include "kernels/bf16.h"
#include "kernels/cpu/cpu_caches.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_split.h"
#include "kernels/ref/ref_gemm_bf16.h"
#include "testutil.h"

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* one linear layer (N rows, IC -> OC), W bf16, under blocking bl and nth threads */
static void layer(const gemm_bf16_isa_kernel *kk, gemm_bf16_blocking bl, int nth, int N, int IC, int OC) {
    float *X = tu_uniform((size_t)N * IC, 1), *D = tu_uniform((size_t)N * OC, 2), *W = tu_uniform((size_t)OC * IC, 3), *bias = tu_uniform(OC, 4);
    uint16_t *Wb = malloc(sizeof(uint16_t) * (size_t)OC * IC);
    for (size_t i = 0; i < (size_t)OC * IC; i++) Wb[i] = gpt2c_bf16_from_f32(W[i]);
    float *Wr = malloc(sizeof(float) * (size_t)OC * IC); /* the bf16 weight, widened: the oracle's input */
    for (size_t i = 0; i < (size_t)OC * IC; i++) Wr[i] = gpt2c_bf16_to_f32(Wb[i]);
    float *out = calloc((size_t)N * OC, 4), *rout = calloc((size_t)N * OC, 4);
    float *dX = calloc((size_t)N * IC, 4), *rdX = calloc((size_t)N * IC, 4);
    float *dW = tu_uniform((size_t)OC * IC, 5), *rdW = malloc(sizeof(float) * (size_t)OC * IC);
    memcpy(rdW, dW, sizeof(float) * (size_t)OC * IC);
    const gemm_bf16_blocking keep = gpt2c_cpu_gemm_bf16_get_blocking();
    const int keep_nth = omp_get_max_threads();
    gpt2c_cpu_gemm_bf16_set_blocking(bl);
    omp_set_num_threads(nth);
    const gemm_operand x = {X, GPT2C_FMT_F32, IC, 1}, wt = {Wb, GPT2C_FMT_BF16, 1, IC};
    gpt2c_cpu_gemm_bf16_with(kk, N, OC, IC, x, wt, out, OC, bias, 0);
    const gemm_operand d = {D, GPT2C_FMT_F32, OC, 1}, w = {Wb, GPT2C_FMT_BF16, IC, 1};
    gpt2c_cpu_gemm_bf16_with(kk, N, IC, OC, d, w, dX, IC, NULL, 0);
    const gemm_operand dt = {D, GPT2C_FMT_F32, 1, OC}, xb = {X, GPT2C_FMT_F32, IC, 1};
    gpt2c_cpu_gemm_bf16_with(kk, OC, IC, N, dt, xb, dW, IC, NULL, 1);
    omp_set_num_threads(keep_nth);
    gpt2c_cpu_gemm_bf16_set_blocking(keep);
    gpt2c_ref_gemm_bf16(N, OC, IC, X, IC, 1, Wr, 1, IC, rout, OC, bias, 0);
    gpt2c_ref_gemm_bf16(N, IC, OC, D, OC, 1, Wr, IC, 1, rdX, IC, NULL, 0);
    gpt2c_ref_gemm_bf16(OC, IC, N, D, 1, OC, X, IC, 1, rdW, IC, NULL, 1);
    char what[160];
    snprintf(what, sizeof what, "%s N=%d IC=%d OC=%d kc %d mc %d nc %d, %d threads", kk->name, N, IC, OC, bl.kc, bl.mc,
             bl.nc, nth);
    CHECK_MSG(same_bits(out, rout, (size_t)N * OC), "fwd %s", what);
    CHECK_MSG(same_bits(dX, rdX, (size_t)N * IC), "dinp %s", what);
    CHECK_MSG(same_bits(dW, rdW, (size_t)OC * IC), "dweight %s", what);
    free(X), free(D), free(W), free(bias), free(Wb), free(Wr), free(out), free(rout), free(dX), free(rdX), free(dW), free(rdW);
}

int main(void) {
    const gpt2c_cpu_cache_sizes *cs = gpt2c_cpu_caches();
    printf("caches (%s): L1d %ld KiB, L2 %ld KiB (shared by %d), L3 %ld KiB (shared by %d)\n", cs->source, cs->l1d >> 10,
           cs->l2 >> 10, cs->l2_share, cs->l3 >> 10, cs->l3_share);
    CHECK(cs->source != NULL);
    CHECK(cs->l1d == 0 || (cs->l1d >= 4 << 10 && cs->l1d <= 1 << 20));
    CHECK(cs->l2 == 0 || (cs->l2 >= 64 << 10 && cs->l2 <= 64 << 20));
    CHECK(cs->l2_share >= 1 && cs->l3_share >= 1);
    const gemm_bf16_blocking keep = gpt2c_cpu_gemm_bf16_get_blocking();
    const gemm_bf16_blocking guess = gpt2c_cpu_gemm_bf16_blocking_from_caches(gpt2c_cpu_isa());
    gpt2c_cpu_gemm_bf16_set_blocking(keep);
    printf("blocking from caches: kc %d mc %d nc %d\n", guess.kc, guess.mc, guess.nc);
    CHECK(guess.kc >= 16 && guess.kc % 2 == 0 && guess.mc % 12 == 0 && guess.nc % 64 == 0);
    const gemm_bf16_isa_kernel *kernels[] = {&gpt2c_gemm_bf16_kernel_scalar, gpt2c_cpu_gemm_bf16_kernel(gpt2c_cpu_best_isa())};
    /* small blockings: several row and column groups (both operands packed
     * once), an odd K tail, edge panels; and the guess */
    const gemm_bf16_blocking bls[] = {{16, 12, 64}, {22, 24, 128}, {64, 36, 192}, guess};
    for (size_t k = 0; k < 2; k++)
        for (size_t b = 0; b < sizeof bls / sizeof bls[0]; b++)
            for (int nth = 1; nth <= 2; nth++) {
                layer(kernels[k], bls[b], nth, 37, 53, 141);
                layer(kernels[k], bls[b], nth, 100, 96, 130);
            }
    /* two row groups within 1.5 mc on 2 threads, C at least 4x wider than
     * tall: one row group, cut by columns instead, each unit packing its own
     * A (40 rows under mc 36; outputs 200 and 160 wide) */
    for (size_t k = 0; k < 2; k++) {
        layer(kernels[k], (gemm_bf16_blocking){64, 36, 256}, 2, 40, 160, 200);
        layer(kernels[k], (gemm_bf16_blocking){64, 36, 128}, 2, 40, 160, 200); /* and two column groups */
    }
    /* operands too large to pack once (the LM head's dinp: its A is B*T x
     * 50304): the GEMM runs over slices of K; here with a 4 KiB limit */
    gpt2c_cpu_gemm_bf16_set_prepack_max(4096);
    for (size_t k = 0; k < 2; k++)
        for (int nth = 1; nth <= 2; nth++) {
            layer(kernels[k], bls[0], nth, 100, 96, 130);
            layer(kernels[k], bls[1], nth, 37, 53, 141);
        }
    gpt2c_cpu_gemm_bf16_set_prepack_max(0);

    /* the profiler's split of the GEMMs' thread time (gemm_split.h): off, nothing is added; on, both the
     * packing and the kernel time grow, for the bf16 and the fp32 driver; the same results either way */
    double s0[GEMM_SPLIT_COUNT], s1[GEMM_SPLIT_COUNT], s2[GEMM_SPLIT_COUNT];
    gpt2c_cpu_gemm_split_read(s0);
    layer(kernels[1], guess, 2, 100, 96, 130);
    gpt2c_cpu_gemm_split_read(s1);
    CHECK(s1[GEMM_SPLIT_PACK] == s0[GEMM_SPLIT_PACK] && s1[GEMM_SPLIT_KERNEL] == s0[GEMM_SPLIT_KERNEL]);
    gpt2c_cpu_gemm_split_enable(1);
    layer(kernels[1], guess, 2, 100, 96, 130);
    gpt2c_cpu_gemm_split_read(s2);
    CHECK(s2[GEMM_SPLIT_PACK] > s1[GEMM_SPLIT_PACK] && s2[GEMM_SPLIT_KERNEL] > s1[GEMM_SPLIT_KERNEL]);
    enum { M = 64, N = 128, K = 96 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) a[i] = (float)(i % 7) - 3;
    for (int i = 0; i < K * N; i++) b[i] = (float)(i % 5) - 2;
    gpt2c_cpu_gemm(gpt2c_cpu_best_isa(), M, N, K, a, K, 1, b, 1, K, c, N, NULL, 0); /* B = W^T: packed */
    gpt2c_cpu_gemm_split_read(s1);
    CHECK(s1[GEMM_SPLIT_PACK] > s2[GEMM_SPLIT_PACK] && s1[GEMM_SPLIT_KERNEL] > s2[GEMM_SPLIT_KERNEL]);
    gpt2c_cpu_gemm_split_enable(0);
    free(a), free(b), free(c);
    return tu_finish("test_gemm_prepack");
}
