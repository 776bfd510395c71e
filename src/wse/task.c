/* The task layer: an event heap of (cycle, sequence) task activations; a task
 * runs when its PE's compute engine is free, after task_switch cycles, and its
 * DSD ops advance that PE's clock.  Streams follow the configured routes (a
 * multicast tree); the tail arrives at s_i + n - 1 + hop per hop, links are
 * reserved for n cycles (the flow model).  Receives pair with arrivals per
 * (PE, color) in order. */
#include <stdlib.h>
#include <string.h>

#include "wse/task.h"

static const int DX[4] = {0, 0, 1, -1}, DY[4] = {-1, 1, 0, 0}, OPP[4] = {WSE_S, WSE_N, WSE_W, WSE_E};

typedef struct {
    uint64_t t, seq;
    int pe, id;
} tev;

typedef struct arrival {
    uint64_t t;
    float *data;
    int n;
    struct arrival *next;
} arrival;

typedef struct pending {
    uint64_t t_post;
    float *dst;
    int n, iq, activate;
} pending;

struct wse_prog {
    wse_mesh *m;
    void *user;
    wse_task_fn *fn;      /* W*H*64 */
    uint8_t *active, *blocked;
    arrival **mail;       /* W*H*24: FIFO heads */
    pending *wait;        /* W*H*24: a posted receive (n = 0: none) */
    tev *heap;
    size_t nheap, capheap;
    uint64_t seq;
    gpt2c_status st;
};

static void push(wse_prog *pg, uint64_t t, int pe, int id) {
    if (pg->nheap == pg->capheap) {
        size_t cap = pg->capheap ? 2 * pg->capheap : 64;
        tev *h = realloc(pg->heap, cap * sizeof *h);
        if (!h) { if (!pg->st) pg->st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for task events"); return; }
        pg->heap = h;
        pg->capheap = cap;
    }
    tev e = {t, pg->seq++, pe, id};
    size_t i = pg->nheap++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (pg->heap[p].t < e.t || (pg->heap[p].t == e.t && pg->heap[p].seq < e.seq)) break;
        pg->heap[i] = pg->heap[p];
        i = p;
    }
    pg->heap[i] = e;
}

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

gpt2c_status wse_prog_create(wse_mesh *m, void *user, wse_prog **out) {
    size_t n = (size_t)m->W * m->H;
    wse_prog *pg = calloc(1, sizeof *pg);
    if (!pg) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a program");
    pg->m = m;
    pg->user = user;
    pg->fn = calloc(n * WSE_TASKS, sizeof *pg->fn);
    pg->active = calloc(n * WSE_TASKS, 1);
    pg->blocked = calloc(n * WSE_TASKS, 1);
    pg->mail = calloc(n * WSE_MAX_COLORS, sizeof *pg->mail);
    pg->wait = calloc(n * WSE_MAX_COLORS, sizeof *pg->wait);
    if (!pg->fn || !pg->active || !pg->blocked || !pg->mail || !pg->wait) {
        wse_prog_free(pg);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a program");
    }
    *out = pg;
    return GPT2C_OK;
}

void wse_prog_free(wse_prog *pg) {
    if (!pg) return;
    if (pg->mail)
        for (size_t i = 0; i < (size_t)pg->m->W * pg->m->H * WSE_MAX_COLORS; i++)
            for (arrival *a = pg->mail[i], *nx; a; a = nx) {
                nx = a->next;
                free(a->data);
                free(a);
            }
    free(pg->fn); free(pg->active); free(pg->blocked); free(pg->mail); free(pg->wait); free(pg->heap);
    free(pg);
}

void *wse_prog_user(wse_prog *pg) { return pg->user; }
wse_mesh *wse_prog_mesh(wse_prog *pg) { return pg->m; }
gpt2c_status wse_prog_status(wse_prog *pg) { return pg->st; }

static void fail(wse_prog *pg, gpt2c_status st) { if (!pg->st) pg->st = st; }

gpt2c_status wse_bind_local(wse_prog *pg, int x, int y, int id, wse_task_fn fn) {
    GPT2C_TRY(wse_bind_task(pg->m, x, y, id, 'l'));
    pg->fn[wse_idx(pg->m, x, y) * WSE_TASKS + (size_t)id] = fn;
    return GPT2C_OK;
}

void wse_activate(wse_prog *pg, int x, int y, int id) {
    size_t pe = wse_idx(pg->m, x, y);
    if (id < 0 || id >= WSE_TASKS || !pg->fn[pe * WSE_TASKS + (size_t)id]) {
        fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): task %d activated but not bound", x, y, id));
        return;
    }
    push(pg, pg->m->pe[pe].t_ce, (int)pe, id);
}
void wse_block(wse_prog *pg, int x, int y, int id) { pg->blocked[wse_idx(pg->m, x, y) * WSE_TASKS + (size_t)id] = 1; }
void wse_unblock(wse_prog *pg, int x, int y, int id) {
    size_t k = wse_idx(pg->m, x, y) * WSE_TASKS + (size_t)id;
    pg->blocked[k] = 0;
    if (pg->active[k]) push(pg, pg->m->pe[k / WSE_TASKS].t_ce, (int)(k / WSE_TASKS), id);
}

