/* GPT-2 on P x P regions: layout (SRAM per PE), then the program of one chunk
 * of tokens per call.  See gpt2_map.h for the mapping.  Values are computed on
 * the PEs' own memory (f32, or f16 storage with f32 accumulation), in fixed
 * orders; in none mode only time moves. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wse/coll.h"
#include "wse/gpt2_map.h"
#include "model/model_internal.h"

/* colors (user colors 0-20; see docs/WSE.md for the table) */
enum {
    K_COLB = 0, K_ROWB = 1, K_RED0 = 2, K_RED1 = 3, K_GRP0 = 4, K_GRP1 = 5, K_MOVE = 6 /* and 7 after a turn */,
    K_LMGRP = 8, K_FUNW = 9, K_FUNE = 11, K_HRED = 12, K_HBC = 14, K_LMRED = 15, K_AMX = 17, K_TOKR = 18,
    K_TOKC = 19, K_GATH = 20
};

#define VAL(g) ((g)->m->values != GPT2C_WSE_VALUES_NONE)

static float *mem(wse_gpt2 *g, const wse_region *R, int r, int c, uint32_t off) {
    return wse_at(g->m, R->x0 + c, R->y0 + r)->mem + off;
}

/* f16 storage: round to nearest even half and back (normals; subnormals flushed) */
static float to_half(float f) {
    if (!isfinite(f) || f == 0) return f;
    int e;
    float mant = frexpf(f, &e); /* f = mant * 2^e, 0.5 <= |mant| < 1 */
    if (e < -13) return 0.0f * f;
    if (e > 16) return f > 0 ? INFINITY : -INFINITY;
    return ldexpf(rintf(ldexpf(mant, 11)), e - 11);
}
static void rnd(wse_gpt2 *g, float *p, long n) {
    if (g->m->values != GPT2C_WSE_VALUES_F16) return;
    for (long i = 0; i < n; i++) p[i] = to_half(p[i]);
}

static gpt2c_status alloc_all(wse_gpt2 *g, const wse_region *R, size_t n, const char *what, uint32_t *off) {
    for (int r = 0; r < g->P; r++)
        for (int c = 0; c < g->P; c++) GPT2C_TRY(gpt2c_wse_alloc(g->m, R->x0 + c, R->y0 + r, n, what, off));
    return GPT2C_OK;
}
static gpt2c_status alloc_diag(wse_gpt2 *g, const wse_region *R, size_t n, const char *what, uint32_t *off) {
    for (int c = 0; c < g->P; c++) GPT2C_TRY(gpt2c_wse_alloc(g->m, R->x0 + c, R->y0 + c, n, what, off));
    return GPT2C_OK;
}

static const float *param(const wse_gpt2 *g, int which) { return g->model->params.t[which]; }

/* copies one weight's tiles into the PEs: tile (r,c) = rows rowmap(r,o), cols c*icb+j */
static void load_tiles(wse_gpt2 *g, const wse_region *R, uint32_t off, const float *W, int IC, int ocb, int icb,
                       int split3) {
    for (int r = 0; r < g->P; r++)
        for (int c = 0; c < g->P; c++) {
            float *t = mem(g, R, r, c, off);
            for (int o = 0; o < ocb; o++) {
                long row = split3 ? (long)(o / g->Cb) * g->C + (long)r * g->Cb + o % g->Cb : (long)r * ocb + o;
                for (int j = 0; j < icb; j++) t[o * icb + j] = W[row * IC + (long)c * icb + j];
            }
            rnd(g, t, (long)ocb * icb);
        }
}

static void load_vec_cols(wse_gpt2 *g, const wse_region *R, uint32_t off, const float *v, int blk, int diag_only) {
    for (int r = 0; r < g->P; r++)
        for (int c = 0; c < g->P; c++) {
            if (diag_only && r != c) continue;
            float *t = mem(g, R, r, c, off);
            memcpy(t, v + (long)c * blk, sizeof(float) * (size_t)blk);
            rnd(g, t, blk);
        }
}

/* qkv bias in the split-by-3 order of the diagonal */
static void load_qkvb(wse_gpt2 *g, const wse_region *R, uint32_t off, const float *b) {
    for (int c = 0; c < g->P; c++) {
        float *t = mem(g, R, c, c, off);
        for (int o = 0; o < 3 * g->Cb; o++) t[o] = b[(o / g->Cb) * g->C + c * g->Cb + o % g->Cb];
        rnd(g, t, 3 * g->Cb);
    }
}

