/* The fabric: streams of wavelets along XY routes, at two fidelities.
 *
 * wavelet: every wavelet crossing every link is an event in a heap ordered by
 *   (cycle, sequence number); a link carries one wavelet per cycle, first come
 *   first served (colors share the link as virtual channels [doc S4]);
 *   router buffers are unbounded (an assumption: back-pressure is not modelled).
 * flow: a stream of n wavelets reserves link i for [s_i, s_i + n) where
 *   s_i = max(s_{i-1} + latency, link free, hop_ready[i]); streams that meet
 *   on a link serialise in full (as measured on CS-3 [3p S12]).
 * Both charge hop (+ turn where the route turns, + extra per hop) latency and
 * agree exactly on uncontended streams; tests check they agree within 5%
 * on contended ones.  Routes are configured (and checked) as streams use them. */
#include <stdlib.h>

#include "wse/wse_internal.h"

static const int DX[4] = {0, 0, 1, -1}, DY[4] = {-1, 1, 0, 0}, OPP[4] = {WSE_S, WSE_N, WSE_W, WSE_E};

typedef struct {
    uint64_t t, seq;
    int32_t x, hop;
} wev;

static void heap_push(wev *h, size_t *n, wev e) {
    size_t i = (*n)++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (h[p].t < e.t || (h[p].t == e.t && h[p].seq < e.seq)) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static wev heap_pop(wev *h, size_t *n) {
    wev top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && (h[c + 1].t < h[c].t || (h[c + 1].t == h[c].t && h[c + 1].seq < h[c].seq))) c++;
        if (last.t < h[c].t || (last.t == h[c].t && last.seq < h[c].seq)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
    return top;
}

/* the PE index and out-direction of hop i of x */
static void hop_at(const wse_mesh *m, const wse_xfer *x, int i, size_t *pe, int *dir) {
    int px = x->x, py = x->y;
    if (i < x->hops1) {
        px += DX[x->dir1] * i;
        py += DY[x->dir1] * i;
        *dir = x->dir1;
    } else {
        px += DX[x->dir1] * x->hops1 + DX[x->dir2] * (i - x->hops1);
        py += DY[x->dir1] * x->hops1 + DY[x->dir2] * (i - x->hops1);
        *dir = x->dir2;
    }
    *pe = wse_idx(m, px, py);
}

static uint64_t hop_latency(const wse_mesh *m, const wse_xfer *x, int i) {
    uint64_t l = (uint64_t)m->p.v[GPT2C_WSE_P_HOP] + ((!x->hop_add || x->hop_add[i]) ? (uint64_t)x->extra : 0);
    if (i == x->hops1 && x->hops1 > 0 && x->hops2 > 0) l += (uint64_t)m->p.v[GPT2C_WSE_P_TURN];
    return l;
}

static gpt2c_status check_and_route(wse_mesh *m, const wse_xfer *x) {
    int hops = x->hops1 + x->hops2;
    int ex = x->x + DX[x->dir1] * x->hops1 + DX[x->dir2] * x->hops2;
    int ey = x->y + DY[x->dir1] * x->hops1 + DY[x->dir2] * x->hops2;
    if (x->hops1 < 0 || x->hops2 < 0 || x->n < 0 || x->x < 0 || x->y < 0 || x->x >= m->W || x->y >= m->H || ex < 0 ||
        ey < 0 || ex >= m->W || ey >= m->H || (x->hops1 && x->x + DX[x->dir1] * x->hops1 < 0) ||
        (x->hops1 && x->y + DY[x->dir1] * x->hops1 < 0) || (x->hops1 && x->x + DX[x->dir1] * x->hops1 >= m->W) ||
        (x->hops1 && x->y + DY[x->dir1] * x->hops1 >= m->H))
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: a route from PE (%d,%d) leaves the %dx%d mesh", x->x, x->y, m->W,
                          m->H);
    if (!hops) return GPT2C_OK;
    int px = x->x, py = x->y, rx = WSE_RAMP;
    for (int i = 0; i <= hops; i++) { /* PE i of the path: 0 the source, hops the last */
        /* a turn swaps to the paired color after the turning PE [doc S9] */
        int color = (x->hops1 && x->hops2 && i > x->hops1) ? x->color2 : x->color1;
        unsigned tx;
        int dir = i < x->hops1 ? x->dir1 : x->dir2;
        if (i == hops) tx = 1u << WSE_RAMP;
        else tx = (1u << dir) | ((x->deliver_all && i > 0) ? 1u << WSE_RAMP : 0);
        GPT2C_TRY(gpt2c_wse_route(m, px, py, color, rx, tx));
        if (i == hops) break;
        px += DX[dir];
        py += DY[dir];
        rx = OPP[dir];
    }
    return GPT2C_OK;
}

