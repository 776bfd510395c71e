/* The cpu backend's inference ops (single-threaded ranges; src/infer splits
 * them over threads): runtime dispatch to the AVX-512 kernels
 * (cpu_infer_avx512.c) when the CPU has them, else portable C with OpenMP
 * over the outputs.  The KV-cache layout is the one kernels.h describes. */
#include <math.h>
#include <stdlib.h>

#include "gpt2c/cpu.h"
#include "gpt2c/dtype.h"
#include "gpt2c/quant.h"
#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/cpu/bf16_engine.h"
#include "kernels/cpu/cpu_infer.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/infer_bf16.h"
#include "kernels/ref/ref.h"

/* The inference kernels follow the cpu backend's ISA choice (CPUID, or
 * forced with --isa / GPT2C_ISA=avx2|scalar), read once in
 * gpt2c_kernels_cpu_infer_fill before any kernel runs. */
static int use_avx512, use_avx2;
static int in_bf16_form = GPT2C_BF16_IN_ROWS; /* the table's infer_bf16_input (kernels/bf16_rows.h) */

/* Portable fallback: 8 partial sums per dot product, so the compiler can
 * vectorize without reassociating. */
static void matmul_portable(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC,
                            int act, int o0, int o1) {
    for (int o = o0; o < o1; o++)
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * IC, *wr = w + (size_t)o * IC;
            float acc[8] = {0};
            int i = 0;
            for (; i + 8 <= IC; i += 8)
                for (int k = 0; k < 8; k++) acc[k] += x[i + k] * wr[i + k];
            for (; i < IC; i++) acc[0] += x[i] * wr[i];
            float y = (bias ? bias[o] : 0.0f) + ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                      ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            if (act == GPT2C_ACT_GELU) y = 0.5f * y * (1.0f + tanhf(0.7978845608028654f * (y + 0.044715f * y * y * y)));
            out[(size_t)n * OC + o] = y;
        }
}

#if defined(__x86_64__)
/* Many rows (prefill) without AVX-512: the fp32 GEMM's AVX2 kernel on the
 * range's weight rows (the dot-product loop above ran a 128-token prefill at
 * 1/4 the speed), then the GELU on the finished rows. */
static void matmul_gemm_avx2(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC,
                             int act, int o0, int o1) {
    gpt2c_cpu_gemm(GPT2C_ISA_AVX2, N, o1 - o0, IC, inp, IC, 1, w + (size_t)o0 * IC, 1, IC, out + o0, OC,
                   bias ? bias + o0 : NULL, 0);
    if (act == GPT2C_ACT_GELU) { /* the table's vector GELU (the portable loop's scalar tanhf was ~10% of a prefill) */
        const gpt2c_kernels *k = gpt2c_cpu_ops_current();
        for (int n = 0; n < N; n++) k->gelu_forward(out + (size_t)n * OC + o0, out + (size_t)n * OC + o0, (size_t)(o1 - o0));
    }
}
#endif

/* f32 weights, bf16 ones (infer_bf16.h), and the block-quantized ones
 * through the fused dequantize-and-multiply kernels of src/quant (the
 * table's formats mask says so) */
static void cpu_matmul_infer_range(float *out, const float *inp, const gpt2c_tensor *wt, const float *bias, int N,
                                   int IC, int OC, int act, int o0, int o1) {
    const int in_form = act & GPT2C_ACT_IN_BF16 ? in_bf16_form : 0;
    act &= ~GPT2C_ACT_IN_BF16;
    if (wt->fmt == GPT2C_FMT_BF16) {
        gpt2c_cpu_matmul_bf16_range(out, inp, in_form, (const uint16_t *)wt->data, bias, N, IC, OC, act, o0, o1);
        return;
    }
    /* (quantized weights get rounded rows only where the bf16 prefill runs,
     * which needs AVX512_BF16; their form is the one the bf16 GEMM's engine
     * reads: swapped fp32 rows where it runs on FMAs, bf16_engine.h) */
    if (gpt2c_format_is_quantized(wt->fmt)) {
        /* prefill: the range's rows dequantized once, then the bf16 or fp32 GEMM over all N rows */
        if (use_avx512 && gpt2c_qmatmul_prefill_range(out, inp, in_form, wt, bias, N, act, o0, o1)) return;
        gpt2c_qmatmul_range(out, inp, wt, bias, N, act, o0, o1);
        return;
    }
    const float *w = (const float *)wt->data;
#if defined(__x86_64__)
    if (use_avx512) {
        gpt2c_cpu_infer_matmul_avx512(out, inp, w, bias, N, IC, OC, act, o0, o1);
        return;
    }
    if (use_avx2) {
        if (N >= GPT2C_CPU_INFER_GEMM_ROWS)
            matmul_gemm_avx2(out, inp, w, bias, N, IC, OC, act, o0, o1);
        else
            gpt2c_cpu_infer_matmul_avx2(out, inp, w, bias, N, IC, OC, act, o0, o1);
        return;
    }
#endif
    matmul_portable(out, inp, w, bias, N, IC, OC, act, o0, o1);
}

/* As gpt2c_ref_kv_write (heads [h0, h1) of each sequence): on AVX-512 its
 * register-transposing version (kv_write_avx512.c), else looping so the
 * transposed key rows are written contiguously; the same values either way. */
