/* Analytic FLOPs and bytes of each op, for the profiler's roofline.  Bytes
 * count each tensor read or written once, the ideal-cache minimum:
 * activations, gradients and optimizer state are fp32 (F = 4 bytes); a
 * matmul's weight counts the bytes of its format (cost_weight_bytes). */
#ifndef GPT2C_COSTS_H
#define GPT2C_COSTS_H

#include <stddef.h>

#include "gpt2c/format.h"

typedef struct {
    double flops, bytes;
} op_cost;

/* bytes per element of a weight in format f, its block scales (fp32) included */
static inline double cost_weight_bytes(gpt2c_format f) {
    const gpt2c_format_info *fi = gpt2c_format_get(f);
    if (!fi) return 4;
    return (double)fi->block_bytes / fi->block + (fi->block > 1 ? 4.0 / fi->block : 0.0);
}
/* W (OC,IC) in format wf */
static inline op_cost cost_matmul_fwd(double N, double IC, double OC, gpt2c_format wf) {
    return (op_cost){2 * N * IC * OC + N * OC, 4 * (N * IC + N * OC + OC) + cost_weight_bytes(wf) * IC * OC};
}
/* dinp = dout W (2 N IC OC), dW += dout^T x (2 N IC OC), dbias (N OC); dW (fp32)
 * written, and read when accumulated (dw_acc; not when overwritten) */
static inline op_cost cost_matmul_bwd(double N, double IC, double OC, gpt2c_format wf, int dw_acc) {
    return (op_cost){4 * N * IC * OC + N * OC,
                     4 * (2 * N * OC + 2 * N * IC + (dw_acc ? 2 : 1) * IC * OC) + cost_weight_bytes(wf) * IC * OC};
}
/* matmul_bwd from a bf16 dout (2 bytes, read by both GEMMs), no bias */
static inline op_cost cost_matmul_bwd_dout_bf16(double N, double IC, double OC, gpt2c_format wf, int dw_acc) {
    return (op_cost){4 * N * IC * OC,
                     2 * 2 * N * OC + 4 * (2 * N * IC + (dw_acc ? 2 : 1) * IC * OC) + cost_weight_bytes(wf) * IC * OC};
}
/* causal: T(T+1)/2 scores per (b, head); QK^T and AV each 2*hs flops per score, ~5 for softmax */
static inline op_cost cost_attention_fwd(double B, double T, double C, double NH, double state_floats) {
    double pairs = B * NH * T * (T + 1) / 2;
    return (op_cost){4 * pairs * (C / NH) + 5 * pairs, 4 * (B * T * 3 * C + B * T * C + state_floats)};
}
static inline op_cost cost_attention_bwd(double B, double T, double C, double NH, double state_floats) {
    double pairs = B * NH * T * (T + 1) / 2;
    return (op_cost){8 * pairs * (C / NH) + 6 * pairs,
                     4 * (2 * B * T * 3 * C + 2 * B * T * C + state_floats)};
}
static inline op_cost cost_layernorm_fwd(double N, double C) { return (op_cost){8 * N * C, 4 * (2 * N * C + 2 * C + 2 * N)}; }
static inline op_cost cost_layernorm_bwd(double N, double C) { return (op_cost){12 * N * C, 4 * (4 * N * C + 4 * C + 2 * N)}; }
static inline op_cost cost_residual_layernorm_fwd(double N, double C) {
    return (op_cost){9 * N * C, 4 * (4 * N * C + 2 * C + 2 * N)};
}
static inline op_cost cost_gelu_fwd(double n) { return (op_cost){12 * n, 8 * n}; }
static inline op_cost cost_gelu_bwd(double n) { return (op_cost){20 * n, 12 * n}; }
static inline op_cost cost_encoder_fwd(double N, double C) { return (op_cost){N * C, 12 * N * C}; }
static inline op_cost cost_encoder_bwd(double N, double C) { return (op_cost){2 * N * C, 20 * N * C}; }
static inline op_cost cost_xent_fwd(double N, double V, double Vp) { return (op_cost){5 * N * V, 8 * N * Vp}; }
static inline op_cost cost_xent_bwd(double N, double V, double Vp) { return (op_cost){2 * N * V, 8 * N * Vp}; }
/* the probabilities read, the bf16 dlogits written */
static inline op_cost cost_xent_bwd_bf16(double N, double V, double Vp) { return (op_cost){2 * N * V, 6 * N * Vp}; }
static inline op_cost cost_zero(double n) { return (op_cost){0, 4 * n}; }
static inline op_cost cost_sumsq(double n) { return (op_cost){2 * n, 4 * n}; }
/* read p, g, m, v; write p, m, v */
static inline op_cost cost_adamw(double n) { return (op_cost){14 * n, 28 * n}; }
/* adamw + writing g = 0 */
static inline op_cost cost_adamw_zero_grad(double n) { return (op_cost){14 * n, 32 * n}; }
/* and the bf16 copy written: 2 more bytes */
static inline op_cost cost_adamw_zero_grad_bf16(double n) { return (op_cost){14 * n, 34 * n}; }
/* adamw_bf16: g only read */
static inline op_cost cost_adamw_bf16(double n) { return (op_cost){14 * n, 30 * n}; }
/* adamw_bf16_panels: and the panel copy written (2 bytes more) */
static inline op_cost cost_adamw_bf16_panels(double n) { return (op_cost){14 * n, 32 * n}; }

#endif
