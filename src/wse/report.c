/* report.json, report.html (SVG heatmaps: busy, SRAM, link load) and
 * trace.json (Perfetto / chrome://tracing) of a run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "profile/html_page.h"
#include "profile/sbuf.h"
#include "wse/wse_result.h"
#include "model/model_internal.h"

typedef struct {
    double busy_max, sram_max, sram_mean, colors_mean, link_max, link_mean;
    int colors_max;
    long used_pes, used_links;
    long hist[10];
    double flops;
} totals;

static double clock_hz(const gpt2c_wse_result *r, int alt) {
    return r->params.v[alt ? GPT2C_WSE_P_CLOCK_ALT : GPT2C_WSE_P_CLOCK] * 1e9;
}

static void compute_totals(const gpt2c_wse_result *r, totals *t) {
    const wse_mesh *m = r->g.m;
    memset(t, 0, sizeof *t);
    double cyc = r->cycles ? (double)r->cycles : 1;
    for (size_t i = 0; i < (size_t)m->W * m->H; i++) {
        const wse_pe *pe = &m->pe[i];
        if (pe->sram_used || pe->busy || pe->color_mask) {
            t->used_pes++;
            t->sram_mean += pe->sram_used;
            t->colors_mean += gpt2c_wse_colors_used(pe);
        }
        if (pe->sram_used > t->sram_max) t->sram_max = pe->sram_used;
        if (gpt2c_wse_colors_used(pe) > t->colors_max) t->colors_max = gpt2c_wse_colors_used(pe);
        if (pe->busy / cyc > t->busy_max) t->busy_max = pe->busy / cyc;
        for (int d = 0; d < 4; d++) {
            double u = m->link_load[i * 4 + d] / cyc;
            if (m->link_load[i * 4 + d]) {
                t->used_links++;
                t->link_mean += u;
                int b = (int)(u * 10);
                t->hist[b > 9 ? 9 : b]++;
            }
            if (u > t->link_max) t->link_max = u;
        }
    }
    if (t->used_pes) {
        t->sram_mean /= (double)t->used_pes;
        t->colors_mean /= (double)t->used_pes;
    }
    if (t->used_links) t->link_mean /= (double)t->used_links;
    for (int i = 0; i < m->nops; i++) t->flops += m->ops[i].flops;
}

static double peak_flops(const gpt2c_wse_result *r, double pes) {
    double per = r->cfg.values == GPT2C_WSE_VALUES_F16 ? r->params.v[GPT2C_WSE_P_SIMD16] : r->params.v[GPT2C_WSE_P_FMA32];
    return pes * per * 2 * clock_hz(r, 0);
}

const char *gpt2c_wse_result_summary(const gpt2c_wse_result *r) {
    gpt2c_wse_result *w = (gpt2c_wse_result *)r;
    totals t;
    compute_totals(r, &t);
    double s = r->cycles / clock_hz(r, 0);
    int n = snprintf(w->summary, sizeof w->summary,
                     "strategy %c, %d region(s) of %dx%d PEs on %dx%d: %llu cycles (prefill %llu) = %.3f ms at %.2f GHz, "
                     "%.3f ms at %.2f GHz; %.3g FLOP/s = %.2f%% of the mesh's peak; SRAM max %.0f B/PE, colors max %d; "
                     "simulated in %.2f s",
                     r->cfg.strategy, r->g.nreg, r->g.P, r->g.P, r->g.m->W, r->g.m->H, (unsigned long long)r->cycles,
                     (unsigned long long)r->prefill_cycles, s * 1e3, r->params.v[GPT2C_WSE_P_CLOCK],
                     r->cycles / clock_hz(r, 1) * 1e3, r->params.v[GPT2C_WSE_P_CLOCK_ALT], t.flops / s,
                     100 * t.flops / s / peak_flops(r, (double)r->g.m->W * r->g.m->H), t.sram_max, t.colors_max,
                     r->sim_seconds);
    if (r->cfg.decode > 1 && n > 0 && (size_t)n < sizeof w->summary)
        snprintf(w->summary + n, sizeof w->summary - (size_t)n, "; decode %.1f cycles/token = %.0f tokens/s",
                 (double)(r->cycles - r->prefill_cycles) / (r->cfg.decode - 1),
                 clock_hz(r, 0) * (r->cfg.decode - 1) / (double)(r->cycles - r->prefill_cycles));
    return w->summary;
}

static const char *values_name(gpt2c_wse_values v) {
    return v == GPT2C_WSE_VALUES_F32 ? "f32" : v == GPT2C_WSE_VALUES_F16 ? "f16" : "none";
}

static void json(const gpt2c_wse_result *r, sbuf *b) {
    const wse_gpt2 *g = &r->g;
    const wse_mesh *m = g->m;
    totals t;
    compute_totals(r, &t);
    double s0 = r->cycles / clock_hz(r, 0), s1 = r->cycles / clock_hz(r, 1);
    gpt2c_sb_printf(b, "{\n\"note\": \"simulated on a model of a Cerebras-like mesh built from public documents; not a measurement of a CS-2, and no graph-compiler baseline exists here\",\n");
    gpt2c_sb_printf(b, "\"mesh\": [%d, %d], \"strategy\": \"%c\", \"grid\": %d, \"regions\": [", m->W, m->H, r->cfg.strategy,
              g->P);
    for (int i = 0; i < g->nreg; i++)
        gpt2c_sb_printf(b, "%s{\"x\": %d, \"y\": %d, \"layers\": [%d, %d], \"embedding_or_head\": %d}", i ? ", " : "",
                  g->reg[i].x0, g->reg[i].y0, g->reg[i].l0, g->reg[i].l0 + g->reg[i].nl, g->reg[i].emb);
    gpt2c_sb_printf(b, "],\n\"model\": {\"layers\": %d, \"heads\": %d, \"channels\": %d, \"vocab\": %d},\n", g->L, g->NH, g->C,
              g->V);
    gpt2c_sb_printf(b, "\"seq\": %d, \"chunk\": %d, \"decode\": %d, \"values\": \"%s\", \"fidelity\": \"%s\", \"reduce\": \"%s\",\n",
              r->cfg.seq, g->Tq, r->cfg.decode, values_name(r->cfg.values),
              r->cfg.fidelity == GPT2C_WSE_WAVELET ? "wavelet" : "flow",
              r->cfg.reduce == GPT2C_WSE_TREE ? "tree" : r->cfg.reduce == GPT2C_WSE_GROUPS ? "groups" : "chain");
    gpt2c_sb_printf(b, "\"cycles\": %llu, \"prefill_cycles\": %llu, \"decode_cycles_per_token\": ",
              (unsigned long long)r->cycles, (unsigned long long)r->prefill_cycles);
    if (r->cfg.decode > 1) gpt2c_sb_json_num(b, (double)(r->cycles - r->prefill_cycles) / (r->cfg.decode - 1));
    else gpt2c_sb_puts(b, "null");
    gpt2c_sb_printf(b, ",\n\"seconds\": {\"%g GHz\": %.9g, \"%g GHz\": %.9g},\n", r->params.v[GPT2C_WSE_P_CLOCK], s0,
              r->params.v[GPT2C_WSE_P_CLOCK_ALT], s1);
    gpt2c_sb_puts(b, "\"max_rel_err_vs_ref\": ");
    if (r->max_rel_err >= 0) gpt2c_sb_json_num(b, r->max_rel_err);
    else gpt2c_sb_puts(b, "null");
    gpt2c_sb_puts(b, ", \"max_rel_err_definition\": \"max |wse - ref| / max |ref| over the prompt's logits\",\n\"tokens_match_ref\": ");
    gpt2c_sb_puts(b, r->tokens_match < 0 ? "null" : r->tokens_match ? "true" : "false");
    gpt2c_sb_puts(b, ", \"decode_tokens\": [");
    for (int i = 0; i < r->cfg.decode; i++) gpt2c_sb_printf(b, "%s%d", i ? ", " : "", r->tokens[i]);
    double used = (double)g->nreg * g->P * g->P;
    gpt2c_sb_printf(b, "],\n\"flops\": %.6g, \"flops_per_s\": %.6g, \"peak_flops_mesh\": %.6g, \"peak_flops_used_pes\": %.6g, "
                 "\"peak_assumption\": \"PEs x %s per cycle x 2 x %g GHz\",\n",
              t.flops, t.flops / s0, peak_flops(r, (double)m->W * m->H), peak_flops(r, used),
              r->cfg.values == GPT2C_WSE_VALUES_F16 ? "simd16 fp16 FMA" : "fma32_rate fp32 FMA",
              r->params.v[GPT2C_WSE_P_CLOCK]);
    gpt2c_sb_printf(b, "\"pes_used\": %ld, \"sram_bytes_per_pe\": {\"max\": %.0f, \"mean\": %.1f, \"budget\": %u},\n",
              t.used_pes, t.sram_max, t.sram_mean, m->sram_budget);
    gpt2c_sb_printf(b, "\"colors_per_pe\": {\"max\": %d, \"mean\": %.2f, \"user_colors\": %d},\n", t.colors_max,
              t.colors_mean, m->user_colors);
    gpt2c_sb_printf(b, "\"link_utilisation\": {\"max\": %.4f, \"mean_of_used\": %.4f, \"used_links\": %ld, \"histogram_tenths\": [",
              t.link_max, t.link_mean, t.used_links);
    for (int i = 0; i < 10; i++) gpt2c_sb_printf(b, "%s%ld", i ? ", " : "", t.hist[i]);
    gpt2c_sb_printf(b, "]},\n\"pe_busy_max\": %.4f, \"wavelet_events\": %llu, \"simulation_seconds\": %.3f,\n", t.busy_max,
              (unsigned long long)m->events, r->sim_seconds);
    /* host I/O outside the cycle count: prompt in, tokens out; and streaming the weights per token */
    double lat = r->params.v[GPT2C_WSE_P_IO_LAT_US] * 1e-6,
           bw = r->params.v[GPT2C_WSE_P_IO_CHANNELS] * r->params.v[GPT2C_WSE_P_IO_GBPS] * 1e9 / 8;
    double wbytes = 4.0 * (double)g->model->num_params;
    gpt2c_sb_printf(b, "\"host_io_seconds\": {\"prompt_in\": %.6g, \"tokens_out\": %.6g, \"stream_weights_per_token\": %.6g},\n",
              lat + 4.0 * r->cfg.seq / bw, lat + 4.0 * (r->cfg.decode + 1) / bw, lat + wbytes / bw);
    gpt2c_sb_puts(b, "\"ops\": [\n");
    for (int i = 0; i < m->nops; i++) {
        const wse_opstat *o = &m->ops[i];
        uint64_t comm = o->span_sum > o->busymax_sum ? o->span_sum - o->busymax_sum : 0;
        double idle = o->pe_span_sum ? 1.0 - (double)o->busy_sum / (double)o->pe_span_sum : 0;
        gpt2c_sb_printf(b, "%s{\"op\": \"%s\", \"layer\": %d, \"phase\": \"%s\", \"calls\": %ld, \"cycles\": %llu, "
                     "\"critical_path_cycles\": %llu, \"compute_cycles\": %llu, \"comm_cycles\": %llu, "
                     "\"idle_fraction\": %.4f, \"flops\": %.6g}",
                  i ? ",\n" : "", o->name, o->layer, o->phase ? "decode" : "prefill", o->calls,
                  (unsigned long long)o->span_sum, (unsigned long long)o->crit_sum, (unsigned long long)o->busymax_sum,
                  (unsigned long long)comm, idle < 0 ? 0 : idle, o->flops);
    }
    gpt2c_sb_puts(b, "\n],\n\"layers\": [\n");
    for (int l = -1, first = 1; l < g->L; l++) {
        uint64_t span = 0, busy = 0, bs = 0, ps = 0, crit = 0;
        for (int i = 0; i < m->nops; i++)
            if (m->ops[i].layer == l) {
                span += m->ops[i].span_sum;
                crit += m->ops[i].crit_sum;
                busy += m->ops[i].busymax_sum;
                bs += m->ops[i].busy_sum;
                ps += m->ops[i].pe_span_sum;
            }
        gpt2c_sb_printf(b, "%s{\"layer\": %d, \"cycles\": %llu, \"critical_path_cycles\": %llu, \"compute_cycles\": %llu, "
                     "\"comm_cycles\": %llu, \"idle_fraction\": %.4f}",
                  first ? "" : ",\n", l, (unsigned long long)span, (unsigned long long)crit, (unsigned long long)busy,
                  (unsigned long long)(span > busy ? span - busy : 0), ps ? 1.0 - (double)bs / (double)ps : 0.0);
        first = 0;
    }
    gpt2c_sb_puts(b, "\n],\n\"op_accounting\": \"per op: cycles = summed spans of its calls (first start to last end over its PEs; consecutive ops overlap, so spans do not add up to the total); critical_path_cycles = how far its calls pushed the latest end time (these add up to the total cycles); compute_cycles = summed busiest-PE DSD cycles; comm_cycles = cycles - compute_cycles (waiting on the fabric and on other PEs); idle_fraction = 1 - busy PE-cycles / (PEs x span). layer -1: embedding, head, moves.\",\n");
    gpt2c_sb_puts(b, "\"parameters\": {\n");
    for (int i = 0; i < GPT2C_WSE_NPARAMS; i++) {
        gpt2c_sb_printf(b, "%s\"%s\": {\"value\": %g, \"source\": \"", i ? ",\n" : "", gpt2c_wse_param_name(i), r->params.v[i]);
        gpt2c_sb_json_str(b, gpt2c_wse_param_source(i));
        gpt2c_sb_puts(b, "\"}");
    }
    gpt2c_sb_printf(b, "\n}, \"simd_table\": \"%s\"\n}\n", r->params.wse3 ? "wse3" : "wse2");
}

