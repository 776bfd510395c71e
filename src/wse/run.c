/* gpt2c_wse_run: picks the region size, places the regions, lays GPT-2 out
 * and runs the prompt (in pipeline chunks) and the greedy decode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wse/gpt2_map.h"
#include "wse/wse_result.h"
#include "model/model_internal.h"

static int grid_ok(int C, int hs, int P) {
    if (P < 1 || C % P) return 0;
    int Cb = C / P;
    return Cb % hs == 0 || hs % Cb == 0;
}

static int nregions(const gpt2c_wse_run_cfg *cfg, int L) {
    if (cfg->strategy == 'a') return 1;
    int k = cfg->strategy == 'b' ? 1 : cfg->layers_per_region;
    return 2 + (L + k - 1) / k; /* embedding, layer regions, head */
}

static int fits(int W, int H, int P, int n) { return P <= W && P <= H && (long)(W / P) * (H / P) >= n; }

static void place(wse_gpt2 *g, int W, int H, char order) {
    int P = g->P, nx = W / P, ny = H / P;
    for (int i = 0; i < g->nreg; i++) {
        int sx, sy;
        if (order == 'c') { sx = i / ny; sy = i % ny; }
        else {
            sy = i / nx;
            sx = i % nx;
            if (order == 's' && (sy & 1)) sx = nx - 1 - sx;
        }
        g->reg[i].x0 = sx * P;
        g->reg[i].y0 = sy * P;
    }
}

