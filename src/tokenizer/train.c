/* The BPE trainer.
 *
 * 1. feed: pre-tokenize each text with GPT-2's pattern and count the distinct
 *    pieces ("words") in a hash map.
 * 2. train: every word becomes a sequence of byte ids; a hash map holds the
 *    count of every adjacent pair (weighted by word counts) and the words it
 *    occurs in. A max-heap (count, then smaller left id, then smaller right id)
 *    picks the next merge; only the words holding that pair are rewritten and
 *    only their neighbouring pair counts change (no recount per merge). Heap
 *    entries are checked against the live count when popped.
 * 3. write vocab.json + merges.txt (atomically).
 * If a merge produces bytes that are already a token, that id is reused (as
 * Hugging Face's trainer does), so every vocabulary entry is distinct. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "gpt2c/fileio.h"
#include "tokenizer/tok_internal.h"

typedef struct {
    uint64_t h;
    size_t off; /* into bytes arena */
    uint32_t len;
    uint64_t count;
} word;

struct gpt2c_bpe_trainer {
    uint8_t *arena;
    size_t arena_n, arena_cap;
    word *words;
    size_t nwords, words_cap;
    uint32_t *wmap; /* word index + 1 */
    size_t wmask;
    size_t bytes_fed, pieces_fed;
};

static size_t pow2_at_least(size_t n) {
    size_t p = 16;
    while (p < n) p <<= 1;
    return p;
}

gpt2c_status gpt2c_bpe_trainer_new(gpt2c_bpe_trainer **out) {
    *out = NULL;
    gpt2c_bpe_trainer *t = calloc(1, sizeof *t);
    if (!t) return gpt2c_fail(GPT2C_ERR_NOMEM, "bpe-train: out of memory");
    t->wmask = 1023;
    t->wmap = calloc(t->wmask + 1, sizeof *t->wmap);
    if (!t->wmap) {
        free(t);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "bpe-train: out of memory");
    }
    *out = t;
    return GPT2C_OK;
}

void gpt2c_bpe_trainer_free(gpt2c_bpe_trainer *t) {
    if (!t) return;
    free(t->arena);
    free(t->words);
    free(t->wmap);
    free(t);
}

static int grow_wmap(gpt2c_bpe_trainer *t) {
    size_t cap = (t->wmask + 1) * 2;
    uint32_t *m = calloc(cap, sizeof *m);
    if (!m) return -1;
    for (size_t i = 0; i < t->nwords; i++) {
        size_t j = (size_t)t->words[i].h & (cap - 1);
        while (m[j]) j = (j + 1) & (cap - 1);
        m[j] = (uint32_t)i + 1;
    }
    free(t->wmap);
    t->wmap = m;
    t->wmask = cap - 1;
    return 0;
}

static int add_piece(gpt2c_bpe_trainer *t, const uint8_t *p, size_t n) {
    uint64_t h = tok_hash_bytes(p, n);
    size_t j = (size_t)h & t->wmask;
    while (t->wmap[j]) {
        word *w = &t->words[t->wmap[j] - 1];
        if (w->h == h && w->len == n && memcmp(t->arena + w->off, p, n) == 0) {
            w->count++;
            return 0;
        }
        j = (j + 1) & t->wmask;
    }
    if (t->nwords >= UINT32_MAX - 1 || n > UINT32_MAX) return -1;
    if (t->arena_n + n > t->arena_cap) {
        size_t c = t->arena_cap ? t->arena_cap : (1 << 20);
        while (c < t->arena_n + n) c *= 2;
        uint8_t *a = realloc(t->arena, c);
        if (!a) return -1;
        t->arena = a;
        t->arena_cap = c;
    }
    if (t->nwords == t->words_cap) {
        size_t c = t->words_cap ? 2 * t->words_cap : 4096;
        word *w = realloc(t->words, c * sizeof *w);
        if (!w) return -1;
        t->words = w;
        t->words_cap = c;
    }
    memcpy(t->arena + t->arena_n, p, n);
    t->words[t->nwords] = (word){h, t->arena_n, (uint32_t)n, 1};
    t->arena_n += n;
    t->wmap[j] = (uint32_t)++t->nwords;
    if (t->nwords * 2 > t->wmask + 1 && grow_wmap(t)) return -1;
    return 0;
}

