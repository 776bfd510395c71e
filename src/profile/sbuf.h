/* A growable string buffer for the writers (JSON, CSV, SVG, HTML). Allocation
 * failure is sticky: sb->failed, checked once at the end. */
#ifndef GPT2C_PROFILE_SBUF_H
#define GPT2C_PROFILE_SBUF_H

#include <stddef.h>

#include "gpt2c/status.h"

typedef struct {
    char *p;
    size_t n, cap;
    int failed;
} sbuf;

void gpt2c_sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void gpt2c_sb_puts(sbuf *b, const char *s);
/* s escaped for a JSON string (without the quotes) / for HTML text. */
void gpt2c_sb_json_str(sbuf *b, const char *s);
void gpt2c_sb_html(sbuf *b, const char *s);
/* A number for JSON: null when not finite. */
void gpt2c_sb_json_num(sbuf *b, double v);
/* `"mean":<mean>,"std":<std>` (JSON numbers as above), the start of the
 * profiler's and the pipeline report's statistics objects. */
void gpt2c_sb_json_mean_std(sbuf *b, double mean, double std);
void gpt2c_sb_free(sbuf *b);
/* Writes the buffer atomically to dir/name. */
gpt2c_status gpt2c_sb_write_file(sbuf *b, const char *dir, const char *name);

#endif
