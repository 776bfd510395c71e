/* Loading a vocabulary: encoder.json / vocab.json (token -> id, parsed with
 * jansson) and vocab.bpe / merges.txt (one merge "left right" per line). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpt2c/fileio.h"
#include "tokenizer/tok_internal.h"

#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>
#endif

void gpt2c_tokenizer_free(gpt2c_tokenizer *t) {
    if (!t) return;
    free(t->blob);
    free(t->off);
    free(t->len);
    free(t->vmap);
    free(t->mkey);
    free(t->mrank);
    free(t->mid);
    free(t);
}

int gpt2c_tokenizer_vocab_size(const gpt2c_tokenizer *t) { return t ? t->n_vocab : 0; }
int gpt2c_tokenizer_eot(const gpt2c_tokenizer *t) { return t ? t->eot : -1; }

/* the loaders need jansson for the vocabulary JSON */
#ifdef GPT2C_HAVE_JANSSON
static size_t pow2_at_least(size_t n) {
    size_t p = 16;
    while (p < n) p <<= 1;
    return p;
}

/* Byte-level symbols (UTF-8) -> raw bytes. out has room for n bytes. Returns
 * the byte count, or -1 with *bad set to the offending code point. */
static long symbols_to_bytes(const char *s, size_t n, uint8_t *out, uint32_t *bad) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        uint8_t c = (uint8_t)s[i];
        uint32_t cp;
        if (c < 0x80) {
            cp = c;
            i += 1;
        } else if ((c & 0xE0) == 0xC0 && i + 1 < n) {
            cp = ((c & 0x1Fu) << 6) | ((uint8_t)s[i + 1] & 0x3Fu);
            i += 2;
        } else {
            /* byte-level symbols are all below U+0800: anything longer is foreign */
            *bad = c;
            if ((c & 0xF0) == 0xE0 && i + 2 < n)
                *bad = ((c & 0x0Fu) << 12) | (((uint8_t)s[i + 1] & 0x3Fu) << 6) | ((uint8_t)s[i + 2] & 0x3Fu);
            return -1;
        }
        int b = gpt2c_tok_cp_to_byte(cp);
        if (b < 0) {
            *bad = cp;
            return -1;
        }
        out[o++] = (uint8_t)b;
    }
    return (long)o;
}

/* Builds the bytes -> id table (every id but EOT). */
static gpt2c_status build_vmap(gpt2c_tokenizer *t, const char *path) {
    size_t cap = pow2_at_least((size_t)t->n_vocab * 2);
    t->vmap = calloc(cap, sizeof *t->vmap);
    if (!t->vmap) return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    t->vmask = cap - 1;
    for (int id = 0; id < t->n_vocab; id++) {
        if (id == t->eot) continue;
        const uint8_t *p = (const uint8_t *)t->blob + t->off[id];
        size_t i = (size_t)tok_hash_bytes(p, t->len[id]) & t->vmask;
        while (t->vmap[i]) {
            uint32_t o = t->vmap[i] - 1;
            if (t->len[o] == t->len[id] && memcmp(t->blob + t->off[o], p, t->len[id]) == 0)
                return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: ids %u and %d are the same token", path, o, id);
            i = (i + 1) & t->vmask;
        }
        t->vmap[i] = (uint32_t)id + 1;
    }
    for (int b = 0; b < 256; b++) {
        uint8_t c = (uint8_t)b;
        t->byte_id[b] = tok_lookup_bytes(t, &c, 1);
        if (t->byte_id[b] < 0)
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: no token for byte 0x%02x (not a byte-level BPE vocabulary)", path, b);
    }
    return GPT2C_OK;
}