gpt2c_status gpt2c_wse_run(const gpt2c_model *model, const gpt2c_wse_params *p, const gpt2c_wse_run_cfg *cfg,
                           gpt2c_wse_result **out) {
    *out = NULL;
    const gpt2c_config *mc = &model->cfg;
    int W = (int)p->v[GPT2C_WSE_P_WIDTH], H = (int)p->v[GPT2C_WSE_P_HEIGHT];
    int C = mc->channels, NH = mc->num_heads, L = mc->num_layers, hs = C / NH;
    if (cfg->strategy != 'a' && cfg->strategy != 'b' && cfg->strategy != 'c')
        return gpt2c_fail(GPT2C_ERR_ARG, "strategy '%c': expected a, b or c", cfg->strategy);
    if (cfg->strategy == 'c' && (cfg->layers_per_region < 1 || cfg->layers_per_region > L))
        return gpt2c_fail(GPT2C_ERR_ARG, "layers per region %d: expected 1..%d", cfg->layers_per_region, L);
    if (cfg->seq < 1 || cfg->decode < 0 || cfg->seq + cfg->decode > mc->max_seq_len)
        return gpt2c_fail(GPT2C_ERR_RANGE, "prompt tokens %d + decode tokens %d must be within the model's context %d",
                          cfg->seq, cfg->decode, mc->max_seq_len);
    if (cfg->chunk < 0 || cfg->chunk > cfg->seq)
        return gpt2c_fail(GPT2C_ERR_RANGE, "chunk %d: expected 0..%d", cfg->chunk, cfg->seq);
    if (cfg->tokens)
        for (int t = 0; t < cfg->seq; t++)
            if (cfg->tokens[t] < 0 || cfg->tokens[t] >= mc->vocab_size)
                return gpt2c_fail(GPT2C_ERR_RANGE, "wse: prompt token %d at position %d is outside the vocabulary (%d)",
                                  cfg->tokens[t], t, mc->vocab_size);
    int nreg = nregions(cfg, L), P = cfg->grid;
    if (P) {
        if (!grid_ok(C, hs, P))
            return gpt2c_fail(GPT2C_ERR_ARG,
                              "grid %d: channels %d must split into %d equal blocks that hold whole heads or "
                              "whole fractions of a head (head size %d)", P, C, P, hs);
        if (!fits(W, H, P, nreg))
            return gpt2c_fail(GPT2C_ERR_RANGE, "wse: %d regions of %dx%d PEs do not fit the %dx%d mesh", nreg, P, P,
                              W, H);
    } else {
        for (int q = C; q >= 1; q--)
            if (grid_ok(C, hs, q) && fits(W, H, q, nreg)) { P = q; break; }
        if (!P)
            return gpt2c_fail(GPT2C_ERR_RANGE, "wse: no region size fits %d regions on the %dx%d mesh", nreg, W, H);
    }
    gpt2c_wse_result *r = calloc(1, sizeof *r);
    if (!r) return gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
    r->cfg = *cfg;
    r->cfg.tokens = NULL;
    r->max_rel_err = -1;
    r->tokens_match = -1;
    r->params = *p;
    wse_gpt2 *g = &r->g;
    g->model = model;
    g->cfg = &r->cfg;
    g->P = P;
    g->C = C;
    g->Cb = C / P;
    g->NH = NH;
    g->hs = hs;
    g->L = L;
    g->V = mc->vocab_size;
    g->Vp = mc->padded_vocab_size;
    g->Vb = (g->Vp + P - 1) / P;
    g->ctx = cfg->seq + cfg->decode;
    g->Tq = cfg->chunk ? cfg->chunk : cfg->seq;
    g->Tl = g->Tq < 8 ? g->Tq : 8;
    g->nhl = g->Cb >= hs ? g->Cb / hs : 1;
    g->nreg = nreg;
    gpt2c_status st = gpt2c_wse_mesh_create(p, cfg->values, cfg->fidelity, &g->m);
    if (!st) {
        g->reg = calloc((size_t)nreg, sizeof *g->reg);
        g->reg_of_layer = calloc((size_t)L, sizeof *g->reg_of_layer);
        g->argmax = calloc((size_t)g->Tq + 1, sizeof *g->argmax);
        r->tokens = calloc((size_t)cfg->decode + 1, sizeof *r->tokens);
        r->prompt = calloc((size_t)cfg->seq + (size_t)cfg->decode + 1, sizeof *r->prompt);
        if (cfg->values != GPT2C_WSE_VALUES_NONE) g->logits = calloc((size_t)cfg->seq * (size_t)g->Vp, sizeof(float));
        if (!g->reg || !g->reg_of_layer || !g->argmax || !r->tokens || !r->prompt ||
            (cfg->values != GPT2C_WSE_VALUES_NONE && !g->logits))
            st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
    }
    if (st) {
        gpt2c_wse_result_free(r);
        return st;
    }
    /* regions: 0 = embedding (in strategy a also every layer and the head), last = head */
    int k = cfg->strategy == 'a' ? L : cfg->strategy == 'b' ? 1 : cfg->layers_per_region;
    g->emb_reg = 0;
    g->head_reg = nreg - 1;
    g->reg[0].emb = 1;
    g->reg[nreg - 1].emb = 1;
    if (cfg->strategy == 'a') {
        g->reg[0].l0 = 0;
        g->reg[0].nl = L;
    } else
        for (int i = 1; i < nreg - 1; i++) {
            g->reg[i].l0 = (i - 1) * k;
            g->reg[i].nl = (i * k <= L ? i * k : L) - (i - 1) * k;
        }
    for (int l = 0; l < L; l++) g->reg_of_layer[l] = cfg->strategy == 'a' ? 0 : 1 + l / k;
    place(g, W, H, cfg->place ? cfg->place : 's');
    if (cfg->trace_pes > 0) { /* the first region's diagonal (and its east column's top) */
        g->m->traced = calloc((size_t)W * H, 1);
        if (g->m->traced) {
            int n = cfg->trace_pes < P ? cfg->trace_pes : P;
            for (int i = 0; i < nreg && i < 2; i++)
                for (int c = 0; c < n; c++) g->m->traced[wse_idx(g->m, g->reg[i].x0 + c * (P / n), g->reg[i].y0 + c * (P / n))] = 1;
        }
    }
    for (int t = 0; t < cfg->seq; t++)
        r->prompt[t] = cfg->tokens ? cfg->tokens[t] : (int32_t)(((long)t * 2654435761u + 7) % (unsigned)g->V);
    clock_t c0 = clock();
    st = gpt2c_wse_gpt2_layout(g);
    /* prefill: chunks of Tq tokens; with separate regions (b, c) chunk c+1
     * enters the embedding region while chunk c is in the layers: a pipeline */
    for (int pos = 0; !st && pos < cfg->seq; pos += g->Tq) {
        int Tq = cfg->seq - pos < g->Tq ? cfg->seq - pos : g->Tq;
        g->phase = 0;
        st = gpt2c_wse_gpt2_embed(g, r->prompt + pos, pos, Tq);
        for (int l = 0; !st && l < L; l++) st = gpt2c_wse_gpt2_layer(g, l, pos, Tq);
        if (!st) st = gpt2c_wse_gpt2_head(g, pos, Tq, 1);
    }
    for (size_t i = 0; !st && i < (size_t)W * H; i++)
        if (g->m->pe[i].t_ce > r->prefill_cycles) r->prefill_cycles = g->m->pe[i].t_ce;
    int32_t next = g->argmax[(cfg->seq - 1) % g->Tq];
    for (int d = 0; !st && d < cfg->decode; d++) {
        g->phase = 1;
        int pos = cfg->seq + d;
        r->tokens[d] = next;
        r->prompt[pos] = next;
        if (d == cfg->decode - 1) break; /* the last token needs no forward */
        st = gpt2c_wse_gpt2_embed(g, &next, pos, 1);
        for (int l = 0; !st && l < L; l++) st = gpt2c_wse_gpt2_layer(g, l, pos, 1);
        if (!st) st = gpt2c_wse_gpt2_head(g, pos, 1, 0);
        next = g->argmax[0];
    }
    gpt2c_wse_op_flush(g->m);
    r->sim_seconds = (double)(clock() - c0) / CLOCKS_PER_SEC;
    if (st) {
        gpt2c_wse_result_free(r);
        return st;
    }
    for (size_t i = 0; i < (size_t)W * H; i++)
        if (g->m->pe[i].t_ce > r->cycles) r->cycles = g->m->pe[i].t_ce;
    *out = r;
    return GPT2C_OK;
}

void gpt2c_wse_result_free(gpt2c_wse_result *r) {
    if (!r) return;
    gpt2c_wse_gpt2_free(&r->g);
    free(r->tokens);
    free(r->prompt);
    free(r);
}

uint64_t gpt2c_wse_result_cycles(const gpt2c_wse_result *r) { return r->cycles; }
uint64_t gpt2c_wse_result_prefill_cycles(const gpt2c_wse_result *r) { return r->prefill_cycles; }
const float *gpt2c_wse_result_logits(const gpt2c_wse_result *r) { return r->g.logits; }
const int32_t *gpt2c_wse_result_tokens(const gpt2c_wse_result *r) { return r->tokens; }
