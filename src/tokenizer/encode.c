/* Encoding: pre-tokenize, merge each piece, and optionally split big inputs
 * into chunks encoded on several threads.
 *
 * A chunk boundary is a position p with s[p-1] == '\n' and s[p] not white
 * space. The '\n' can only belong to a whitespace piece, which cannot extend
 * past p, and matching at p never looks behind, so the pieces of the whole
 * text are exactly the pieces of the chunks: the output does not depend on
 * the thread count. No boundary falls inside "<|endoftext|>" (no '\n' in it). */
#include <omp.h>
#include <stdlib.h>

#include "tokenizer/tok_internal.h"

#define EOT_LEN (sizeof TOK_EOT_STRING - 1)
#define CHUNK_MIN ((size_t)256 << 10)

typedef struct {
    int32_t *v;
    size_t n, cap;
} ivec;

typedef struct {
    size_t start, end, limit; /* encode pieces starting in [start, end); look no further than limit */
    int eot_before;           /* emit EOT first (a document start) */
} unit;

static gpt2c_status need_utf8proc(void) {
    return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                      "tokenizer: encoding needs utf8proc's Unicode classes: install libutf8proc-dev and rebuild");
}

static int push(ivec *o, int32_t id) {
    if (o->n == o->cap) {
        size_t c = o->cap ? 2 * o->cap : 16; /* one per unit: many units are short sections */
        int32_t *p = realloc(o->v, c * sizeof *p);
        if (!p) return -1;
        o->v = p;
        o->cap = c;
    }
    o->v[o->n++] = id;
    return 0;
}

static int encode_unit(const gpt2c_tokenizer *t, tok_ws *w, const uint8_t *s, const unit *u, int allow_special,
                       ivec *out) {
    if (u->eot_before && push(out, t->eot)) return -1;
    size_t pos = u->start;
    int specials = allow_special && t->eot >= 0;
    while (pos < u->end) {
        size_t seg = u->limit, stop = u->end, q = SIZE_MAX;
        if (specials) {
            size_t search_end = u->end + EOT_LEN - 1 < u->limit ? u->end + EOT_LEN - 1 : u->limit;
            const uint8_t *f = search_end > pos ? memmem(s + pos, search_end - pos, TOK_EOT_STRING, EOT_LEN) : NULL;
            if (f) seg = stop = q = (size_t)(f - s);
        }
        while (pos < stop) {
            size_t e = gpt2c_tok_pretok_next(s, pos, seg);
            if (gpt2c_tok_bpe_piece(t, w, s + pos, e - pos, 1, &out->v, &out->n, &out->cap)) return -1;
            pos = e;
        }
        if (q == SIZE_MAX) break;
        if (push(out, t->eot)) return -1;
        pos = q + EOT_LEN;
    }
    return 0;
}

/* First chunk boundary at or after `from` (or lim). */
static size_t next_boundary(const uint8_t *s, size_t from, size_t lim) {
    if (from == 0) from = 1;
    while (from < lim) {
        const uint8_t *nl = memchr(s + from - 1, '\n', lim - from);
        if (!nl) return lim;
        size_t p = (size_t)(nl - s) + 1, l;
        if (p >= lim) return lim;
        if (gpt2c_tok_class_at(s, p, lim, &l) != TOK_C_SPACE) return p;
        from = p + 1;
    }
    return lim;
}

/* Appends units covering [a, b) (limit b), split at boundaries every ~chunk bytes. */
static int add_units(unit **us, size_t *nu, size_t *cap, const uint8_t *s, size_t a, size_t b, size_t chunk,
                     int eot_before) {
    size_t pos = a;
    do {
        size_t e = b - pos > chunk + chunk / 2 ? next_boundary(s, pos + chunk, b) : b;
        if (*nu == *cap) {
            size_t c = *cap ? 2 * *cap : 64;
            unit *p = realloc(*us, c * sizeof *p);
            if (!p) return -1;
            *us = p;
            *cap = c;
        }
        (*us)[(*nu)++] = (unit){pos, e, b, eot_before && pos == a};
        pos = e;
    } while (pos < b);
    return 0;
}

static gpt2c_status run_units(const gpt2c_tokenizer *t, const uint8_t *s, const unit *us, size_t nu,
                              int allow_special, int nthreads, int32_t **ids, size_t *nids) {
    *ids = NULL;
    *nids = 0;
    if (nthreads <= 0) nthreads = omp_get_max_threads();
    if ((size_t)nthreads > nu) nthreads = (int)nu;
    if (nthreads <= 1) {
        tok_ws *w = gpt2c_tok_ws_new();
        ivec out = {0};
        int bad = !w;
        for (size_t i = 0; i < nu && !bad; i++) bad = encode_unit(t, w, s, &us[i], allow_special, &out);
        gpt2c_tok_ws_free(w);
        if (bad) {
            free(out.v);
            return gpt2c_fail(GPT2C_ERR_NOMEM, "tokenizer: out of memory while encoding");
        }
        *ids = out.v;
        *nids = out.n;
        return GPT2C_OK;
    }
    ivec *outs = calloc(nu, sizeof *outs);
    if (!outs) return gpt2c_fail(GPT2C_ERR_NOMEM, "tokenizer: out of memory while encoding");
    int bad = 0;
#pragma omp parallel num_threads(nthreads)
    {
        tok_ws *w = gpt2c_tok_ws_new();
        if (!w) {
#pragma omp atomic write
            bad = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t i = 0; i < nu; i++) {
            int b;
#pragma omp atomic read
            b = bad;
            if (b || !w) continue;
            if (encode_unit(t, w, s, &us[i], allow_special, &outs[i])) {
#pragma omp atomic write
                bad = 1;
            }
        }
        gpt2c_tok_ws_free(w);
    }
    size_t total = 0;
    for (size_t i = 0; i < nu; i++) total += outs[i].n;
    int32_t *all = bad ? NULL : malloc((total ? total : 1) * sizeof *all);
    if (all) {
        size_t o = 0;
        for (size_t i = 0; i < nu; i++) {
            if (outs[i].n) memcpy(all + o, outs[i].v, outs[i].n * sizeof *all);
            o += outs[i].n;
        }
    }
    for (size_t i = 0; i < nu; i++) free(outs[i].v);
    free(outs);
    if (!all) return gpt2c_fail(GPT2C_ERR_NOMEM, "tokenizer: out of memory while encoding");
    *ids = all;
    *nids = total;
    return GPT2C_OK;
}

