/* The task layer: an event heap of (cycle, sequence) events: local task
 * activations, data-task wavelets, unblocks.  A task runs when its PE's
 * compute engine is free, after task_switch cycles, and its DSD ops advance
 * that PE's clock.  Streams follow the configured routes (a multicast tree;
 * a route whose tx has RAMP delivers there, the source included); the head
 * leaves each PE at s_i, links are reserved for n cycles (the flow model) and
 * wavelet k arrives at head + k.  Receives take wavelets per (PE, color) in
 * order; a color with a bound data task runs it once per wavelet instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wse/task.h"

static const int DX[4] = {0, 0, 1, -1}, DY[4] = {-1, 1, 0, 0}, OPP[4] = {WSE_S, WSE_N, WSE_W, WSE_E};

enum { EV_TASK, EV_DATA, EV_UNBLOCK };

typedef struct {
    uint64_t t, seq;
    int pe, id, kind, idx;
    float val;
} tev;

typedef struct arrival {
    uint64_t t_head; /* wavelet k arrives at t_head + k */
    float *data;
    int n, off;
    struct arrival *next;
} arrival;

typedef struct {
    uint64_t t_post, t_last;
    float *dst, *host;
    const float *mem;
    int n, got, iq, activate, add, out_color, oq, half;
} pending;

typedef struct {
    tev *v;
    int n, cap, head;
} fifo;

struct wse_prog {
    wse_mesh *m;
    void *user;
    wse_task_fn *fn; /* W*H*64 */
    wse_data_fn *dfn;
    uint8_t *active, *blocked;
    fifo *held; /* data wavelets waiting on a blocked data task, W*H*64 */
    arrival **mail; /* W*H*24 */
    pending *wait;  /* W*H*24: a posted receive (n = 0: none) */
    tev *heap;
    size_t nheap, capheap;
    uint64_t seq;
    gpt2c_status st;
};

static void fail(wse_prog *pg, gpt2c_status st) { if (!pg->st) pg->st = st; }

static void push_ev(wse_prog *pg, tev e) {
    if (pg->nheap == pg->capheap) {
        size_t cap = pg->capheap ? 2 * pg->capheap : 64;
        tev *h = realloc(pg->heap, cap * sizeof *h);
        if (!h) { fail(pg, gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for task events")); return; }
        pg->heap = h;
        pg->capheap = cap;
    }
    e.seq = pg->seq++;
    size_t i = pg->nheap++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (pg->heap[p].t < e.t || (pg->heap[p].t == e.t && pg->heap[p].seq < e.seq)) break;
        pg->heap[i] = pg->heap[p];
        i = p;
    }
    pg->heap[i] = e;
}
static void push(wse_prog *pg, uint64_t t, int pe, int id) { push_ev(pg, (tev){t, 0, pe, id, EV_TASK, 0, 0}); }

static tev pop(wse_prog *pg) {
    tev top = pg->heap[0], last = pg->heap[--pg->nheap];
    size_t i = 0, n = pg->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && (pg->heap[c + 1].t < pg->heap[c].t ||
                          (pg->heap[c + 1].t == pg->heap[c].t && pg->heap[c + 1].seq < pg->heap[c].seq)))
            c++;
        if (last.t < pg->heap[c].t || (last.t == pg->heap[c].t && last.seq < pg->heap[c].seq)) break;
        pg->heap[i] = pg->heap[c];
        i = c;
    }
    pg->heap[i] = last;
    return top;
}

float gpt2c_wse_to_half(float f) {
    if (!isfinite(f) || f == 0) return f;
    int e;
    float mant = frexpf(f, &e);
    if (e < -13) return 0.0f * f;
    if (e > 16) return f > 0 ? INFINITY : -INFINITY;
    return ldexpf(rintf(ldexpf(mant, 11)), e - 11);
}

gpt2c_status gpt2c_wse_prog_create(wse_mesh *m, void *user, wse_prog **out) {
    size_t n = (size_t)m->W * m->H;
    wse_prog *pg = calloc(1, sizeof *pg);
    if (!pg) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a program");
    pg->m = m;
    pg->user = user;
    pg->fn = calloc(n * WSE_TASKS, sizeof *pg->fn);
    pg->dfn = calloc(n * WSE_TASKS, sizeof *pg->dfn);
    pg->active = calloc(n * WSE_TASKS, 1);
    pg->blocked = calloc(n * WSE_TASKS, 1);
    pg->held = calloc(n * WSE_TASKS, sizeof *pg->held);
    pg->mail = calloc(n * WSE_MAX_COLORS, sizeof *pg->mail);
    pg->wait = calloc(n * WSE_MAX_COLORS, sizeof *pg->wait);
    if (!pg->fn || !pg->dfn || !pg->active || !pg->blocked || !pg->held || !pg->mail || !pg->wait) {
        gpt2c_wse_prog_free(pg);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a program");
    }
    *out = pg;
    return GPT2C_OK;
}