gpt2c_status gpt2c_wse_gpt2_layout(wse_gpt2 *g) {
    int P = g->P, Cb = g->Cb, Tq = g->Tq;
    long ymax = (long)Tq * 4 * Cb;
    for (int i = 0; i < g->nreg; i++) {
        wse_region *R = &g->reg[i];
        if (R->emb && (long)g->Tl * g->Vb > ymax) ymax = (long)g->Tl * g->Vb;
    }
    for (int i = 0; i < g->nreg; i++) {
        wse_region *R = &g->reg[i];
        long ylen = (long)Tq * 4 * Cb;
        if (R->emb && (long)g->Tl * g->Vb > ylen) ylen = (long)g->Tl * g->Vb;
        GPT2C_TRY(alloc_all(g, R, (size_t)Tq * 4 * Cb, "activation input block", &R->o_xin));
        GPT2C_TRY(alloc_all(g, R, (size_t)ylen, "partial-product block", &R->o_y));
        GPT2C_TRY(alloc_all(g, R, (size_t)2 * Tq, "layernorm sums", &R->o_st));
        R->ow = calloc((size_t)R->nl + 1, sizeof *R->ow);
        R->ob = calloc((size_t)R->nl + 1, sizeof *R->ob);
        if (!R->ow || !R->ob) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for the layout");
        static const char *WN[8] = {"qkv weight tile", "attn proj weight tile", "fc weight tile",
                                    "fc proj weight tile", "ln1 weight", "ln1 bias", "ln2 weight", "ln2 bias"};
        size_t wsz[8] = {(size_t)3 * Cb * Cb, (size_t)Cb * Cb, (size_t)4 * Cb * Cb, (size_t)4 * Cb * Cb,
                         (size_t)Cb, (size_t)Cb, (size_t)Cb, (size_t)Cb};
        for (int l = 0; l < R->nl; l++)
            for (int k = 0; k < 8; k++) GPT2C_TRY(alloc_all(g, R, wsz[k], WN[k], &R->ow[l][k]));
        if (R->emb) {
            GPT2C_TRY(alloc_all(g, R, (size_t)g->Vb * Cb, "wte tile", &R->o_wte));
            GPT2C_TRY(alloc_all(g, R, (size_t)Cb, "lnf weight", &R->o_lnf[0]));
            GPT2C_TRY(alloc_all(g, R, (size_t)Cb, "lnf bias", &R->o_lnf[1]));
        }
        /* diagonal */
        GPT2C_TRY(alloc_diag(g, R, (size_t)Tq * Cb, "residual block", &R->o_res));
        if (R->nl) {
            GPT2C_TRY(alloc_diag(g, R, (size_t)Tq * 3 * Cb, "qkv block", &R->o_qkv));
            GPT2C_TRY(alloc_diag(g, R, (size_t)Tq * Cb, "attention output", &R->o_att));
            GPT2C_TRY(alloc_diag(g, R, (size_t)g->nhl * Tq * g->ctx, "attention scores", &R->o_sc));
        }
        static const char *BN[6] = {"qkv bias", "attn proj bias", "fc bias", "fc proj bias", "key cache",
                                    "value cache"};
        size_t bsz[6] = {(size_t)3 * Cb, (size_t)Cb, (size_t)4 * Cb, (size_t)Cb, (size_t)g->ctx * Cb,
                         (size_t)g->ctx * Cb};
        for (int l = 0; l < R->nl; l++)
            for (int k = 0; k < 6; k++) GPT2C_TRY(alloc_diag(g, R, bsz[k], BN[k], &R->ob[l][k]));
        if (R->emb) GPT2C_TRY(alloc_diag(g, R, (size_t)g->ctx * Cb, "wpe block", &R->o_wpe));
        /* relays of heads spread over s > 1 PEs: (r, r0) for r in r0+1 .. r0+s-1 */
        if (R->nl && g->hs > Cb) {
            int s = g->hs / Cb;
            for (int r = 0; r < P; r++)
                if (r % s) GPT2C_TRY(gpt2c_wse_alloc(g->m, R->x0 + r - r % s, R->y0 + r, (size_t)Tq * g->ctx,
                                               "attention relay", &R->o_relay));
        }
    }
    GPT2C_TRY(gpt2c_wse_mesh_commit(g->m));
    if (!VAL(g)) return GPT2C_OK;
    int C = g->C;
    for (int i = 0; i < g->nreg; i++) {
        wse_region *R = &g->reg[i];
        for (int l = 0; l < R->nl; l++) {
            int gl = R->l0 + l;
            load_tiles(g, R, R->ow[l][0], param(g, GPT2C_P_QKVW) + (size_t)gl * 3 * C * C, C, 3 * Cb, Cb, 1);
            load_tiles(g, R, R->ow[l][1], param(g, GPT2C_P_ATTPROJW) + (size_t)gl * C * C, C, Cb, Cb, 0);
            load_tiles(g, R, R->ow[l][2], param(g, GPT2C_P_FCW) + (size_t)gl * 4 * C * C, C, 4 * Cb, Cb, 0);
            load_tiles(g, R, R->ow[l][3], param(g, GPT2C_P_FCPROJW) + (size_t)gl * 4 * C * C, 4 * C, Cb, 4 * Cb, 0);
            load_vec_cols(g, R, R->ow[l][4], param(g, GPT2C_P_LN1W) + (size_t)gl * C, Cb, 0);
            load_vec_cols(g, R, R->ow[l][5], param(g, GPT2C_P_LN1B) + (size_t)gl * C, Cb, 0);
            load_vec_cols(g, R, R->ow[l][6], param(g, GPT2C_P_LN2W) + (size_t)gl * C, Cb, 0);
            load_vec_cols(g, R, R->ow[l][7], param(g, GPT2C_P_LN2B) + (size_t)gl * C, Cb, 0);
            load_qkvb(g, R, R->ob[l][0], param(g, GPT2C_P_QKVB) + (size_t)gl * 3 * C);
            load_vec_cols(g, R, R->ob[l][1], param(g, GPT2C_P_ATTPROJB) + (size_t)gl * C, Cb, 1);
            load_vec_cols(g, R, R->ob[l][2], param(g, GPT2C_P_FCB) + (size_t)gl * 4 * C, 4 * Cb, 1);
            load_vec_cols(g, R, R->ob[l][3], param(g, GPT2C_P_FCPROJB) + (size_t)gl * C, Cb, 1);
        }
        if (R->emb) {
            const float *wte = param(g, GPT2C_P_WTE), *wpe = param(g, GPT2C_P_WPE);
            for (int r = 0; r < P; r++)
                for (int c = 0; c < P; c++) {
                    float *t = mem(g, R, r, c, R->o_wte);
                    for (int v = 0; v < g->Vb; v++) {
                        long row = (long)r * g->Vb + v;
                        for (int j = 0; j < Cb; j++) t[v * Cb + j] = row < g->Vp ? wte[row * C + c * Cb + j] : 0.0f;
                    }
                    rnd(g, t, (long)g->Vb * Cb);
                }
            for (int c = 0; c < P; c++) {
                float *t = mem(g, R, c, c, R->o_wpe);
                for (int p = 0; p < g->ctx; p++)
                    for (int j = 0; j < Cb; j++) t[p * Cb + j] = wpe[(long)p * C + c * Cb + j];
                rnd(g, t, (long)g->ctx * Cb);
            }
            load_vec_cols(g, R, R->o_lnf[0], param(g, GPT2C_P_LNFW), Cb, 0);
            load_vec_cols(g, R, R->o_lnf[1], param(g, GPT2C_P_LNFB), Cb, 0);
        }
    }
    return GPT2C_OK;
}

