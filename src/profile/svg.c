/* Inline SVG charts for the report: plain shapes and text, no scripts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/session.h"
#include "profile/svg.h"

static const char *const COLORS[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                     "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define W 760

static void head(sbuf *b, const char *id, int h, const char *title) {
    gpt2c_sb_printf(b, "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
                 "<text x=\"10\" y=\"18\" font-size=\"14\" font-weight=\"bold\">",
              id, W, h, W, h);
    gpt2c_sb_html(b, title);
    gpt2c_sb_puts(b, "</text>\n");
}

static void hbar(sbuf *b, const char *id, const char *title, const char *const *labels, const double *v, int n,
                 const char *unit) {
    int h = 40 + 22 * (n ? n : 1);
    head(b, id, h, title);
    double mx = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > mx) mx = v[i];
    for (int i = 0; i < n; i++) {
        double w = mx > 0 ? 420 * v[i] / mx : 0;
        int y = 30 + 22 * i;
        gpt2c_sb_printf(b, "<text x=\"180\" y=\"%d\" text-anchor=\"end\">", y + 13);
        gpt2c_sb_html(b, labels[i]);
        gpt2c_sb_printf(b, "</text><rect x=\"186\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>"
                     "<text x=\"%.1f\" y=\"%d\">%.3g %s</text>\n",
                  y, w, COLORS[i % 10], 190 + w, y + 13, v[i], unit);
    }
    if (!n) gpt2c_sb_puts(b, "<text x=\"20\" y=\"50\">no data</text>\n");
    gpt2c_sb_puts(b, "</svg>\n");
}

typedef struct {
    int g;
    double v;
} gv;
static int cmp_gv(const void *a, const void *b) {
    double x = ((const gv *)a)->v, y = ((const gv *)b)->v;
    return x > y ? -1 : x < y;
}

/* Label boxes for placement (SVG units; text width estimated from its length). */
typedef struct {
    double x, y, w, h;
} box;
static int overlap(const box *a, const box *b) {
    return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

/* Box c lies inside the plot (x0..x1, y_top..y_bottom) and clear of every placed box. */
static int label_fits(const box *c, const box *placed, int nplaced, double x0, double x1, double y_top, double y_bottom) {
    if (c->x < x0 + 1 || c->x + c->w > x1 - 1 || c->y < y_top + 1 || c->y + c->h > y_bottom - 1) return 0;
    for (int j = 0; j < nplaced; j++)
        if (overlap(c, &placed[j])) return 0;
    return 1;
}

void gpt2c_prof_svg_top_ops(gpt2c_profile_session *s, sbuf *b) {
    gv r[GPT2C_OP_COUNT];
    int n = 0;
    for (int o = 0; o < GPT2C_OP_COUNT; o++)
        if (S_have(s, G_OP0 + o, F_MS)) r[n++] = (gv){o, S_mean(s, G_OP0 + o, F_MS)};
    qsort(r, (size_t)n, sizeof *r, cmp_gv);
    const char *lab[GPT2C_OP_COUNT];
    double v[GPT2C_OP_COUNT];
    for (int i = 0; i < n; i++) {
        lab[i] = gpt2c_op_name((gpt2c_op)r[i].g);
        v[i] = r[i].v;
    }
    hbar(b, "svg-top-ops", "Top ops: self time per step (forward + backward + optimizer)", lab, v, n, "ms");
}

void gpt2c_prof_svg_layer_types(gpt2c_profile_session *s, sbuf *b) {
    const char *lab[GPT2C_LT_COUNT];
    double v[GPT2C_LT_COUNT];
    int n = 0;
    for (int l = 0; l < GPT2C_LT_COUNT; l++)
        if (S_have(s, G_LT0 + l, F_MS)) {
            lab[n] = gpt2c_layer_type_name((gpt2c_layer_type)l);
            v[n++] = S_mean(s, G_LT0 + l, F_MS);
        }
    hbar(b, "svg-layer-types", "Time per step by layer type", lab, v, n, "ms");
}

/* The legend goes under the bar in two columns of 370 px, one entry per row
 * and column: the longest entry ("optimizer 99999.9 ms (100.0%)", ~30
 * characters of 12 px sans-serif, ~200 px) fits its column, so entries never
 * overlap whatever the numbers. */
void gpt2c_prof_svg_phases(gpt2c_profile_session *s, sbuf *b) {
    int np = 0;
    for (int p = 0; p < GPT2C_PHASE_COUNT; p++) np += S_have(s, G_PHASE0 + p, F_MS);
    head(b, "svg-phases", 80 + 20 * ((np + 1) / 2), "Phase split of a step");
    double tot = 0;
    for (int p = 0; p < GPT2C_PHASE_COUNT; p++)
        if (S_have(s, G_PHASE0 + p, F_MS)) tot += S_mean(s, G_PHASE0 + p, F_MS);
    double x = 10;
    int k = 0;
    for (int p = 0; p < GPT2C_PHASE_COUNT; p++) {
        if (!S_have(s, G_PHASE0 + p, F_MS) || tot <= 0) continue;
        double ms = S_mean(s, G_PHASE0 + p, F_MS), w = 740 * ms / tot;
        int lx = 10 + 370 * (k % 2), ly = 72 + 20 * (k / 2);
        gpt2c_sb_printf(b, "<rect x=\"%.1f\" y=\"30\" width=\"%.1f\" height=\"30\" fill=\"%s\"/>\n", x, w, COLORS[p]);
        gpt2c_sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s %.1f ms (%.1f%%)</text>\n",
                  lx, ly, COLORS[p], lx + 16, ly + 11, gpt2c_phase_name((gpt2c_phase)p), ms, 100 * ms / tot);
        x += w;
        k++;
    }
    gpt2c_sb_puts(b, "</svg>\n");
}

