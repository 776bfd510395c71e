/* Line collectives on the fabric: broadcast, reductions (chain, tree, groups),
 * point-to-point.  A sender's CE pays one op setup to launch its async
 * stream; a reducing PE's stream leaves no earlier than its own part is ready
 * plus that setup, and each in-stream add costs reduce_lat per hop. */
#include <stdlib.h>
#include <string.h>

#include "wse/coll.h"

static const int DX[4] = {0, 0, 1, -1}, DY[4] = {-1, 1, 0, 0}, OPP[4] = {1, 0, 3, 2};

void gpt2c_wse_line_pe(const wse_line *l, int k, int *x, int *y) {
    *x = l->x + DX[l->dir] * k;
    *y = l->y + DY[l->dir] * k;
}

static uint64_t launch(wse_mesh *m, int x, int y) { return gpt2c_wse_compute(m, x, y, WSE_OP_SEND, 1, 0, 1, 0); }

gpt2c_status gpt2c_wse_coll_bcast(wse_mesh *m, const wse_line *l, int nl, long n, int color) {
    wse_xfer *xs = calloc((size_t)nl * 2 + 1, sizeof *xs);
    uint64_t *arr = NULL;
    size_t tot = 0;
    for (int i = 0; i < nl; i++) tot += (size_t)l[i].len;
    arr = calloc(tot + 1, sizeof *arr);
    if (!xs || !arr) {
        free(xs);
        free(arr);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a broadcast");
    }
    int nx = 0;
    size_t off = 0;
    for (int i = 0; i < nl; i++) {
        const wse_line *L = &l[i];
        if (L->len <= 1 || n <= 0) { off += (size_t)L->len; continue; }
        int rx, ry;
        gpt2c_wse_line_pe(L, L->root, &rx, &ry);
        uint64_t t0 = launch(m, rx, ry);
        if (L->root < L->len - 1)
            xs[nx++] = (wse_xfer){.x = rx, .y = ry, .dir1 = L->dir, .hops1 = L->len - 1 - L->root, .color1 = color,
                                  .color2 = color, .deliver_all = 1, .n = n, .t0 = t0, .arrive = arr + off};
        if (L->root > 0)
            xs[nx++] = (wse_xfer){.x = rx, .y = ry, .dir1 = OPP[L->dir], .hops1 = L->root, .color1 = color,
                                  .color2 = color, .deliver_all = 1, .n = n, .t0 = t0,
                                  .arrive = arr + off + (L->len - 1 - L->root)};
        off += (size_t)L->len;
    }
    gpt2c_status st = gpt2c_wse_fabric_run(m, xs, nx);
    if (st == GPT2C_OK) {
        off = 0;
        for (int i = 0; i < nl; i++) {
            const wse_line *L = &l[i];
            if (L->len > 1 && n > 0) {
                for (int k = L->root + 1; k < L->len; k++) {
                    int x, y;
                    gpt2c_wse_line_pe(L, k, &x, &y);
                    gpt2c_wse_wait(m, x, y, arr[off + (size_t)(k - L->root - 1)]);
                }
                for (int k = L->root - 1; k >= 0; k--) {
                    int x, y;
                    gpt2c_wse_line_pe(L, k, &x, &y);
                    gpt2c_wse_wait(m, x, y, arr[off + (size_t)(L->len - 1 - L->root) + (size_t)(L->root - 1 - k)]);
                }
            }
            off += (size_t)L->len;
        }
    }
    free(xs);
    free(arr);
    return st;
}

/* chains: from each end of [lo, hi] toward the root at index r (lo <= r <= hi);
 * PEs between only forward when add[k] is 0 (groups: non-roots of a chain over roots) */
