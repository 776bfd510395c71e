/* Byte-pair merging of one piece. Three paths, fastest first:
 *   1. the whole piece is a token (as tiktoken does: same result, one lookup);
 *   2. a small per-thread cache of recent pieces (bounded, direct-mapped);
 *   3. merging by rank: a plain scan for short pieces, a min-heap over a
 *      linked list for long ones (O(n log n), so a megabyte-long "word" is fine).
 * Both merge loops pick the lowest rank, leftmost on ties, like tiktoken. */
#include <stdlib.h>

#include "tokenizer/tok_internal.h"

#define CACHE_SLOTS 4096
#define CACHE_MAXB 40
#define CACHE_MAXIDS 14
#define SMALL 64

typedef struct {
    uint64_t h;
    uint16_t n;
    uint8_t nids;
    uint8_t bytes[CACHE_MAXB];
    int32_t ids[CACHE_MAXIDS];
} cache_ent;

struct tok_ws {
    cache_ent *cache;
    int32_t *sym, *prev, *next;
    size_t cap;
    uint64_t *heap;
    size_t hcap;
};

tok_ws *gpt2c_tok_ws_new(void) {
    tok_ws *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->cache = calloc(CACHE_SLOTS, sizeof *w->cache);
    if (!w->cache) {
        free(w);
        return NULL;
    }
    return w;
}

void gpt2c_tok_ws_free(tok_ws *w) {
    if (!w) return;
    free(w->cache);
    free(w->sym);
    free(w->prev);
    free(w->next);
    free(w->heap);
    free(w);
}

static int reserve(int32_t **out, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 16; /* small: encode_docs keeps one output per section, often a few tokens */
    while (c < need) c *= 2;
    int32_t *p = realloc(*out, c * sizeof *p);
    if (!p) return -1;
    *out = p;
    *cap = c;
    return 0;
}

/* Short pieces: arrays, rescanned for the minimum after every merge. */
static size_t merge_small(const struct gpt2c_tokenizer *t, const uint8_t *p, size_t n, int32_t *out) {
    int32_t sym[SMALL], mid[SMALL];
    uint32_t rank[SMALL];
    for (size_t i = 0; i < n; i++) sym[i] = t->byte_id[p[i]];
    for (size_t i = 0; i + 1 < n; i++) rank[i] = tok_merge_rank(t, sym[i], sym[i + 1], &mid[i]);
    size_t m = n;
    while (m > 1) {
        uint32_t best = TOK_NO_RANK;
        size_t bi = 0;
        for (size_t i = 0; i + 1 < m; i++)
            if (rank[i] < best) {
                best = rank[i];
                bi = i;
            }
        if (best == TOK_NO_RANK) break;
        sym[bi] = mid[bi];
        /* drop symbol bi+1 and pair bi+1 */
        memmove(sym + bi + 1, sym + bi + 2, (m - bi - 2) * sizeof *sym);
        if (m - bi - 2 > 0) {
            memmove(rank + bi + 1, rank + bi + 2, (m - bi - 3) * sizeof *rank);
            memmove(mid + bi + 1, mid + bi + 2, (m - bi - 3) * sizeof *mid);
        }
        m--;
        if (bi + 1 < m) rank[bi] = tok_merge_rank(t, sym[bi], sym[bi + 1], &mid[bi]);
        if (bi > 0) rank[bi - 1] = tok_merge_rank(t, sym[bi - 1], sym[bi], &mid[bi - 1]);
    }
    memcpy(out, sym, m * sizeof *sym);
    return m;
}

static void heap_push(uint64_t *h, size_t *n, uint64_t k) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h[parent] <= k) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = k;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0], last = h[--(*n)];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && h[c + 1] < h[c]) c++;
        if (last <= h[c]) break;
        h[i] = h[c];
        i = c;
    }
    if (m) h[i] = last;
    return top;
}

