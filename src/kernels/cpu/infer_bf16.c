/* bf16 inference matmul of the cpu backend (infer_bf16.h): rounding of the
 * input rows, the portable matrix-vector product, and the dispatch between
 * it, its vdpbf16ps twin and the bf16 GEMM. */
#include "kernels/cpu/infer_bf16.h"

#include <stdlib.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/cpu/bf16_engine.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/kernels.h"

static int round32(int n) { return (n + 31) / 32 * 32; }

void gpt2c_cpu_bf16_round_rows(const gemm_bf16_isa_kernel *kk, uint16_t *dst, int ld, const float *x, int N, int IC) {
    const int pad = round32(IC);
    for (int n = 0; n < N; n++) {
        uint16_t *d = dst + (size_t)n * ld;
        const float *s = x + (size_t)n * IC;
        if (kk && kk->f32_pairs && IC % 2 == 0) /* pair words are two bf16s in row order */
            kk->f32_pairs((uint32_t *)(void *)d, s, IC / 2);
        else
            for (int i = 0; i < IC; i++) d[i] = gpt2c_bf16_from_f32(s[i]);
        for (int i = IC; i < pad; i++) d[i] = 0;
    }
}

/* the lanes summed by halves, then the bias */
static float lanes_sum(float a[16], const float *bias, int o) {
    for (int h = 8; h >= 1; h /= 2)
        for (int j = 0; j < h; j++) a[j] += a[j + h];
    return bias ? a[0] + bias[o] : a[0];
}

void gpt2c_cpu_bf16_gemv_portable(float *out, const uint16_t *xb, int ld, const uint16_t *w, const float *bias, int N,
                                  int IC, int OC, int o0, int o1) {
    const int chunks = round32(IC) / 32;
    for (int o = o0; o < o1; o++) {
        const uint16_t *wr = w + (size_t)o * IC;
        for (int n = 0; n < N; n++) {
            const uint16_t *xr = xb + (size_t)n * ld;
            float acc[16] = {0};
            for (int c = 0; c < chunks; c++)
                for (int j = 0; j < 16; j++) {
                    const int p = 32 * c + 2 * j;
                    const float w0 = p < IC ? gpt2c_bf16_to_f32(wr[p]) : 0.0f;
                    const float w1 = p + 1 < IC ? gpt2c_bf16_to_f32(wr[p + 1]) : 0.0f;
                    acc[j] += gpt2c_bf16_to_f32(xr[p + 1]) * w1; /* exact product, one rounded add */
                    acc[j] += gpt2c_bf16_to_f32(xr[p]) * w0;
                }
            out[(size_t)n * OC + o] = lanes_sum(acc, bias, o);
        }
    }
}

/* The rounded input rows (per thread, grown when needed, kept); swapped
 * rows turned back into bf16 ones (below). */
static _Thread_local uint16_t *tl_xb, *tl_unswap;
static _Thread_local size_t tl_xcap, tl_ucap;

/* gelu_forward of the cpu backend on outputs [o0, o1) of N rows: one call
 * on contiguous floats (each call may open an OpenMP region, ~1 us even when
 * it runs on one thread: per row of a prefill range that was half the time
 * of the fc matmul), so rows are gathered into a per-thread buffer first. */
static _Thread_local float *tl_gelu;
static _Thread_local size_t tl_gcap;

static void gelu_cols(float *out, int N, int OC, int o0, int o1) {
    const gpt2c_kernels *k = gpt2c_cpu_ops_current();
    const size_t w = (size_t)(o1 - o0), need = (size_t)N * w;
    if (N > 1 && need > tl_gcap) {
        free(tl_gelu);
        tl_gelu = aligned_alloc(64, (need * sizeof(float) + 63) / 64 * 64);
        tl_gcap = tl_gelu ? need : 0;
    }
    if (N == 1 || !tl_gelu) { /* one row, or no memory: row by row */
        for (int n = 0; n < N; n++) k->gelu_forward(out + (size_t)n * OC + o0, out + (size_t)n * OC + o0, w);
        return;
    }
    for (int n = 0; n < N; n++) memcpy(tl_gelu + n * w, out + (size_t)n * OC + o0, sizeof(float) * w);
    k->gelu_forward(tl_gelu, tl_gelu, need);
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * OC + o0, tl_gelu + n * w, sizeof(float) * w);
}

/* Swapped fp32 rows (kernels/bf16_rows.h) back to bf16 rows: a kernel that
 * does not read them in place (the pair kernels; the matrix-vector product). */
static const uint16_t *unswap_rows(const float *x, int N, int IC) {
    const int ld = IC + (IC & 1);
    const size_t need = (size_t)N * IC;
    if (need > tl_ucap) {
        free(tl_unswap);
        tl_unswap = aligned_alloc(64, (need * sizeof(uint16_t) + 63) / 64 * 64);
        tl_ucap = tl_unswap ? need : 0;
    }
    if (!tl_unswap) return NULL;
    for (int n = 0; n < N; n++)
        for (int i = 0; i < IC; i++) {
            uint32_t u;
            memcpy(&u, x + (size_t)n * ld + (i ^ 1), 4);
            tl_unswap[(size_t)n * IC + i] = (uint16_t)(u >> 16);
        }
    return tl_unswap;
}