/* a receive completes: the values land, the microthread frees its queue, the callback runs */
static void complete_recv(wse_prog *pg, size_t pe, int color, arrival *a) {
    pending *w = &pg->wait[pe * WSE_MAX_COLORS + (size_t)color];
    int x = (int)(pe % (size_t)pg->m->W), y = (int)(pe / (size_t)pg->m->W);
    uint64_t t = a->t > w->t_post ? a->t : w->t_post;
    memcpy(w->dst, a->data, sizeof(float) * (size_t)(a->n < w->n ? a->n : w->n));
    gpt2c_status st = wse_queue_use(pg->m, x, y, w->iq, 0, w->t_post, t);
    if (st) fail(pg, st);
    if (a->n != w->n)
        fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): color %d: received %d wavelets, expected %d", x, y,
                            color, a->n, w->n));
    if (w->activate >= 0) push(pg, t, (int)pe, w->activate);
    w->n = 0;
    free(a->data);
    free(a);
}

static void deliver(wse_prog *pg, size_t pe, int color, uint64_t t, const float *src, int n) {
    arrival *a = calloc(1, sizeof *a);
    float *d = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!a || !d) { free(a); free(d); fail(pg, gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for wavelets")); return; }
    memcpy(d, src, sizeof(float) * (size_t)n);
    a->t = t;
    a->data = d;
    a->n = n;
    pending *w = &pg->wait[pe * WSE_MAX_COLORS + (size_t)color];
    if (w->n && !pg->mail[pe * WSE_MAX_COLORS + (size_t)color]) { complete_recv(pg, pe, color, a); return; }
    arrival **p = &pg->mail[pe * WSE_MAX_COLORS + (size_t)color];
    while (*p) p = &(*p)->next;
    *p = a;
}

/* walks the route tree of `color` from (x,y), leaving PE (x,y) at s */
static void route(wse_prog *pg, int x, int y, int color, int from, uint64_t s, const float *src, int n, int depth) {
    wse_mesh *m = pg->m;
    wse_pe *pe = wse_at(m, x, y);
    if (depth > m->W + m->H + 4) {
        fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): color %d routes in a cycle", x, y, color));
        return;
    }
    if (!pe->rx[color] || pe->rx[color] - 1 != from) {
        fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): a wavelet on color %d arrives from %s, not its route's upstream",
                            x, y, color, from == WSE_RAMP ? "the ramp" : from == WSE_N ? "north" : from == WSE_S ? "south" : from == WSE_E ? "east" : "west"));
        return;
    }
    if (from != WSE_RAMP && (pe->tx[color] & (1u << WSE_RAMP)))
        deliver(pg, wse_idx(m, x, y), color, s + (uint64_t)(n ? n - 1 : 0), src, n);
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

void wse_send_async(wse_prog *pg, int x, int y, int color, int oq, const float *src, int n, int activate) {
    uint64_t t0 = wse_compute(pg->m, x, y, WSE_OP_SEND, 1, 0, 1, 0);
    gpt2c_status st = wse_queue_use(pg->m, x, y, oq, 1, t0, t0 + (uint64_t)n);
    if (st) { fail(pg, st); return; }
    if (color < 0 || color >= WSE_MAX_COLORS) {
        fail(pg, gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): color %d does not exist", x, y, color));
        return;
    }
    route(pg, x, y, color, WSE_RAMP, t0, src, n, 0);
    if (activate >= 0) push(pg, t0 + (uint64_t)n, (int)wse_idx(pg->m, x, y), activate);
}

void wse_recv_async(wse_prog *pg, int x, int y, int color, int iq, float *dst, int n, int activate) {
    size_t pe = wse_idx(pg->m, x, y);
    uint64_t t0 = wse_compute(pg->m, x, y, WSE_OP_SEND, 1, 0, 1, 0); /* the op's setup */
    if (color < 0 || color >= WSE_MAX_COLORS) {
        fail(pg, gpt2c_fail(GPT2C_ERR_RANGE, "wse: PE (%d,%d): color %d does not exist", x, y, color));
        return;
    }
    pending *w = &pg->wait[pe * WSE_MAX_COLORS + (size_t)color];
    if (w->n) {
        fail(pg, gpt2c_fail(GPT2C_ERR_ARG, "wse: PE (%d,%d): two receives posted on color %d", x, y, color));
        return;
    }
    *w = (pending){t0, dst, n, iq, activate};
    arrival **head = &pg->mail[pe * WSE_MAX_COLORS + (size_t)color];
    if (*head) {
        arrival *a = *head;
        *head = a->next;
        complete_recv(pg, pe, color, a);
    }
}

gpt2c_status wse_prog_launch(wse_prog *pg, wse_task_fn fn) {
    wse_mesh *m = pg->m;
    for (int y = 0; y < m->H; y++)
        for (int x = 0; x < m->W; x++) fn(pg, x, y);
    uint64_t sw = (uint64_t)m->p.v[GPT2C_WSE_P_TASK_SWITCH];
    while (pg->nheap && !pg->st) {
        tev e = pop(pg);
        size_t k = (size_t)e.pe * WSE_TASKS + (size_t)e.id;
        if (pg->blocked[k]) { pg->active[k] = 1; continue; } /* runs when unblocked */
        pg->active[k] = 0;
        wse_pe *pe = &m->pe[e.pe];
        pe->t_ce = (pe->t_ce > e.t ? pe->t_ce : e.t) + sw;
        pg->fn[k](pg, (int)(e.pe % (size_t)m->W), (int)(e.pe / (size_t)m->W));
    }
    return pg->st;
}
