/* gpt2c_qmatmul_range: runtime dispatch of the fused dequantize-and-multiply
 * kernels (AVX-512, AVX2, or portable C) and the scalar oracle. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "gpt2c/quant.h"
#include "quant/qmatmul_impl.h"

/* Dequantizes the 32 elements [k, k+32) of row r (k a multiple of 32, so a
 * q4 group and an nf4 half-block start there). */
static void dequant32(const gpt2c_tensor *t, int64_t r, int64_t k, float *o) {
    const int b = gpt2c_quant_block(t->fmt, t->block);
    const int64_t C = t->cols;
    const float d = t->scales[(size_t)r * (size_t)(C / b) + (size_t)(k / b)];
    if (t->fmt == GPT2C_FMT_Q8) {
        const int8_t *q = (const int8_t *)t->data + (size_t)r * C + k;
        for (int i = 0; i < 32; i++) o[i] = (float)q[i] * d;
    } else if (t->fmt == GPT2C_FMT_Q4) {
        const uint8_t *q = (const uint8_t *)t->data + ((size_t)r * C + k) / 2;
        for (int j = 0; j < 16; j++) {
            o[j] = (float)((q[j] & 15) - 8) * d;
            o[j + 16] = (float)((q[j] >> 4) - 8) * d;
        }
    } else {
        const uint8_t *q = (const uint8_t *)t->data + ((size_t)r * C + k) / 2;
        for (int j = 0; j < 16; j++) {
            o[2 * j] = gpt2c_nf4_code[q[j] >> 4] * d;
            o[2 * j + 1] = gpt2c_nf4_code[q[j] & 15] * d;
        }
    }
}

/* Portable: 32 weights dequantized at a time, 8 partial sums per dot product. */
void gpt2c_qmatmul_range_scalar(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N,
                                int act, int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    float wt[32];
    for (int o = o0; o < o1; o++) {
        for (int n = 0; n < N; n++) {
            float acc[8] = {0};
            const float *x = inp + (size_t)n * IC;
            for (int64_t k = 0; k < IC; k += 32) {
                dequant32(w, o, k, wt);
                for (int i = 0; i < 32; i++) acc[i & 7] += wt[i] * x[k + i];
            }
            const float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            out[(size_t)n * OC + o] = qmm_epilogue(s, bias, o, act);
        }
    }
}

/* The activations of the q8 / q4 decode kernels: int8 per block (-1: not
 * chosen yet; from GPT2C_QUANT_ACT=int8|f32, default int8 where AVX-512 VNNI runs). */
static int int8_act = -1;

static int vnni_here(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    return gpt2c_cpu_isa() == GPT2C_ISA_AVX512 && __builtin_cpu_supports("avx512vnni");
#else
    return 0;
#endif
}

int gpt2c_qmatmul_int8_act(void) {
    if (int8_act < 0) {
        const char *e = getenv("GPT2C_QUANT_ACT");
        int8_act = vnni_here() && !(e && strcmp(e, "f32") == 0);
    }
    return int8_act;
}

int gpt2c_qmatmul_set_int8_act(int on) {
    int8_act = on && vnni_here();
    return int8_act;
}

/* The int8-activation scheme in plain C (the oracle of the VNNI kernel): each
 * row's blocks of 32 quantized as the kernel does, exact integer dots. */
void gpt2c_qmatmul_range_int8_scalar(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N,
                                     int act, int o0, int o1) {
    const int64_t IC = w->cols, OC = w->rows;
    const int b = gpt2c_quant_block(w->fmt, w->block);
    float wt[32];
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * IC;
        for (int o = o0; o < o1; o++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < IC; k += 32) {
                float amax = 0.0f;
                for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[k + i]));
                const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
                float dw = w->scales[(size_t)o * (size_t)(IC / b) + (size_t)(k / b)];
                int32_t qw[32];
                if (w->fmt == GPT2C_FMT_NF4) { /* the int8 nf4 values, times absmax / 127 */
                    const uint8_t *q = (const uint8_t *)w->data + ((size_t)o * IC + k) / 2;
                    for (int j = 0; j < 16; j++)
                        qw[2 * j] = gpt2c_nf4_code_i8[q[j] >> 4], qw[2 * j + 1] = gpt2c_nf4_code_i8[q[j] & 15];
                    dw = dw / 127.0f;
                } else {
                    dequant32(w, o, k, wt); /* codes * dw: recover the integer codes */
                    for (int i = 0; i < 32; i++) qw[i] = dw != 0.0f ? (int32_t)nearbyintf(wt[i] / dw) : 0;
                }
                int32_t isum = 0;
                for (int i = 0; i < 32; i++) isum += (int32_t)nearbyintf(x[k + i] * id) * qw[i];
                acc += (float)isum * (dw * d);
            }
            out[(size_t)n * OC + o] = qmm_epilogue(acc, bias, o, act);
        }
    }
}

void gpt2c_qmatmul_range(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int act,
                         int o0, int o1) {
#if defined(__x86_64__)
    const gpt2c_isa isa = gpt2c_cpu_isa();
    if (isa == GPT2C_ISA_AVX512 && gpt2c_qmatmul_vnni_takes(w, N) && gpt2c_qmatmul_int8_act()) {
        gpt2c_qmatmul_avx512_vnni(out, inp, w, bias, N, act, o0, o1);
        return;
    }
    if (isa == GPT2C_ISA_AVX512 && gpt2c_qmatmul_lut4_takes(w, N)) {
        gpt2c_qmatmul_lut4_avx512(out, inp, w, bias, N, act, o0, o1);
        return;
    }
    if (isa == GPT2C_ISA_AVX512) {
        gpt2c_qmatmul_avx512(out, inp, w, bias, N, act, o0, o1);
        return;
    }
    if (isa == GPT2C_ISA_AVX2) {
        gpt2c_qmatmul_avx2(out, inp, w, bias, N, act, o0, o1);
        return;
    }
#endif
    gpt2c_qmatmul_range_scalar(out, inp, w, bias, N, act, o0, o1);
}
