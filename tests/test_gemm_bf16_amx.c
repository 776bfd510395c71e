/* The bf16 GEMM on AMX tiles (kernels/cpu/gemm_bf16_amx.h), on every machine
 * through the plain-C tile model, and on the instructions where the CPU and
 * OS allow AMX (kernels/cpu/amx.h):
 *
 *   - the tile model against Intel's text for TDPBF16PS on hand-worked cases
 *     (the even product of a pair added first; bf16 denormal inputs read as
 *     zero; denormal results flushed); on hardware the same cases are run
 *     and their answers printed (its internal order is not promised, so it
 *     is held to the bound below, not to these bits);
 *   - the GEMM against the oracle gpt2c_ref_gemm_bf16 for the three GEMMs of
 *     a linear layer (operand strides of forward, dinp and dweight; fp32 and
 *     bf16 operands), with bias and accumulation, on ragged shapes (every M,
 *     N, K edge: below a tile, odd, not a multiple of 32), with this CPU's
 *     vector packing helpers and with the portable loops, within the
 *     recursive-sum bound: |got - ref| <= 2 (K+2) 2^-24 (sum |a b| + |c0|)
 *     (each within K 2^-24 sum of the exact value, whatever the order);
 *   - determinism: the same bits on 1 and 2 threads, with a K block of 32
 *     or 512, and with packed A sliced by rows or by K;
 *   - an A of bf16 rows (prefill's input) read in place: the bits of the
 *     same A packed, whatever its row stride and row count;
 *   - the tiles are only touched between begin and end (on hardware a tile
 *     instruction outside them kills the process);
 *   - the engine's self-check passes for the model and the hardware, and
 *     fails for a kernel that is wrong. */
#include <omp.h>
#include <stdint.h>

#include "kernels/bf16.h"
#include "kernels/cpu/amx.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_bf16_amx.h"
#include "kernels/ref/ref_gemm_bf16.h"
#include "testutil.h"
#include "lib/bf16_order_bound.h"

