/* QLoRA's matmuls through a quantized weight (train/qlora.h).  No fp32 copy
 * of a whole quantized weight is ever made: the forward runs the inference
 * kernel (gpt2c_qmatmul_range: dequantized in registers or a per-thread
 * chunk), the data gradient dequantizes QLORA_ROWS rows of W at a time. */
#include "train/qlora.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "gpt2c/lora.h"
#include "model/model_internal.h"
#include "gpt2c/quant.h"
#include "gpt2c/precision.h"
#include "gpt2c/quant_model.h"
#include "kernels/cpu/gemm.h"
#include "kernels/kernels.h"

enum { QLORA_CHUNK = 64, QLORA_ROWS = 256 }; /* outputs per forward chunk; W rows per backward block (the GEMM sums K blocks exactly, so any size gives the same bits) */

gpt2c_tensor gpt2c_qlora_weight(const gpt2c_model *m, int id, int layer) {
    const gpt2c_tensor *q = m->lora ? gpt2c_qweight(m, id, layer) : NULL;
    return q ? *q : gpt2c_param_view(m, m->params_mem, id, layer);
}

gpt2c_tensor gpt2c_qlora_model_weight(const gpt2c_model *m, int id, int layer) {
    const gpt2c_tensor *q = m->lora ? gpt2c_qweight(m, id, layer) : NULL;
    return q ? *q : gpt2c_model_weight(m, id, layer);
}

const gpt2c_tensor *gpt2c_qlora_wte(const gpt2c_model *m) { return m->lora ? gpt2c_qweight(m, GPT2C_P_WTE, 0) : NULL; }

void gpt2c_qlora_matmul_forward(float *out, const float *inp, const gpt2c_tensor *w, const float *bias, int N, int IC,
                                int OC) {
    (void)IC;
    const int nchunks = (OC + QLORA_CHUNK - 1) / QLORA_CHUNK;
#pragma omp parallel for schedule(dynamic, 1)
    for (int c = 0; c < nchunks; c++) {
        const int o0 = c * QLORA_CHUNK, o1 = o0 + QLORA_CHUNK < OC ? o0 + QLORA_CHUNK : OC;
        gpt2c_qmatmul_range(out, inp, w, bias, N, GPT2C_ACT_NONE, o0, o1);
    }
}

static void unpack_rows(const gpt2c_tensor *w, int r0, int r1, float *dst) {
    const int avx512 = gpt2c_cpu_isa() == GPT2C_ISA_AVX512;
    const int IC = (int)w->cols;
#pragma omp parallel for schedule(static)
    for (int r = r0; r < r1; r += 8) {
        const int e = r + 8 < r1 ? r + 8 : r1;
        if (avx512) gpt2c_quant_unpack_rows_avx512(w, r, e, dst + (size_t)(r - r0) * IC);
        else
            for (int i = r; i < e; i++) gpt2c_quant_unpack_row(w, i, dst + (size_t)(i - r0) * IC);
    }
}

void gpt2c_qlora_matmul_dinp(float *dinp, const float *dout, const gpt2c_tensor *w, int N, int IC, int OC) {
    float *buf = gpt2c_alloc((size_t)QLORA_ROWS * IC * sizeof(float), "QLoRA dequantized rows");
    if (!buf) { /* out of memory: poison the gradient so the step fails loudly (non-finite norm) */
        for (size_t i = 0; i < (size_t)N * IC; i++) dinp[i] = __builtin_nanf("");
        return;
    }
    const gpt2c_isa isa = gpt2c_cpu_isa();
    for (int o0 = 0; o0 < OC; o0 += QLORA_ROWS) {
        const int o1 = o0 + QLORA_ROWS < OC ? o0 + QLORA_ROWS : OC;
        unpack_rows(w, o0, o1, buf);
        /* dinp (N, IC) (+)= dout[:, o0:o1] (N, ob) @ Wblock (ob, IC) */
        gpt2c_cpu_gemm(isa, N, IC, o1 - o0, dout + o0, OC, 1, buf, IC, 1, dinp, IC, NULL, o0 > 0);
    }
    gpt2c_free(buf);
}

void gpt2c_qlora_encoder_forward(float *encoded, const int32_t *tokens, const gpt2c_tensor *wte, const float *wpe, int B,
                                 int T, int C) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B * T; r++) {
        float *x = encoded + (size_t)r * C;
        const float *p = wpe + (size_t)(r % T) * C;
        gpt2c_quant_unpack_row(wte, tokens[r], x);
        for (int i = 0; i < C; i++) x[i] += p[i];
    }
}