/* ---- collectives on a region ------------------------------------------- */
static void lines_rows(wse_gpt2 *g, const wse_region *R, wse_line *l, int root_diag, int root_col) {
    for (int r = 0; r < g->P; r++)
        l[r] = (wse_line){R->x0, R->y0 + r, WSE_E, g->P, root_diag ? r : root_col};
}
static void lines_cols(wse_gpt2 *g, const wse_region *R, wse_line *l, int root_diag, int root_row) {
    for (int c = 0; c < g->P; c++)
        l[c] = (wse_line){R->x0 + c, R->y0, WSE_S, g->P, root_diag ? c : root_row};
}

/* diagonal block (n floats at off_src of each diagonal PE) down its column into off_dst of all */
static gpt2c_status col_bcast_diag(wse_gpt2 *g, const wse_region *R, uint32_t src, uint32_t dst, long n) {
    wse_line *l = malloc(sizeof *l * (size_t)g->P);
    if (!l) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
    lines_cols(g, R, l, 1, 0);
    gpt2c_status st = gpt2c_wse_coll_bcast(g->m, l, g->P, n, K_COLB);
    free(l);
    if (st || !VAL(g)) return st;
    for (int c = 0; c < g->P; c++) {
        const float *s = mem(g, R, c, c, src);
        for (int r = 0; r < g->P; r++) {
            float *d = mem(g, R, r, c, dst);
            if (d != s) memmove(d, s, sizeof(float) * (size_t)n);
        }
    }
    return GPT2C_OK;
}

/* rows reduce off (n floats) into column root (diag if root < 0): sum in column order */
static gpt2c_status row_reduce(wse_gpt2 *g, const wse_region *R, uint32_t off, long n, int root, int c0, int c1,
                               int g0, int g1) {
    wse_line *l = malloc(sizeof *l * (size_t)g->P);
    if (!l) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
    lines_rows(g, R, l, root < 0, root);
    gpt2c_status st = gpt2c_wse_coll_reduce(g->m, l, g->P, n, g->cfg->reduce, g->cfg->group_num, c0, c1, g0, g1);
    free(l);
    if (st || !VAL(g)) return st;
    for (int r = 0; r < g->P; r++) {
        int rc = root < 0 ? r : root;
        float *d = mem(g, R, r, rc, off);
        for (int c = 0; c < g->P; c++) {
            if (c == rc) continue;
            const float *s = mem(g, R, r, c, off);
            for (long i = 0; i < n; i++) d[i] += s[i];
        }
        rnd(g, d, n);
    }
    return GPT2C_OK;
}

/* diagonal's n floats at off back along its row to every PE */
static gpt2c_status row_bcast_diag(wse_gpt2 *g, const wse_region *R, uint32_t off, long n) {
    wse_line *l = malloc(sizeof *l * (size_t)g->P);
    if (!l) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
    lines_rows(g, R, l, 1, 0);
    gpt2c_status st = gpt2c_wse_coll_bcast(g->m, l, g->P, n, K_ROWB);
    free(l);
    if (st || !VAL(g)) return st;
    for (int r = 0; r < g->P; r++)
        for (int c = 0; c < g->P; c++)
            if (c != r) memcpy(mem(g, R, r, c, off), mem(g, R, r, r, off), sizeof(float) * (size_t)n);
    return GPT2C_OK;
}