static uint64_t g_seed = 88172645463325252ull;
static float urand(void) { /* [-1, 1) */
    g_seed ^= g_seed << 13, g_seed ^= g_seed >> 7, g_seed ^= g_seed << 17;
    return (float)((double)(g_seed >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- TDPBF16PS on one tile of hand-worked values ---- */
/* C tile row 0, column 0 after C = c0, A row 0 = pairs a, B column 0 = pairs b (one chunk; the rest zero) */
static float one_dp(const gpt2c_amx_tiles *t, float c0, const uint16_t a[2], const uint16_t b[2]) {
    uint32_t A0[256] __attribute__((aligned(64))) = {0}, Z[256] __attribute__((aligned(64))) = {0};
    uint32_t B0[256] __attribute__((aligned(64))) = {0};
    float C[32 * 32] __attribute__((aligned(64)));
    for (int i = 0; i < 32 * 32; i++) C[i] = 0;
    C[0] = c0;
    A0[0] = a[0] | (uint32_t)a[1] << 16; /* row 0, pair 0 */
    B0[0] = b[0] | (uint32_t)b[1] << 16; /* pair 0, column 0 */
    t->begin();
    t->block(1, A0, Z, 64, 256, B0, Z, C, 32, 1, NULL);
    t->end();
    return C[0];
}

static void test_dp_semantics(const gpt2c_amx_tiles *t, int hw) {
    /* c = 1; even product -1 (1 x -1), odd product 2^-30 (2^-15 x 2^-15):
     * even first gives (1 - 1) + 2^-30 = 2^-30; odd first gives (1 + 2^-30) - 1 = 0 */
    const uint16_t a1[2] = {0x3f80, 0x3800}, b1[2] = {0xbf80, 0x3800};
    const float order = one_dp(t, 1.0f, a1, b1);
    /* a bf16 denormal (0x0001 = 2^-133) times 2^127: 2^-6 unless inputs are flushed */
    const uint16_t a2[2] = {0x0001, 0}, b2[2] = {0x7f00, 0};
    const float daz = one_dp(t, 0.0f, a2, b2);
    /* 2^-70 x 2^-70 = 2^-140, a denormal fp32 result: 0 when flushed */
    const uint16_t a3[2] = {0x1c80, 0}, b3[2] = {0x1c80, 0};
    const float ftz = one_dp(t, 0.0f, a3, b3);
    if (hw) {
        printf("  hardware TDPBF16PS: c=1 + (1 x -1) + (2^-15 x 2^-15) = %a (%s); denormal input %s; denormal result %s\n",
               order, order == bits_f(0x30800000u) ? "even product first, as Intel's text" : order == 0 ? "odd first, or fused" : "?",
               daz == 0 ? "read as zero" : "kept", ftz == 0 ? "flushed" : "kept");
        return;
    }
    CHECK_MSG(order == bits_f(0x30800000u), "tile model: pair order gives %a, want 2^-30 (even product first)", order);
    CHECK_MSG(daz == 0.0f, "tile model: a denormal bf16 input gives %a, want 0", daz);
    CHECK_MSG(ftz == 0.0f, "tile model: a denormal result gives %a, want 0 (flushed)", ftz);
    /* normal values: exact products, rounded adds: 1.5 x 1.25 + 0.5 x -0.75 + 3 = 4.5 */
    const uint16_t a4[2] = {0x3fc0, 0x3f00}, b4[2] = {0x3fa0, 0xbf40};
    CHECK(one_dp(t, 3.0f, a4, b4) == 4.5f);
}

/* ---- the GEMM against the oracle (the bound: lib/bf16_order_bound.h) ---- */
typedef struct {
    int M, N, K;
    const float *A;
    long ars, acs;
    const float *B;
    long brs, bcs;
} prob;

/* max over C of |got - ref| / bound (> 1: outside it) */
static double err_vs_ref(const prob *p, const float *got, const float *ref, const float *c0, const float *bias) {
    return tu_bf16_order_err(p->M, p->N, p->K, p->A, p->ars, p->acs, p->B, p->brs, p->bcs, bias, c0, got, ref, p->N);
}

static uint16_t *bf16_copy(const float *x, size_t n) {
    uint16_t *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = gpt2c_bf16_from_f32(x[i]);
    return y;
}

/* op 0: forward (A rows, B = W^T), 1: dinp (A rows, B = W), 2: dweight (A = dout^T, B = X rows) */
/* the packing helpers: this CPU's vector ones, or (NULL helpers) the portable loops */
static const gemm_bf16_isa_kernel *g_helpers;

static void test_gemm(const gpt2c_amx_tiles *t, int op, int M, int N, int K, int b_bf16, int use_bias, int accumulate) {
    const gemm_bf16_isa_kernel *kk = g_helpers;
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N), *bias = malloc(sizeof(float) * N);
    float *got = malloc(sizeof(float) * M * N), *ref = malloc(sizeof(float) * M * N), *c0 = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) A[i] = urand();
    for (int i = 0; i < K * N; i++) B[i] = b_bf16 ? gpt2c_bf16_round(urand()) : urand();
    for (int j = 0; j < N; j++) bias[j] = urand();
    for (int i = 0; i < M * N; i++) c0[i] = urand();
    prob p = {M, N, K, A, K, 1, B, 1, K};      /* forward: B (k,j) = W[j][k], W (N,K) */
    if (op == 1) p.brs = N, p.bcs = 1;         /* dinp: B = W (K,N) rows */
    if (op == 2) p.ars = 1, p.acs = M, p.brs = N, p.bcs = 1; /* dweight: A (i,k) = dout[k][i] */
    uint16_t *Bb = b_bf16 ? bf16_copy(B, (size_t)K * N) : NULL;
    const gemm_operand a = {A, GPT2C_FMT_F32, p.ars, p.acs}, b = {Bb ? (const void *)Bb : B, Bb ? GPT2C_FMT_BF16 : GPT2C_FMT_F32, p.brs, p.bcs};
    const float *bi = use_bias ? bias : NULL;
    memcpy(got, c0, sizeof(float) * M * N);
    memcpy(ref, c0, sizeof(float) * M * N);
    gpt2c_cpu_gemm_bf16_amx(t, kk, M, N, K, a, b, got, N, bi, accumulate);
    gpt2c_ref_gemm_bf16(M, N, K, A, p.ars, p.acs, B, p.brs, p.bcs, ref, N, bi, accumulate);
    const double e = err_vs_ref(&p, got, ref, accumulate ? c0 : NULL, bi);
    static const char *const ops[3] = {"fwd", "dinp", "dw"};
    CHECK_MSG(e <= 1.0, "[%s] %s M=%d N=%d K=%d B %s bias %d acc %d: error %.3g of the bound", t->name, ops[op], M, N, K,
              b_bf16 ? "bf16" : "f32", use_bias, accumulate, e);
    /* determinism: 1 and 2 threads; K block 32; packed A sliced (rows, then K) */
    float *again = malloc(sizeof(float) * M * N);
    for (int v = 0; v < 4; v++) {
        memcpy(again, c0, sizeof(float) * M * N);
        const int th = omp_get_max_threads();
        if (v == 0) omp_set_num_threads(th > 1 ? 1 : 2);
        if (v == 1) gpt2c_cpu_gemm_bf16_amx_set_kc(32);
        if (v >= 2) /* half of packed A: slices of rows, or of K where B is the dearer to pack again (40 x 64 x 1030) */
            gpt2c_cpu_gemm_bf16_amx_set_pack_max(v == 2 ? (size_t)((M + 31) / 32 * 32) * ((K + 31) / 32 * 32) : 2048);
        gpt2c_cpu_gemm_bf16_amx(t, kk, M, N, K, a, b, again, N, bi, accumulate);
        omp_set_num_threads(th);
        gpt2c_cpu_gemm_bf16_amx_set_kc(0);
        gpt2c_cpu_gemm_bf16_amx_set_pack_max(0);
        static const char *const how[4] = {"another thread count", "a K block of 32", "a small pack limit", "a tiny pack limit"};
        CHECK_MSG(memcmp(again, got, sizeof(float) * M * N) == 0, "[%s] %s M=%d N=%d K=%d: %s changes the bits", t->name,
                  ops[op], M, N, K, how[v]);
    }
    free(again);
    free(A), free(B), free(bias), free(got), free(ref), free(c0), free(Bb);
}

/* A of bf16 rows (a prefill's rounded input; row stride rs >= K), its
 * tiles loaded in place where K is a multiple of 32 (the rows past the last
 * whole 32 packed): within the bound of the oracle, and the bits of the same
 * GEMM with A given as fp32 (packed): the same values in the same order. */
static void test_rows_in_place(const gpt2c_amx_tiles *t, int M, int N, int K, int rs) {
    float *A = malloc(sizeof(float) * M * K), *W = malloc(sizeof(float) * N * K);
    uint16_t *Ab = malloc(sizeof(uint16_t) * M * rs), *Wb = malloc(sizeof(uint16_t) * N * K);
    float *got = malloc(sizeof(float) * M * N), *packed = malloc(sizeof(float) * M * N), *ref = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * rs; i++) Ab[i] = 0x7fc0; /* NaN between rows: never read */
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) A[i * K + k] = gpt2c_bf16_round(urand()), Ab[i * rs + k] = gpt2c_bf16_from_f32(A[i * K + k]);
    for (int i = 0; i < N * K; i++) W[i] = gpt2c_bf16_round(urand()), Wb[i] = gpt2c_bf16_from_f32(W[i]);
    const gemm_operand ab = {Ab, GPT2C_FMT_BF16, rs, 1}, af = {A, GPT2C_FMT_F32, K, 1}, b = {Wb, GPT2C_FMT_BF16, 1, K};
    gpt2c_cpu_gemm_bf16_amx(t, g_helpers, M, N, K, ab, b, got, N, NULL, 0);
    gpt2c_cpu_gemm_bf16_amx(t, g_helpers, M, N, K, af, b, packed, N, NULL, 0);
    gpt2c_ref_gemm_bf16(M, N, K, A, K, 1, W, 1, K, ref, N, NULL, 0);
    const prob p = {M, N, K, A, K, 1, W, 1, K};
    const double e = err_vs_ref(&p, got, ref, NULL, NULL);
    CHECK_MSG(e <= 1.0, "[%s] A rows in place M=%d N=%d K=%d rs=%d: error %.3g of the bound", t->name, M, N, K, rs, e);
    CHECK_MSG(memcmp(got, packed, sizeof(float) * M * N) == 0, "[%s] A rows in place M=%d N=%d K=%d rs=%d: not the packed A's bits",
              t->name, M, N, K, rs);
    free(A), free(W), free(Ab), free(Wb), free(got), free(packed), free(ref);
}

