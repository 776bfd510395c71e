/* `gpt2c pipeline`'s table as markdown (stdout and pipeline.md), JSON
 * (pipeline.json) and an HTML report with one SVG bar chart per measure
 * (report.html), with src/profile's string buffer, table and chart helpers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/pipeline.h"
#include "gpt2c/cpu.h"
#include "profile/html_page.h"
#include "profile/sbuf.h"
#include "profile/svg.h"
#include "profile/table.h"

typedef struct {
    double mean, std;
} ms_t;

static ms_t mean_std(const double *v, int n) {
    ms_t r = {NAN, NAN};
    if (n <= 0) return r;
    double s = 0, ss = 0;
    for (int i = 0; i < n; i++) s += v[i];
    r.mean = s / n;
    for (int i = 0; i < n; i++) ss += (v[i] - r.mean) * (v[i] - r.mean);
    r.std = n > 1 ? sqrt(ss / (n - 1)) : 0; /* sample standard deviation */
    return r;
}

enum { M_TRAIN, M_INFER, M_FWD_TOK, M_GEN_TOK, M_FWD_MS, M_GEN_MS, M_PPL, M_COUNT };
static const char *const M_NAME[M_COUNT] = {"training memory (MiB)",  "inference memory (MiB)", "forward (tok/s)",
                                            "generation (tok/s)",     "forward latency (ms)",   "generation latency (ms)",
                                            "perplexity (validation)"};
static const char *const M_KEY[M_COUNT] = {"train_mib", "infer_mib", "fwd_tok_s", "gen_tok_s", "fwd_ms", "gen_ms", "ppl"};
static const char *const M_UNIT[M_COUNT] = {"MiB", "MiB", "tok/s", "tok/s", "ms", "ms", ""};

static int measured(const pipe_row *r) { return r->trials > 0; }

static ms_t metric(const pipe_row *r, int k) {
    const ms_t none = {NAN, NAN};
    if (!measured(r)) return none;
    switch (k) {
    case M_TRAIN: return (ms_t){r->train_mib, 0};
    case M_INFER: return (ms_t){r->infer_mib, 0};
    case M_FWD_TOK: return mean_std(r->fwd_tok_s, r->trials);
    case M_GEN_TOK: return mean_std(r->gen_tok_s, r->trials);
    case M_FWD_MS: return mean_std(r->fwd_ms, r->trials);
    case M_GEN_MS: return mean_std(r->gen_ms, r->trials);
    default: return (ms_t){r->ppl, 0};
    }
}

static void cell(char *buf, size_t n, const pipe_row *r, int k) {
    const ms_t v = metric(r, k);
    if (!measured(r)) snprintf(buf, n, "%s", strncmp(r->note, "pending", 7) == 0 ? "pending" : "(see note)");
    else if (!isfinite(v.mean)) snprintf(buf, n, "unavailable");
    else if (k == M_FWD_TOK || k == M_GEN_TOK || k == M_FWD_MS || k == M_GEN_MS)
        snprintf(buf, n, "%.4g ± %.2g", v.mean, v.std);
    else if (k == M_PPL) snprintf(buf, n, "%.3f", v.mean);
    else snprintf(buf, n, "%.1f", v.mean);
}

/* the last measured stage against the baseline, as seed 003 states its gains */
static const pipe_row *last_measured(const pipe_ctx *p) {
    for (int i = p->nrows - 1; i > 0; i--)
        if (measured(&p->rows[i])) return &p->rows[i];
    return NULL;
}

static void gains(const pipe_ctx *p, sbuf *b, int md) {
    const pipe_row *base = &p->rows[0], *last = last_measured(p);
    if (!last || !measured(base)) return;
    gpt2c_sb_printf(b, md ? "\nEnd to end (baseline -> %s):\n\n" : "<h2>End to end (baseline &rarr; %s)</h2>\n<ul>\n", last->name);
    for (int k = 0; k < M_COUNT; k++) {
        const double a = metric(base, k).mean, z = metric(last, k).mean;
        if (!isfinite(a) || !isfinite(z)) {
            gpt2c_sb_printf(b, md ? "- %s: unavailable (a stage it needs is pending)\n" : "<li>%s: unavailable (a stage it needs is pending)</li>\n", M_NAME[k]);
            continue;
        }
        if (k == M_PPL)
            gpt2c_sb_printf(b, md ? "- %s: %.3f -> %.3f (%+.3f)\n" : "<li>%s: %.3f &rarr; %.3f (%+.3f)</li>\n", M_NAME[k], a, z, z - a);
        else if (k == M_FWD_TOK || k == M_GEN_TOK)
            gpt2c_sb_printf(b, md ? "- %s: %.3gx\n" : "<li>%s: %.3gx</li>\n", M_NAME[k], z / a);
        else
            gpt2c_sb_printf(b, md ? "- %s: %+.0f%%\n" : "<li>%s: %+.0f%%</li>\n", M_NAME[k], 100.0 * (z - a) / a);
    }
    if (!md) gpt2c_sb_puts(b, "</ul>\n");
}

