/* Quantized prefill (many activation rows) on the cpu backend with AVX-512:
 * the weight rows of one stage chunk (64-256 outputs) are dequantized into a
 * per-thread buffer and multiplied by a GEMM, whose cost then dominates (per
 * weight: N multiply-adds against one dequantization).  Never a whole weight.
 *
 *   bf16 (default where AVX512_BF16 runs): the rows are dequantized and
 *        rounded to bf16 (nearest even, exactly as the bf16 GEMM rounds an
 *        fp32 operand) and the bf16 GEMM (gemm_bf16.h: vdpbf16ps, or FMAs
 *        where those are the faster, bf16_engine.h) multiplies them with the
 *        activations rounded to bf16, fp32 accumulation: the bf16 GEMM of the
 *        dequantized weights, bit for bit, at bf16 speed; half the buffer of
 *        fp32.
 *   fp32 (GPT2C_QUANT_ACT=f32, --quant-act f32, CPUs without AVX512_BF16):
 *        dequantized to fp32 and the packed fp32 GEMM: exactly the
 *        dequantized weights (summation order aside). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "gpt2c/quant.h"
#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/cpu/cpu_infer.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/infer_bf16.h"
#include "kernels/kernels.h"

static int bf16_want = -1; /* -1: from GPT2C_QUANT_ACT on first use */

/* Where AVX512_BF16 runs; GPT2C_QUANT_BF16_PREFILL=1 grants it on any AVX-512
 * CPU (its GEMM then runs on FMAs: the same bits; the tests use it to cover
 * that path, which a CPU whose vdpbf16ps is the slower takes, bf16_engine.h). */
static int bf16_runs_here(void) {
    const char *e = getenv("GPT2C_QUANT_BF16_PREFILL");
    return gpt2c_cpu_isa() == GPT2C_ISA_AVX512 && (gpt2c_cpu_has_avx512bf16() || (e && strcmp(e, "1") == 0));
}

int gpt2c_qmatmul_bf16_prefill(void) {
    if (bf16_want < 0) {
        const char *e = getenv("GPT2C_QUANT_ACT");
        bf16_want = !(e && strcmp(e, "f32") == 0);
    }
    return bf16_want && bf16_runs_here();
}

int gpt2c_qmatmul_set_bf16_prefill(int on) {
    bf16_want = on != 0;
    return gpt2c_qmatmul_bf16_prefill();
}

static float bf(float f) { return gpt2c_bf16_to_f32(gpt2c_bf16_from_f32(f)); }

/* No memory for the weight rows: the same sums (gemm_bf16.h's pair
 * arithmetic) one output at a time, each weight row dequantized on the
 * stack (gpt2c_quant_unpack_row: the values of gpt2c_quant_unpack). */
void gpt2c_qmatmul_prefill_bf16_unbuffered(float *out, const void *inp, int in_form, const gpt2c_tensor *w,
                                           const float *bias, int N, int act, int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    const int64_t ldw = IC + (IC & 1); /* a swapped row's floats (kernels/bf16_rows.h) */
    float wr[IC];
    for (int o = o0; o < o1; o++) {
        gpt2c_quant_unpack_row(w, o, wr);
        for (int n = 0; n < N; n++) {
            float acc = bias ? bias[o] : 0.0f;
            for (int64_t k = 0; k < IC; k += 2) /* IC is a multiple of 32 */
                for (int64_t j = k + 1; j >= k; j--) {
                    const float x = in_form == GPT2C_BF16_IN_ROWS ? gpt2c_bf16_to_f32(((const uint16_t *)inp)[n * IC + j])
                                    : in_form == GPT2C_BF16_IN_F32_SWAPPED ? ((const float *)inp)[n * ldw + (j ^ 1)]
                                                                           : bf(((const float *)inp)[n * IC + j]);
                    acc += x * bf(wr[j]); /* an exact product, one rounded add */
                }
            if (act == GPT2C_ACT_GELU)
                acc = 0.5f * acc * (1.0f + tanhf(0.7978845608028654f * (acc + 0.044715f * acc * acc * acc)));
            out[(size_t)n * OC + o] = acc;
        }
    }
}

#if defined(__x86_64__)
static _Thread_local void *tl_buf;
static _Thread_local size_t tl_bytes;

static void *buffer(size_t bytes) {
    if (bytes > tl_bytes) {
        free(tl_buf);
        tl_buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
        tl_bytes = tl_buf ? bytes : 0;
    }
    return tl_buf;
}
#endif

int gpt2c_qmatmul_prefill_range(float *out, const void *inp, int in_form, const gpt2c_tensor *w, const float *bias,
                                int N, int act, int o0, int o1) {
#if defined(__x86_64__)
    if (N < GPT2C_QMATMUL_PREFILL_ROWS || o1 <= o0 || gpt2c_cpu_isa() != GPT2C_ISA_AVX512) return 0;
    const int IC = (int)w->cols, OC = (int)w->rows, R = o1 - o0;
    const float *b = bias ? bias + o0 : NULL;
    if (gpt2c_qmatmul_bf16_prefill()) {
        uint16_t *wb = buffer(sizeof(uint16_t) * (size_t)R * (size_t)IC);
        if (!wb) { /* no memory (and inp may be bf16, which the fused kernels do not take) */
            gpt2c_qmatmul_prefill_bf16_unbuffered(out, inp, in_form, w, bias, N, act, o0, o1);
            return 1;
        }
        gpt2c_quant_unpack_rows_bf16_avx512(w, o0, o1, wb);
        /* the input in the form the bf16 GEMM's engine reads (bf16 rows, or
         * swapped fp32 rows for the FMA engine: bf16_engine.h) */
        gpt2c_cpu_matmul_bf16_range(out + o0, inp, in_form, wb, b, N, IC, OC, act, 0, R);
        return 1;
    }
    if (in_form) return 0; /* rounded rows are only passed where the bf16 path runs */
    float *wf = buffer(sizeof(float) * (size_t)R * (size_t)IC);
    if (!wf) return 0;
    gpt2c_quant_unpack_rows_avx512(w, o0, o1, wf);
    gpt2c_cpu_infer_matmul_avx512(out + o0, (const float *)inp, wf, b, N, IC, OC, act, 0, R);
    return 1;
#else
    (void)out, (void)inp, (void)in_form, (void)w, (void)bias, (void)N, (void)act, (void)o0, (void)o1;
    return 0;
#endif
}