gpt2c_status gpt2c_bpe_trainer_feed(gpt2c_bpe_trainer *t, const char *bytes, size_t n) {
    if (!gpt2c_tok_pretok_ready())
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "bpe-train: needs utf8proc's Unicode classes: install libutf8proc-dev and rebuild");
    const uint8_t *s = (const uint8_t *)bytes;
    for (size_t pos = 0; pos < n;) {
        size_t e = gpt2c_tok_pretok_next(s, pos, n);
        if (add_piece(t, s + pos, e - pos)) return gpt2c_fail(GPT2C_ERR_NOMEM, "bpe-train: out of memory counting words");
        t->pieces_fed++;
        pos = e;
    }
    t->bytes_fed += n;
    return GPT2C_OK;
}

/* ---- training state ---- */
typedef struct {
    int32_t l, r;
    int64_t count;
    uint32_t *w; /* words holding the pair (may repeat or be stale) */
    uint32_t nw, capw;
    int done;
} pair;

typedef struct {
    int64_t count;
    uint32_t p;
} hent;

typedef struct {
    pair *pairs;
    size_t npairs, pcap;
    uint32_t *pmap; /* pair index + 1 */
    size_t pmask;
    hent *heap;
    size_t nheap, hcap;
    int32_t *sym;      /* every word's symbols, back to back */
    size_t *soff;      /* word -> offset into sym */
    uint32_t *slen;    /* word -> current symbol count */
    uint32_t *stamp;   /* word -> last merge step that rewrote it */
    uint32_t *touched; /* pairs whose count rose during this merge */
    size_t ntouched, tcap;
    int oom;
} state;

static int heap_less(const state *s, hent a, hent b) { /* a before b? */
    if (a.count != b.count) return a.count > b.count;
    const pair *pa = &s->pairs[a.p], *pb = &s->pairs[b.p];
    if (pa->l != pb->l) return pa->l < pb->l;
    return pa->r < pb->r;
}

static void heap_push(state *s, uint32_t p) {
    if (s->nheap == s->hcap) {
        size_t c = s->hcap ? 2 * s->hcap : 4096;
        hent *h = realloc(s->heap, c * sizeof *h);
        if (!h) {
            s->oom = 1;
            return;
        }
        s->heap = h;
        s->hcap = c;
    }
    hent e = {s->pairs[p].count, p};
    size_t i = s->nheap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!heap_less(s, e, s->heap[up])) break;
        s->heap[i] = s->heap[up];
        i = up;
    }
    s->heap[i] = e;
}

static hent heap_pop(state *s) {
    hent top = s->heap[0], last = s->heap[--s->nheap];
    size_t i = 0, n = s->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_less(s, s->heap[c + 1], s->heap[c])) c++;
        if (!heap_less(s, s->heap[c], last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n) s->heap[i] = last;
    return top;
}

static uint32_t pair_get(state *s, int32_t l, int32_t r) {
    uint64_t key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
    size_t j = (size_t)tok_mix64(key) & s->pmask;
    while (s->pmap[j]) {
        pair *p = &s->pairs[s->pmap[j] - 1];
        if (p->l == l && p->r == r) return s->pmap[j] - 1;
        j = (j + 1) & s->pmask;
    }
    if (s->npairs == s->pcap) {
        size_t c = s->pcap ? 2 * s->pcap : 4096;
        pair *np = realloc(s->pairs, c * sizeof *np);
        if (!np) {
            s->oom = 1;
            return UINT32_MAX;
        }
        s->pairs = np;
        s->pcap = c;
    }
    uint32_t idx = (uint32_t)s->npairs++;
    s->pairs[idx] = (pair){l, r, 0, NULL, 0, 0, 0};
    s->pmap[j] = idx + 1;
    if (s->npairs * 2 > s->pmask + 1) {
        size_t cap = (s->pmask + 1) * 2;
        uint32_t *m = calloc(cap, sizeof *m);
        if (!m) {
            s->oom = 1;
            return idx;
        }
        for (size_t i = 0; i < s->npairs; i++) {
            uint64_t k = ((uint64_t)(uint32_t)s->pairs[i].l << 32) | (uint32_t)s->pairs[i].r;
            size_t q = (size_t)tok_mix64(k) & (cap - 1);
            while (m[q]) q = (q + 1) & (cap - 1);
            m[q] = (uint32_t)i + 1;
        }
        free(s->pmap);
        s->pmap = m;
        s->pmask = cap - 1;
    }
    return idx;
}