static void kv_write_portable(void *kc, void *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C,
                              int NH, int h0, int h1, int bf16) {
    const int hs = C / NH;
    for (int b = 0; b < B; b++)
        for (int h = h0; h < h1; h++) {
            const size_t kp = ((size_t)b * NH + h) * hs * ctx + pos[b], vp = (((size_t)b * NH + h) * ctx + pos[b]) * hs;
            const float *src = qkv + (size_t)b * Tq * 3 * C + h * hs;
            for (int i = 0; i < hs; i++)
                for (int t = 0; t < Tq; t++) {
                    const float x = src[(size_t)t * 3 * C + C + i];
                    if (bf16)
                        ((uint16_t *)kc)[kp + (size_t)i * ctx + t] = gpt2c_bf16_from_f32(x);
                    else
                        ((float *)kc)[kp + (size_t)i * ctx + t] = x;
                }
            for (int t = 0; t < Tq; t++)
                for (int i = 0; i < hs; i++) {
                    const float x = src[(size_t)t * 3 * C + 2 * C + i];
                    if (bf16)
                        ((uint16_t *)vc)[vp + (size_t)t * hs + i] = gpt2c_bf16_from_f32(x);
                    else
                        ((float *)vc)[vp + (size_t)t * hs + i] = x;
                }
        }
}

static void kv_write_any(void *kc, void *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C, int NH,
                         int h0, int h1, int bf16) {
#if defined(__x86_64__)
    if (use_avx512) {
        gpt2c_cpu_kv_write_avx512(kc, vc, qkv, pos, B, Tq, ctx, C, NH, h0, h1, bf16);
        return;
    }
#endif
    kv_write_portable(kc, vc, qkv, pos, B, Tq, ctx, C, NH, h0, h1, bf16);
}

static void cpu_kv_write(float *kc, float *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C, int NH,
                         int h0, int h1) {
    kv_write_any(kc, vc, qkv, pos, B, Tq, ctx, C, NH, h0, h1, 0);
}

/* The same into a bf16 cache, each value rounded to nearest even (as gpt2c_ref_kv_write_bf16). */
static void cpu_kv_write_bf16(uint16_t *kc, uint16_t *vc, const float *qkv, const int *pos, int B, int Tq, int ctx,
                              int C, int NH, int h0, int h1) {
    kv_write_any(kc, vc, qkv, pos, B, Tq, ctx, C, NH, h0, h1, 1);
}

static void cpu_attention_kv_bf16_range(float *out, const float *q, size_t qstride, const uint16_t *kc,
                                        const uint16_t *vc, const int *pos, int B, int Tq, int ctx, int C, int NH,
                                        long t0, long t1) {
#if defined(__x86_64__)
    if (use_avx512 && gpt2c_cpu_flash_attention_bf16_avx512(out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1))
        return;
    if (use_avx2 && gpt2c_cpu_attention_kv_bf16_avx2(out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1)) return;
#endif
    gpt2c_ref_attention_kv_bf16_range(out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1);
}

static void cpu_attention_kv_range(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                                   const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1) {
#if defined(__x86_64__)
    if (use_avx512 && gpt2c_cpu_flash_attention_avx512(out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1)) return;
    if (use_avx2 && gpt2c_cpu_attention_kv_avx2(out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1)) return;
#endif
    gpt2c_ref_attention_kv_range(out, q, qstride, kc, vc, pos, B, Tq, ctx, C, NH, t0, t1);
}

/* Prefill runs the GEMMs one range per thread inside the inference's
 * parallel region, where they do not take their first-use blocking
 * (gemm_tune.c: the autotune, cached per CPU): take it here, before. */
static void cpu_infer_prepare(int bf16) {
    const gpt2c_isa isa = gpt2c_cpu_isa();
    if (bf16 != 1) gpt2c_cpu_gemm_fp32_first_use(isa);
    if (bf16 == 1 || (bf16 == 2 && gpt2c_qmatmul_bf16_prefill())) gpt2c_cpu_gemm_bf16_first_use(isa);
}

void gpt2c_kernels_cpu_infer_fill(gpt2c_kernels *k) {
    use_avx512 = gpt2c_cpu_isa() == GPT2C_ISA_AVX512;
    use_avx2 = gpt2c_cpu_isa() == GPT2C_ISA_AVX2;
    k->matmul_infer_range = cpu_matmul_infer_range;
    /* the fp32-panel bf16 GEMM (the FMA engine) reads its input in place as
     * swapped fp32 rows; vdpbf16ps and the AMX tiles pack bf16 rows */
    in_bf16_form = gpt2c_cpu_gemm_bf16_kernel(gpt2c_cpu_isa())->fp32 &&
                           !gpt2c_cpu_gemm_bf16_amx_tiles(gpt2c_cpu_isa(), GPT2C_AMX_MIN_ROWS)
                       ? GPT2C_BF16_IN_F32_SWAPPED
                       : GPT2C_BF16_IN_ROWS;
    k->infer_bf16_input = in_bf16_form;
    k->infer_prepare = cpu_infer_prepare;
    k->formats.matmul_infer_range |=
        GPT2C_FMT_BIT(GPT2C_FMT_Q8) | GPT2C_FMT_BIT(GPT2C_FMT_Q4) | GPT2C_FMT_BIT(GPT2C_FMT_NF4) | GPT2C_FMT_BIT(GPT2C_FMT_BF16);
    k->kv_write = cpu_kv_write;
    k->attention_kv_range = cpu_attention_kv_range;
    k->kv_write_bf16 = cpu_kv_write_bf16;
    k->attention_kv_bf16_range = cpu_attention_kv_bf16_range;
}