/* Attention vs FFN, one pair of bars per metric, each pair scaled to its larger value. */
void gpt2c_prof_svg_attn_ffn(gpt2c_profile_session *s, sbuf *b) {
    static const int F[] = {F_MS, F_GFLOPS, F_GBS, F_AI, F_CPU_UTIL, F_CPI, F_L1D_MPKI, F_LLC_MPKI, F_BR_MPKI,
                            F_TD_FE, F_TD_BS, F_TD_BE, F_TD_RET, F_TD_MEM, F_TD_CORE};
    int A = G_LT0 + GPT2C_LT_ATTENTION, Fg = G_LT0 + GPT2C_LT_FFN, n = 0, idx[16];
    for (size_t i = 0; i < sizeof F / sizeof F[0]; i++)
        if (S_have(s, A, F[i]) && S_have(s, Fg, F[i])) idx[n++] = F[i];
    int h = 60 + 40 * (n ? n : 1);
    head(b, "svg-attn-ffn", h, "Attention vs FFN per metric (per step, forward + backward; bars scaled per metric)");
    gpt2c_sb_printf(b, "<rect x=\"200\" y=\"26\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"216\" y=\"37\">attention</text>"
                 "<rect x=\"300\" y=\"26\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"316\" y=\"37\">ffn</text>\n",
              COLORS[0], COLORS[1]);
    for (int i = 0; i < n; i++) {
        double a = S_mean(s, A, idx[i]), f = S_mean(s, Fg, idx[i]), mx = fmax(fabs(a), fabs(f));
        int y = 48 + 40 * i;
        gpt2c_sb_printf(b, "<text x=\"190\" y=\"%d\" text-anchor=\"end\">%s</text>\n", y + 22, gpt2c_field_name(idx[i]));
        double wa = mx > 0 ? 400 * fabs(a) / mx : 0, wf = mx > 0 ? 400 * fabs(f) / mx : 0;
        gpt2c_sb_printf(b, "<rect x=\"200\" y=\"%d\" width=\"%.1f\" height=\"15\" fill=\"%s\"/><text x=\"%.1f\" y=\"%d\">%.4g</text>\n",
                  y + 2, wa, COLORS[0], 204 + wa, y + 14, a);
        gpt2c_sb_printf(b, "<rect x=\"200\" y=\"%d\" width=\"%.1f\" height=\"15\" fill=\"%s\"/><text x=\"%.1f\" y=\"%d\">%.4g</text>\n",
                  y + 19, wf, COLORS[1], 204 + wf, y + 31, f);
    }
    gpt2c_sb_puts(b, "</svg>\n");
}

