/* GPT-2's own vocabulary (skipped when the shared data is absent): known ids,
 * exact byte round trips on random bytes and random multi-script UTF-8,
 * parallel == serial, the whole-piece shortcut, and tinyshakespeare split as
 * llm.c does (32,768 validation + 305,260 training tokens). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/fileio.h"
#include "gpt2c/tokenizer.h"
#include "testutil.h"
#include "tokenizer/tok_internal.h"

static gpt2c_tokenizer *tok;

static int encode_is(const char *s, size_t n, int special, const int32_t *want, size_t nwant) {
    int32_t *ids;
    size_t nids;
    if (gpt2c_tokenizer_encode(tok, s, n, special, &ids, &nids) != GPT2C_OK) return 0;
    int ok = nids == nwant && (nids == 0 || memcmp(ids, want, nids * sizeof *ids) == 0);
    if (!ok) {
        fprintf(stderr, "  got:");
        for (size_t i = 0; i < nids; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    free(ids);
    return ok;
}

static void test_known(void) {
    CHECK(gpt2c_tokenizer_vocab_size(tok) == 50257);
    CHECK(gpt2c_tokenizer_eot(tok) == 50256);
    CHECK(encode_is("Hello world", 11, 0, (int32_t[]){15496, 995}, 2));
    CHECK(encode_is("hello world", 11, 0, (int32_t[]){31373, 995}, 2));
    CHECK(encode_is(" Hello World!", 13, 0, (int32_t[]){18435, 2159, 0}, 3));
    CHECK(encode_is("\n\n", 2, 0, (int32_t[]){628}, 1));
    CHECK(encode_is("", 0, 0, NULL, 0));
    CHECK(encode_is("<|endoftext|>", 13, 1, (int32_t[]){50256}, 1));
    CHECK(encode_is("<|endoftext|>", 13, 0, (int32_t[]){27, 91, 437, 1659, 5239, 91, 29}, 7));
    const char *p;
    size_t len;
    CHECK_OK(gpt2c_tokenizer_token_bytes(tok, 995, &p, &len));
    CHECK(len == 6 && memcmp(p, " world", 6) == 0);
}

/* Every token, merged from its bytes without the whole-piece shortcut, is itself. */
static void test_shortcut_consistent(void) {
    tok_ws *w = gpt2c_tok_ws_new();
    int32_t *out = NULL;
    size_t cap = 0, bad = 0;
    for (int id = 0; id < gpt2c_tokenizer_vocab_size(tok); id++) {
        if (id == gpt2c_tokenizer_eot(tok)) continue;
        const char *p;
        size_t len, n = 0;
        gpt2c_tokenizer_token_bytes(tok, id, &p, &len);
        if (gpt2c_tok_bpe_piece(tok, w, (const uint8_t *)p, len, 0, &out, &n, &cap) || n != 1 || out[0] != id) bad++;
    }
    CHECK_MSG(bad == 0, "%zu tokens do not merge back to themselves", bad);
    free(out);
    gpt2c_tok_ws_free(w);
}

static uint64_t rng = 0x1234567;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static size_t put_utf8(char *o, uint32_t c) {
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xC0 | (c >> 6)); o[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12)); o[1] = (char)(0x80 | ((c >> 6) & 0x3F)); o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18)); o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Random text: ASCII words and spaces, many scripts, Unicode spaces, emoji, and some raw bytes. */
static size_t random_text(char *o, size_t max, int raw) {
    static const uint32_t ranges[][2] = {{0x20, 0x7F}, {0x61, 0x7B}, {0x20, 0x21}, {0x9, 0xE}, {0x1C, 0x20},
                                         {0x80, 0x100}, {0x370, 0x400}, {0x400, 0x530}, {0x590, 0x700},
                                         {0x900, 0x980}, {0xE00, 0xE80}, {0x1680, 0x1681}, {0x2000, 0x2070},
                                         {0x3000, 0x3100}, {0x4E00, 0x9FA0}, {0xAC00, 0xD7A0}, {0x1F300, 0x1F700},
                                         {0x1D400, 0x1D800}, {0x27, 0x28}, {0x30, 0x3A}};
    size_t n = 0;
    while (n + 8 < max) {
        if (raw && rnd() % 8 == 0) {
            o[n++] = (char)(rnd() & 0xFF);
            continue;
        }
        const uint32_t *r = ranges[rnd() % (sizeof ranges / sizeof ranges[0])];
        uint32_t c = r[0] + rnd() % (r[1] - r[0]);
        if (c >= 0xD800 && c < 0xE000) continue;
        n += put_utf8(o + n, c);
    }
    return n;
}