static void notes(const pipe_ctx *p, sbuf *b, int md) {
    for (int i = 0; i < p->nrows; i++) {
        const pipe_row *r = &p->rows[i];
        if (md) gpt2c_sb_printf(b, "- **%s**: %s%s%s%s%s\n", r->name, r->what, r->model_desc[0] ? " [" : "", r->model_desc,
                          r->model_desc[0] ? "]" : "", "");
        else {
            gpt2c_sb_puts(b, "<li><b>");
            gpt2c_sb_html(b, r->name);
            gpt2c_sb_puts(b, "</b>: ");
            gpt2c_sb_html(b, r->what);
            if (r->model_desc[0]) {
                gpt2c_sb_puts(b, " [");
                gpt2c_sb_html(b, r->model_desc);
                gpt2c_sb_puts(b, "]");
            }
        }
        if (r->note[0]) {
            if (md) gpt2c_sb_printf(b, "  (%s)\n", r->note);
            else {
                gpt2c_sb_puts(b, " <i>(");
                gpt2c_sb_html(b, r->note);
                gpt2c_sb_puts(b, ")</i>");
            }
        }
        if (!md) gpt2c_sb_puts(b, "</li>\n");
    }
}

static void setup_line(const pipe_ctx *p, char *buf, size_t n) {
    snprintf(buf, n,
             "%s (%s), %d threads; %d trial(s) per stage; batch %d x %d tokens for training memory and the forward runs (%d sequences), "
             "generation %d new tokens after %d, perplexity over %d validation sequences of %d; %.0f s in all",
             gpt2c_cpu_brand(), gpt2c_cpu_signature(), p->threads > 0 ? p->threads : gpt2c_model_threads(p->teacher),
             p->trials, p->batch, p->seq, p->bench.fwd_batch, p->bench.gen_tokens, p->bench.prompt,
             p->bench.ppl_seqs, p->seq, p->seconds);
}

static void markdown(const pipe_ctx *p, sbuf *b) {
    char line[512];
    setup_line(p, line, sizeof line);
    gpt2c_sb_printf(b, "## gpt2c pipeline%s\n\n%s\n\n| stage |", p->quick ? " (--quick)" : "", line);
    for (int k = 0; k < M_COUNT; k++) gpt2c_sb_printf(b, " %s |", M_NAME[k]);
    gpt2c_sb_puts(b, "\n|---|");
    for (int k = 0; k < M_COUNT; k++) gpt2c_sb_puts(b, "---|");
    gpt2c_sb_puts(b, "\n");
    for (int i = 0; i < p->nrows; i++) {
        gpt2c_sb_printf(b, "| %s |", p->rows[i].name);
        for (int k = 0; k < M_COUNT; k++) {
            char c[64];
            cell(c, sizeof c, &p->rows[i], k);
            gpt2c_sb_printf(b, " %s |", c);
        }
        gpt2c_sb_puts(b, "\n");
    }
    gpt2c_sb_puts(b, "\n");
    notes(p, b, 1);
    gains(p, b, 1);
}

static void json_ms(sbuf *b, const double *v, int n) {
    const ms_t m = mean_std(v, n);
    gpt2c_sb_puts(b, "{");
    gpt2c_sb_json_mean_std(b, m.mean, m.std);
    gpt2c_sb_puts(b, ",\"trials\":[");
    for (int i = 0; i < n; i++) {
        if (i) gpt2c_sb_puts(b, ",");
        gpt2c_sb_json_num(b, v[i]);
    }
    gpt2c_sb_puts(b, "]}");
}