/* Long pieces: a doubly linked list of symbols and a heap of (rank, left position). */
static int merge_large(const struct gpt2c_tokenizer *t, tok_ws *w, const uint8_t *p, size_t n, int32_t *out,
                       size_t *nout) {
    if (n > INT32_MAX) return -1; /* symbol positions are int32_t (prev/next links, heap keys) */
    if (w->cap < n) {
        int32_t *a = realloc(w->sym, n * sizeof *a), *b, *c;
        if (!a) return -1;
        w->sym = a;
        b = realloc(w->prev, n * sizeof *b);
        if (!b) return -1;
        w->prev = b;
        c = realloc(w->next, n * sizeof *c);
        if (!c) return -1;
        w->next = c;
        w->cap = n;
    }
    if (w->hcap < 3 * n) {
        uint64_t *h = realloc(w->heap, 3 * n * sizeof *h);
        if (!h) return -1;
        w->heap = h;
        w->hcap = 3 * n;
    }
    int32_t *sym = w->sym, *prev = w->prev, *next = w->next;
    uint64_t *heap = w->heap;
    size_t hn = 0;
    int32_t m;
    for (size_t i = 0; i < n; i++) {
        sym[i] = t->byte_id[p[i]];
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        uint32_t r = tok_merge_rank(t, sym[i], sym[i + 1], &m);
        if (r != TOK_NO_RANK) heap_push(heap, &hn, ((uint64_t)r << 32) | i);
    }
    while (hn) {
        uint64_t k = heap_pop(heap, &hn);
        uint32_t r = (uint32_t)(k >> 32);
        int32_t i = (int32_t)(uint32_t)k;
        int32_t j = next[i];
        if (sym[i] < 0 || j < 0) continue;
        if (tok_merge_rank(t, sym[i], sym[j], &m) != r) continue; /* stale entry */
        sym[i] = m;
        sym[j] = -1;
        next[i] = next[j];
        if (next[j] >= 0) prev[next[j]] = i;
        if (prev[i] >= 0) {
            uint32_t r2 = tok_merge_rank(t, sym[prev[i]], sym[i], &m);
            if (r2 != TOK_NO_RANK) heap_push(heap, &hn, ((uint64_t)r2 << 32) | (uint32_t)prev[i]);
        }
        if (next[i] >= 0) {
            uint32_t r2 = tok_merge_rank(t, sym[i], sym[next[i]], &m);
            if (r2 != TOK_NO_RANK) heap_push(heap, &hn, ((uint64_t)r2 << 32) | (uint32_t)i);
        }
    }
    size_t o = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) out[o++] = sym[i];
    *nout = o;
    return 0;
}

int gpt2c_tok_bpe_piece(const struct gpt2c_tokenizer *t, tok_ws *w, const uint8_t *p, size_t n, int use_vocab,
                  int32_t **out, size_t *nout, size_t *cap) {
    if (reserve(out, cap, *nout + n)) return -1;
    int32_t *dst = *out + *nout;
    if (n == 1) {
        dst[0] = t->byte_id[p[0]];
        *nout += 1;
        return 0;
    }
    uint64_t h = tok_hash_bytes(p, n);
    if (use_vocab) {
        size_t i = (size_t)h & t->vmask;
        for (;;) {
            uint32_t s = t->vmap[i];
            if (!s) break;
            uint32_t id = s - 1;
            if (t->len[id] == n && memcmp(t->blob + t->off[id], p, n) == 0) {
                dst[0] = (int32_t)id;
                *nout += 1;
                return 0;
            }
            i = (i + 1) & t->vmask;
        }
    }
    cache_ent *ce = NULL;
    if (use_vocab && n <= CACHE_MAXB) {
        ce = &w->cache[(h >> 40) & (CACHE_SLOTS - 1)];
        if (ce->h == h && ce->n == n && memcmp(ce->bytes, p, n) == 0) {
            memcpy(dst, ce->ids, ce->nids * sizeof *dst);
            *nout += ce->nids;
            return 0;
        }
    }
    size_t k;
    if (n <= SMALL) {
        k = merge_small(t, p, n, dst);
    } else if (merge_large(t, w, p, n, dst, &k)) {
        return -1;
    }
    if (ce && k <= CACHE_MAXIDS) {
        ce->h = h;
        ce->n = (uint16_t)n;
        ce->nids = (uint8_t)k;
        memcpy(ce->bytes, p, n);
        memcpy(ce->ids, dst, k * sizeof *dst);
    }
    *nout += k;
    return 0;
}
