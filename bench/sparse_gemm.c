/* Does a sparse weight format pay on this CPU?  gpt2c's dense fp32 inference
 * matmul (the cpu table's matmul_infer_range, as decode and prefill call it:
 * 64-output chunks spread over OpenMP threads) against two sparse formats of
 * the same pruned weight, written here for the comparison only:
 *   csr  unstructured: per output row, the kept values + 16-bit input-column
 *        indices (6 bytes per kept weight), at 50/80/90% sparsity;
 *   2:4  two kept of every four consecutive inputs: half the values + 2-bit
 *        positions (4 bits per group: 2.25 bytes per kept weight), 50%.
 * Decode (N=1, a GEMV): AVX-512 gathers of the activation by column index.
 * Prefill (N=256): the activations transposed once per call (counted), then
 * per output row and kept weight an FMA of a broadcast value with a 64-wide
 * slice of that input's transposed row; two rows at a time (8 FMA chains).
 * Every sparse output is checked against the dense kernel run on the pruned
 * (zero-filled) weight.  Decode cycles over copies of each weight totalling
 * far beyond the L3, so weights come from DRAM as in a real decode; prefill
 * reuses one (compute-bound).
 * Times: wall clock, medians of REPS interleaved reps (every kernel once per
 * rep).  Built and run by bench/sparse_gemm.sh; x86-64 with AVX-512BW/VL only.
 * Usage: sparse_gemm THREADS REPS */
#define _GNU_SOURCE
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

enum { CHUNK = 64, NB = 64, NPRE = 256, NKERN = 5 };
static const char *kname[NKERN] = {"dense", "csr50", "csr80", "csr90", "2:4"};

typedef struct {
    int OC, IC;
    int32_t *rowptr;  /* csr: OC+1 offsets into val/col */
    uint16_t *col;    /* csr */
    float *val;       /* csr: rowptr[OC]; 2:4: OC*IC/2 */
    uint32_t *meta;   /* 2:4: OC*IC/32 words, 2 bits per kept value (its place in its group of 4) */
    size_t bytes;
} sparse_w;

static uint32_t hash32(uint64_t x) {
    x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL, x ^= x >> 33;
    return (uint32_t)x;
}
static void *xalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) fprintf(stderr, "sparse_gemm: out of memory (%zu bytes)\n", n), exit(1);
    return p;
}

/* Unstructured: keeps each weight with probability 1-s (a random mask, as
 * magnitude pruning of random-init weights gives); zeros the rest of Wp. */
static void make_csr(sparse_w *s, float *Wp, const float *W, int OC, int IC, double sparsity, uint64_t seed) {
    s->OC = OC, s->IC = IC, s->meta = NULL;
    s->rowptr = xalloc(sizeof(int32_t) * (OC + 1));
    size_t nnz = 0;
    const uint32_t thr = (uint32_t)((1.0 - sparsity) * 4294967295.0);
    for (size_t i = 0; i < (size_t)OC * IC; i++) {
        const int keep = hash32(seed * 0x9e3779b97f4a7c15ULL + i) < thr;
        Wp[i] = keep ? W[i] : 0.0f;
        nnz += keep;
    }
    s->val = xalloc(sizeof(float) * (nnz + 16));
    s->col = xalloc(sizeof(uint16_t) * (nnz + 32));
    size_t j = 0;
    for (int o = 0; o < OC; o++) {
        s->rowptr[o] = (int32_t)j;
        for (int i = 0; i < IC; i++)
            if (Wp[(size_t)o * IC + i] != 0.0f) s->val[j] = Wp[(size_t)o * IC + i], s->col[j++] = (uint16_t)i;
    }
    s->rowptr[OC] = (int32_t)j;
    s->bytes = nnz * 6 + (size_t)(OC + 1) * 4;
}