static gpt2c_status load_vocab_json(gpt2c_tokenizer *t, const char *path) {
    void *buf;
    size_t size;
    GPT2C_TRY(gpt2c_read_file(path, &buf, &size));
    json_error_t err;
    json_t *root = json_loadb(buf, size, JSON_REJECT_DUPLICATES, &err);
    free(buf);
    if (!root) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s:%d: invalid JSON: %s", path, err.line, err.text);
    gpt2c_status st = GPT2C_OK;
    if (!json_is_object(root)) {
        st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: not a JSON object (expected {\"token\": id, ...})", path);
        goto done;
    }
    size_t n = json_object_size(root);
    if (n < 256 || n > 0x7fffffff) {
        st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: %zu tokens (a byte-level vocabulary has at least 256)", path, n);
        goto done;
    }
    t->n_vocab = (int)n;
    t->eot = -1;
    t->off = malloc(n * sizeof *t->off);
    t->len = malloc(n * sizeof *t->len);
    size_t total = 0;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) total += strlen(key) + 1;
    if (total >= UINT32_MAX) { /* token offsets into the blob are 32-bit */
        st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: %zu bytes of token strings: more than 4 GiB is not a vocabulary", path, total);
        goto done;
    }
    t->blob = malloc(total + 1);
    if (!t->off || !t->len || !t->blob) {
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (size_t i = 0; i < n; i++) t->off[i] = UINT32_MAX;
    size_t pos = 0;
    json_object_foreach(root, key, val) {
        if (!json_is_integer(val)) {
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: token \"%.40s\": id is not an integer", path, key);
            goto done;
        }
        json_int_t id = json_integer_value(val);
        if (id < 0 || (size_t)id >= n) {
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: token \"%.40s\": id %lld out of range [0, %zu)", path, key,
                            (long long)id, n);
            goto done;
        }
        if (t->off[id] != UINT32_MAX) {
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: id %lld is used twice (again by \"%.40s\")", path, (long long)id,
                            key);
            goto done;
        }
        size_t klen = strlen(key);
        if (strcmp(key, TOK_EOT_STRING) == 0) {
            t->eot = (int)id;
            memcpy(t->blob + pos, key, klen);
            t->off[id] = (uint32_t)pos;
            t->len[id] = (uint32_t)klen;
            pos += klen;
        } else {
            uint32_t bad = 0;
            long nb = symbols_to_bytes(key, klen, (uint8_t *)t->blob + pos, &bad);
            if (nb <= 0) {
                st = nb == 0 ? gpt2c_fail(GPT2C_ERR_FORMAT, "%s: id %lld is an empty token", path, (long long)id)
                             : gpt2c_fail(GPT2C_ERR_FORMAT,
                                          "%s: token \"%.40s\" (id %lld) has U+%04X, not a byte-level BPE symbol",
                                          path, key, (long long)id, bad);
                goto done;
            }
            t->off[id] = (uint32_t)pos;
            t->len[id] = (uint32_t)nb;
            pos += (size_t)nb;
        }
        t->blob[pos++] = 0;
    }
    st = build_vmap(t, path);
done:
    json_decref(root);
    return st;
}

/* Id of a token written in byte-level symbols, or -1. */
static int32_t symbol_id(const gpt2c_tokenizer *t, const char *s, size_t n, uint8_t *scratch) {
    uint32_t bad;
    long nb = symbols_to_bytes(s, n, scratch, &bad);
    if (nb <= 0) return -1;
    return tok_lookup_bytes(t, scratch, (size_t)nb);
}