void gpt2c_prof_svg_roofline(gpt2c_profile_session *s, sbuf *b) {
    const int X0 = 70, X1 = 740, Y0 = 440, Y1 = 40;
    const double ai_lo = 0.01, ai_hi = 1000;
    const double pbf = s->bf16_matmuls && s->bf16_roof > s->peak.gflops ? s->bf16_roof : 0;
    double g_hi = s->have_peak ? (pbf > 0 ? pbf : s->peak.gflops) * 2 : 1000, g_lo = g_hi / 1e5;
    head(b, "svg-roofline", 480, "Roofline: achieved GFLOP/s vs arithmetic intensity (per op kind)");
#define XP(ai) (X0 + (X1 - X0) * (log10(ai) - log10(ai_lo)) / (log10(ai_hi) - log10(ai_lo)))
#define YP(g) (Y0 - (Y0 - Y1) * (log10(g) - log10(g_lo)) / (log10(g_hi) - log10(g_lo)))
    gpt2c_sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", X0, Y1, X1 - X0, Y0 - Y1);
    for (double a = ai_lo; a <= ai_hi * 1.01; a *= 10)
        gpt2c_sb_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", XP(a), Y0 + 16, a);
    for (double g = pow(10, ceil(log10(g_lo))); g <= g_hi; g *= 10)
        gpt2c_sb_printf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", X0 - 4, YP(g) + 4, g);
    gpt2c_sb_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n", (X0 + X1) / 2, Y0 + 34);
    gpt2c_sb_printf(b, "<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">GFLOP/s</text>\n", (Y0 + Y1) / 2, (Y0 + Y1) / 2);
    if (s->have_peak) {
        double ridge = s->peak.gflops / s->peak.mem_gbs;
        gpt2c_sb_printf(b, "<polyline fill=\"none\" stroke=\"#c00\" stroke-width=\"2\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
                  XP(ai_lo), YP(ai_lo * s->peak.mem_gbs), XP(ridge), YP(s->peak.gflops), XP(ai_hi), YP(s->peak.gflops));
        gpt2c_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\">peak %.0f GFLOP/s (%s), %.1f GB/s, ridge %.2f</text>\n",
                  XP(ridge) - 150, YP(s->peak.gflops) - 6, s->peak.gflops, s->peak.best_isa, s->peak.mem_gbs, ridge);
        if (pbf > 0) { /* bf16 matmuls: their own, higher roof */
            const double rb = pbf / s->peak.mem_gbs;
            gpt2c_sb_printf(b, "<polyline fill=\"none\" stroke=\"#c00\" stroke-dasharray=\"6,4\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
                            XP(ridge), YP(s->peak.gflops), XP(rb), YP(pbf), XP(ai_hi), YP(pbf));
            gpt2c_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\">bf16 matmuls: %.0f GFLOP/s (vdpbf16ps)</text>\n",
                            XP(rb) + 6, YP(pbf) - 6, pbf);
        }
    } else {
        gpt2c_sb_printf(b, "<text x=\"%d\" y=\"%d\" fill=\"#c00\">machine peaks unavailable: ", X0 + 10, Y1 + 20);
        gpt2c_sb_html(b, s->peak_reason);
        gpt2c_sb_puts(b, "</text>\n");
    }
    /* labels placed greedily, largest GFLOP/s first: beside the point if the
     * box is free, else moved up or down (then to the left) with a leader line,
     * never over another label, point or the plot's notes */
    box placed[GPT2C_OP_COUNT * 2 + 3];
    int nplaced = 0;
    placed[nplaced++] = s->have_peak ? (box){XP(s->peak.gflops / s->peak.mem_gbs) - 150, YP(s->peak.gflops) - 18, 330, 14}
                                     : (box){X0 + 8, Y1 + 8, 660, 16};
    if (s->have_peak && pbf > 0) placed[nplaced++] = (box){XP(pbf / s->peak.mem_gbs) + 6, YP(pbf) - 18, 260, 14};
    gv pts[GPT2C_OP_COUNT];
    int np = 0;
    for (int o = 0; o < GPT2C_OP_COUNT; o++) {
        int g = G_OP0 + o;
        if (!S_have(s, g, F_AI) || !S_have(s, g, F_GFLOPS)) continue;
        double ai = S_mean(s, g, F_AI), gf = S_mean(s, g, F_GFLOPS);
        if (ai < ai_lo || ai > ai_hi || gf < g_lo || gf > g_hi) continue;
        pts[np++] = (gv){o, gf};
        placed[nplaced++] = (box){XP(ai) - 5, YP(gf) - 5, 10, 10}; /* the points themselves */
    }
    qsort(pts, (size_t)np, sizeof *pts, cmp_gv);
    for (int i = 0; i < np; i++) {
        int o = pts[i].g, g = G_OP0 + o, lt = gpt2c_op_layer_type((gpt2c_op)o);
        double px = XP(S_mean(s, g, F_AI)), py = YP(S_mean(s, g, F_GFLOPS));
        const char *name = gpt2c_op_name((gpt2c_op)o);
        double w = 6.0 * (double)strlen(name) + 2, h = 12; /* 10 px sans-serif: under 6 px a character */
        box lb = {px + 8, py - 6, w, h};
        int found = 0;
        for (int tries = 0; tries < 64 && !found; tries++) {
            int side = tries / 32, k = tries % 32; /* right, then left; offsets 0, -13, +13, -26, ... */
            double dy = (k % 2 ? -1 : 1) * 13.0 * ((k + 1) / 2);
            box c = {side ? px - 8 - w : px + 8, py - 6 + dy, w, h};
            if (label_fits(&c, placed, nplaced, X0, X1, Y1, Y0)) lb = c, found = 1;
        }
        /* a crowded neighbourhood: the free box on a grid over the whole plot
         * nearest to the point (a crowd of points can fill both sides) */
        double best_d = 1e30;
        for (double gy = Y1 + 2; !found && gy + h < Y0 - 1; gy += 13)
            for (double gx = X0 + 2; gx + w < X1 - 1; gx += 10) {
                box c = {gx, gy, w, h};
                double d = (gx - px) * (gx - px) + (gy - py) * (gy - py);
                if (d < best_d && label_fits(&c, placed, nplaced, X0, X1, Y1, Y0)) lb = c, best_d = d;
            }
        placed[nplaced++] = lb;
        gpt2c_sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>", px, py, COLORS[lt]);
        double ty = lb.y + 9.5, tx = lb.x + 1;
        if (fabs(lb.y - (py - 6)) > 0.5 || fabs(lb.x - (px + 8)) > 0.5) /* moved: a leader line to its point */
            gpt2c_sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-width=\"0.7\"/>", px,
                      py, lb.x < px ? lb.x + lb.w : lb.x, lb.y + h / 2);
        gpt2c_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">%s</text>\n", tx, ty, name);
    }
