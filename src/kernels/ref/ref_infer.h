/* The ref backend's [inference] ops (src/kernels/ref/ref_infer.c). */
#ifndef GPT2C_REF_INFER_H
#define GPT2C_REF_INFER_H

#include "kernels/kernels.h"

void ref_matmul_infer_range(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC,
                            int act, int o0, int o1);
void ref_kv_write(float *kc, float *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C, int NH);
void ref_attention_kv_range(float *out, const float *q, size_t qstride, const float *kc, const float *vc,
                            const int *pos, int B, int Tq, int ctx, int C, int NH, long t0, long t1);

#endif