static gpt2c_status chains(wse_mesh *m, const wse_line *l, int nl, const int *lo, const int *hi, const int *root,
                           int nsub, long n, int c0, int c1, const uint8_t *adds_of_line) {
    /* nsub segments per line: segment s of line i is lo[i*nsub+s] .. hi[..], root[..] */
    int cnt = nl * nsub;
    wse_xfer *xs = calloc((size_t)cnt * 2 + 1, sizeof *xs);
    size_t tot = 0;
    for (int i = 0; i < cnt; i++) tot += (size_t)(hi[i] - lo[i] + 1) * 2;
    uint64_t *arr = calloc(tot + 1, sizeof *arr), *rdy = calloc(tot + 1, sizeof *rdy);
    uint8_t *adds = calloc(tot + 1, 1);
    if (!xs || !arr || !rdy || !adds) {
        free(xs);
        free(arr);
        free(rdy);
        free(adds);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a reduction");
    }
    uint64_t extra = (uint64_t)m->p.v[GPT2C_WSE_P_REDUCE_LAT];
    int nx = 0;
    size_t off = 0;
    for (int i = 0; i < cnt; i++) {
        const wse_line *L = &l[i / nsub];
        const uint8_t *add = adds_of_line ? adds_of_line + (size_t)(i / nsub) * (size_t)L->len : NULL;
        int r = root[i];
        for (int side = 0; side < 2; side++) {
            int a = side ? hi[i] : lo[i]; /* the far end */
            int hops = side ? a - r : r - a;
            if (hops <= 0) continue;
            int dir = side ? OPP[L->dir] : L->dir;
            int x0, y0;
            gpt2c_wse_line_pe(L, a, &x0, &y0);
            for (int h = 0; h < hops; h++) { /* PE h of the chain (0 = the far end) */
                int k = side ? a - h : a + h;
                int x, y;
                gpt2c_wse_line_pe(L, k, &x, &y);
                rdy[off + (size_t)h] = (!add || add[k]) ? launch(m, x, y) : 0;
                adds[off + (size_t)h] = (uint8_t)(!add || add[k]);
            }
            xs[nx++] = (wse_xfer){.x = x0, .y = y0, .dir1 = dir, .hops1 = hops, .color1 = side ? c1 : c0,
                                  .color2 = side ? c1 : c0, .n = n, .t0 = rdy[off], .extra = (int)extra,
                                  .hop_ready = rdy + off, .hop_add = adds + off, .arrive = arr + off};
            off += (size_t)hops;
        }
    }
    gpt2c_status st = gpt2c_wse_fabric_run(m, xs, nx);
    if (st == GPT2C_OK) {
        nx = 0;
        for (int i = 0; i < cnt; i++) {
            const wse_line *L = &l[i / nsub];
            int rx, ry;
            gpt2c_wse_line_pe(L, root[i], &rx, &ry);
            int got = 0;
            for (int side = 0; side < 2; side++) {
                int hops = side ? hi[i] - root[i] : root[i] - lo[i];
                if (hops <= 0) continue;
                wse_xfer *x = &xs[nx++];
                gpt2c_wse_wait(m, rx, ry, x->arrive[hops - 1]);
                got++;
            }
            /* the root adds each incoming stream into its part */
            gpt2c_wse_compute(m, rx, ry, m->values == GPT2C_WSE_VALUES_F16 ? WSE_OP_FADDH : WSE_OP_FADDS, got, n, 1, 0);
        }
    }
    free(xs);
    free(arr);
    free(rdy);
    free(adds);
    return st;
}

static gpt2c_status tree(wse_mesh *m, const wse_line *l, int nl, long n, int c0, int c1) {
    m->switched |= (1u << c0) | (1u << c1); /* one color per side serves every level: switches [doc S7] */
    int maxlen = 0;
    for (int i = 0; i < nl; i++) if (l[i].len > maxlen) maxlen = l[i].len;
    wse_xfer *xs = calloc((size_t)nl * (size_t)maxlen + 1, sizeof *xs);
    uint64_t *arr = calloc((size_t)nl * (size_t)maxlen * 2 + 1, sizeof *arr);
    if (!xs || !arr) {
        free(xs);
        free(arr);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a tree reduction");
    }
    gpt2c_status st = GPT2C_OK;
    wse_op add = m->values == GPT2C_WSE_VALUES_F16 ? WSE_OP_FADDH : WSE_OP_FADDS;
    for (int d = 1; d < maxlen && st == GPT2C_OK; d *= 2) {
        int nx = 0;
        size_t off = 0;
        for (int i = 0; i < nl; i++) {
            const wse_line *L = &l[i];
            for (int side = 0; side < 2; side++) {
                int far = side ? L->len - 1 - L->root : L->root; /* distances 1..far */
                for (int k = d; k <= far; k += 2 * d) {
                    int ks = side ? L->root + k : L->root - k, x, y;
                    gpt2c_wse_line_pe(L, ks, &x, &y);
                    uint64_t t0 = launch(m, x, y);
                    xs[nx++] = (wse_xfer){.x = x, .y = y, .dir1 = side ? OPP[L->dir] : L->dir, .hops1 = d,
                                          .color1 = side ? c1 : c0, .color2 = side ? c1 : c0, .n = n, .t0 = t0,
                                          .arrive = arr + off};
                    off += (size_t)d;
                }
            }
        }
        st = gpt2c_wse_fabric_run(m, xs, nx);
        if (st != GPT2C_OK) break;
        nx = 0;
        for (int i = 0; i < nl; i++) {
            const wse_line *L = &l[i];
            for (int side = 0; side < 2; side++) {
                int far = side ? L->len - 1 - L->root : L->root;
                for (int k = d; k <= far; k += 2 * d) {
                    int kd = side ? L->root + k - d : L->root - k + d, x, y;
                    gpt2c_wse_line_pe(L, kd, &x, &y);
                    wse_xfer *x0 = &xs[nx++];
                    gpt2c_wse_wait(m, x, y, x0->arrive[d - 1]);
                    gpt2c_wse_compute(m, x, y, add, 1, n, 1, 0);
                }
            }
        }
    }
    free(xs);
    free(arr);
    return st;
}