static void run_flow(wse_mesh *m, wse_xfer *xs, int nx) {
    /* streams in order of their start (then index): deterministic */
    int *ord = malloc((size_t)nx * sizeof *ord);
    if (ord) {
        for (int i = 0; i < nx; i++) ord[i] = i;
        for (int i = 1; i < nx; i++) { /* insertion sort: phases are mostly in order already */
            int v = ord[i], j = i;
            while (j > 0 && xs[ord[j - 1]].t0 > xs[v].t0) { ord[j] = ord[j - 1]; j--; }
            ord[j] = v;
        }
    }
    for (int k = 0; k < nx; k++) {
        wse_xfer *x = &xs[ord ? ord[k] : k];
        int hops = x->hops1 + x->hops2;
        uint64_t s = x->t0, n = (uint64_t)x->n;
        for (int i = 0; i < hops; i++) {
            size_t pe;
            int dir;
            hop_at(m, x, i, &pe, &dir);
            size_t L = pe * 4 + (size_t)dir;
            if (m->link_free[L] > s) s = m->link_free[L];
            if (x->hop_ready && x->hop_ready[i] > s) s = x->hop_ready[i];
            m->link_free[L] = s + n;
            m->link_load[L] += n;
            uint64_t lat = hop_latency(m, x, i);
            x->arrive[i] = s + (n ? n - 1 : 0) + lat;
            s += lat;
        }
    }
    free(ord);
}

static gpt2c_status run_wavelet(wse_mesh *m, wse_xfer *xs, int nx) {
    size_t need = 0;
    for (int k = 0; k < nx; k++) need += (size_t)xs[k].n + 2;
    if (need > m->heap_cap) {
        wev *h = realloc(m->heap, need * sizeof *h);
        if (!h) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for the wavelet events");
        m->heap = h;
        m->heap_cap = need;
    }
    wev *h = m->heap;
    size_t n = 0;
    uint64_t seq = 0;
    long *sent = calloc((size_t)(nx > 0 ? nx : 1), sizeof *sent); /* wavelets injected per stream */
    if (!sent) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for the wavelet events");
    for (int k = 0; k < nx; k++) {
        int hops = xs[k].hops1 + xs[k].hops2;
        for (int i = 0; i < hops; i++) xs[k].arrive[i] = 0;
        if (hops && xs[k].n > 0) {
            heap_push(h, &n, (wev){xs[k].t0, seq++, k, 0});
            sent[k] = 1;
        }
    }
    while (n) {
        wev e = heap_pop(h, &n);
        wse_xfer *x = &xs[e.x];
        size_t pe;
        int dir;
        hop_at(m, x, e.hop, &pe, &dir);
        size_t L = pe * 4 + (size_t)dir;
        uint64_t t = e.t;
        if (x->hop_ready && x->hop_ready[e.hop] > t) t = x->hop_ready[e.hop];
        if (m->link_free[L] > t) t = m->link_free[L];
        if (t > e.t) { /* wait for the link: back of the queue at that cycle */
            heap_push(h, &n, (wev){t, seq++, e.x, e.hop});
            continue;
        }
        m->events++;
        m->link_free[L] = t + 1;
        m->link_load[L]++;
        if (e.hop == 0 && sent[e.x] < x->n) { /* the source injects one wavelet per cycle */
            heap_push(h, &n, (wev){t + 1, seq++, e.x, 0});
            sent[e.x]++;
        }
        uint64_t arr = t + hop_latency(m, x, e.hop);
        if (arr > x->arrive[e.hop]) x->arrive[e.hop] = arr;
        if (e.hop + 1 < x->hops1 + x->hops2) heap_push(h, &n, (wev){arr, seq++, e.x, e.hop + 1});
    }
    free(sent);
    return GPT2C_OK;
}

gpt2c_status gpt2c_wse_fabric_run(wse_mesh *m, wse_xfer *xs, int nx) {
    for (int k = 0; k < nx; k++) GPT2C_TRY(check_and_route(m, &xs[k]));
    if (m->fidelity == GPT2C_WSE_WAVELET) return run_wavelet(m, xs, nx);
    run_flow(m, xs, nx);
    return GPT2C_OK;
}
