/* Completion text: token bytes to valid UTF-8 (JSON strings must be), and
 * OpenAI's stop strings (the text ends before the first one; text that could
 * still become one is held back from a stream). */
#include <stdlib.h>
#include <string.h>

#include "serve/serve_internal.h"

int gpt2c_srv_buf_add(srv_buf *b, const void *p, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return -1;
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

void gpt2c_srv_buf_free(srv_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static const unsigned char REPLACEMENT[3] = {0xEF, 0xBF, 0xBD}; /* U+FFFD */

/* Well-formed sequences (Unicode Table 3-7): the length a lead byte starts and
 * the range of its second byte (the others are 80..BF); 0: not a lead byte. */
static int lead_len(unsigned c, unsigned *lo, unsigned *hi) {
    *lo = 0x80, *hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c == 0xE0) *lo = 0xA0;
    if (c == 0xED) *hi = 0x9F;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c == 0xF0) *lo = 0x90;
    if (c == 0xF4) *hi = 0x8F;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

int gpt2c_srv_utf8_feed(srv_utf8 *u, const unsigned char *p, size_t n, int final, srv_buf *out) {
    /* the held bytes, then p: byte k of the concatenation */
    const size_t np = (size_t)u->npend, total = np + n;
    unsigned char pend[4];
    memcpy(pend, u->pend, np);
#define AT(k) ((k) < np ? pend[k] : p[(k) - np])
    u->npend = 0;
    size_t i = 0;
    while (i < total) {
        const unsigned c = AT(i);
        unsigned lo, hi;
        const int len = lead_len(c, &lo, &hi);
        if (len == 1) { /* runs of ASCII at once */
            size_t j = i;
            while (j < total && AT(j) < 0x80) j++;
            for (size_t k = i; k < j; k++) {
                const unsigned char b = AT(k);
                if (gpt2c_srv_buf_add(out, &b, 1)) return -1;
            }
            i = j;
            continue;
        }
        if (len == 0) { /* not a lead byte */
            if (gpt2c_srv_buf_add(out, REPLACEMENT, 3)) return -1;
            i++;
            continue;
        }
        int j = 1;
        for (; j < len && i + j < total; j++) {
            const unsigned b = AT(i + j);
            if (b < (j == 1 ? lo : 0x80) || b > (j == 1 ? hi : 0xBF)) break;
        }
        if (j == len) { /* well-formed */
            for (int k = 0; k < len; k++) {
                const unsigned char b = AT(i + k);
                if (gpt2c_srv_buf_add(out, &b, 1)) return -1;
            }
            i += len;
        } else if (i + j == total && !final) { /* a valid start, cut off: wait for more */
            for (size_t k = i; k < total; k++) u->pend[u->npend++] = AT(k);
            i = total;
        } else { /* ill-formed (or cut off at the end): one U+FFFD for the maximal subpart */
            if (gpt2c_srv_buf_add(out, REPLACEMENT, 3)) return -1;
            i += (size_t)j;
        }
    }
#undef AT
    return 0;
}

int gpt2c_srv_text_add(srv_text *t, const char *const *stop, int nstop, const void *bytes, size_t n, int final) {
    if (t->stopped) return 1;
    const size_t from = t->safe; /* no stop string starts before safe (see below) */
    if (gpt2c_srv_utf8_feed(&t->u, bytes, n, final, &t->text)) return -1;
    /* the earliest stop string in the new part */
    size_t cut = t->text.len;
    for (int i = 0; i < nstop; i++) {
        const char *hit = memmem(t->text.p + from, t->text.len - from, stop[i], strlen(stop[i]));
        if (hit && (size_t)(hit - t->text.p) < cut) cut = (size_t)(hit - t->text.p);
    }
    if (cut < t->text.len) {
        t->text.len = cut;
        t->text.p[cut] = 0;
        t->safe = cut;
        t->stopped = 1;
        return 1;
    }
    if (final) {
        t->safe = t->text.len;
        return 0;
    }
    /* hold back the longest end of the text that begins some stop string: a
     * stop string found later starts there or after, so `safe` only grows */
    size_t hold = 0;
    for (int i = 0; i < nstop; i++) {
        const size_t sl = strlen(stop[i]);
        for (size_t k = sl - 1; k > hold; k--)
            if (k <= t->text.len - from && memcmp(t->text.p + t->text.len - k, stop[i], k) == 0) {
                hold = k;
                break;
            }
    }
    t->safe = t->text.len - hold;
    return 0;
}