/* 2:4: in each group of 4 inputs keeps the 2 of largest magnitude. */
static void make_24(sparse_w *s, float *Wp, const float *W, int OC, int IC) {
    s->OC = OC, s->IC = IC, s->rowptr = NULL, s->col = NULL;
    s->val = xalloc(sizeof(float) * (size_t)OC * IC / 2);
    s->meta = xalloc(sizeof(uint32_t) * (size_t)OC * IC / 32);
    memset(s->meta, 0, sizeof(uint32_t) * (size_t)OC * IC / 32);
    for (size_t g = 0; g < (size_t)OC * IC / 4; g++) {
        const float *w = W + 4 * g;
        int a = 0, b = 1; /* the two largest |w|, a < b in position */
        for (int i = 0; i < 4; i++)
            for (int k = i + 1; k < 4; k++)
                if (fabsf(w[i]) + fabsf(w[k]) > fabsf(w[a]) + fabsf(w[b])) a = i, b = k;
        for (int i = 0; i < 4; i++) Wp[4 * g + i] = (i == a || i == b) ? w[i] : 0.0f;
        s->val[2 * g] = w[a], s->val[2 * g + 1] = w[b];
        /* value v = 2g (+1) has its position at bits 2*(v%16) of word v/16 */
        s->meta[g / 8] |= (uint32_t)a << (4 * (g % 8)) | (uint32_t)b << (4 * (g % 8) + 2);
    }
    s->bytes = (size_t)OC * IC / 2 * 4 + (size_t)OC * IC / 8;
}

/* ---- decode: out[o] = sum over kept (v, c) of row o: v * x[c] ---- */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void csr_gemv(float *out, const float *x, const sparse_w *s,
                                                                        int o0, int o1) {
    for (int o = o0; o < o1; o++) {
        const int j0 = s->rowptr[o], j1 = s->rowptr[o + 1];
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        int j = j0;
        for (; j + 32 <= j1; j += 32) {
            const __m512i c0 = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s->col + j)));
            const __m512i c1 = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s->col + j + 16)));
            acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(s->val + j), _mm512_i32gather_ps(c0, x, 4), acc0);
            acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(s->val + j + 16), _mm512_i32gather_ps(c1, x, 4), acc1);
        }
        for (; j < j1; j += 16) {
            const __mmask16 m = (__mmask16)(j1 - j >= 16 ? 0xffff : (1u << (j1 - j)) - 1);
            const __m512i c = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s->col + j));
            acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, s->val + j),
                                   _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, c, x, 4), acc0);
        }
        out[o] = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    }
}

/* 16 kept values (8 groups of 4 inputs from base) per 32-bit meta word:
 * lane i reads x[base + 4*(i/2) + ((meta >> 2i) & 3)]. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void s24_gemv(float *out, const float *x, const sparse_w *s,
                                                                        int o0, int o1) {
    const __m512i shift = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i grp = _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
    const __m512i three = _mm512_set1_epi32(3);
    const int words = s->IC / 32;
    for (int o = o0; o < o1; o++) {
        const float *v = s->val + (size_t)o * s->IC / 2;
        const uint32_t *mt = s->meta + (size_t)o * words;
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        for (int w = 0; w < words; w += 2) { /* IC is a multiple of 64 here */
            const __m512i i0 = _mm512_add_epi32(
                _mm512_add_epi32(grp, _mm512_set1_epi32(32 * w)),
                _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32((int)mt[w]), shift), three));
            const __m512i i1 = _mm512_add_epi32(
                _mm512_add_epi32(grp, _mm512_set1_epi32(32 * w + 32)),
                _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32((int)mt[w + 1]), shift), three));
            acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(v + 16 * w), _mm512_i32gather_ps(i0, x, 4), acc0);
            acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(v + 16 * w + 16), _mm512_i32gather_ps(i1, x, 4), acc1);
        }
        out[o] = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    }
}

/* ---- prefill: xt (IC, NPRE) is the activations transposed; for each
 * 64-wide slice of tokens, out[n, o] += v * xt[c, n] over row o's kept (v, c),
 * two rows at a time (8 independent FMA chains). ---- */