static gpt2c_status load_merges(gpt2c_tokenizer *t, const char *path) {
    void *buf;
    size_t size;
    GPT2C_TRY(gpt2c_read_file(path, &buf, &size));
    char *s = buf;
    size_t lines = 1;
    for (size_t i = 0; i < size; i++) lines += s[i] == '\n';
    size_t cap = pow2_at_least(lines * 2);
    t->mkey = malloc(cap * sizeof *t->mkey);
    t->mrank = malloc(cap * sizeof *t->mrank);
    t->mid = malloc(cap * sizeof *t->mid);
    uint8_t *scratch = malloc(size + 1);
    gpt2c_status st = GPT2C_OK;
    if (!t->mkey || !t->mrank || !t->mid || !scratch) {
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    memset(t->mkey, 0xFF, cap * sizeof *t->mkey);
    t->mmask = cap - 1;
    size_t lineno = 0, rank = 0;
    for (size_t i = 0; i < size;) {
        size_t e = i;
        while (e < size && s[e] != '\n') e++;
        size_t next = e + 1;
        lineno++;
        if (e > i && s[e - 1] == '\r') e--;
        if (lineno == 1 && e - i >= 8 && memcmp(s + i, "#version", 8) == 0) {
            i = next;
            continue;
        }
        if (e == i) { /* blank line (a trailing newline) */
            i = next;
            continue;
        }
        const char *sp = memchr(s + i, ' ', e - i);
        if (!sp || sp == s + i || sp + 1 == s + e || memchr(sp + 1, ' ', (size_t)(s + e - sp - 1))) {
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s:%zu: expected two tokens separated by one space, got \"%.*s\"",
                            path, lineno, (int)(e - i > 60 ? 60 : e - i), s + i);
            goto done;
        }
        size_t ll = (size_t)(sp - (s + i)), rl = (size_t)(s + e - sp - 1);
        int32_t l = symbol_id(t, s + i, ll, scratch);
        int32_t r = symbol_id(t, sp + 1, rl, scratch);
        if (l < 0 || r < 0) {
            int left_bad = l < 0;
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s:%zu: merge names unknown token \"%.*s\"", path, lineno,
                            (int)(left_bad ? ll : rl), left_bad ? s + i : sp + 1);
            goto done;
        }
        /* the merged token: concatenated bytes */
        size_t nl = t->len[l], nr = t->len[r];
        memcpy(scratch, t->blob + t->off[l], nl);
        memcpy(scratch + nl, t->blob + t->off[r], nr);
        int32_t merged = tok_lookup_bytes(t, scratch, nl + nr);
        if (merged < 0) {
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s:%zu: merge result \"%.*s%.*s\" is not in the vocabulary", path,
                            lineno, (int)ll, s + i, (int)rl, sp + 1);
            goto done;
        }
        uint64_t key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
        size_t h = (size_t)tok_mix64(key) & t->mmask;
        while (t->mkey[h] != TOK_EMPTY_KEY && t->mkey[h] != key) h = (h + 1) & t->mmask;
        if (t->mkey[h] == TOK_EMPTY_KEY) { /* a repeated merge keeps its first rank */
            t->mkey[h] = key;
            t->mrank[h] = (uint32_t)rank;
            t->mid[h] = merged;
        }
        rank++;
        i = next;
    }
    t->n_merges = rank;
done:
    free(scratch);
    free(buf);
    return st;
}

#endif

gpt2c_status gpt2c_tokenizer_load_files(const char *vocab_json, const char *merges, gpt2c_tokenizer **out) {
    *out = NULL;
#ifndef GPT2C_HAVE_JANSSON
    (void)merges;
    return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                      "%s: reading a vocabulary needs jansson: install libjansson-dev (and pkg-config) and rebuild",
                      vocab_json);
#else
    gpt2c_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", vocab_json);
    gpt2c_status st = load_vocab_json(t, vocab_json);
    if (st == GPT2C_OK) st = load_merges(t, merges);
    if (st != GPT2C_OK) {
        gpt2c_tokenizer_free(t);
        return st;
    }
    *out = t;
    return GPT2C_OK;
#endif
}

static int is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

gpt2c_status gpt2c_tokenizer_load(const char *dir, gpt2c_tokenizer **out) {
    *out = NULL;
    size_t n = strlen(dir) + 32;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) {
        free(a);
        free(b);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", dir);
    }
    gpt2c_status st;
    snprintf(a, n, "%s/encoder.json", dir);
    snprintf(b, n, "%s/vocab.bpe", dir);
    if (!is_file(a) || !is_file(b)) {
        snprintf(a, n, "%s/vocab.json", dir);
        snprintf(b, n, "%s/merges.txt", dir);
    }
    if (!is_file(a) || !is_file(b)) {
        struct stat sb;
        if (stat(dir, &sb) != 0)
            st = gpt2c_fail(GPT2C_ERR_IO, "%s: vocabulary directory: %s", dir, strerror(errno));
        else
            st = gpt2c_fail(GPT2C_ERR_IO, "%s: no encoder.json + vocab.bpe nor vocab.json + merges.txt here", dir);
    } else {
        st = gpt2c_tokenizer_load_files(a, b, out);
    }
    free(a);
    free(b);
    return st;
}
