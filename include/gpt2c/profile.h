/* Profiler scopes.  Every op the model runs is wrapped in a scope that knows
 * its kind, layer, phase and analytic FLOPs and bytes; with no profiler
 * attached the wrapper is a single NULL test.  Events are recorded into a
 * preallocated buffer (no allocation while profiling a step) and aggregated
 * afterwards (per op kind, per layer type, per phase; roofline; trace). */
#ifndef GPT2C_PROFILE_H
#define GPT2C_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/core.h"

typedef enum {
    GPT2C_PHASE_FORWARD,
    GPT2C_PHASE_BACKWARD,
    GPT2C_PHASE_OPTIMIZER,
    GPT2C_PHASE_DATA,
    GPT2C_PHASE_EVAL,
    GPT2C_PHASE_COMM, /* data parallel: waiting for gradient / parameter exchange (src/dist) */
    GPT2C_PHASE_COUNT
} gpt2c_phase;

typedef enum {
    GPT2C_OP_ENCODER,            /* token + position embedding */
    GPT2C_OP_LAYERNORM,          /* plain layernorm (ln1 of layer 0) */
    GPT2C_OP_RESIDUAL_LAYERNORM, /* residual add fused with the next layernorm */
    GPT2C_OP_MATMUL_QKV,
    GPT2C_OP_ATTENTION,          /* softmax(QK^T/sqrt(d)) V, causal, all heads */
    GPT2C_OP_MATMUL_ATTPROJ,
    GPT2C_OP_MATMUL_FC,
    GPT2C_OP_GELU,
    GPT2C_OP_MATMUL_FCPROJ,
    GPT2C_OP_MATMUL_LMHEAD,
    GPT2C_OP_SOFTMAX_XENT,
    GPT2C_OP_ZERO_GRAD,
    GPT2C_OP_GRAD_NORM,
    GPT2C_OP_ADAMW,
    GPT2C_OP_DATA_LOAD,
    GPT2C_OP_ALLREDUCE,          /* data parallel: gradient all-reduce (bytes = this rank's payload) */
    GPT2C_OP_ALLGATHER,          /* ZeRO-1: parameter all-gather after the sharded update */
    GPT2C_OP_BF16_COPY,          /* bf16 precision: the bf16 weight copies refreshed from the fp32 master weights */
    GPT2C_OP_KV_WRITE,           /* inference: the new tokens' keys and values into the KV cache */
    GPT2C_OP_COUNT
} gpt2c_op;

/* Layer types, the seed study's split: attention vs FFN vs the rest. */
typedef enum {
    GPT2C_LT_ATTENTION, /* QKV + attention + projection */
    GPT2C_LT_FFN,       /* fc + GELU + projection */
    GPT2C_LT_NORM,      /* layernorms (and the residual adds fused into them) */
    GPT2C_LT_EMBEDDING,
    GPT2C_LT_HEAD,      /* LM head + loss */
    GPT2C_LT_OPTIMIZER, /* zero-grad, grad norm, AdamW */
    GPT2C_LT_DATA,
    GPT2C_LT_COMM,      /* all-reduce, all-gather (data parallel) */
    GPT2C_LT_COUNT
} gpt2c_layer_type;

const char *gpt2c_op_name(gpt2c_op op);
const char *gpt2c_phase_name(gpt2c_phase ph);

/* Marks of a training loop's structure, for its observer (a profile session
 * provides them: gpt2c_profile_session_hooks).  Any may be NULL. */
typedef struct gpt2c_step_hooks {
    void (*step_begin)(void *user, int step); /* before the step's evaluation, if any */
    void (*phase)(void *user, gpt2c_phase ph); /* a phase begins */
    void (*step_end)(void *user, int step);   /* after the step's update */
    void *user;
} gpt2c_step_hooks;
const char *gpt2c_layer_type_name(gpt2c_layer_type lt);
gpt2c_layer_type gpt2c_op_layer_type(gpt2c_op op);
/* 1 for the five matmuls (qkv, attention projection, fc, fc projection, LM head). */
int gpt2c_op_is_matmul(gpt2c_op op);

typedef struct gpt2c_prof_event {
    uint64_t t0_ns, t1_ns;
    double flops, bytes;
    int32_t step;
    int16_t op;    /* gpt2c_op */
    int16_t layer; /* transformer block index, -1 outside the blocks */
    uint8_t phase; /* gpt2c_phase */
} gpt2c_prof_event;

typedef struct gpt2c_profiler {
    gpt2c_prof_event *events;
    size_t n, cap;
    size_t dropped;    /* events that did not fit (reported, never silent) */
    int phase;         /* current gpt2c_phase, set by the caller */
    int step;          /* current step, set by the caller */
    int open;          /* index of the open scope, -1 if none */
    void *ext;         /* extension state (hardware counters, ...) */
    void (*on_begin)(struct gpt2c_profiler *, gpt2c_prof_event *);
    void (*on_end)(struct gpt2c_profiler *, gpt2c_prof_event *);
} gpt2c_profiler;

/* Allocates room for `cap` events. */
gpt2c_status gpt2c_profiler_init(gpt2c_profiler *p, size_t cap);
void gpt2c_profiler_reset(gpt2c_profiler *p);
void gpt2c_profiler_free(gpt2c_profiler *p);

void gpt2c_prof_begin(gpt2c_profiler *p, gpt2c_op op, int layer, double flops, double bytes);
void gpt2c_prof_end(gpt2c_profiler *p);

/* Runs `call` inside a scope when a profiler is attached; otherwise one branch. */
#define GPT2C_PROF_OP(prof, op, layer, flops, bytes, call)              \
    do {                                                                \
        gpt2c_profiler *prof_ = (prof);                                 \
        if (prof_) {                                                    \
            gpt2c_prof_begin(prof_, (op), (layer), (flops), (bytes));   \
            call;                                                       \
            gpt2c_prof_end(prof_);                                      \
        } else {                                                        \
            call;                                                       \
        }                                                               \
    } while (0)

#endif