static void json(const pipe_ctx *p, sbuf *b) {
    char line[512];
    setup_line(p, line, sizeof line);
    gpt2c_sb_puts(b, "{\"setup\":\"");
    gpt2c_sb_json_str(b, line);
    gpt2c_sb_printf(b, "\",\"quick\":%d,\"trials\":%d,\"batch\":%d,\"seq\":%d,\"seconds\":%.1f,\"stages\":[", p->quick,
              p->trials, p->batch, p->seq, p->seconds);
    for (int i = 0; i < p->nrows; i++) {
        const pipe_row *r = &p->rows[i];
        gpt2c_sb_puts(b, i ? ",\n{\"name\":\"" : "\n{\"name\":\"");
        gpt2c_sb_json_str(b, r->name);
        gpt2c_sb_puts(b, "\",\"what\":\"");
        gpt2c_sb_json_str(b, r->what);
        gpt2c_sb_puts(b, "\",\"model\":\"");
        gpt2c_sb_json_str(b, r->model_desc);
        gpt2c_sb_puts(b, "\",\"note\":\"");
        gpt2c_sb_json_str(b, r->note);
        gpt2c_sb_printf(b, "\",\"measured\":%s", measured(r) ? "true" : "false");
        if (measured(r)) {
            gpt2c_sb_puts(b, ",\"train_mib\":");
            gpt2c_sb_json_num(b, r->train_mib);
            gpt2c_sb_puts(b, ",\"infer_mib\":");
            gpt2c_sb_json_num(b, r->infer_mib);
            gpt2c_sb_puts(b, ",\"ppl\":");
            gpt2c_sb_json_num(b, r->ppl);
            const double *arr[4] = {r->fwd_tok_s, r->gen_tok_s, r->fwd_ms, r->gen_ms};
            for (int k = 0; k < 4; k++) {
                gpt2c_sb_printf(b, ",\"%s\":", M_KEY[M_FWD_TOK + k]);
                json_ms(b, arr[k], r->trials);
            }
        }
        gpt2c_sb_puts(b, "}");
    }
    gpt2c_sb_puts(b, "\n]}\n");
}

static void html(const pipe_ctx *p, sbuf *b) {
    char line[512];
    setup_line(p, line, sizeof line);
    gpt2c_html_page_begin(b, "gpt2c pipeline", "gpt2c pipeline: seed 003's compression stack");
    gpt2c_sb_puts(b, "<p>");
    gpt2c_sb_html(b, line);
    gpt2c_sb_puts(b, "</p>\n");
    static const char *const heads[1 + M_COUNT] = {"stage",        "train MiB",    "infer MiB",
                                                   "fwd tok/s",    "gen tok/s",    "fwd ms",
                                                   "gen ms",       "perplexity"};
    tbl t;
    gpt2c_tbl_init(&t, "After each stage (timings: mean ± std over the trials)", heads, 1 + M_COUNT);
    for (int i = 0; i < p->nrows; i++) {
        const int row = gpt2c_tbl_row(&t);
        if (row < 0) break;
        gpt2c_tbl_set(&t, row, 0, "%s", p->rows[i].name);
        for (int k = 0; k < M_COUNT; k++) {
            char c[64];
            cell(c, sizeof c, &p->rows[i], k);
            gpt2c_tbl_set(&t, row, 1 + k, "%s", c);
        }
    }
    gpt2c_tbl_html(&t, b, "stages");
    gpt2c_sb_puts(b, "<ul>\n");
    notes(p, b, 0);
    gpt2c_sb_puts(b, "</ul>\n");
    gains(p, b, 0);
    /* one chart per measure over the measured stages */
    for (int k = 0; k < M_COUNT; k++) {
        const char *labels[8];
        double v[8];
        int n = 0;
        for (int i = 0; i < p->nrows; i++) {
            const ms_t m = metric(&p->rows[i], k);
            if (!isfinite(m.mean)) continue;
            labels[n] = p->rows[i].name;
            v[n++] = m.mean;
        }
        char id[32];
        snprintf(id, sizeof id, "chart_%s", M_KEY[k]);
        gpt2c_sb_puts(b, "<div>");
        gpt2c_svg_hbar(b, id, M_NAME[k], labels, v, n, M_UNIT[k]);
        gpt2c_sb_puts(b, "</div>\n");
    }
    gpt2c_html_page_end(b);
}

int pipe_write_report(const pipe_ctx *p) {
    sbuf md = {0}, js = {0}, ht = {0};
    markdown(p, &md);
    json(p, &js);
    html(p, &ht);
    int rc = 0;
    if (md.failed || js.failed || ht.failed) rc = cli_error("pipeline", "out of memory writing the report");
    else if (gpt2c_sb_write_file(&md, p->out, "pipeline.md") != GPT2C_OK || gpt2c_sb_write_file(&js, p->out, "pipeline.json") != GPT2C_OK ||
             gpt2c_sb_write_file(&ht, p->out, "report.html") != GPT2C_OK)
        rc = cli_error("pipeline", "--out: %s", gpt2c_errmsg());
    if (!rc) {
        fwrite(md.p, 1, md.n, stdout);
        fprintf(stderr, "gpt2c pipeline: wrote %s/pipeline.md, pipeline.json, report.html\n", p->out);
    }
    gpt2c_sb_free(&md);
    gpt2c_sb_free(&js);
    gpt2c_sb_free(&ht);
    return rc;
}