static void all_compute(wse_gpt2 *g, const wse_region *R, wse_op op, long count, long n) {
    for (int r = 0; r < g->P; r++)
        for (int c = 0; c < g->P; c++) gpt2c_wse_compute(g->m, R->x0 + c, R->y0 + r, op, count, n, 1, 0);
}
static void diag_compute(wse_gpt2 *g, const wse_region *R, wse_op op, long count, long n) {
    for (int c = 0; c < g->P; c++) gpt2c_wse_compute(g->m, R->x0 + c, R->y0 + c, op, count, n, 1, 0);
}
static wse_op op_add(wse_gpt2 *g) { return g->m->values == GPT2C_WSE_VALUES_F16 ? WSE_OP_FADDH : WSE_OP_FADDS; }
static wse_op op_mul(wse_gpt2 *g) { return g->m->values == GPT2C_WSE_VALUES_F16 ? WSE_OP_FMULH : WSE_OP_FMULS; }
static wse_op op_mac(wse_gpt2 *g) { return g->m->values == GPT2C_WSE_VALUES_F16 ? WSE_OP_FMACH : WSE_OP_FMACS; }

/* layernorm of the diagonal's block res (Tq x Cb) into xin of every PE of its column */
static gpt2c_status layernorm(wse_gpt2 *g, const wse_region *R, uint32_t res, uint32_t ow, uint32_t ob, int Tq,
                              int layer, const char *name) {
    int P = g->P, Cb = g->Cb;
    gpt2c_wse_op_begin(g->m, name, layer, g->phase, 8.0 * Tq * g->C);
    GPT2C_TRY(col_bcast_diag(g, R, res, R->o_xin, (long)Tq * Cb));
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: sum x; pass 1: sum (x - mean)^2 */
        all_compute(g, R, pass ? op_mac(g) : op_add(g), Tq, Cb);
        if (VAL(g))
            for (int r = 0; r < P; r++)
                for (int c = 0; c < P; c++) {
                    const float *x = mem(g, R, r, c, R->o_xin);
                    float *st = mem(g, R, r, c, R->o_st);
                    for (int t = 0; t < Tq; t++) {
                        float s = 0, m = st[t];
                        for (int j = 0; j < Cb; j++) {
                            float d = pass ? x[t * Cb + j] - m : x[t * Cb + j];
                            s += pass ? d * d : d;
                        }
                        st[Tq * pass + t] = s;
                    }
                }
        GPT2C_TRY(row_reduce(g, R, R->o_st + (uint32_t)(Tq * pass), Tq, -1, K_RED0, K_RED1, K_GRP0, K_GRP1));
        if (VAL(g))
            for (int r = 0; r < P; r++) {
                float *st = mem(g, R, r, r, R->o_st);
                for (int t = 0; t < Tq; t++) st[Tq * pass + t] /= (float)g->C;
            }
        GPT2C_TRY(row_bcast_diag(g, R, R->o_st + (uint32_t)(Tq * pass), Tq));
    }
    all_compute(g, R, WSE_OP_SPECIAL, 1, Tq); /* rsqrt */
    all_compute(g, R, op_mul(g), 2L * Tq, Cb);  /* (x - mean) * rstd, * w */
    all_compute(g, R, op_add(g), 2L * Tq, Cb);  /* - mean, + b */
    if (VAL(g))
        for (int r = 0; r < P; r++)
            for (int c = 0; c < P; c++) {
                float *x = mem(g, R, r, c, R->o_xin);
                const float *st = mem(g, R, r, c, R->o_st), *w = mem(g, R, r, c, ow), *b = mem(g, R, r, c, ob);
                for (int t = 0; t < Tq; t++) {
                    float rs = 1.0f / sqrtf(st[Tq + t] + 1e-5f);
                    for (int j = 0; j < Cb; j++) x[t * Cb + j] = (x[t * Cb + j] - st[t]) * rs * w[j] + b[j];
                }
                rnd(g, x, (long)Tq * Cb);
            }
    return GPT2C_OK;
}

/* y (Tq x ocb) = xin (Tq x icb) @ tile^T on every PE, then rows reduce into root (diag if < 0) */
static gpt2c_status linear(wse_gpt2 *g, const wse_region *R, uint32_t wt, int Tq, int ocb, int icb, int root, int c0,
                           int c1, int g0, int g1, int xoff_rows) {
    int P = g->P;
    for (int r = 0; r < P; r++)
        for (int c = 0; c < P; c++) {
            gpt2c_wse_local_gemm(g->m, R->x0 + c, R->y0 + r, Tq, ocb, icb, 1, 0);
            if (!VAL(g)) continue;
            const float *x = mem(g, R, r, c, R->o_xin) + (long)xoff_rows * icb, *w = mem(g, R, r, c, wt);
            float *y = mem(g, R, r, c, R->o_y);
            for (int t = 0; t < Tq; t++)
                for (int o = 0; o < ocb; o++) {
                    float s = 0;
                    for (int j = 0; j < icb; j++) s += x[t * icb + j] * w[o * icb + j];
                    y[t * ocb + o] = s;
                }
        }
    return row_reduce(g, R, R->o_y, (long)Tq * ocb, root, c0, c1, g0, g1);
}