void gpt2c_wse_prog_free(wse_prog *pg) {
    if (!pg) return;
    size_t n = (size_t)pg->m->W * pg->m->H;
    if (pg->mail)
        for (size_t i = 0; i < n * WSE_MAX_COLORS; i++)
            for (arrival *a = pg->mail[i], *nx; a; a = nx) {
                nx = a->next;
                free(a->data);
                free(a);
            }
    if (pg->held)
        for (size_t i = 0; i < n * WSE_TASKS; i++) free(pg->held[i].v);
    free(pg->fn); free(pg->dfn); free(pg->active); free(pg->blocked); free(pg->held); free(pg->mail);
    free(pg->wait); free(pg->heap);
    free(pg);
}

void *gpt2c_wse_prog_user(wse_prog *pg) { return pg->user; }
wse_mesh *gpt2c_wse_prog_mesh(wse_prog *pg) { return pg->m; }
gpt2c_status gpt2c_wse_prog_status(wse_prog *pg) { return pg->st; }

gpt2c_status gpt2c_wse_bind_local(wse_prog *pg, int x, int y, int id, wse_task_fn fn) {
    GPT2C_TRY(gpt2c_wse_bind_task(pg->m, x, y, id, 'l'));
    pg->fn[wse_idx(pg->m, x, y) * WSE_TASKS + (size_t)id] = fn;
    return GPT2C_OK;
}

gpt2c_status gpt2c_wse_bind_data(wse_prog *pg, int x, int y, int color, wse_data_fn fn) {
    GPT2C_TRY(gpt2c_wse_bind_task(pg->m, x, y, color, 'd'));
    pg->dfn[wse_idx(pg->m, x, y) * WSE_TASKS + (size_t)color] = fn;
    return GPT2C_OK;
}

void gpt2c_wse_activate(wse_prog *pg, int x, int y, int id) {
    size_t pe = wse_idx(pg->m, x, y);
    if (id < 0 || id >= WSE_TASKS || !pg->fn[pe * WSE_TASKS + (size_t)id]) {
        fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): task %d activated but not bound", x, y, id));
        return;
    }
    push(pg, pg->m->pe[pe].t_ce, (int)pe, id);
}
void gpt2c_wse_block(wse_prog *pg, int x, int y, int id) { pg->blocked[wse_idx(pg->m, x, y) * WSE_TASKS + (size_t)id] = 1; }

static void unblock_at(wse_prog *pg, size_t pe, int id, uint64_t t) {
    size_t k = pe * WSE_TASKS + (size_t)id;
    pg->blocked[k] = 0;
    if (pg->active[k]) push(pg, t, (int)pe, id);
    fifo *f = &pg->held[k];
    if (f->head < f->n) { /* the next held wavelet of a data task */
        tev e = f->v[f->head++];
        e.t = t;
        push_ev(pg, e);
    }
}
void gpt2c_wse_unblock(wse_prog *pg, int x, int y, int id) {
    size_t pe = wse_idx(pg->m, x, y);
    unblock_at(pg, pe, id, pg->m->pe[pe].t_ce);
}

static void route(wse_prog *pg, int x, int y, int color, int from, uint64_t s, const float *src, int n, int depth);

/* a receive has all its wavelets: callbacks, or the streaming add's output */
static void finish_recv(wse_prog *pg, size_t pe, int color) {
    pending *w = &pg->wait[pe * WSE_MAX_COLORS + (size_t)color];
    int x = (int)(pe % (size_t)pg->m->W), y = (int)(pe / (size_t)pg->m->W);
    uint64_t t = w->t_last > w->t_post ? w->t_last : w->t_post;
    gpt2c_status st = gpt2c_wse_queue_use(pg->m, x, y, w->iq, 0, w->t_post, t);
    if (st) { fail(pg, st); return; }
    pending cp = *w;
    w->n = 0;
    if (cp.add) {
        /* out = in + mem, pipelined: the output stream trails the input by reduce_lat */
        uint64_t lat = (uint64_t)pg->m->p.v[GPT2C_WSE_P_REDUCE_LAT];
        uint64_t start = cp.t_last - (uint64_t)(cp.n - 1);
        if (start < cp.t_post) start = cp.t_post;
        start += lat;
        for (int i = 0; i < cp.n; i++) {
            float v = cp.dst[i] + cp.mem[i];
            cp.dst[i] = cp.half ? gpt2c_wse_to_half(v) : v;
        }
        gpt2c_wse_compute(pg->m, x, y, cp.half ? WSE_OP_FADDH : WSE_OP_FADDS, 0, 0, 1, 0);
        if (cp.out_color < 0) {
            memcpy(cp.host, cp.dst, sizeof(float) * (size_t)cp.n);
            gpt2c_wse_wait(pg->m, x, y, start + (uint64_t)cp.n);
        } else {
            st = gpt2c_wse_queue_use(pg->m, x, y, cp.oq, 1, cp.t_post, start + (uint64_t)cp.n);
            if (st) { fail(pg, st); free(cp.dst); return; }
            route(pg, x, y, cp.out_color, WSE_RAMP, start, cp.dst, cp.n, 0);
        }
        free(cp.dst);
        return;
    }
    if (cp.activate >= 0) push(pg, t, (int)pe, cp.activate);
}

