#include "profile/html_page.h"

void gpt2c_html_page_begin(sbuf *b, const char *title, const char *heading) {
    gpt2c_sb_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    gpt2c_sb_html(b, title);
    gpt2c_sb_puts(b, "</title>\n<style>body{font-family:sans-serif;max-width:1100px;margin:1em auto;color:#222}"
                     "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;font-size:13px}"
                     "td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#eee}.note{color:#a40}"
                     "svg{display:block;margin:1em 0;border:1px solid #ddd;background:#fff}code{background:#f4f4f4}"
                     "</style></head><body>\n<h1>");
    gpt2c_sb_html(b, heading);
    gpt2c_sb_puts(b, "</h1>\n");
}

void gpt2c_html_page_end(sbuf *b) { gpt2c_sb_puts(b, "</body></html>\n"); }