__attribute__((target("avx512f"))) static void csr_rows_gemm(float *out, const float *xt, const float *va,
                                                            const uint16_t *ca, int na, const float *vb,
                                                            const uint16_t *cb, int nb, int oa, int OC) {
    for (int n0 = 0; n0 < NPRE; n0 += NB) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        const int nm = na < nb ? na : nb;
        int j = 0;
        for (; j < nm; j++) {
            const float *ra = xt + (size_t)ca[j] * NPRE + n0, *rb = xt + (size_t)cb[j] * NPRE + n0;
            const __m512 wa = _mm512_set1_ps(va[j]), wb = _mm512_set1_ps(vb[j]);
            a0 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(ra), a0), a1 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(ra + 16), a1);
            a2 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(ra + 32), a2), a3 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(ra + 48), a3);
            b0 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(rb), b0), b1 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(rb + 16), b1);
            b2 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(rb + 32), b2), b3 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(rb + 48), b3);
        }
        for (int k = j; k < na; k++) {
            const float *ra = xt + (size_t)ca[k] * NPRE + n0;
            const __m512 wa = _mm512_set1_ps(va[k]);
            a0 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(ra), a0), a1 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(ra + 16), a1);
            a2 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(ra + 32), a2), a3 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(ra + 48), a3);
        }
        for (int k = j; k < nb; k++) {
            const float *rb = xt + (size_t)cb[k] * NPRE + n0;
            const __m512 wb = _mm512_set1_ps(vb[k]);
            b0 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(rb), b0), b1 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(rb + 16), b1);
            b2 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(rb + 32), b2), b3 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(rb + 48), b3);
        }
        /* scatter the two 64-token columns into out (N, OC) */
        float ta[NB], tb[NB];
        _mm512_storeu_ps(ta, a0), _mm512_storeu_ps(ta + 16, a1), _mm512_storeu_ps(ta + 32, a2), _mm512_storeu_ps(ta + 48, a3);
        _mm512_storeu_ps(tb, b0), _mm512_storeu_ps(tb + 16, b1), _mm512_storeu_ps(tb + 32, b2), _mm512_storeu_ps(tb + 48, b3);
        for (int n = 0; n < NB; n++) {
            out[(size_t)(n0 + n) * OC + oa] = ta[n];
            if (vb) out[(size_t)(n0 + n) * OC + oa + 1] = tb[n];
        }
    }
}

static void sparse_gemm_range(float *out, const float *xt, const sparse_w *s, int o0, int o1) {
    uint16_t ca[4096], cb[4096]; /* 2:4: a row's kept columns, decoded from its meta bits */
    for (int o = o0; o < o1; o += 2) {
        const int two = o + 1 < o1;
        if (s->meta) {
            const int half = s->IC / 2;
            for (int r = 0; r < 1 + two; r++) {
                const uint32_t *mt = s->meta + (size_t)(o + r) * (s->IC / 32);
                uint16_t *c = r ? cb : ca;
                for (int v = 0; v < half; v++) c[v] = (uint16_t)(4 * (v / 2) + ((mt[v / 16] >> (2 * (v % 16))) & 3));
            }
            csr_rows_gemm(out, xt, s->val + (size_t)o * half, ca, half, two ? s->val + (size_t)(o + 1) * half : NULL,
                          cb, two ? half : 0, o, s->OC);
        } else {
            const int ja = s->rowptr[o], jb = two ? s->rowptr[o + 1] : 0;
            csr_rows_gemm(out, xt, s->val + ja, s->col + ja, s->rowptr[o + 1] - ja, two ? s->val + jb : NULL,
                          two ? s->col + jb : NULL, two ? s->rowptr[o + 2] - jb : 0, o, s->OC);
        }
    }
}

/* ---- one timed call of kernel k over the whole weight ---- */
static const gpt2c_kernels *K;
static void run(int k, float *out, const float *x, float *xt, const gpt2c_tensor *dense, const sparse_w *s, int N,
                int IC, int OC) {
    if (k == 0) {
#pragma omp parallel for schedule(dynamic, 1)
        for (int o0 = 0; o0 < OC; o0 += CHUNK)
            K->matmul_infer_range(out, x, dense, NULL, N, IC, OC, GPT2C_ACT_NONE, o0, o0 + CHUNK < OC ? o0 + CHUNK : OC);
        return;
    }
    if (N == 1) {
#pragma omp parallel for schedule(dynamic, 1)
        for (int o0 = 0; o0 < OC; o0 += CHUNK) (s->meta ? s24_gemv : csr_gemv)(out, x, s, o0, o0 + CHUNK);
        return;
    }
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int i = 0; i < IC; i++)
            for (int n = 0; n < N; n++) xt[(size_t)i * N + n] = x[(size_t)n * IC + i];