/* moves arrived wavelets into the posted receive of (pe, color) */
static void drain(wse_prog *pg, size_t pe, int color) {
    pending *w = &pg->wait[pe * WSE_MAX_COLORS + (size_t)color];
    arrival **head = &pg->mail[pe * WSE_MAX_COLORS + (size_t)color];
    while (w->n && *head && w->got < w->n) {
        arrival *a = *head;
        int take = a->n - a->off < w->n - w->got ? a->n - a->off : w->n - w->got;
        memcpy(w->dst + w->got, a->data + a->off, sizeof(float) * (size_t)take);
        a->off += take;
        w->got += take;
        uint64_t tl = a->t_head + (uint64_t)(a->off - 1);
        if (tl > w->t_last) w->t_last = tl;
        if (a->off == a->n) {
            *head = a->next;
            free(a->data);
            free(a);
        }
    }
    if (w->n && w->got == w->n) finish_recv(pg, pe, color);
}

static void deliver(wse_prog *pg, size_t pe, int color, uint64_t t_head, const float *src, const int *idx, int n) {
    wse_data_fn f = pg->dfn[pe * WSE_TASKS + (size_t)color];
    if (f && !pg->wait[pe * WSE_MAX_COLORS + (size_t)color].n) { /* a data task per wavelet */
        for (int k = 0; k < n; k++)
            push_ev(pg, (tev){t_head + (uint64_t)k, 0, (int)pe, color, EV_DATA, idx ? idx[k] : k, src[k]});
        return;
    }
    arrival *a = calloc(1, sizeof *a);
    float *d = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!a || !d) { free(a); free(d); fail(pg, gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for wavelets")); return; }
    memcpy(d, src, sizeof(float) * (size_t)n);
    a->t_head = t_head;
    a->data = d;
    a->n = n;
    arrival **p = &pg->mail[pe * WSE_MAX_COLORS + (size_t)color];
    while (*p) p = &(*p)->next;
    *p = a;
    drain(pg, pe, color);
}

static const int *g_idx; /* index fields of the stream being routed (NULL: position) */

/* walks the route tree of `color` from (x,y); the head is at (x,y) at s */
static void route(wse_prog *pg, int x, int y, int color, int from, uint64_t s, const float *src, int n, int depth) {
    wse_mesh *m = pg->m;
    wse_pe *pe = wse_at(m, x, y);
    static const char *NAME[5] = {"north", "south", "east", "west", "the ramp"};
    if (depth > m->W + m->H + 4) {
        fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): color %d routes in a cycle", x, y, color));
        return;
    }
    if (!pe->rx[color] || pe->rx[color] - 1 != from) {
        fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): a wavelet on color %d arrives from %s, not its route's upstream",
                            x, y, color, NAME[from]));
        return;
    }
    if (pe->tx[color] & (1u << WSE_RAMP)) deliver(pg, wse_idx(m, x, y), color, s, src, g_idx, n);
    for (int d = 0; d < 4; d++) {
        if (!(pe->tx[color] & (1u << d))) continue;
        int nx = x + DX[d], ny = y + DY[d];
        if (nx < 0 || ny < 0 || nx >= m->W || ny >= m->H) {
            fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): color %d routes off the mesh", x, y, color));
            return;
        }
        size_t L = wse_idx(m, x, y) * 4 + (size_t)d;
        uint64_t t = s > m->link_free[L] ? s : m->link_free[L];
        m->link_free[L] = t + (uint64_t)n;
        m->link_load[L] += (uint64_t)n;
        route(pg, nx, ny, color, OPP[d], t + (uint64_t)m->p.v[GPT2C_WSE_P_HOP], src, n, depth + 1);
    }
}

