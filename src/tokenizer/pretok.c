/* GPT-2's pre-tokenizer, written out by hand instead of run by a regex engine:
 *
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * Alternatives are tried in order at each position, as a backtracking regex
 * does. \p{L} / \p{N} come from utf8proc's general categories; \s is Unicode
 * White_Space (what Python's `regex` module and tiktoken use: U+0085, U+00A0,
 * U+1680, U+2000..200A, U+2028/2029, U+202F, U+205F, U+3000, but not
 * U+001C..001F, U+180E or U+200B). An invalid UTF-8 byte is one "other" symbol. */
#include <pthread.h>

#include "tokenizer/tok_internal.h"

#ifdef GPT2C_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

static uint8_t bmp_class[65536];

static int is_white_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

static int class_of_cp(uint32_t c) {
    if (is_white_space(c)) return TOK_C_SPACE;
#ifdef GPT2C_HAVE_UTF8PROC
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return TOK_C_LETTER;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return TOK_C_NUMBER;
    default: return TOK_C_OTHER;
    }
#else
    return TOK_C_OTHER; /* never reached in use: without utf8proc the tokenizer refuses to load */
#endif
}

#ifdef GPT2C_HAVE_UTF8PROC
static pthread_once_t class_once = PTHREAD_ONCE_INIT;

static void init_classes(void) {
    for (uint32_t c = 0; c < 65536; c++) bmp_class[c] = (uint8_t)class_of_cp(c);
}
#endif

int gpt2c_tok_pretok_ready(void) {
#ifdef GPT2C_HAVE_UTF8PROC
    pthread_once(&class_once, init_classes);
    return 1;
#else
    return 0;
#endif
}

/* Strict UTF-8 (Unicode table 3-7): no overlongs, no surrogates, <= U+10FFFF. */
int gpt2c_tok_class_at(const uint8_t *s, size_t i, size_t lim, size_t *clen) {
    uint8_t c = s[i];
    if (c < 0x80) {
        *clen = 1;
        return bmp_class[c];
    }
    *clen = 1;
    size_t avail = lim - i;
    if (c < 0xC2) return TOK_C_OTHER;
    if (c < 0xE0) {
        if (avail < 2 || (s[i + 1] & 0xC0) != 0x80) return TOK_C_OTHER;
        *clen = 2;
        return bmp_class[((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu)];
    }
    if (c < 0xF0) {
        if (avail < 3) return TOK_C_OTHER;
        uint8_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80) return TOK_C_OTHER;
        *clen = 3;
        return bmp_class[((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu)];
    }
    if (c < 0xF5) {
        if (avail < 4) return TOK_C_OTHER;
        uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
            return TOK_C_OTHER;
        *clen = 4;
        uint32_t cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
        return class_of_cp(cp);
    }
    return TOK_C_OTHER;
}

/* End of the run of characters of class k starting at i. */
static size_t run_end(const uint8_t *s, size_t i, size_t lim, int k) {
    while (i < lim) {
        uint8_t c = s[i];
        if (c < 0x80) {
            if (bmp_class[c] != k) break;
            i++;
            continue;
        }
        size_t l;
        if (gpt2c_tok_class_at(s, i, lim, &l) != k) break;
        i += l;
    }
    return i;
}

size_t gpt2c_tok_pretok_next(const uint8_t *s, size_t i, size_t lim) {
    uint8_t c = s[i];
    /* 's 't 're 've 'm 'll 'd (lower case only, as in GPT-2) */
    if (c == '\'' && i + 1 < lim) {
        uint8_t d = s[i + 1];
        if (d == 's' || d == 't' || d == 'm' || d == 'd') return i + 2;
        if (i + 2 < lim) {
            uint8_t e = s[i + 2];
            if ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) return i + 3;
        }
    }
    size_t l;
    /* ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': an optional ASCII space, then a run */
    if (c == ' ' && i + 1 < lim) {
        int k = gpt2c_tok_class_at(s, i + 1, lim, &l);
        if (k != TOK_C_SPACE) return run_end(s, i + 1 + l, lim, k);
    }
    int k = gpt2c_tok_class_at(s, i, lim, &l);
    if (k != TOK_C_SPACE) return run_end(s, i + l, lim, k);
    /* whitespace: \s+(?!\S) takes the run but its last character when a
     * non-space follows; a lone space before a non-space is \s+ */
    size_t last = i, end = i + l;
    while (end < lim) {
        size_t l2;
        if (gpt2c_tok_class_at(s, end, lim, &l2) != TOK_C_SPACE) break;
        last = end;
        end += l2;
    }
    if (end == lim || last == i) return end;
    return last;
}