static void pair_add(state *s, int32_t l, int32_t r, int64_t c, uint32_t w) {
    uint32_t i = pair_get(s, l, r);
    if (i == UINT32_MAX) return;
    pair *p = &s->pairs[i];
    p->count += c;
    if (c > 0) {
        if (p->nw == 0 || p->w[p->nw - 1] != w) {
            if (p->nw == p->capw) {
                uint32_t cw = p->capw ? 2 * p->capw : 4;
                uint32_t *nw = realloc(p->w, cw * sizeof *nw);
                if (!nw) {
                    s->oom = 1;
                    return;
                }
                p->w = nw;
                p->capw = cw;
            }
            p->w[p->nw++] = w;
        }
        if (s->ntouched == s->tcap) {
            size_t ct = s->tcap ? 2 * s->tcap : 1024;
            uint32_t *nt = realloc(s->touched, ct * sizeof *nt);
            if (!nt) {
                s->oom = 1;
                return;
            }
            s->touched = nt;
            s->tcap = ct;
        }
        s->touched[s->ntouched++] = i;
    }
}

static void free_state(state *s) {
    for (size_t i = 0; i < s->npairs; i++) free(s->pairs[i].w);
    free(s->pairs);
    free(s->pmap);
    free(s->heap);
    free(s->sym);
    free(s->soff);
    free(s->slen);
    free(s->stamp);
    free(s->touched);
}

/* ---- vocabulary being built ---- */
typedef struct {
    uint8_t *bytes;
    size_t n, cap;
    size_t *off;
    uint32_t *len;
    int ntok, tcap;
    uint32_t *map; /* bytes -> id + 1 */
    size_t mask;
} vocab;

static int32_t vocab_find(const vocab *v, const uint8_t *p, size_t n, uint64_t h) {
    size_t j = (size_t)h & v->mask;
    while (v->map[j]) {
        uint32_t id = v->map[j] - 1;
        if (v->len[id] == n && memcmp(v->bytes + v->off[id], p, n) == 0) return (int32_t)id;
        j = (j + 1) & v->mask;
    }
    return -1;
}

static int32_t vocab_add(vocab *v, const uint8_t *p, size_t n) {
    uint64_t h = tok_hash_bytes(p, n);
    int32_t id = vocab_find(v, p, n, h);
    if (id >= 0) return id;
    if (v->n + n > v->cap) {
        size_t c = v->cap ? v->cap : 4096;
        while (c < v->n + n) c *= 2;
        uint8_t *b = realloc(v->bytes, c);
        if (!b) return -2;
        v->bytes = b;
        v->cap = c;
    }
    if (v->ntok == v->tcap) return -2; /* sized up front */
    memcpy(v->bytes + v->n, p, n);
    v->off[v->ntok] = v->n;
    v->len[v->ntok] = (uint32_t)n;
    v->n += n;
    size_t j = (size_t)h & v->mask;
    while (v->map[j]) j = (j + 1) & v->mask;
    v->map[j] = (uint32_t)v->ntok + 1;
    return v->ntok++;
}

/* ---- output ---- */
static gpt2c_status write_symbols(gpt2c_atomic *a, const uint8_t *p, size_t n, int json) {
    char buf[512];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o > sizeof buf - 8) {
            GPT2C_TRY(gpt2c_atomic_write(a, buf, o));
            o = 0;
        }
        if (json && (p[i] == '"' || p[i] == '\\')) buf[o++] = '\\';
        o += gpt2c_tok_bytes_to_symbols(p + i, 1, buf + o);
    }
    return gpt2c_atomic_write(a, buf, o);
}