/* A kernel that drops the last chunk of every block: the self-check must refuse it. */
static const gpt2c_amx_tiles *g_inner;
static void bad_block(int nch, const uint32_t *a0, const uint32_t *a1, long lda, long astep, const uint32_t *b0,
                      const uint32_t *b1, float *C, long ldc, int load_c, const float *bias) {
    g_inner->block(nch > 1 ? nch - 1 : nch, a0, a1, lda, astep, b0, b1, C, ldc, load_c, bias);
}

static void run_all(const gpt2c_amx_tiles *t, int hw) {
    printf("tiles: %s\n", t->name);
    test_dp_semantics(t, hw);
    static const int shapes[][3] = {{32, 32, 32}, {1, 1, 1}, {5, 7, 3},      {33, 31, 65},  {64, 96, 200},
                                    {17, 40, 31}, {70, 33, 64}, {96, 300, 97}, {40, 64, 1030}};
    const gemm_bf16_isa_kernel *kk = gpt2c_cpu_gemm_bf16_kernel(gpt2c_cpu_best_isa());
    for (int h = 0; h < 2; h++) {
        g_helpers = h ? &gpt2c_gemm_bf16_kernel_scalar : kk;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int op = 0; op < 3; op++) {
                if (h && s % 2) continue;
                const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                test_gemm(t, op, M, N, K, op != 2, op == 0, op == 2);
                if (s % 3 == 0) test_gemm(t, op, M, N, K, op == 2, op != 0, 0);
            }
        static const int rows[][4] = {{32, 32, 32, 32}, {70, 40, 64, 64}, {31, 33, 96, 96}, {96, 64, 544, 576}, {65, 17, 31, 32}};
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) test_rows_in_place(t, rows[r][0], rows[r][1], rows[r][2], rows[r][3]);
    }
    double worst = 0;
    CHECK_MSG(gpt2c_cpu_gemm_bf16_amx_check(t, kk, &worst), "[%s] self-check fails (%.3g of the bound)", t->name, worst);
    printf("  self-check: worst error %.3g of its bound\n", worst);
    g_inner = t;
    const gpt2c_amx_tiles bad = {"dropped-chunk", t->begin, t->end, bad_block};
    CHECK_MSG(!gpt2c_cpu_gemm_bf16_amx_check(&bad, kk, NULL), "[%s] the self-check passes a kernel that drops a chunk", t->name);
}

int main(void) {
    run_all(&gpt2c_amx_tiles_emulated, 0);
    CHECK_MSG(!gpt2c_amx_emulated_misuse(), "a tile operation ran outside begin/end");
    const char *why = "";
    if (gpt2c_cpu_amx_usable(&why)) {
#ifdef GPT2C_HAVE_AMX_KERNEL
        run_all(&gpt2c_amx_tiles_hw, 1);
#endif
    } else {
        printf("hardware tiles: not run (%s)\n", why);
    }
    return tu_finish("test_gemm_bf16_amx");
}