gpt2c_status gpt2c_tokenizer_encode_parallel(const gpt2c_tokenizer *t, const char *bytes, size_t n,
                                             int allow_special, int nthreads, int32_t **ids, size_t *nids) {
    *ids = NULL;
    *nids = 0;
    if (!gpt2c_tok_pretok_ready()) return need_utf8proc();
    if (nthreads <= 0) nthreads = omp_get_max_threads();
    size_t chunk = n / ((size_t)nthreads * 4);
    if (chunk < CHUNK_MIN) chunk = CHUNK_MIN;
    unit *us = NULL;
    size_t nu = 0, cap = 0;
    if (nthreads == 1) {
        unit one = {0, n, n, 0};
        return run_units(t, (const uint8_t *)bytes, &one, 1, allow_special, 1, ids, nids);
    }
    if (add_units(&us, &nu, &cap, (const uint8_t *)bytes, 0, n, chunk, 0))
        return gpt2c_fail(GPT2C_ERR_NOMEM, "tokenizer: out of memory while encoding");
    gpt2c_status st = run_units(t, (const uint8_t *)bytes, us, nu, allow_special, nthreads, ids, nids);
    free(us);
    return st;
}

gpt2c_status gpt2c_tokenizer_encode(const gpt2c_tokenizer *t, const char *bytes, size_t n, int allow_special,
                                    int32_t **ids, size_t *nids) {
    return gpt2c_tokenizer_encode_parallel(t, bytes, n, allow_special, 1, ids, nids);
}

gpt2c_status gpt2c_tokenizer_encode_docs(const gpt2c_tokenizer *t, const char *bytes, size_t n, int flags,
                                         int nthreads, int32_t **ids, size_t *nids, size_t *ndocs) {
    const int more_follows = flags & GPT2C_DOCS_MORE_FOLLOWS;
    int eot_before = !(flags & GPT2C_DOCS_CONTINUES);
    *ids = NULL;
    *nids = 0;
    if (ndocs) *ndocs = 0;
    if (!gpt2c_tok_pretok_ready()) return need_utf8proc();
    if (t->eot < 0)
        return gpt2c_fail(GPT2C_ERR_ARG, "tokenizer: the vocabulary has no %s token to separate documents",
                          TOK_EOT_STRING);
    const uint8_t *s = (const uint8_t *)bytes;
    unit *us = NULL;
    size_t nu = 0, cap = 0, docs = 0, a = 0;
    /* Python's text.split("\n\n"): each section keeps its "\n\n", the last has none */
    for (;;) {
        const uint8_t *sep = a + 1 < n ? memmem(s + a, n - a, "\n\n", 2) : NULL;
        size_t b = sep ? (size_t)(sep - s) + 2 : n;
        if (!sep && a == n && more_follows && n > 0) break; /* the next part opens the next section */
        docs += eot_before;
        if (add_units(&us, &nu, &cap, s, a, b, CHUNK_MIN * 4, eot_before)) {
            free(us);
            return gpt2c_fail(GPT2C_ERR_NOMEM, "tokenizer: out of memory while encoding");
        }
        if (!sep) break;
        a = b;
        eot_before = 1;
    }
    gpt2c_status st = run_units(t, s, us, nu, 0, nthreads, ids, nids);
    free(us);
    if (st == GPT2C_OK && ndocs) *ndocs = docs;
    return st;
}

size_t gpt2c_tokenizer_docs_cut(const char *bytes, size_t n, int *inside_section) {
    const uint8_t *s = (const uint8_t *)bytes;
    size_t a = 0, cut = 0;
    const uint8_t *sep;
    /* Section ends, found as encode_docs finds them (forward, non-overlapping).
     * Sections are encoded independently, so a cut there is exact, even at n
     * (a "\n" that follows opens the next section either way). */
    while (a + 1 < n && (sep = memmem(s + a, n - a, "\n\n", 2))) a = cut = (size_t)(sep - s) + 2;
    *inside_section = 0;
    if (cut > 0) return cut;
    /* Else inside the section: a position p after "c\n" (c an ASCII non-space
     * byte) before a non-space character.  The whitespace piece is then "\n"
     * alone whether or not the encoder sees past p (its \s+(?!\S) cannot grow
     * or shrink), and matching from p never looks behind. */
    if (!gpt2c_tok_pretok_ready()) return 0;
    for (size_t p = n >= 4 ? n - 4 : 0; p >= 2; p--) {
        size_t l;
        if (s[p - 1] == '\n' && s[p - 2] < 0x80 && gpt2c_tok_class_at(s, p - 2, n, &l) != TOK_C_SPACE &&
            gpt2c_tok_class_at(s, p, n, &l) != TOK_C_SPACE) {
            *inside_section = 1;
            return p;
        }
    }
    return 0;
}