static gpt2c_status write_outputs(const vocab *v, const int32_t (*merges)[2], int nmerges, const char *dir) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return gpt2c_fail(GPT2C_ERR_IO, "%s: cannot create the output directory: %s", dir, strerror(errno));
    size_t n = strlen(dir) + 32;
    char *path = malloc(n);
    if (!path) return gpt2c_fail(GPT2C_ERR_NOMEM, "bpe-train: out of memory");
    gpt2c_atomic a;
    snprintf(path, n, "%s/merges.txt", dir);
    gpt2c_status st = gpt2c_atomic_open(&a, path);
    if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, "#version: 0.2\n", 14);
    for (int i = 0; i < nmerges && st == GPT2C_OK; i++) {
        int32_t l = merges[i][0], r = merges[i][1];
        st = write_symbols(&a, v->bytes + v->off[l], v->len[l], 0);
        if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, " ", 1);
        if (st == GPT2C_OK) st = write_symbols(&a, v->bytes + v->off[r], v->len[r], 0);
        if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, "\n", 1);
    }
    if (st == GPT2C_OK) st = gpt2c_atomic_commit(&a);
    else gpt2c_atomic_abort(&a);
    if (st == GPT2C_OK) {
        snprintf(path, n, "%s/vocab.json", dir);
        st = gpt2c_atomic_open(&a, path);
        if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, "{", 1);
        char num[64];
        for (int id = 0; id < v->ntok && st == GPT2C_OK; id++) {
            st = gpt2c_atomic_write(&a, id ? ",\n\"" : "\n\"", id ? 3 : 2);
            if (st == GPT2C_OK) st = write_symbols(&a, v->bytes + v->off[id], v->len[id], 1);
            int k = snprintf(num, sizeof num, "\": %d", id);
            if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, num, (size_t)k);
        }
        int k = snprintf(num, sizeof num, ",\n\"%s\": %d\n}\n", TOK_EOT_STRING, v->ntok);
        if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, num, (size_t)k);
        if (st == GPT2C_OK) st = gpt2c_atomic_commit(&a);
        else gpt2c_atomic_abort(&a);
    }
    free(path);
    return st;
}

