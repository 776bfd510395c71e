/* Mesh and PE state: SRAM budget, routes per color, queues, tasks.  Every
 * broken limit is a one-line error naming the PE and the resource. */
#include <stdlib.h>
#include <string.h>

#include <stdio.h>
#include "wse/wse_internal.h"

static const char *DIRN[5] = {"north", "south", "east", "west", "ramp"};

gpt2c_status gpt2c_wse_mesh_create(const gpt2c_wse_params *p, gpt2c_wse_values values, gpt2c_wse_fidelity fid,
                             wse_mesh **out) {
    *out = NULL;
    int W = (int)p->v[GPT2C_WSE_P_WIDTH], H = (int)p->v[GPT2C_WSE_P_HEIGHT];
    if (W < 1 || H < 1 || (double)W * H > 4e6)
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: mesh %dx%d: expected 1x1 .. 4,000,000 PEs", W, H);
    double budget = p->v[GPT2C_WSE_P_SRAM] - p->v[GPT2C_WSE_P_RESERVE];
    if (budget < 64) return gpt2c_fail(GPT2C_ERR_RANGE, "wse: sram - reserve = %g bytes leaves no data memory", budget);
    wse_mesh *m = calloc(1, sizeof *m);
    if (!m) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for the mesh");
    m->p = *p;
    m->W = W;
    m->H = H;
    m->values = values;
    m->fidelity = fid;
    m->sram_budget = (uint32_t)budget;
    m->user_colors = (int)p->v[GPT2C_WSE_P_COLORS] - (int)p->v[GPT2C_WSE_P_RESERVED_COLORS];
    size_t n = (size_t)W * H;
    m->pe = calloc(n, sizeof *m->pe);
    m->link_free = calloc(n * 4, sizeof *m->link_free);
    m->link_load = calloc(n * 4, sizeof *m->link_load);
    if (!m->pe || !m->link_free || !m->link_load) {
        gpt2c_wse_mesh_free(m);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a %dx%d mesh", W, H);
    }
    *out = m;
    return GPT2C_OK;
}

void gpt2c_wse_mesh_free(wse_mesh *m) {
    if (!m) return;
    if (m->pe)
        for (size_t i = 0; i < (size_t)m->W * m->H; i++) {
            free(m->pe[i].mem);
            free(m->pe[i].ext);
        }
    free(m->pe);
    free(m->link_free);
    free(m->link_load);
    free(m->ops);
    free(m->traced);
    free(m->tev);
    free(m->heap);
    free(m);
}

gpt2c_status gpt2c_wse_alloc(wse_mesh *m, int x, int y, size_t floats, const char *what, uint32_t *off) {
    wse_pe *pe = wse_at(m, x, y);
    size_t bytes = floats * 4;
    if (pe->sram_used + bytes > m->sram_budget)
        return gpt2c_fail(GPT2C_ERR_RANGE,
                          "wse: PE (%d,%d): SRAM over budget: %s needs %zu bytes, %u of %u used (sram %g - reserve %g)",
                          x, y, what, bytes, pe->sram_used, m->sram_budget, m->p.v[GPT2C_WSE_P_SRAM],
                          m->p.v[GPT2C_WSE_P_RESERVE]);
    *off = pe->sram_used / 4;
    pe->sram_used += (uint32_t)bytes;
    return GPT2C_OK;
}

gpt2c_status gpt2c_wse_mesh_commit(wse_mesh *m) {
    if (m->values == GPT2C_WSE_VALUES_NONE) return GPT2C_OK;
    for (size_t i = 0; i < (size_t)m->W * m->H; i++) {
        wse_pe *pe = &m->pe[i];
        if (!pe->sram_used || pe->mem) continue;
        pe->mem = calloc(pe->sram_used / 4, sizeof(float));
        if (!pe->mem)
            return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of host memory for the values of PE (%zu,%zu)",
                              i % (size_t)m->W, i / (size_t)m->W);
    }
    return GPT2C_OK;
}

int gpt2c_wse_colors_used(const wse_pe *pe) { return __builtin_popcount(pe->color_mask); }

gpt2c_status gpt2c_wse_route(wse_mesh *m, int x, int y, int color, int rx, unsigned tx) {
    if (color < 0 || color >= WSE_MAX_COLORS || color >= (int)m->p.v[GPT2C_WSE_P_COLORS])
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): color %d does not exist (routable colors 0-%d)", x, y,
                          color, (int)m->p.v[GPT2C_WSE_P_COLORS] - 1);
    if (color >= m->user_colors)
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): color %d is reserved by memcpy (user colors 0-%d)", x,
                          y, color, m->user_colors - 1);
    wse_pe *pe = wse_at(m, x, y);
    if (pe->rx[color] && pe->rx[color] != rx + 1 && !(m->switched & (1u << color)))
        return gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): color %d has two upstreams (%s and %s)", x, y, color,
                          DIRN[pe->rx[color] - 1], DIRN[rx]);
    if (!pe->rx[color]) pe->rx[color] = (uint8_t)(rx + 1);
    pe->tx[color] |= (uint8_t)tx;
    pe->color_mask |= 1u << color;
    return GPT2C_OK;
}

