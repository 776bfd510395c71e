/* A small table of text cells rendered either as aligned text or as HTML. */
#ifndef GPT2C_PROFILE_TABLE_H
#define GPT2C_PROFILE_TABLE_H

#include "profile/sbuf.h"

#define TBL_COLS 12
#define TBL_ROWS 48
typedef struct {
    const char *title;
    int ncols, nrows;
    char head[TBL_COLS][32];
    char cell[TBL_ROWS][TBL_COLS][128];
} tbl;

void gpt2c_tbl_init(tbl *t, const char *title, const char *const *heads, int ncols);
/* Adds a row; cells are filled with gpt2c_tbl_set. Returns the row index or -1 when full. */
int gpt2c_tbl_row(tbl *t);
void gpt2c_tbl_set(tbl *t, int row, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void gpt2c_tbl_text(const tbl *t, sbuf *b);
void gpt2c_tbl_html(const tbl *t, sbuf *b, const char *id);

#endif