void gpt2c_wse_send_async_ex(wse_prog *pg, int x, int y, int color, int oq, const float *src, const int *idx, int n,
                       int activate, int unblock) {
    uint64_t t0 = gpt2c_wse_compute(pg->m, x, y, WSE_OP_SEND, 1, 0, 1, 0);
    gpt2c_status st = gpt2c_wse_queue_use(pg->m, x, y, oq, 1, t0, t0 + (uint64_t)n);
    if (st) { fail(pg, st); return; }
    if (color < 0 || color >= WSE_MAX_COLORS) {
        fail(pg, gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): color %d does not exist", x, y, color));
        return;
    }
    g_idx = idx;
    route(pg, x, y, color, WSE_RAMP, t0, src, n, 0);
    g_idx = NULL;
    size_t pe = wse_idx(pg->m, x, y);
    if (activate >= 0) push(pg, t0 + (uint64_t)n, (int)pe, activate);
    if (unblock >= 0) push_ev(pg, (tev){t0 + (uint64_t)n, 0, (int)pe, unblock, EV_UNBLOCK, 0, 0});
}

void gpt2c_wse_send_async(wse_prog *pg, int x, int y, int color, int oq, const float *src, int n, int activate) {
    gpt2c_wse_send_async_ex(pg, x, y, color, oq, src, NULL, n, activate, -1);
}

static pending *post(wse_prog *pg, int x, int y, int color) {
    if (color < 0 || color >= WSE_MAX_COLORS) {
        fail(pg, gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): color %d does not exist", x, y, color));
        return NULL;
    }
    pending *w = &pg->wait[wse_idx(pg->m, x, y) * WSE_MAX_COLORS + (size_t)color];
    if (w->n) {
        fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): two receives posted on color %d", x, y, color));
        return NULL;
    }
    return w;
}

void gpt2c_wse_recv_async(wse_prog *pg, int x, int y, int color, int iq, float *dst, int n, int activate) {
    uint64_t t0 = gpt2c_wse_compute(pg->m, x, y, WSE_OP_SEND, 1, 0, 1, 0); /* the op's setup */
    pending *w = post(pg, x, y, color);
    if (!w) return;
    *w = (pending){.t_post = t0, .dst = dst, .n = n, .iq = iq, .activate = activate};
    drain(pg, wse_idx(pg->m, x, y), color);
}

void gpt2c_wse_stream_add_async(wse_prog *pg, int x, int y, int in_color, int iq, const float *mem, int out_color, int oq,
                          int n, int half, float *host) {
    uint64_t t0 = gpt2c_wse_compute(pg->m, x, y, WSE_OP_SEND, 1, 0, 1, 0);
    pending *w = post(pg, x, y, in_color);
    if (!w) return;
    float *buf = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!buf) { fail(pg, gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory")); return; }
    *w = (pending){.t_post = t0, .dst = buf, .host = host, .mem = mem, .n = n, .iq = iq, .activate = -1, .add = 1,
                   .out_color = out_color, .oq = oq, .half = half};
    drain(pg, wse_idx(pg->m, x, y), in_color);
}

void gpt2c_wse_host_h2d(wse_prog *pg, int x, int y, int color, const float *v, const int *idx, int n) {
    size_t pe = wse_idx(pg->m, x, y);
    for (int k = 0; k < n; k++) push_ev(pg, (tev){(uint64_t)k, 0, (int)pe, color, EV_DATA, idx ? idx[k] : k, v[k]});
}

gpt2c_status gpt2c_wse_prog_launch(wse_prog *pg, wse_task_fn fn) {
    wse_mesh *m = pg->m;
    if (fn)
        for (int y = 0; y < m->H; y++)
            for (int x = 0; x < m->W; x++) fn(pg, x, y);
    uint64_t sw = (uint64_t)m->p.v[GPT2C_WSE_P_TASK_SWITCH];
    while (pg->nheap && !pg->st) {
        tev e = pop(pg);
        size_t k = (size_t)e.pe * WSE_TASKS + (size_t)e.id;
        int x = (int)((size_t)e.pe % (size_t)m->W), y = (int)((size_t)e.pe / (size_t)m->W);
        if (e.kind == EV_UNBLOCK) { unblock_at(pg, (size_t)e.pe, e.id, e.t); continue; }
        if (pg->blocked[k]) { /* runs when unblocked; a data wavelet waits in its queue */
            if (e.kind == EV_TASK) pg->active[k] = 1;
            else {
                fifo *f = &pg->held[k];
                if (f->n == f->cap) {
                    int cap = f->cap ? 2 * f->cap : 16;
                    tev *v = realloc(f->v, sizeof *v * (size_t)cap);
                    if (!v) { fail(pg, gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory")); break; }
                    f->v = v;
                    f->cap = cap;
                }
                f->v[f->n++] = e;
            }
            continue;
        }
        wse_pe *pe = &m->pe[e.pe];
        pe->t_ce = (pe->t_ce > e.t ? pe->t_ce : e.t) + sw;
        if (e.kind == EV_TASK) {
            pg->active[k] = 0;
            pg->fn[k](pg, x, y);
        } else if (pg->dfn[k]) {
            pg->dfn[k](pg, x, y, e.val, e.idx);
        } else {
            fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): a wavelet on color %d has no data task", x, y, e.id));
        }
    }
    return pg->st;
}