gpt2c_status gpt2c_bpe_trainer_train(gpt2c_bpe_trainer *t, int vocab_size, const char *out_dir,
                                     gpt2c_bpe_stats *stats) {
    if (vocab_size < 257 || vocab_size > (1 << 24))
        return gpt2c_fail(GPT2C_ERR_ARG, "bpe-train: vocabulary size %d outside [257, %d] (256 bytes + EOT at least)",
                          vocab_size, 1 << 24);
    state s = {0};
    vocab v = {0};
    int32_t (*merges)[2] = NULL;
    int nmerges = 0, mcap = vocab_size;
    gpt2c_status st = GPT2C_OK;
    size_t nw = t->nwords, total = t->arena_n;
    s.pmask = 4095;
    s.pmap = calloc(s.pmask + 1, sizeof *s.pmap);
    s.sym = malloc((total ? total : 1) * sizeof *s.sym);
    s.soff = malloc((nw ? nw : 1) * sizeof *s.soff);
    s.slen = malloc((nw ? nw : 1) * sizeof *s.slen);
    s.stamp = calloc(nw ? nw : 1, sizeof *s.stamp);
    v.tcap = vocab_size;
    v.off = malloc((size_t)vocab_size * sizeof *v.off);
    v.len = malloc((size_t)vocab_size * sizeof *v.len);
    v.mask = pow2_at_least((size_t)vocab_size * 2) - 1;
    v.map = calloc(v.mask + 1, sizeof *v.map);
    merges = malloc((size_t)vocab_size * sizeof *merges);
    if (!s.pmap || !s.sym || !s.soff || !s.slen || !s.stamp || !v.off || !v.len || !v.map || !merges) {
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "bpe-train: out of memory");
        goto done;
    }
    for (int b = 0; b < 256; b++) {
        uint8_t c = (uint8_t)b;
        vocab_add(&v, &c, 1);
    }
    for (size_t i = 0; i < nw; i++) {
        const word *w = &t->words[i];
        s.soff[i] = w->off;
        s.slen[i] = w->len;
        for (uint32_t k = 0; k < w->len; k++) s.sym[w->off + k] = t->arena[w->off + k];
        for (uint32_t k = 0; k + 1 < w->len; k++)
            pair_add(&s, s.sym[w->off + k], s.sym[w->off + k + 1], (int64_t)w->count, (uint32_t)i);
    }
    for (size_t i = 0; i < s.npairs; i++) heap_push(&s, (uint32_t)i);
    s.ntouched = 0;
    uint8_t *cat = NULL;
    size_t catcap = 0;
    while (v.ntok < vocab_size - 1 && s.nheap && !s.oom) {
        hent e = heap_pop(&s);
        pair *p = &s.pairs[e.p];
        if (p->done || p->count <= 0) continue;
        if (e.count != p->count) { /* stale: requeue with the live count */
            heap_push(&s, e.p);
            continue;
        }
        int32_t a = p->l, b = p->r;
        size_t need = v.len[a] + v.len[b];
        if (need > catcap) {
            uint8_t *c2 = realloc(cat, need);
            if (!c2) {
                s.oom = 1;
                break;
            }
            cat = c2;
            catcap = need;
        }
        memcpy(cat, v.bytes + v.off[a], v.len[a]);
        memcpy(cat + v.len[a], v.bytes + v.off[b], v.len[b]);
        int32_t m = vocab_add(&v, cat, need);
        if (m < 0) {
            s.oom = 1;
            break;
        }
        if (nmerges == mcap) { /* reused ids can make merges outnumber new tokens */
            int32_t(*nm)[2] = realloc(merges, (size_t)mcap * 2 * sizeof *merges);
            if (!nm) {
                s.oom = 1;
                break;
            }
            merges = nm;
            mcap *= 2;
        }
        merges[nmerges][0] = a;
        merges[nmerges][1] = b;
        nmerges++;
        p->done = 1;
        uint32_t step = (uint32_t)nmerges;
        s.ntouched = 0;
        /* the word list may grow while we walk it (a == b cases): copy its length first */
        uint32_t nlist = p->nw;
        for (uint32_t k = 0; k < nlist; k++) {
            uint32_t wi = s.pairs[e.p].w[k];
            if (s.stamp[wi] == step) continue;
            s.stamp[wi] = step;
            int64_t c = (int64_t)t->words[wi].count;
            int32_t *sym = s.sym + s.soff[wi];
            uint32_t len = s.slen[wi], o = 0;
            for (uint32_t i = 0; i < len; i++) {
                if (i + 1 < len && sym[i] == a && sym[i + 1] == b) {
                    if (o > 0) {
                        pair_add(&s, sym[o - 1], a, -c, wi);
                        pair_add(&s, sym[o - 1], m, c, wi);
                    }
                    if (i + 2 < len) {
                        pair_add(&s, b, sym[i + 2], -c, wi);
                        pair_add(&s, m, sym[i + 2], c, wi);
                    }
                    pair_add(&s, a, b, -c, wi);
                    sym[o++] = m;
                    i++;
                } else {
                    sym[o++] = sym[i];
                }
            }
            s.slen[wi] = o;
        }
        free(s.pairs[e.p].w);
        s.pairs[e.p].w = NULL;
        s.pairs[e.p].nw = s.pairs[e.p].capw = 0;
        for (size_t k = 0; k < s.ntouched; k++)
            if (!s.pairs[s.touched[k]].done) heap_push(&s, s.touched[k]);
    }
    free(cat);
    if (s.oom) {
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "bpe-train: out of memory while merging");
        goto done;
    }
    st = write_outputs(&v, (const int32_t(*)[2])merges, nmerges, out_dir);
    if (st == GPT2C_OK && stats) {
        stats->bytes = t->bytes_fed;
        stats->words = t->pieces_fed;
        stats->unique_words = t->nwords;
        stats->merges = nmerges;
        stats->vocab_size = v.ntok + 1;
    }
done:
    free_state(&s);
    free(v.bytes);
    free(v.off);
    free(v.len);
    free(v.map);
    free(merges);
    return st;
}

gpt2c_status gpt2c_bpe_train_files(const char *const *files, int nfiles, int vocab_size, const char *out_dir,
                                   gpt2c_bpe_stats *stats) {
    gpt2c_bpe_trainer *t;
    GPT2C_TRY(gpt2c_bpe_trainer_new(&t));
    gpt2c_status st = GPT2C_OK;
    for (int i = 0; i < nfiles && st == GPT2C_OK; i++) {
        void *data;
        size_t n;
        st = gpt2c_read_file(files[i], &data, &n);
        if (st == GPT2C_OK) {
            st = gpt2c_bpe_trainer_feed(t, data, n);
            free(data);
        }
    }
    if (st == GPT2C_OK) st = gpt2c_bpe_trainer_train(t, vocab_size, out_dir, stats);
    gpt2c_bpe_trainer_free(t);
    return st;
}