void gpt2c_cpu_matmul_bf16_range(float *out, const void *inp, int in_form, const uint16_t *w, const float *bias, int N,
                                 int IC, int OC, int act, int o0, int o1) {
    if (o1 <= o0 || N <= 0) return;
    const gpt2c_isa isa = gpt2c_cpu_isa();
    const gemm_bf16_isa_kernel *kk = gpt2c_cpu_gemm_bf16_kernel(isa);
    const gemm_operand b = {w + (size_t)o0 * IC, GPT2C_FMT_BF16, 1, IC};
    if (in_form == GPT2C_BF16_IN_F32_SWAPPED && N >= GPT2C_BF16_GEMM_ROWS && kk->fp32 &&
        !gpt2c_cpu_gemm_bf16_amx_tiles(isa, N)) { /* (AMX: as bf16 rows, below, for the same sums) */
        /* prefill on fp32 panels: the input read in place, as prepared once for the matmul */
        gpt2c_cpu_gemm_bf16_swapped_a(kk, N, o1 - o0, IC, inp, IC + (IC & 1), b, out + o0, OC, bias ? bias + o0 : NULL, 0);
        if (act == GPT2C_ACT_GELU) gelu_cols(out, N, OC, o0, o1);
        return;
    }
    if (in_form == GPT2C_BF16_IN_F32_SWAPPED) { /* any other kernel: as bf16 rows */
        const uint16_t *xb = unswap_rows(inp, N, IC);
        if (!xb) { /* no memory: the unpacked loop reads the swapped rows */
            gpt2c_cpu_gemm_bf16_swapped_a(&gpt2c_gemm_bf16_kernel_scalar, N, o1 - o0, IC, inp, IC + (IC & 1), b, out + o0,
                                          OC, bias ? bias + o0 : NULL, 0);
            if (act == GPT2C_ACT_GELU) gelu_cols(out, N, OC, o0, o1);
            return;
        }
        inp = xb, in_form = GPT2C_BF16_IN_ROWS;
    }
    const int in_bf16 = in_form == GPT2C_BF16_IN_ROWS;
    const gemm_operand a = {inp, in_bf16 ? GPT2C_FMT_BF16 : GPT2C_FMT_F32, IC, 1};
    if (N >= GPT2C_BF16_GEMM_ROWS) { /* prefill: the bf16 GEMM on this range's weight rows */
        gpt2c_cpu_gemm_bf16_auto(isa, kk, N, o1 - o0, IC, a, b, out + o0, OC, bias ? bias + o0 : NULL, 0);
    } else {
        const int ld = round32(IC);
        const size_t need = (size_t)N * ld;
        if (need > tl_xcap) {
            free(tl_xb);
            tl_xb = aligned_alloc(64, (need * sizeof(uint16_t) + 63) / 64 * 64);
            tl_xcap = tl_xb ? need : 0;
        }
        if (!tl_xb) { /* no memory for the rounded rows: the GEMM needs none beyond its own buffers */
            gpt2c_cpu_gemm_bf16_with(kk, N, o1 - o0, IC, a, b, out + o0, OC, bias ? bias + o0 : NULL, 0);
        } else {
            if (in_bf16) /* already rounded: copied into the zero-padded rows */
                for (int n = 0; n < N; n++) {
                    memcpy(tl_xb + (size_t)n * ld, (const uint16_t *)inp + (size_t)n * IC, sizeof(uint16_t) * IC);
                    memset(tl_xb + (size_t)n * ld + IC, 0, sizeof(uint16_t) * (size_t)(ld - IC));
                }
            else /* (rounded again per range: a decode's ranges are 64 outputs of one matmul) */
                gpt2c_cpu_bf16_round_rows(kk, tl_xb, ld, (const float *)inp, N, IC);
#if defined(__x86_64__)
            if (isa == GPT2C_ISA_AVX512 && gpt2c_cpu_bf16_use_dp()) /* bf16_engine.h: the same bits either way */
                gpt2c_cpu_bf16_gemv_avx512bf16(out, tl_xb, ld, w, bias, N, IC, OC, o0, o1);
            else if (isa == GPT2C_ISA_AVX512)
                gpt2c_cpu_bf16_gemv_avx512f(out, tl_xb, ld, w, bias, N, IC, OC, o0, o1);
            else if (isa == GPT2C_ISA_AVX2)
                gpt2c_cpu_bf16_gemv_avx2(out, tl_xb, ld, w, bias, N, IC, OC, o0, o1);
            else
#endif
                gpt2c_cpu_bf16_gemv_portable(out, tl_xb, ld, w, bias, N, IC, OC, o0, o1);
        }
    }
    if (act == GPT2C_ACT_GELU) gelu_cols(out, N, OC, o0, o1);
}
