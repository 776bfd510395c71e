#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/fileio.h"
#include "profile/sbuf.h"

static int grow(sbuf *b, size_t need) {
    if (b->failed) return 0;
    if (b->n + need + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + need + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void gpt2c_sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || !grow(b, (size_t)k)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

void gpt2c_sb_puts(sbuf *b, const char *s) {
    size_t k = strlen(s);
    if (!grow(b, k)) return;
    memcpy(b->p + b->n, s, k + 1);
    b->n += k;
}

void gpt2c_sb_json_str(sbuf *b, const char *s) {
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') gpt2c_sb_printf(b, "\\%c", c);
        else if (c < 0x20) gpt2c_sb_printf(b, "\\u%04x", c);
        else gpt2c_sb_printf(b, "%c", c);
    }
}

void gpt2c_sb_html(sbuf *b, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '<': gpt2c_sb_puts(b, "&lt;"); break;
        case '>': gpt2c_sb_puts(b, "&gt;"); break;
        case '&': gpt2c_sb_puts(b, "&amp;"); break;
        case '"': gpt2c_sb_puts(b, "&quot;"); break;
        default: gpt2c_sb_printf(b, "%c", *s);
        }
    }
}

void gpt2c_sb_json_num(sbuf *b, double v) {
    if (isfinite(v)) gpt2c_sb_printf(b, "%.6g", v);
    else gpt2c_sb_puts(b, "null");
}

void gpt2c_sb_json_mean_std(sbuf *b, double mean, double std) {
    gpt2c_sb_puts(b, "\"mean\":");
    gpt2c_sb_json_num(b, mean);
    gpt2c_sb_puts(b, ",\"std\":");
    gpt2c_sb_json_num(b, std);
}

void gpt2c_sb_free(sbuf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

gpt2c_status gpt2c_sb_write_file(sbuf *b, const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (b->failed) return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory while rendering", path);
    gpt2c_atomic a;
    GPT2C_TRY(gpt2c_atomic_open(&a, path));
    gpt2c_status st = gpt2c_atomic_write(&a, b->p ? b->p : "", b->n);
    if (st != GPT2C_OK) {
        gpt2c_atomic_abort(&a);
        return st;
    }
    return gpt2c_atomic_commit(&a);
}
