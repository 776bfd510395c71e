/* The compute engine's cost model: one DSD op of n elements costs
 * setup + ceil(n / width), width from the SIMD table [doc S6] (fp32 FMA:
 * fma32_rate, [est]/[3p S12]).  Strides: stride % 8 in {1,7} (other than 1)
 * gives at most width 2, stride % 8 == 0 gives width 1 [doc S6]. */
#include <math.h>
#include <stdlib.h>

#include "wse/wse_internal.h"

int gpt2c_wse_op_width(const wse_mesh *m, wse_op op, int stride) {
    int w;
    switch (op) {
    case WSE_OP_FMACH: case WSE_OP_FADDH: case WSE_OP_FMULH: case WSE_OP_FMOVH:
        w = (int)m->p.v[GPT2C_WSE_P_SIMD16];
        break;
    case WSE_OP_FMAXH: w = m->p.wse3 ? 8 : 1; break;
    case WSE_OP_FADDS: case WSE_OP_FMOVS: case WSE_OP_FMULS: case WSE_OP_FMAXS:
        w = (int)m->p.v[GPT2C_WSE_P_SIMD32];
        break;
    default: w = 1;
    }
    int s = stride < 0 ? -stride : stride;
    if (s > 1 && (s % 8 == 1 || s % 8 == 7) && w > 2) w = 2;
    if (s > 1 && s % 8 == 0) w = 1;
    return w < 1 ? 1 : w;
}

uint64_t gpt2c_wse_op_cycles(const wse_mesh *m, wse_op op, long n, int stride) {
    uint64_t setup = (uint64_t)m->p.v[GPT2C_WSE_P_SETUP];
    if (n <= 0) return op == WSE_OP_SEND ? setup : 0;
    if (op == WSE_OP_SEND) return setup;
    if (op == WSE_OP_SPECIAL) return setup + (uint64_t)ceil((double)n * m->p.v[GPT2C_WSE_P_SPECIAL]);
    if (op == WSE_OP_FMACS) {
        double rate = m->p.v[GPT2C_WSE_P_FMA32];
        int s = stride < 0 ? -stride : stride;
        if (s > 1 && s % 8 == 0 && rate > 1) rate = 1;
        return setup + (uint64_t)ceil((double)n / rate - 1e-9);
    }
    int w = gpt2c_wse_op_width(m, op, stride);
    return setup + (uint64_t)((n + w - 1) / w);
}

static void account(wse_mesh *m, wse_pe *pe, size_t idx, uint64_t t0, uint64_t t1) {
    uint64_t c = t1 - t0;
    pe->busy += c;
    if (m->nops) {
        wse_opstat *o = &m->ops[m->cur];
        if (pe->op_tag != m->tag_seq) {
            pe->op_tag = m->tag_seq;
            pe->op_busy = 0;
            o->pes++;
            m->call_pes++;
        }
        pe->op_busy += c;
        o->busy_sum += c;
        if (pe->op_busy > m->call_busymax) m->call_busymax = pe->op_busy;
        if (t0 < m->call_t0) m->call_t0 = t0;
        if (t1 > m->call_t1) m->call_t1 = t1;
    }
    if (m->traced && m->traced[idx] && c) {
        if (m->ntev && m->tev[m->ntev - 1].pe == idx && m->tev[m->ntev - 1].op == m->cur &&
            m->tev[m->ntev - 1].t1 == t0) {
            m->tev[m->ntev - 1].t1 = t1; /* merge back-to-back ops of one kind */
            return;
        }
        if (m->ntev == m->captev) {
            size_t cap = m->captev ? 2 * m->captev : 1024;
            wse_trace_ev *e = realloc(m->tev, cap * sizeof *e);
            if (!e) return; /* the trace is best effort: a full trace stops growing */
            m->tev = e;
            m->captev = cap;
        }
        m->tev[m->ntev++] = (wse_trace_ev){idx, t0, t1, m->cur};
    }
}

uint64_t gpt2c_wse_compute(wse_mesh *m, int x, int y, wse_op op, long count, long n, int stride, uint64_t ready) {
    wse_pe *pe = wse_at(m, x, y);
    uint64_t t0 = pe->t_ce > ready ? pe->t_ce : ready;
    if (count <= 0) {
        pe->t_ce = t0;
        return t0;
    }
    uint64_t t1 = t0 + (uint64_t)count * gpt2c_wse_op_cycles(m, op, n, stride);
    pe->t_ce = t1;
    account(m, pe, wse_idx(m, x, y), t0, t1);
    return t1;
}

uint64_t gpt2c_wse_local_gemm(wse_mesh *m, int x, int y, long M, long N, long K, int strideB, uint64_t ready) {
    if (M <= 0 || N <= 0 || K <= 0) return gpt2c_wse_compute(m, x, y, WSE_OP_FMACS, 0, 0, 1, ready);
    wse_op op = m->values == GPT2C_WSE_VALUES_F16 ? WSE_OP_FMACH : WSE_OP_FMACS;
    /* SAXPYs along N (M*K ops of N) or along M (N*K ops of M, strided by N) */
    uint64_t a = (uint64_t)(M * K) * gpt2c_wse_op_cycles(m, op, N, strideB);
    uint64_t b = (uint64_t)(N * K) * gpt2c_wse_op_cycles(m, op, M, (int)N);
    if (a <= b) return gpt2c_wse_compute(m, x, y, op, M * K, N, strideB, ready);
    return gpt2c_wse_compute(m, x, y, op, N * K, M, (int)N, ready);
}

void gpt2c_wse_wait(wse_mesh *m, int x, int y, uint64_t t) {
    wse_pe *pe = wse_at(m, x, y);
    if (t > pe->t_ce) pe->t_ce = t;
    if (m->nops && t > m->call_t1) m->call_t1 = t;
}