gpt2c_status gpt2c_wse_coll_reduce(wse_mesh *m, const wse_line *l, int nl, long n, gpt2c_wse_reduce algo, int groups,
                             int c0, int c1, int g0, int g1) {
    if (nl <= 0 || n <= 0) return GPT2C_OK;
    if (algo == GPT2C_WSE_TREE) return tree(m, l, nl, n, c0, c1);
    int G = algo == GPT2C_WSE_GROUPS ? groups : 1;
    int maxlen = 0;
    for (int i = 0; i < nl; i++) if (l[i].len > maxlen) maxlen = l[i].len;
    if (G < 1) G = 1;
    if (G > maxlen) G = maxlen;
    int *lo = malloc(sizeof(int) * (size_t)nl * (size_t)G * 3 + 1);
    if (!lo) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a reduction");
    int *hi = lo + nl * G, *rt = hi + nl * G;
    if (G == 1) {
        for (int i = 0; i < nl; i++) { lo[i] = 0; hi[i] = l[i].len - 1; rt[i] = l[i].root; }
        gpt2c_status st = chains(m, l, nl, lo, hi, rt, 1, n, c0, c1, NULL);
        free(lo);
        return st;
    }
    /* phase 1: chains within groups into each group's middle (the line root's
     * group uses the line root); phase 2: a chain over the group roots */
    uint8_t *add = calloc((size_t)nl * (size_t)maxlen + 1, 1);
    if (!add) { free(lo); return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a reduction"); }
    for (int i = 0; i < nl; i++) {
        int len = l[i].len;
        for (int g = 0; g < G; g++) {
            int a = (int)((long)len * g / G), b = (int)((long)len * (g + 1) / G) - 1;
            if (b < a) b = a;
            int r = (l[i].root >= a && l[i].root <= b) ? l[i].root : (a + b) / 2;
            lo[i * G + g] = a; hi[i * G + g] = b; rt[i * G + g] = r;
            add[(size_t)i * (size_t)maxlen + (size_t)r] = 1;
        }
    }
    gpt2c_status st = chains(m, l, nl, lo, hi, rt, G, n, c0, c1, NULL);
    if (st == GPT2C_OK) {
        /* over the roots: a chain on the whole line where only group roots add (colors g0, g1) */
        for (int i = 0; i < nl; i++) {
            lo[i] = 0; hi[i] = l[i].len - 1; rt[i] = l[i].root;
            /* re-pack add flags to stride len of line i */
        }
        /* chains() indexes add by line i at i*len: build a packed copy */
        size_t tot = 0;
        for (int i = 0; i < nl; i++) tot += (size_t)l[i].len;
        uint8_t *packed = malloc(tot + 1);
        if (!packed) st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a reduction");
        else {
            /* all lines of one call have the same length in our uses; chains() assumes i*len */
            for (int i = 0; i < nl; i++)
                memcpy(packed + (size_t)i * (size_t)l[i].len, add + (size_t)i * (size_t)maxlen, (size_t)l[i].len);
            st = chains(m, l, nl, lo, hi, rt, 1, n, g0, g1, packed);
            free(packed);
        }
    }
    free(add);
    free(lo);
    return st;
}

gpt2c_status gpt2c_wse_coll_p2p_many(wse_mesh *m, const wse_p2p *v, int nv, int color) {
    wse_xfer *xs = calloc((size_t)nv + 1, sizeof *xs);
    size_t tot = 0;
    for (int i = 0; i < nv; i++) tot += (size_t)(abs(v[i].x1 - v[i].x0) + abs(v[i].y1 - v[i].y0));
    uint64_t *arr = calloc(tot + 1, sizeof *arr);
    if (!xs || !arr) {
        free(xs);
        free(arr);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for transfers");
    }
    int nx = 0;
    size_t off = 0;
    for (int i = 0; i < nv; i++) {
        int dx = v[i].x1 - v[i].x0, dy = v[i].y1 - v[i].y0;
        if (!dx && !dy) continue;
        uint64_t t0 = launch(m, v[i].x0, v[i].y0);
        xs[nx++] = (wse_xfer){.x = v[i].x0, .y = v[i].y0, .dir1 = dx >= 0 ? WSE_E : WSE_W, .hops1 = abs(dx),
                              .dir2 = dy >= 0 ? WSE_S : WSE_N, .hops2 = abs(dy), .color1 = color,
                              .color2 = color ^ 1, .n = v[i].n, .t0 = t0, .arrive = arr + off};
        off += (size_t)(abs(dx) + abs(dy));
    }
    gpt2c_status st = gpt2c_wse_fabric_run(m, xs, nx);
    if (st == GPT2C_OK)
        for (int i = 0, k = 0; i < nv; i++) {
            int h = abs(v[i].x1 - v[i].x0) + abs(v[i].y1 - v[i].y0);
            if (!h) continue;
            gpt2c_wse_wait(m, v[i].x1, v[i].y1, xs[k++].arrive[h - 1]);
        }
    free(xs);
    free(arr);
    return st;
}

gpt2c_status gpt2c_wse_coll_p2p(wse_mesh *m, int x0, int y0, int x1, int y1, long n, int color) {
    wse_p2p v = {x0, y0, x1, y1, n};
    return gpt2c_wse_coll_p2p_many(m, &v, 1, color);
}