static void diag_bias(wse_gpt2 *g, const wse_region *R, uint32_t dst, uint32_t bias, int Tq, int n) {
    diag_compute(g, R, op_add(g), Tq, n);
    if (!VAL(g)) return;
    for (int c = 0; c < g->P; c++) {
        float *y = mem(g, R, c, c, R->o_y), *d = mem(g, R, c, c, dst);
        const float *b = mem(g, R, c, c, bias);
        for (int t = 0; t < Tq; t++)
            for (int o = 0; o < n; o++) d[t * n + o] = y[t * n + o] + b[o];
        rnd(g, d, (long)Tq * n);
    }
}

static void diag_residual(wse_gpt2 *g, const wse_region *R, uint32_t bias, int Tq) {
    int Cb = g->Cb;
    diag_compute(g, R, op_add(g), 2L * Tq, Cb);
    if (!VAL(g)) return;
    for (int c = 0; c < g->P; c++) {
        float *y = mem(g, R, c, c, R->o_y), *res = mem(g, R, c, c, R->o_res);
        const float *b = mem(g, R, c, c, bias);
        for (int t = 0; t < Tq; t++)
            for (int j = 0; j < Cb; j++) res[t * Cb + j] += y[t * Cb + j] + b[j];
        rnd(g, res, (long)Tq * Cb);
    }
}

/* moves the residual stream (Tq x Cb per diagonal PE) to region `to` */
static gpt2c_status move_residual(wse_gpt2 *g, int to, int Tq, int layer) {
    if (g->cur_reg == to) return GPT2C_OK;
    const wse_region *A = &g->reg[g->cur_reg], *B = &g->reg[to];
    gpt2c_wse_op_begin(g->m, "move", layer, g->phase, 0);
    /* a region's diagonal receives on these colors, then later sends on them:
     * the routes change between phases (switches, as <collectives_2d> does) */
    g->m->switched |= (1u << K_MOVE) | (1u << (K_MOVE ^ 1));
    wse_p2p *v = malloc(sizeof *v * (size_t)g->P);
    if (!v) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
    for (int c = 0; c < g->P; c++)
        v[c] = (wse_p2p){A->x0 + c, A->y0 + c, B->x0 + c, B->y0 + c, (long)Tq * g->Cb};
    gpt2c_status st = gpt2c_wse_coll_p2p_many(g->m, v, g->P, K_MOVE);
    free(v);
    if (st) return st;
    if (VAL(g))
        for (int c = 0; c < g->P; c++)
            memcpy(mem(g, B, c, c, B->o_res), mem(g, A, c, c, A->o_res), sizeof(float) * (size_t)Tq * g->Cb);
    g->cur_reg = to;
    return GPT2C_OK;
}

