#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "profile/table.h"

void gpt2c_tbl_init(tbl *t, const char *title, const char *const *heads, int ncols) {
    memset(t, 0, sizeof *t);
    t->title = title;
    t->ncols = ncols > TBL_COLS ? TBL_COLS : ncols;
    for (int c = 0; c < t->ncols; c++) snprintf(t->head[c], sizeof t->head[c], "%s", heads[c]);
}

int gpt2c_tbl_row(tbl *t) { return t->nrows < TBL_ROWS ? t->nrows++ : -1; }

void gpt2c_tbl_set(tbl *t, int row, int col, const char *fmt, ...) {
    if (row < 0 || row >= t->nrows || col < 0 || col >= t->ncols) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->cell[row][col], sizeof t->cell[row][col], fmt, ap);
    va_end(ap);
}

void gpt2c_tbl_text(const tbl *t, sbuf *b) {
    int w[TBL_COLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (int r = 0; r < t->nrows; r++)
            if ((int)strlen(t->cell[r][c]) > w[c]) w[c] = (int)strlen(t->cell[r][c]);
    }
    gpt2c_sb_printf(b, "\n%s\n", t->title);
    for (int c = 0; c < t->ncols; c++) gpt2c_sb_printf(b, c ? "  %*s" : "%-*s", w[c], t->head[c]);
    gpt2c_sb_puts(b, "\n");
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) gpt2c_sb_printf(b, c ? "  %*s" : "%-*s", w[c], t->cell[r][c]);
        gpt2c_sb_puts(b, "\n");
    }
}

void gpt2c_tbl_html(const tbl *t, sbuf *b, const char *id) {
    gpt2c_sb_printf(b, "<h2>");
    gpt2c_sb_html(b, t->title);
    gpt2c_sb_printf(b, "</h2>\n<table id=\"%s\"><tr>", id);
    for (int c = 0; c < t->ncols; c++) {
        gpt2c_sb_puts(b, "<th>");
        gpt2c_sb_html(b, t->head[c]);
        gpt2c_sb_puts(b, "</th>");
    }
    gpt2c_sb_puts(b, "</tr>\n");
    for (int r = 0; r < t->nrows; r++) {
        gpt2c_sb_puts(b, "<tr>");
        for (int c = 0; c < t->ncols; c++) {
            gpt2c_sb_puts(b, c ? "<td class=\"n\">" : "<td>");
            gpt2c_sb_html(b, t->cell[r][c]);
            gpt2c_sb_puts(b, "</td>");
        }
        gpt2c_sb_puts(b, "</tr>\n");
    }
    gpt2c_sb_puts(b, "</table>\n");
}
