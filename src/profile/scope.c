#include <string.h>

#include "gpt2c/profile.h"

static const char *const OP_NAMES[GPT2C_OP_COUNT] = {
    "encoder",      "layernorm",      "residual_layernorm", "matmul_qkv", "attention",
    "matmul_attproj", "matmul_fc",    "gelu",               "matmul_fcproj", "matmul_lmhead",
    "softmax_xent", "zero_grad",      "grad_norm",          "adamw",      "data_load",
    "allreduce",    "allgather",      "bf16_copy",          "kv_write",
};
static const gpt2c_layer_type OP_LT[GPT2C_OP_COUNT] = {
    GPT2C_LT_EMBEDDING, GPT2C_LT_NORM,      GPT2C_LT_NORM,      GPT2C_LT_ATTENTION, GPT2C_LT_ATTENTION,
    GPT2C_LT_ATTENTION, GPT2C_LT_FFN,       GPT2C_LT_FFN,       GPT2C_LT_FFN,       GPT2C_LT_HEAD,
    GPT2C_LT_HEAD,      GPT2C_LT_OPTIMIZER, GPT2C_LT_OPTIMIZER, GPT2C_LT_OPTIMIZER, GPT2C_LT_DATA,
    GPT2C_LT_COMM,      GPT2C_LT_COMM,      GPT2C_LT_OPTIMIZER, GPT2C_LT_ATTENTION,
};
static const char *const PHASE_NAMES[GPT2C_PHASE_COUNT] = {"forward", "backward", "optimizer", "data", "eval", "comm"};
static const char *const LT_NAMES[GPT2C_LT_COUNT] = {"attention", "ffn",       "norm", "embedding",
                                                     "head",      "optimizer", "data", "comm"};

const char *gpt2c_op_name(gpt2c_op op) { return (unsigned)op < GPT2C_OP_COUNT ? OP_NAMES[op] : "?"; }
const char *gpt2c_phase_name(gpt2c_phase ph) { return (unsigned)ph < GPT2C_PHASE_COUNT ? PHASE_NAMES[ph] : "?"; }
const char *gpt2c_layer_type_name(gpt2c_layer_type lt) { return (unsigned)lt < GPT2C_LT_COUNT ? LT_NAMES[lt] : "?"; }
gpt2c_layer_type gpt2c_op_layer_type(gpt2c_op op) { return (unsigned)op < GPT2C_OP_COUNT ? OP_LT[op] : GPT2C_LT_COUNT; }
int gpt2c_op_is_matmul(gpt2c_op op) {
    return op == GPT2C_OP_MATMUL_QKV || op == GPT2C_OP_MATMUL_ATTPROJ || op == GPT2C_OP_MATMUL_FC ||
           op == GPT2C_OP_MATMUL_FCPROJ || op == GPT2C_OP_MATMUL_LMHEAD;
}

gpt2c_status gpt2c_profiler_init(gpt2c_profiler *p, size_t cap) {
    memset(p, 0, sizeof *p);
    p->events = gpt2c_alloc(cap * sizeof(gpt2c_prof_event), "profiler events");
    if (!p->events) return GPT2C_ERR_NOMEM;
    p->cap = cap;
    p->open = -1;
    return GPT2C_OK;
}

void gpt2c_profiler_reset(gpt2c_profiler *p) {
    p->n = 0;
    p->dropped = 0;
    p->open = -1;
}

void gpt2c_profiler_free(gpt2c_profiler *p) {
    gpt2c_free(p->events);
    memset(p, 0, sizeof *p);
}

void gpt2c_prof_begin(gpt2c_profiler *p, gpt2c_op op, int layer, double flops, double bytes) {
    if (p->n >= p->cap) {
        p->dropped++;
        p->open = -1;
        return;
    }
    gpt2c_prof_event *e = &p->events[p->n];
    e->op = (int16_t)op;
    e->layer = (int16_t)layer;
    e->phase = (uint8_t)p->phase;
    e->step = p->step;
    e->flops = flops;
    e->bytes = bytes;
    e->t1_ns = 0;
    p->open = (int)p->n++;
    if (p->on_begin) p->on_begin(p, e);
    e->t0_ns = gpt2c_now_ns(); /* last: the hook's own cost stays outside the scope */
}

void gpt2c_prof_end(gpt2c_profiler *p) {
    uint64_t t = gpt2c_now_ns();
    if (p->open < 0) return;
    gpt2c_prof_event *e = &p->events[p->open];
    e->t1_ns = t;
    if (p->on_end) p->on_end(p, e);
    p->open = -1;
}