#undef XP
#undef YP
    gpt2c_sb_puts(b, "</svg>\n");
}

void gpt2c_prof_svg_scaling(gpt2c_profile_session *s, sbuf *b) {
    int n = s->nscaling;
    head(b, "svg-scaling", 60 + 22 * (n ? n : 1), "Scaling: step time per backend and thread count (efficiency in brackets)");
    double mx = 0;
    for (int i = 0; i < n; i++)
        if (s->scaling[i].step_ms.n && s->scaling[i].step_ms.mean > mx) mx = s->scaling[i].step_ms.mean;
    for (int i = 0; i < n; i++) {
        const scaling_row *r = &s->scaling[i];
        int y = 30 + 22 * i;
        gpt2c_sb_printf(b, "<text x=\"180\" y=\"%d\" text-anchor=\"end\">%s, %d thread%s</text>", y + 13, r->backend, r->threads,
                  r->threads == 1 ? "" : "s");
        if (!r->step_ms.n) {
            gpt2c_sb_printf(b, "<text x=\"190\" y=\"%d\" fill=\"#c00\">unavailable: ", y + 13);
            gpt2c_sb_html(b, r->reason);
            gpt2c_sb_puts(b, "</text>\n");
            continue;
        }
        /* efficiency against the same backend's fewest-thread row */
        double base = 0;
        int bt = 0;
        for (int j = 0; j < n; j++)
            if (s->scaling[j].step_ms.n && !strcmp(s->scaling[j].backend, r->backend) && (!bt || s->scaling[j].threads < bt)) {
                bt = s->scaling[j].threads;
                base = s->scaling[j].step_ms.mean;
            }
        double sp = base / r->step_ms.mean, eff = sp / ((double)r->threads / bt);
        double w = mx > 0 ? 400 * r->step_ms.mean / mx : 0;
        gpt2c_sb_printf(b, "<rect x=\"186\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"%s\"/><text x=\"%.1f\" y=\"%d\">%.1f ms, x%.2f (%.0f%%)</text>\n",
                  y, w, COLORS[i % 10], 190 + w, y + 13, r->step_ms.mean, sp, 100 * eff);
    }
    if (!n) gpt2c_sb_puts(b, "<text x=\"20\" y=\"50\">no sweep in this run (use --threads 1,2,... or --backend cpu,blas)</text>\n");
    gpt2c_sb_puts(b, "</svg>\n");
}

void gpt2c_svg_hbar(sbuf *b, const char *id, const char *title, const char *const *labels, const double *v, int n,
                    const char *unit) {
    hbar(b, id, title, labels, v, n, unit);
}