/* ---- attention ----------------------------------------------------------- */
static gpt2c_status attention(wse_gpt2 *g, const wse_region *R, int li, int layer, int pos, int Tq) {
    int P = g->P, Cb = g->Cb, hs = g->hs, nk = pos + Tq;
    int s = hs > Cb ? hs / Cb : 1; /* PEs per head */
    int hpp = hs > Cb ? 1 : Cb / hs; /* heads per PE */
    int chs = hs > Cb ? Cb : hs;     /* channels of one head on one PE */
    float scale = 1.0f / sqrtf((float)hs);
    gpt2c_wse_op_begin(g->m, "attention", layer, g->phase, 4.0 * Tq * nk * g->C);
    /* kv into the cache */
    diag_compute(g, R, g->m->values == GPT2C_WSE_VALUES_F16 ? WSE_OP_FMOVH : WSE_OP_FMOVS, 2L * Tq, Cb);
    for (int c = 0; c < P; c++) {
        /* partial scores of its heads: Tq x nk per head, K strided by Cb */
        for (int h = 0; h < hpp; h++) gpt2c_wse_local_gemm(g->m, R->x0 + c, R->y0 + c, Tq, nk, chs, Cb, 0);
        if (!VAL(g)) continue;
        float *qkv = mem(g, R, c, c, R->o_qkv), *kc = mem(g, R, c, c, R->ob[li][4]),
              *vc = mem(g, R, c, c, R->ob[li][5]), *sc = mem(g, R, c, c, R->o_sc);
        for (int t = 0; t < Tq; t++)
            for (int j = 0; j < Cb; j++) {
                kc[(long)(pos + t) * Cb + j] = qkv[t * 3 * Cb + Cb + j];
                vc[(long)(pos + t) * Cb + j] = qkv[t * 3 * Cb + 2 * Cb + j];
            }
        for (int h = 0; h < hpp; h++)
            for (int t = 0; t < Tq; t++)
                for (int u = 0; u < nk; u++) {
                    float a = 0;
                    for (int j = 0; j < chs; j++) a += qkv[t * 3 * Cb + h * chs + j] * kc[(long)u * Cb + h * chs + j];
                    sc[((long)h * Tq + t) * nk + u] = a;
                }
    }
    if (s > 1) { /* funnel: (r,r) -> (r, r0) west, chain up column r0 into (r0, r0) */
        wse_p2p *v = malloc(sizeof *v * (size_t)P);
        wse_line *l = malloc(sizeof *l * (size_t)P);
        if (!v || !l) { free(v); free(l); return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory"); }
        int nv = 0;
        for (int r = 0; r < P; r++)
            if (r % s) v[nv++] = (wse_p2p){R->x0 + r, R->y0 + r, R->x0 + r - r % s, R->y0 + r, (long)Tq * nk};
        gpt2c_status st = gpt2c_wse_coll_p2p_many(g->m, v, nv, K_FUNW);
        int nl = 0;
        for (int r0 = 0; r0 < P; r0 += s) l[nl++] = (wse_line){R->x0 + r0, R->y0 + r0, WSE_S, s, 0};
        if (!st) st = gpt2c_wse_coll_reduce(g->m, l, nl, (long)Tq * nk, GPT2C_WSE_CHAIN, 1, K_HRED, K_HRED, K_HRED, K_HRED);
        if (!st && VAL(g))
            for (int r0 = 0; r0 < P; r0 += s) {
                float *d = mem(g, R, r0, r0, R->o_sc);
                for (int r = r0 + 1; r < r0 + s; r++) {
                    const float *p = mem(g, R, r, r, R->o_sc);
                    for (long i = 0; i < (long)Tq * nk; i++) d[i] += p[i];
                }
            }
        /* softmax at the head's first PE */
        for (int r0 = 0; !st && r0 < P; r0 += s) {
            int x = R->x0 + r0, y = R->y0 + r0;
            gpt2c_wse_compute(g->m, x, y, op_mul(g), Tq, nk, 1, 0);
            gpt2c_wse_compute(g->m, x, y, WSE_OP_FMAXS, Tq, nk, 1, 0);
            gpt2c_wse_compute(g->m, x, y, op_add(g), 2L * Tq, nk, 1, 0);
            gpt2c_wse_compute(g->m, x, y, WSE_OP_SPECIAL, Tq, nk, 1, 0);
            gpt2c_wse_compute(g->m, x, y, op_mul(g), Tq, nk, 1, 0);
        }
        /* probabilities back: down column r0, then east to (r, r) */
        nl = 0;
        for (int r0 = 0; r0 < P; r0 += s) l[nl++] = (wse_line){R->x0 + r0, R->y0 + r0, WSE_S, s, 0};
        if (!st) st = gpt2c_wse_coll_bcast(g->m, l, nl, (long)Tq * nk, K_HBC);
        for (int i = 0; i < nv; i++) {
            int tx = v[i].x0, ty = v[i].y0;
            v[i].x0 = v[i].x1; v[i].y0 = v[i].y1; v[i].x1 = tx; v[i].y1 = ty;
        }
        if (!st) st = gpt2c_wse_coll_p2p_many(g->m, v, nv, K_FUNE);
        free(v);
        free(l);
        if (st) return st;
    } else {
        for (int c = 0; c < P; c++) {
            int x = R->x0 + c, y = R->y0 + c;
            gpt2c_wse_compute(g->m, x, y, op_mul(g), (long)hpp * Tq, nk, 1, 0);
            gpt2c_wse_compute(g->m, x, y, WSE_OP_FMAXS, (long)hpp * Tq, nk, 1, 0);
            gpt2c_wse_compute(g->m, x, y, op_add(g), 2L * hpp * Tq, nk, 1, 0);
            gpt2c_wse_compute(g->m, x, y, WSE_OP_SPECIAL, (long)hpp * Tq, nk, 1, 0);
            gpt2c_wse_compute(g->m, x, y, op_mul(g), (long)hpp * Tq, nk, 1, 0);
        }
    }
    if (VAL(g)) /* softmax (causal) on the head roots, then copy back */
        for (int c = 0; c < P; c += s) {
            float *sc = mem(g, R, c, c, R->o_sc);
            for (int h = 0; h < hpp; h++)
                for (int t = 0; t < Tq; t++) {
                    float *row = sc + ((long)h * Tq + t) * nk;
                    int valid = pos + t + 1;
                    float mx = -INFINITY;
                    for (int u = 0; u < valid; u++) {
                        row[u] *= scale;
                        if (row[u] > mx) mx = row[u];
                    }
                    float sum = 0;
                    for (int u = 0; u < valid; u++) {
                        row[u] = expf(row[u] - mx);
                        sum += row[u];
                    }
                    float inv = 1.0f / sum;
                    for (int u = 0; u < nk; u++) row[u] = u < valid ? row[u] * inv : 0.0f;
                    rnd(g, row, nk);
                }
            for (int r = c + 1; r < c + s; r++)
                memcpy(mem(g, R, r, r, R->o_sc), sc, sizeof(float) * (size_t)Tq * nk);
        }
    for (int c = 0; c < P; c++) {
        for (int h = 0; h < hpp; h++) gpt2c_wse_local_gemm(g->m, R->x0 + c, R->y0 + c, Tq, chs, nk, Cb, 0);
        if (!VAL(g)) continue;
        const float *sc = mem(g, R, c, c, R->o_sc), *vc = mem(g, R, c, c, R->ob[li][5]);
        float *att = mem(g, R, c, c, R->o_att);
        for (int h = 0; h < hpp; h++)
            for (int t = 0; t < Tq; t++)
                for (int j = 0; j < chs; j++) {
                    float a = 0;
                    for (int u = 0; u < nk; u++) a += sc[((long)h * Tq + t) * nk + u] * vc[(long)u * Cb + h * chs + j];
                    att[t * Cb + h * chs + j] = a;
                }
        rnd(g, att, (long)Tq * Cb);
    }
    return GPT2C_OK;
}

gpt2c_status gpt2c_wse_gpt2_layer(wse_gpt2 *g, int l, int pos, int Tq) {
    int ri = g->reg_of_layer[l];
    GPT2C_TRY(move_residual(g, ri, Tq, l));
    const wse_region *R = &g->reg[ri];
    int li = l - R->l0, Cb = g->Cb;
    double C = g->C;
    GPT2C_TRY(layernorm(g, R, R->o_res, R->ow[li][4], R->ow[li][5], Tq, l, "ln1"));
    gpt2c_wse_op_begin(g->m, "qkv", l, g->phase, 2.0 * Tq * C * 3 * C);
    GPT2C_TRY(linear(g, R, R->ow[li][0], Tq, 3 * Cb, Cb, -1, K_RED0, K_RED1, K_GRP0, K_GRP1, 0));
    diag_bias(g, R, R->o_qkv, R->ob[li][0], Tq, 3 * Cb);
    GPT2C_TRY(attention(g, R, li, l, pos, Tq));
    gpt2c_wse_op_begin(g->m, "attproj", l, g->phase, 2.0 * Tq * C * C);
    GPT2C_TRY(col_bcast_diag(g, R, R->o_att, R->o_xin, (long)Tq * Cb));
    GPT2C_TRY(linear(g, R, R->ow[li][1], Tq, Cb, Cb, -1, K_RED0, K_RED1, K_GRP0, K_GRP1, 0));
    gpt2c_wse_op_begin(g->m, "residual", l, g->phase, 2.0 * Tq * C);
    diag_residual(g, R, R->ob[li][1], Tq);
    GPT2C_TRY(layernorm(g, R, R->o_res, R->ow[li][6], R->ow[li][7], Tq, l, "ln2"));
    gpt2c_wse_op_begin(g->m, "fc", l, g->phase, 2.0 * Tq * C * 4 * C);
    GPT2C_TRY(linear(g, R, R->ow[li][2], Tq, 4 * Cb, Cb, -1, K_RED0, K_RED1, K_GRP0, K_GRP1, 0));
    diag_bias(g, R, R->o_y, R->ob[li][2], Tq, 4 * Cb);
    gpt2c_wse_op_begin(g->m, "gelu", l, g->phase, 8.0 * Tq * 4 * C);
    diag_compute(g, R, WSE_OP_SPECIAL, 1, (long)Tq * 4 * Cb);
    diag_compute(g, R, op_mac(g), 3, (long)Tq * 4 * Cb);
    if (VAL(g))
        for (int c = 0; c < g->P; c++) {
            float *y = mem(g, R, c, c, R->o_y);
            for (long i = 0; i < (long)Tq * 4 * Cb; i++) {
                float x = y[i];
                /* tanh form, as gpt2c_ref_gelu_forward */
                float cube = 0.044715f * x * x * x;
                y[i] = 0.5f * x * (1.0f + tanhf(sqrtf(2.0f / (float)M_PI) * (x + cube)));
            }
            rnd(g, y, (long)Tq * 4 * Cb);
        }
    gpt2c_wse_op_begin(g->m, "fcproj", l, g->phase, 2.0 * Tq * C * 4 * C);
    GPT2C_TRY(col_bcast_diag(g, R, R->o_y, R->o_xin, (long)Tq * 4 * Cb));
    GPT2C_TRY(linear(g, R, R->ow[li][3], Tq, Cb, 4 * Cb, -1, K_RED0, K_RED1, K_GRP0, K_GRP1, 0));
    gpt2c_wse_op_begin(g->m, "residual", l, g->phase, 2.0 * Tq * C);
    diag_residual(g, R, R->ob[li][3], Tq);
    return GPT2C_OK;
}

/* ---- embedding and head ---------------------------------------------------- */
static gpt2c_status bcast_tokens(wse_gpt2 *g, const wse_region *R, int Tq) {
    int P = g->P;
    wse_line row = {R->x0, R->y0, WSE_E, P, P - 1};
    GPT2C_TRY(gpt2c_wse_coll_bcast(g->m, &row, 1, Tq, K_TOKR));
    wse_line *l = malloc(sizeof *l * (size_t)P);
    if (!l) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
    lines_cols(g, R, l, 0, 0);
    gpt2c_status st = gpt2c_wse_coll_bcast(g->m, l, P, Tq, K_TOKC);
    free(l);
    return st;
}

gpt2c_status gpt2c_wse_gpt2_embed(wse_gpt2 *g, const int32_t *tok, int pos, int Tq) {
    const wse_region *R = &g->reg[g->emb_reg];
    int P = g->P, Cb = g->Cb;
    g->cur_reg = g->emb_reg;
    gpt2c_wse_op_begin(g->m, "embed", -1, g->phase, (double)Tq * g->C);
    if (g->phase == 1 && g->head_reg != g->emb_reg) {
        /* decode: the token comes from the head region's argmax (its east column's top) */
        const wse_region *Hd = &g->reg[g->head_reg];
        g->m->switched |= (1u << K_MOVE) | (1u << (K_MOVE ^ 1));
        GPT2C_TRY(gpt2c_wse_coll_p2p(g->m, Hd->x0 + P - 1, Hd->y0, R->x0 + P - 1, R->y0, Tq, K_MOVE));
    }
    GPT2C_TRY(bcast_tokens(g, R, Tq));
    g->m->switched |= 1u << K_GATH; /* sources change with the token: switched routes */
    wse_p2p *v = malloc(sizeof *v * (size_t)P * (size_t)Tq);
    if (!v) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
    int nv = 0;
    for (int t = 0; t < Tq; t++) {
        int row = tok[t] / g->Vb;
        for (int c = 0; c < P; c++) v[nv++] = (wse_p2p){R->x0 + c, R->y0 + row, R->x0 + c, R->y0 + c, Cb};
    }
    /* the owning PEs copy their row out (one op per token) */
    for (int t = 0; t < Tq; t++)
        for (int c = 0; c < P; c++) gpt2c_wse_compute(g->m, R->x0 + c, R->y0 + tok[t] / g->Vb, WSE_OP_FMOVS, 1, Cb, 1, 0);
    gpt2c_status st = gpt2c_wse_coll_p2p_many(g->m, v, nv, K_GATH);
    free(v);
    if (st) return st;
    diag_compute(g, R, op_add(g), Tq, Cb);
    if (VAL(g))
        for (int c = 0; c < P; c++) {
            float *res = mem(g, R, c, c, R->o_res);
            const float *wpe = mem(g, R, c, c, R->o_wpe);
            for (int t = 0; t < Tq; t++) {
                int row = tok[t] / g->Vb;
                const float *w = mem(g, R, row, c, R->o_wte) + (long)(tok[t] % g->Vb) * Cb;
                for (int j = 0; j < Cb; j++) res[t * Cb + j] = w[j] + wpe[(long)(pos + t) * Cb + j];
            }
            rnd(g, res, (long)Tq * Cb);
        }
    return GPT2C_OK;
}

gpt2c_status gpt2c_wse_gpt2_head(wse_gpt2 *g, int pos, int Tq, int want_logits) {
    GPT2C_TRY(move_residual(g, g->head_reg, Tq, -1));
    const wse_region *R = &g->reg[g->head_reg];
    int P = g->P, Vb = g->Vb, Cb = g->Cb;
    GPT2C_TRY(layernorm(g, R, R->o_res, R->o_lnf[0], R->o_lnf[1], Tq, -1, "lnf"));
    for (int t0 = 0; t0 < Tq; t0 += g->Tl) {
        int Tl = Tq - t0 < g->Tl ? Tq - t0 : g->Tl;
        gpt2c_wse_op_begin(g->m, "lm_head", -1, g->phase, 2.0 * Tl * g->C * g->Vp);
        GPT2C_TRY(linear(g, R, R->o_wte, Tl, Vb, Cb, P - 1, K_LMRED, K_LMRED + 1, K_LMGRP, K_LMGRP, t0));
        if (VAL(g) && want_logits && g->logits)
            for (int r = 0; r < P; r++) {
                const float *y = mem(g, R, r, P - 1, R->o_y);
                for (int t = 0; t < Tl; t++)
                    for (int v = 0; v < Vb; v++) {
                        long col = (long)r * Vb + v;
                        if (col < g->Vp) g->logits[(long)(pos + t0 + t) * g->Vp + col] = y[t * Vb + v];
                    }
            }
        /* argmax: each east PE over its block, then up the east column */
        gpt2c_wse_op_begin(g->m, "argmax", -1, g->phase, (double)Tl * g->Vp);
        for (int r = 0; r < P; r++) gpt2c_wse_compute(g->m, R->x0 + P - 1, R->y0 + r, WSE_OP_FMAXS, Tl, Vb, 1, 0);
        wse_line col = {R->x0 + P - 1, R->y0, WSE_S, P, 0};
        GPT2C_TRY(gpt2c_wse_coll_reduce(g->m, &col, 1, 2L * Tl, GPT2C_WSE_CHAIN, 1, K_AMX, K_AMX, K_AMX, K_AMX));
        for (int t = 0; t < Tl; t++) {
            int best = 0;
            if (VAL(g)) {
                float bv = -INFINITY;
                for (int r = 0; r < P; r++) {
                    const float *y = mem(g, R, r, P - 1, R->o_y);
                    for (int v = 0; v < Vb; v++) {
                        long id = (long)r * Vb + v;
                        if (id < g->V && y[t * Vb + v] > bv) { bv = y[t * Vb + v]; best = (int)id; }
                    }
                }
            } else {
                best = (int)(((long)(pos + t0 + t) * 7919 + 13) % g->V); /* none mode: a fixed pseudo token */
            }
            g->argmax[t0 + t] = best;
        }
    }
    return GPT2C_OK;
}

void gpt2c_wse_gpt2_free(wse_gpt2 *g) {
    if (!g) return;
    for (int i = 0; i < g->nreg && g->reg; i++) {
        free(g->reg[i].ow);
        free(g->reg[i].ob);
    }
    free(g->reg);
    free(g->reg_of_layer);
    free(g->logits);
    free(g->argmax);
    gpt2c_wse_mesh_free(g->m);
}