/* one heatmap of per-PE values in [0, max], block-maxed to at most 150 x 150 cells */
static void heatmap(sbuf *b, const wse_mesh *m, const char *title, const double *v, double vmax, const char *unit) {
    int cw = m->W > 150 ? (m->W + 149) / 150 : 1, ch = m->H > 150 ? (m->H + 149) / 150 : 1;
    int nx = (m->W + cw - 1) / cw, ny = (m->H + ch - 1) / ch, px = nx > 75 ? 4 : 600 / (nx > 0 ? nx : 1);
    if (px < 2) px = 2;
    if (px > 24) px = 24;
    gpt2c_sb_printf(b, "<h2>");
    gpt2c_sb_html(b, title);
    gpt2c_sb_printf(b, "</h2><p>max %.4g %s; each cell is the max over %dx%d PEs</p>\n", vmax, unit, cw, ch);
    gpt2c_sb_printf(b, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d'>", nx * px, ny * px);
    for (int cy = 0; cy < ny; cy++)
        for (int cx = 0; cx < nx; cx++) {
            double mx = 0;
            for (int y = cy * ch; y < (cy + 1) * ch && y < m->H; y++)
                for (int x = cx * cw; x < (cx + 1) * cw && x < m->W; x++)
                    if (v[(size_t)y * m->W + x] > mx) mx = v[(size_t)y * m->W + x];
            if (mx <= 0) continue;
            double f = vmax > 0 ? mx / vmax : 0;
            int c = 255 - (int)(f * 215);
            gpt2c_sb_printf(b, "<rect x='%d' y='%d' width='%d' height='%d' fill='rgb(%d,%d,255)'/>", cx * px, cy * px, px, px,
                      c, c);
        }
    gpt2c_sb_puts(b, "</svg>\n");
}

static void html(const gpt2c_wse_result *r, sbuf *b) {
    const wse_mesh *m = r->g.m;
    size_t n = (size_t)m->W * m->H;
    double *v = calloc(n ? n : 1, sizeof *v);
    gpt2c_html_page_begin(b, "gpt2c wse report", "gpt2c wse");
    gpt2c_sb_puts(b, "<p>");
    gpt2c_sb_html(b, gpt2c_wse_result_summary(r));
    gpt2c_sb_puts(b, "</p><p>Simulated on a model of a Cerebras-like mesh built from public documents: not a measurement of "
               "a CS-2; no graph-compiler baseline exists here.</p>\n");
    if (v) {
        double cyc = r->cycles ? (double)r->cycles : 1, mx = 0;
        for (size_t i = 0; i < n; i++) { v[i] = m->pe[i].busy / cyc; if (v[i] > mx) mx = v[i]; }
        heatmap(b, m, "Busy (fraction of the run each PE spends in DSD ops)", v, mx, "");
        mx = 0;
        for (size_t i = 0; i < n; i++) { v[i] = m->pe[i].sram_used; if (v[i] > mx) mx = v[i]; }
        heatmap(b, m, "SRAM used per PE", v, mx, "bytes");
        mx = 0;
        for (size_t i = 0; i < n; i++) {
            v[i] = 0;
            for (int d = 0; d < 4; d++) if (m->link_load[i * 4 + d] / cyc > v[i]) v[i] = m->link_load[i * 4 + d] / cyc;
            if (v[i] > mx) mx = v[i];
        }
        heatmap(b, m, "Link load (busiest out-link of each PE, wavelets per cycle)", v, mx, "wavelets/cycle");
        free(v);
    }
    gpt2c_sb_puts(b, "<h2>Parameters</h2><table><tr><th>name</th><th>value</th><th>source</th></tr>\n");
    for (int i = 0; i < GPT2C_WSE_NPARAMS; i++) {
        gpt2c_sb_printf(b, "<tr><td>%s</td><td>%g</td><td>", gpt2c_wse_param_name(i), r->params.v[i]);
        gpt2c_sb_html(b, gpt2c_wse_param_source(i));
        gpt2c_sb_puts(b, "</td></tr>\n");
    }
    gpt2c_sb_puts(b, "</table>\n");
    gpt2c_html_page_end(b);
}

static void trace(const gpt2c_wse_result *r, sbuf *b) {
    const wse_mesh *m = r->g.m;
    double us = 1e6 / clock_hz(r, 0);
    gpt2c_sb_puts(b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"gpt2c wse (simulated PEs)\"}}");
    if (m->traced)
        for (size_t i = 0; i < (size_t)m->W * m->H; i++)
            if (m->traced[i])
                gpt2c_sb_printf(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%zu,\"args\":{\"name\":\"PE (%zu,%zu)\"}}",
                          i, i % (size_t)m->W, i / (size_t)m->W);
    for (size_t i = 0; i < m->ntev; i++) {
        const wse_trace_ev *e = &m->tev[i];
        const wse_opstat *o = &m->ops[e->op];
        gpt2c_sb_printf(b, ",\n{\"name\":\"%s%s%d\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%llu,\"ts\":%.4f,\"dur\":%.4f}",
                  o->name, o->layer >= 0 ? " L" : "", o->layer >= 0 ? o->layer : 0, o->phase ? "decode" : "prefill",
                  (unsigned long long)e->pe, e->t0 * us, (e->t1 - e->t0) * us);
    }
    gpt2c_sb_puts(b, "\n]}\n");
}

gpt2c_status gpt2c_wse_write_report(const gpt2c_wse_result *r, const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0)
        return gpt2c_fail(GPT2C_ERR_IO, "wse: %s: cannot create the report directory", dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return gpt2c_fail(GPT2C_ERR_IO, "wse: %s: not a directory", dir);
    sbuf b = {0};
    json(r, &b);
    gpt2c_status s = gpt2c_sb_write_file(&b, dir, "report.json");
    gpt2c_sb_free(&b);
    if (s) return s;
    memset(&b, 0, sizeof b);
    html(r, &b);
    s = gpt2c_sb_write_file(&b, dir, "report.html");
    gpt2c_sb_free(&b);
    if (s) return s;
    memset(&b, 0, sizeof b);
    trace(r, &b);
    s = gpt2c_sb_write_file(&b, dir, "trace.json");
    gpt2c_sb_free(&b);
    return s;
}
