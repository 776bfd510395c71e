/* Matmuls through cuBLASLt, fp32 in and out, fp32 accumulation (or TF32
 * tensor cores when selected), bias as a cuBLASLt epilogue.
 *
 * Row-major (N,IC) @ (OC,IC)^T seen column-major: a row-major (R,C) matrix is
 * a column-major (C,R) one with leading dimension C, so
 *   forward  out^T (OC x N)  = W_cm^T (OC x IC) * inp_cm (IC x N)
 *   dinp^T   (IC x N)        = W_cm (IC x OC)   * dout_cm (OC x N)
 *   dW^T     (IC x OC)      += inp_cm (IC x N)   * dout_cm^T (N x OC)
 * where X_cm is the buffer of X read column-major. */
#include <cublasLt.h>
#include <stdint.h>

#include "kernels/cuda/cuda_common.cuh"

static cublasComputeType_t g_compute = CUBLAS_COMPUTE_32F;

extern "C" void gpt2c_cuda_set_matmul_tf32(int on) { g_compute = on ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; }
extern "C" int gpt2c_cuda_matmul_tf32(void) { return g_compute == CUBLAS_COMPUTE_32F_FAST_TF32; }

/* largest power of two (<= 256) dividing the address: cuBLASLt assumes 256
 * unless told, and our per-layer slices are only 4-byte aligned in general */
static uint32_t align_of(const void *p) {
    uint32_t a = 256;
    while (a > 4 && ((uintptr_t)p % a) != 0) a >>= 1;
    return a;
}

static int lt_ok(cublasStatus_t s, const char *what) {
    if (s == CUBLAS_STATUS_SUCCESS) return 1;
    gpt2c_cuda_latch_msg(what, cublasLtGetStatusString(s));
    return 0;
}

/* C (m x n, ldc) = op(A) (m x k) * op(B) (k x n) + beta C [+ bias (m) per column] */
static void lt_gemm(const char *what, cublasOperation_t opa, cublasOperation_t opb, int m, int n, int k, const float *A,
                    int lda, const float *B, int ldb, float *C, int ldc, float beta, const float *bias) {
    if (m <= 0 || n <= 0) return;
    cublasLtHandle_t h = (cublasLtHandle_t)gpt2c_cuda_lt_handle();
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    size_t ws_bytes;
    void *ws = gpt2c_cuda_lt_workspace(&ws_bytes);
    const float alpha = 1.0f;
    if (!lt_ok(cublasLtMatmulDescCreate(&op, g_compute, CUDA_R_32F), what)) return;
    lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa), what);
    lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb), what);
    if (bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), what);
        lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), what);
    }
    int ok = lt_ok(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, opa == CUBLAS_OP_N ? m : k, opa == CUBLAS_OP_N ? k : m, lda),
                   what) &&
             lt_ok(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, opb == CUBLAS_OP_N ? k : n, opb == CUBLAS_OP_N ? n : k, ldb),
                   what) &&
             lt_ok(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, ldc), what) &&
             lt_ok(cublasLtMatmulPreferenceCreate(&pref), what);
    if (ok) {
        uint32_t al[4] = {align_of(A), align_of(B), align_of(C), align_of(C)};
        lt_ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                   sizeof ws_bytes), what);
        lt_ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], 4), what);
        lt_ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], 4), what);
        lt_ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], 4), what);
        lt_ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[3], 4), what);
        cublasLtMatmulHeuristicResult_t heur;
        int found = 0;
        if (lt_ok(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 1, &heur, &found), what) && found == 0)
            gpt2c_cuda_latch_msg(what, "cuBLASLt found no algorithm for this shape / alignment");
        if (found > 0)
            lt_ok(cublasLtMatmul(h, op, &alpha, A, la, B, lb, &beta, C, lc, C, lc, &heur.algo, ws, ws_bytes,
                                 gpt2c_cuda_stream()),
                  what);
    }
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    cublasLtMatmulDescDestroy(op);
}

/* out (N,OC) += bias, for bias pointers the epilogue cannot take */
static __global__ void add_bias_kernel(float *out, const float *bias, int N, int OC) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)N * OC) out[i] += bias[i % OC];
}

/* f32 weights only (the table's formats mask says so) */
extern "C" void gpt2c_cuda_matmul_forward(float *out, const float *inp, const gpt2c_tensor *wt, const float *bias, int N,
                                    int IC, int OC) {
    const float *w = (const float *)wt->data;
    /* the bias epilogue wants an aligned vector; otherwise a separate add */
    const int epi = bias && ((uintptr_t)bias % 16) == 0;
    lt_gemm("matmul_forward", CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, w, IC, inp, IC, out, OC, 0.0f, epi ? bias : NULL);
    if (bias && !epi) {
        add_bias_kernel<<<cdiv((size_t)N * OC, 256), 256, 0, gpt2c_cuda_stream()>>>(out, bias, N, OC);
        CUDA_LAUNCHED("matmul_forward bias");
    }
}

extern "C" void gpt2c_cuda_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                     const gpt2c_tensor *wt, int N, int IC, int OC, int dw_acc) {
    const float *w = (const float *)wt->data;
    if (dinp) lt_gemm("matmul_backward dinp", CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, w, IC, dout, OC, dinp, IC, 0.0f, NULL);
    if (dw) /* beta 0: dw overwritten, not read */
        lt_gemm("matmul_backward dw", CUBLAS_OP_N, CUBLAS_OP_T, IC, OC, N, inp, IC, dout, OC, dw, IC, dw_acc ? 1.0f : 0.0f, NULL);
    if (dbias) gpt2c_cuda_colsum_accumulate(dbias, dout, N, OC);
}

/* ---- deterministic column sums ------------------------------------------
 * Pass 1: block (x = 256 columns, y = a chunk of COLSUM_ROWS rows) sums its
 * chunk top to bottom into part[chunk][c].  Pass 2: one thread per column adds
 * the chunks in order.  The grid depends only on (N, C): same bits every run. */
#define COLSUM_ROWS 256

static __global__ void colsum_chunks(float *part, const float *in, int N, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int n0 = blockIdx.y * COLSUM_ROWS, n1 = min(N, n0 + COLSUM_ROWS);
    float acc = 0.0f;
    for (int n = n0; n < n1; n++) acc += in[(size_t)n * C + c];
    part[(size_t)blockIdx.y * C + c] = acc;
}

static __global__ void colsum_finish(float *out, const float *part, int nchunks, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    double acc = 0.0;
    for (int k = 0; k < nchunks; k++) acc += part[(size_t)k * C + c];
    out[c] += (float)acc;
}

void gpt2c_cuda_colsum_accumulate(float *out, const float *in, int N, int C) {
    if (N <= 0 || C <= 0) return;
    const int nchunks = (int)cdiv((size_t)N, COLSUM_ROWS);
    float *part = (float *)gpt2c_cuda_scratch(sizeof(float) * (size_t)nchunks * C);
    if (!part) return;
    colsum_chunks<<<dim3(cdiv((size_t)C, 256), nchunks), 256, 0, gpt2c_cuda_stream()>>>(part, in, N, C);
    colsum_finish<<<cdiv((size_t)C, 256), 256, 0, gpt2c_cuda_stream()>>>(out, part, nchunks, C);
    CUDA_LAUNCHED("column sum");
}