static int roundtrip(const char *s, size_t n, int special) {
    int32_t *ids;
    size_t nids;
    char *back;
    size_t nb;
    if (gpt2c_tokenizer_encode(tok, s, n, special, &ids, &nids) != GPT2C_OK) return 0;
    int ok = gpt2c_tokenizer_decode(tok, ids, nids, &back, &nb) == GPT2C_OK && nb == n && memcmp(back, s, n) == 0;
    free(ids);
    if (ok) free(back);
    return ok;
}

static void test_roundtrips(void) {
    char buf[600];
    int bad = 0;
    for (int it = 0; it < 3000; it++) {
        size_t n;
        if (it % 3 == 0) {
            n = rnd() % 200;
            for (size_t i = 0; i < n; i++) buf[i] = (char)(rnd() & 0xFF);
        } else {
            n = random_text(buf, 16 + rnd() % 500, it % 3 == 2);
        }
        if (!roundtrip(buf, n, it & 1)) bad++;
    }
    CHECK_MSG(bad == 0, "%d random strings did not round-trip", bad);
    /* a long run of one character goes through the heap merge */
    char *run = malloc(100000);
    memset(run, 'a', 100000);
    CHECK(roundtrip(run, 100000, 0));
    free(run);
}

static void test_parallel(void) {
    size_t cap = 3 << 20, n = 0;
    char *text = malloc(cap);
    while (n + 1000 < cap) {
        n += random_text(text + n, 200, rnd() % 4 == 0);
        static const char *seps[] = {"\n", "\n\n", " \n", "\n  ", "<|endoftext|>", "\n<|endoftext|>\n"};
        const char *s = seps[rnd() % 6];
        memcpy(text + n, s, strlen(s));
        n += strlen(s);
    }
    for (int special = 0; special < 2; special++) {
        int32_t *a, *b;
        size_t na, nb;
        CHECK_OK(gpt2c_tokenizer_encode(tok, text, n, special, &a, &na));
        for (int th = 2; th <= 5; th += 3) {
            CHECK_OK(gpt2c_tokenizer_encode_parallel(tok, text, n, special, th, &b, &nb));
            CHECK_MSG(na == nb && memcmp(a, b, na * sizeof *a) == 0, "%d threads differ from one (special=%d)", th,
                      special);
            free(b);
        }
        free(a);
    }
    free(text);
}

static void test_shakespeare(const char *data) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tinyshakespeare/input.txt", data);
    void *text;
    size_t n;
    if (gpt2c_read_file(path, &text, &n) != GPT2C_OK) {
        printf("  (no tinyshakespeare: %s)\n", gpt2c_errmsg());
        return;
    }
    int32_t *ids, *ids4;
    size_t nids, nids4, docs;
    CHECK_OK(gpt2c_tokenizer_encode_docs(tok, text, n, 0, 1, &ids, &nids, &docs));
    CHECK_MSG(nids == 32768 + 305260, "%zu tokens, expected 338028 (32768 val + 305260 train)", nids);
    CHECK(ids[0] == 50256);
    CHECK_OK(gpt2c_tokenizer_encode_docs(tok, text, n, 0, 4, &ids4, &nids4, NULL));
    CHECK(nids4 == nids && memcmp(ids, ids4, nids * sizeof *ids) == 0);
    /* in two parts cut after a "\n\n": the same ids */
    const char *cut = strstr((char *)text + n / 2, "\n\n");
    size_t k = (size_t)(cut - (char *)text) + 2;
    int32_t *p1, *p2;
    size_t n1, n2;
    CHECK_OK(gpt2c_tokenizer_encode_docs(tok, text, k, 1, 2, &p1, &n1, NULL));
    CHECK_OK(gpt2c_tokenizer_encode_docs(tok, (char *)text + k, n - k, 0, 2, &p2, &n2, NULL));
    CHECK(n1 + n2 == nids && memcmp(p1, ids, n1 * sizeof *ids) == 0 && memcmp(p2, ids + n1, n2 * sizeof *ids) == 0);
    printf("  tinyshakespeare: %zu documents, %zu tokens\n", docs, nids);
    free(p1);
    free(p2);
    free(ids);
    free(ids4);
    free(text);
}

int main(void) {
    const char *data = tu_shared_data();
    if (!data) tu_skip("no shared data (GPT-2 vocabulary)");
#if !defined(GPT2C_HAVE_JANSSON) || !defined(GPT2C_HAVE_UTF8PROC)
    tu_skip("built without jansson or utf8proc");
#endif
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/gpt2-tokenizer", data);
    CHECK_OK(gpt2c_tokenizer_load(dir, &tok));
    if (!tok) return tu_finish("test_tokenizer_gpt2");
    test_known();
    test_shortcut_consistent();
    test_roundtrips();
    test_parallel();
    test_shakespeare(data);
    gpt2c_tokenizer_free(tok);
    return tu_finish("test_tokenizer_gpt2");
}
