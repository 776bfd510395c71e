#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "profile/table.h"

void tbl_init(tbl *t, const char *title, const char *const *heads, int ncols) {
    memset(t, 0, sizeof *t);
    t->title = title;
    t->ncols = ncols > TBL_COLS ? TBL_COLS : ncols;
    for (int c = 0; c < t->ncols; c++) snprintf(t->head[c], sizeof t->head[c], "%s", heads[c]);
}

int tbl_row(tbl *t) { return t->nrows < TBL_ROWS ? t->nrows++ : -1; }

void tbl_set(tbl *t, int row, int col, const char *fmt, ...) {
    if (row < 0 || row >= t->nrows || col < 0 || col >= t->ncols) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->cell[row][col], sizeof t->cell[row][col], fmt, ap);
    va_end(ap);
}

void tbl_text(const tbl *t, sbuf *b) {
    int w[TBL_COLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (int r = 0; r < t->nrows; r++)
            if ((int)strlen(t->cell[r][c]) > w[c]) w[c] = (int)strlen(t->cell[r][c]);
    }
    sb_printf(b, "\n%s\n", t->title);
    for (int c = 0; c < t->ncols; c++) sb_printf(b, c ? "  %*s" : "%-*s", w[c], t->head[c]);
    sb_puts(b, "\n");
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) sb_printf(b, c ? "  %*s" : "%-*s", w[c], t->cell[r][c]);
        sb_puts(b, "\n");
    }
}

void tbl_html(const tbl *t, sbuf *b, const char *id) {
    sb_printf(b, "<h2>");
    sb_html(b, t->title);
    sb_printf(b, "</h2>\n<table id=\"%s\"><tr>", id);
    for (int c = 0; c < t->ncols; c++) {
        sb_puts(b, "<th>");
        sb_html(b, t->head[c]);
        sb_puts(b, "</th>");
    }
    sb_puts(b, "</tr>\n");
    for (int r = 0; r < t->nrows; r++) {
        sb_puts(b, "<tr>");
        for (int c = 0; c < t->ncols; c++) {
            sb_puts(b, c ? "<td class=\"n\">" : "<td>");
            sb_html(b, t->cell[r][c]);
            sb_puts(b, "</td>");
        }
        sb_puts(b, "</tr>\n");
    }
    sb_puts(b, "</table>\n");
}