static gpt2c_status ext_of(wse_mesh *m, int x, int y, wse_pe_ext **e) {
    wse_pe *pe = wse_at(m, x, y);
    if (!pe->ext && !(pe->ext = calloc(1, sizeof *pe->ext)))
        return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for the queues of PE (%d,%d)", x, y);
    *e = pe->ext;
    return GPT2C_OK;
}

gpt2c_status gpt2c_wse_queue_use(wse_mesh *m, int x, int y, int q, int out, uint64_t t0, uint64_t t1) {
    /* WSE-2 [doc S6b]: input queues 0-7, output queues 0-5 (Q6-7 have no output side) */
    int nq = out ? (m->p.wse3 ? 8 : 6) : 8;
    if (q < 0 || q >= nq)
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): %s queue %d does not exist (0-%d)", x, y,
                          out ? "output" : "input", q, nq - 1);
    wse_pe_ext *e = NULL;
    GPT2C_TRY(ext_of(m, x, y, &e));
    uint64_t *busy = out ? &e->out_busy[q] : &e->in_busy[q];
    if (t0 < *busy)
        return gpt2c_fail(GPT2C_ERR_ARG,
                          "wse: PE (%d,%d): %s queue %d (and its microthread) shared by two concurrent ops", x, y,
                          out ? "output" : "input", q);
    *busy = t1;
    return GPT2C_OK;
}

gpt2c_status gpt2c_wse_bind_task(wse_mesh *m, int x, int y, int id, char kind) {
    if (id < 0 || id >= WSE_TASKS)
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): task ID %d does not exist (0-63)", x, y, id);
    if (id == 27 || id == 28 || id == 30)
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): task ID %d is reserved by memcpy (27, 28, 30)", x, y,
                          id);
    if (kind == 'd' && !m->p.wse3 && id >= m->user_colors)
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): data task ID %d must be a user color (0-%d on WSE-2)", x,
                          y, id, m->user_colors - 1);
    if (kind == 'l' && (id > 30 || (m->p.wse3 && id < 8)))
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): local task ID %d outside %s", x, y, id,
                          m->p.wse3 ? "8-30 (WSE-3)" : "0-30 (WSE-2)");
    wse_pe_ext *e = NULL;
    GPT2C_TRY(ext_of(m, x, y, &e));
    if (e->task_bound & (1ull << id))
        return gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): task ID %d bound twice", x, y, id);
    e->task_bound |= 1ull << id;
    return GPT2C_OK;
}

void gpt2c_wse_op_flush(wse_mesh *m) {
    if (!m->nops || m->call_t1 < m->call_t0 || m->call_t0 == UINT64_MAX) return;
    wse_opstat *o = &m->ops[m->cur];
    uint64_t span = m->call_t1 - m->call_t0;
    o->span_sum += span;
    o->busymax_sum += m->call_busymax;
    o->pe_span_sum += m->call_pes * span;
    if (m->call_t1 > m->last_t1) {
        o->crit_sum += m->call_t1 - m->last_t1;
        m->last_t1 = m->call_t1;
    }
    m->call_t0 = UINT64_MAX;
    m->call_t1 = 0;
}

void gpt2c_wse_op_begin(wse_mesh *m, const char *name, int layer, int phase, double flops) {
    gpt2c_wse_op_flush(m);
    m->call_t0 = UINT64_MAX;
    m->call_t1 = 0;
    m->call_busymax = 0;
    m->call_pes = 0;
    for (int i = 0; i < m->nops; i++)
        if (m->ops[i].layer == layer && m->ops[i].phase == phase && strcmp(m->ops[i].name, name) == 0) {
            m->cur = i;
            m->ops[i].flops += flops;
            m->ops[i].calls++;
            m->tag_seq++;
            return;
        }
    if (m->nops == m->capops) {
        int cap = m->capops ? 2 * m->capops : 64;
        wse_opstat *o = realloc(m->ops, (size_t)cap * sizeof *o);
        if (!o) { m->cur = 0; return; } /* accounting only: keep going on the first entry */
        m->ops = o;
        m->capops = cap;
    }
    wse_opstat *o = &m->ops[m->nops];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->layer = layer;
    o->phase = phase;
    o->t0 = UINT64_MAX;
    o->flops = flops;
    o->calls = 1;
    m->cur = m->nops++;
    m->tag_seq++;
}
