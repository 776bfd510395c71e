/* Internals shared by the tokenizer's files: the loaded vocabulary, its hash
 * tables, the byte <-> unicode map and the pre-tokenizer. Not public API. */
#ifndef GPT2C_TOK_INTERNAL_H
#define GPT2C_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpt2c/tokenizer.h"

#define TOK_EOT_STRING "<|endoftext|>"
#define TOK_NO_RANK UINT32_MAX
#define TOK_EMPTY_KEY UINT64_MAX

struct gpt2c_tokenizer {
    int n_vocab;
    int eot;               /* id of <|endoftext|> or -1 */
    char *blob;            /* every token's bytes, back to back (NUL after each) */
    uint32_t *off, *len;   /* token i = blob[off[i] .. off[i]+len[i]) */
    uint32_t *vmap;        /* bytes -> id: open addressing, slot = id + 1, 0 = empty */
    size_t vmask;
    uint64_t *mkey;        /* (left << 32 | right) -> rank, merged id */
    uint32_t *mrank;
    int32_t *mid;
    size_t mmask;
    size_t n_merges;
    int32_t byte_id[256];  /* id of the single-byte token for each byte */
};

/* ---- hashing ---- */
static inline uint64_t tok_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint64_t tok_hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t v = 0;
        memcpy(&v, p, n);
        h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    return tok_mix64(h);
}

/* Id of a byte string, or -1 (the EOT token is not in this map). */
static inline int32_t tok_lookup_bytes(const struct gpt2c_tokenizer *t, const uint8_t *p, size_t n) {
    size_t i = (size_t)tok_hash_bytes(p, n) & t->vmask;
    for (;;) {
        uint32_t s = t->vmap[i];
        if (!s) return -1;
        uint32_t id = s - 1;
        if (t->len[id] == n && memcmp(t->blob + t->off[id], p, n) == 0) return (int32_t)id;
        i = (i + 1) & t->vmask;
    }
}

/* Rank of merging (l, r), TOK_NO_RANK if none; *merged gets the new id. */
static inline uint32_t tok_merge_rank(const struct gpt2c_tokenizer *t, int32_t l, int32_t r, int32_t *merged) {
    uint64_t key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
    size_t i = (size_t)tok_mix64(key) & t->mmask;
    for (;;) {
        uint64_t k = t->mkey[i];
        if (k == key) {
            *merged = t->mid[i];
            return t->mrank[i];
        }
        if (k == TOK_EMPTY_KEY) return TOK_NO_RANK;
        i = (i + 1) & t->mmask;
    }
}

/* ---- byte-level map (bytemap.c) ----
 * GPT-2 shows every byte as a printable code point: byte -> U+0021..U+0143. */
void gpt2c_tok_bytemap(uint32_t byte_to_cp[256]);
/* Inverse: code point -> byte, or -1 when cp is not a byte-level symbol. */
int gpt2c_tok_cp_to_byte(uint32_t cp);
/* Writes the UTF-8 of the byte-level form of p[0..n) into out (up to 2n bytes); returns its length. */
size_t gpt2c_tok_bytes_to_symbols(const uint8_t *p, size_t n, char *out);

/* ---- pre-tokenizer (pretok.c) ---- */
enum { TOK_C_LETTER = 0, TOK_C_NUMBER = 1, TOK_C_SPACE = 2, TOK_C_OTHER = 3 };
/* 1 when Unicode classes are available (utf8proc); prepares the tables. */
int gpt2c_tok_pretok_ready(void);
/* End of the piece that starts at s[i] (i < lim); pieces never look past lim. */
size_t gpt2c_tok_pretok_next(const uint8_t *s, size_t i, size_t lim);
/* Class of the character at s[i] and its length in bytes (invalid byte: OTHER, 1). */
int gpt2c_tok_class_at(const uint8_t *s, size_t i, size_t lim, size_t *clen);

/* ---- BPE on one piece (bpe.c) ---- */
typedef struct tok_ws tok_ws;
tok_ws *gpt2c_tok_ws_new(void);
void gpt2c_tok_ws_free(tok_ws *w);
/* Appends the ids of one piece to *out (grown with realloc); use_vocab: try
 * the whole piece as one token first (as tiktoken does). Returns 0 or -1 (no memory). */
int gpt2c_tok_bpe_piece(const struct gpt2c_tokenizer *t, tok_ws *w, const uint8_t *p, size_t n, int use_vocab,
                  int32_t **out, size_t *nout, size_t *cap);

#endif