#pragma omp for schedule(dynamic, 1)
        for (int o0 = 0; o0 < OC; o0 += CHUNK) sparse_gemm_range(out, xt, s, o0, o0 + CHUNK);
    }
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const int threads = argc > 1 ? atoi(argv[1]) : 1, reps = argc > 2 ? atoi(argv[2]) : 9;
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl")) {
        printf("sparse_gemm: unavailable (needs AVX-512F/BW/VL)\n");
        return 0;
    }
    omp_set_num_threads(threads);
    K = gpt2c_kernels_cpu();
    const int shapes[3][2] = {{768, 2304}, {768, 3072}, {3072, 768}}; /* IC x OC: qkv, fc, proj */
    const double sp[NKERN] = {0, 0.5, 0.8, 0.9, 0.5};
    printf("threads=%d reps=%d; time = median ms; speedup = dense/sparse; GF/s = dense-equivalent 2*N*IC*OC/time\n",
           threads, reps);
    printf("%-8s %-11s %-6s %8s %9s %8s %8s %10s\n", "phase", "IC x OC", "kernel", "MB", "ms", "GF/s", "speedup",
           "max rel err");
    for (int ph = 0; ph < 2; ph++) {
        const int N = ph == 0 ? 1 : NPRE;
        for (int sh = 0; sh < 3; sh++) {
            const int IC = shapes[sh][0], OC = shapes[sh][1];
            const size_t WN = (size_t)IC * OC;
            /* decode: a fresh copy of each weight per rep (all copies together far
             * exceed the L3), so every rep reads its weight from DRAM */
            const int copies = N == 1 ? reps + 1 : 1;
            float *W = xalloc(WN * 4);
            for (size_t i = 0; i < WN; i++) W[i] = (float)(hash32(i + 17) % 20001) / 10000.0f - 1.0f;
            float *x = xalloc(sizeof(float) * N * IC), *xt = xalloc(sizeof(float) * N * IC);
            for (int i = 0; i < N * IC; i++) x[i] = (float)(hash32(i + 99991) % 2001) / 1000.0f - 1.0f;
            float *out = xalloc(sizeof(float) * N * OC), *ref = xalloc(sizeof(float) * N * OC);
            double *t[NKERN], err[NKERN] = {0};
            size_t mb[NKERN];
            /* per sparse kernel: its copies, and the dense copies (of the csr80 mask; speed is mask-blind) */
            sparse_w *S[NKERN];
            float **D = malloc(sizeof(float *) * copies);
            for (int k = 0; k < NKERN; k++) t[k] = malloc(sizeof(double) * reps), S[k] = malloc(sizeof(sparse_w) * copies);
            float *Wp = xalloc(WN * 4);
            for (int c = 0; c < copies; c++) {
                for (int k = 1; k < NKERN; k++) {
                    if (k < 4) make_csr(&S[k][c], Wp, W, OC, IC, sp[k], 1000u * k + c);
                    else make_24(&S[k][c], Wp, W, OC, IC);
                    if (c == 0) { /* check against the dense kernel on this pruned weight */
                        const gpt2c_tensor d = gpt2c_tensor_f32(Wp, OC, IC);
                        run(0, ref, x, xt, &d, NULL, N, IC, OC);
                        run(k, out, x, xt, NULL, &S[k][0], N, IC, OC);
                        double emax = 0, rmax = 0;
                        for (int i = 0; i < N * OC; i++) {
                            emax = fmax(emax, fabs((double)out[i] - ref[i]));
                            rmax = fmax(rmax, fabs((double)ref[i]));
                        }
                        err[k] = emax / rmax;
                    }
                }
                D[c] = xalloc(WN * 4);
                memcpy(D[c], Wp, WN * 4);
            }
            mb[0] = WN * 4;
            for (int k = 1; k < NKERN; k++) mb[k] = S[k][0].bytes;
            for (int r = -1; r < reps; r++) /* rep -1: warm-up */
                for (int k = 0; k < NKERN; k++) {
                    const int c = (r + 1) % copies;
                    const gpt2c_tensor d = gpt2c_tensor_f32(D[c], OC, IC);
                    const double t0 = omp_get_wtime();
                    run(k, out, x, xt, &d, &S[k][c], N, IC, OC);
                    if (r >= 0) t[k][r] = omp_get_wtime() - t0;
                }
            for (int k = 0; k < NKERN; k++) qsort(t[k], reps, sizeof(double), cmp_d);
            for (int k = 0; k < NKERN; k++) {
                const double med = t[k][reps / 2];
                char e[16] = "-";
                if (k) snprintf(e, sizeof e, "%.1e", err[k]);
                printf("%-8s %4dx%-6d %-6s %8.2f %9.3f %8.1f %8.2f %10s\n", N == 1 ? "decode" : "prefill", IC, OC,
                       kname[k], mb[k] / 1e6, med * 1e3, 2.0 * N * WN / med / 1e9, t[0][reps / 2] / med, e);
            }
            fflush(stdout);
            for (int c = 0; c < copies; c++) {
                free(D[c]);
                for (int k = 1; k < NKERN; k++)
                    free(S[k][c].rowptr), free(S[k][c].col), free(S[k][c].val), free(S[k][c].meta);
            }
            for (int k = 0; k < NKERN; k++) free(t[k]), free(S[k]);
            free(D), free(W), free(Wp), free(x), free(xt), free(out), free(ref);
        }
    }
    return 0;
}
