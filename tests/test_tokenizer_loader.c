/* Vocabulary loading and its failures, on small synthetic vocabularies (no
 * shared data needed), plus the BPE trainer: deterministic, loadable, exact
 * round trips. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpt2c/fileio.h"
#include "gpt2c/tokenizer.h"
#include "testutil.h"
#include "tokenizer/tok_internal.h"

static char dir[256];

static void put(const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        perror(p);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* A vocab.json with the 256 byte tokens plus extra entries (JSON text, may be ""). */
static char *byte_vocab(const char *extra) {
    size_t cap = 8192 + strlen(extra);
    char *s = malloc(cap);
    size_t o = 0;
    o += (size_t)snprintf(s + o, cap - o, "{");
    for (int b = 0; b < 256; b++) {
        char sym[8];
        uint8_t c = (uint8_t)b;
        size_t k = gpt2c_tok_bytes_to_symbols(&c, 1, sym);
        sym[k] = 0;
        const char *esc = (b == '"' || b == '\\') ? "\\" : "";
        o += (size_t)snprintf(s + o, cap - o, "%s\"%s%s\": %d", b ? "," : "", esc, sym, b);
    }
    snprintf(s + o, cap - o, "%s}", extra);
    return s;
}

static gpt2c_status load_pair(const char *vocab, const char *merges, gpt2c_tokenizer **t) {
    put("vocab.json", vocab);
    put("merges.txt", merges);
    return gpt2c_tokenizer_load(dir, t);
}

static void test_loader(void) {
    gpt2c_tokenizer *t = NULL;
    char *v = byte_vocab(", \"he\": 256, \"ll\": 257, \"hell\": 258, \"<|endoftext|>\": 259");
    /* good: #version line, CRLF, trailing blank line */
    CHECK_OK(load_pair(v, "#version: 0.2\r\nh e\r\nl l\nhe ll\n\n", &t));
    if (t) {
        CHECK(gpt2c_tokenizer_vocab_size(t) == 260);
        CHECK(gpt2c_tokenizer_eot(t) == 259);
        int32_t *ids;
        size_t n;
        CHECK_OK(gpt2c_tokenizer_encode(t, "hello", 5, 0, &ids, &n));
        CHECK(n == 2 && ids[0] == 258 && ids[1] == 'o');
        free(ids);
        CHECK_OK(gpt2c_tokenizer_encode(t, "<|endoftext|>", 13, 1, &ids, &n));
        CHECK(n == 1 && ids[0] == 259);
        free(ids);
        CHECK_OK(gpt2c_tokenizer_encode(t, "<|endoftext|>", 13, 0, &ids, &n));
        CHECK(n > 1);
        free(ids);
        const char *p;
        size_t len;
        CHECK_OK(gpt2c_tokenizer_token_bytes(t, 258, &p, &len));
        CHECK(len == 4 && memcmp(p, "hell", 4) == 0);
        CHECK_FAILS(gpt2c_tokenizer_token_bytes(t, 260, &p, &len), GPT2C_ERR_RANGE);
        int32_t bad[2] = {1, -1};
        char *out;
        CHECK_FAILS(gpt2c_tokenizer_decode(t, bad, 2, &out, &len), GPT2C_ERR_RANGE);
        gpt2c_tokenizer_free(t);
        t = NULL;
    }
    /* no merges at all is a valid (byte-only) vocabulary */
    CHECK_OK(load_pair(v, "", &t));
    gpt2c_tokenizer_free(t);
    t = NULL;
    free(v);

    v = byte_vocab(", \"he\": 256");
    CHECK_FAILS(load_pair(v, "h x y\n", &t), GPT2C_ERR_FORMAT);         /* three fields */
    CHECK_FAILS(load_pair(v, "h e\nhe zz\n", &t), GPT2C_ERR_FORMAT);    /* unknown token */
    CHECK_FAILS(load_pair(v, "h e\nl l\n", &t), GPT2C_ERR_FORMAT);      /* result "ll" not in vocab */
    CHECK(strstr(gpt2c_errmsg(), "merges.txt:2") != NULL);
    free(v);
    v = byte_vocab(", \"he\": 255"); /* duplicate id */
    CHECK_FAILS(load_pair(v, "", &t), GPT2C_ERR_FORMAT);
    CHECK(strstr(gpt2c_errmsg(), "used twice") != NULL);
    free(v);
    v = byte_vocab(", \"he\": 900"); /* out of range */
    CHECK_FAILS(load_pair(v, "", &t), GPT2C_ERR_FORMAT);
    free(v);
    v = byte_vocab(", \"he\": \"x\""); /* not an integer */
    CHECK_FAILS(load_pair(v, "", &t), GPT2C_ERR_FORMAT);
    free(v);
    v = byte_vocab(", \"h\\u4e00\": 256"); /* not a byte-level symbol */
    CHECK_FAILS(load_pair(v, "", &t), GPT2C_ERR_FORMAT);
    free(v);
    v = byte_vocab(", \"he\": 256");
    v[strlen(v) / 2] = 0; /* truncated JSON */
    CHECK_FAILS(load_pair(v, "", &t), GPT2C_ERR_FORMAT);
    CHECK(strstr(gpt2c_errmsg(), "vocab.json") != NULL);
    free(v);
    CHECK_FAILS(load_pair("[1, 2, 3]", "", &t), GPT2C_ERR_FORMAT); /* not an object */
    CHECK_FAILS(load_pair("{\"a\": 0}", "", &t), GPT2C_ERR_FORMAT); /* too small */
    CHECK_FAILS(gpt2c_tokenizer_load("/nonexistent/vocab/dir", &t), GPT2C_ERR_IO);
    char p[512];
    snprintf(p, sizeof p, "%s/merges.txt", dir);
    unlink(p);
    CHECK_FAILS(gpt2c_tokenizer_load(dir, &t), GPT2C_ERR_IO); /* merges missing */
    CHECK(t == NULL);
}

static char *slurp(const char *path, size_t *n) {
    void *d = NULL;
    *n = 0;
    if (gpt2c_read_file(path, &d, n) != GPT2C_OK) return NULL;
    return d;
}

static void test_trainer(void) {
    /* a small corpus with several scripts */
    const char *parts[] = {"the quick brown fox jumps over the lazy dog. ", "It's 2024: don't they'll we've? ",
                           "Καλημέρα κόσμε, ", "Привет мир! ", "こんにちは世界。", "مرحبا بالعالم ", "\t\n  \n\n"};
    size_t cap = 200000, n = 0;
    char *text = malloc(cap);
    uint64_t rng = 42;
    while (n + 64 < cap) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        const char *s = parts[(rng >> 33) % 7];
        size_t l = strlen(s);
        if (n + l >= cap) break;
        memcpy(text + n, s, l);
        n += l;
    }
    char f[512];
    snprintf(f, sizeof f, "%s/corpus.txt", dir);
    FILE *fp = fopen(f, "wb");
    fwrite(text, 1, n, fp);
    fclose(fp);
    const char *files[] = {f};
    char out1[512], out2[512];
    snprintf(out1, sizeof out1, "%s/v1", dir);
    snprintf(out2, sizeof out2, "%s/v2", dir);
    gpt2c_bpe_stats st;
    CHECK_OK(gpt2c_bpe_train_files(files, 1, 400, out1, &st));
    CHECK(st.vocab_size <= 400 && st.merges > 0);
    CHECK_OK(gpt2c_bpe_train_files(files, 1, 400, out2, &st));
    char a[600], b[600];
    size_t na, nb;
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "merges.txt" : "vocab.json";
        snprintf(a, sizeof a, "%s/%s", out1, name);
        snprintf(b, sizeof b, "%s/%s", out2, name);
        char *x = slurp(a, &na), *y = slurp(b, &nb);
        CHECK_MSG(x && y && na == nb && memcmp(x, y, na) == 0, "%s differs between two runs", name);
        free(x);
        free(y);
    }
    gpt2c_tokenizer *t = NULL;
    CHECK_OK(gpt2c_tokenizer_load(out1, &t));
    if (t) {
        CHECK(gpt2c_tokenizer_eot(t) == gpt2c_tokenizer_vocab_size(t) - 1);
        int32_t *ids;
        size_t nids;
        CHECK_OK(gpt2c_tokenizer_encode(t, text, n, 0, &ids, &nids));
        CHECK(nids < n / 2); /* it compresses */
        char *back;
        size_t nback;
        CHECK_OK(gpt2c_tokenizer_decode(t, ids, nids, &back, &nback));
        CHECK(nback == n && memcmp(back, text, n) == 0);
        free(back);
        free(ids);
        gpt2c_tokenizer_free(t);
    }
    CHECK_FAILS(gpt2c_bpe_train_files(files, 1, 100, out1, &st), GPT2C_ERR_ARG);
    const char *missing[] = {"/nonexistent/corpus.txt"};
    CHECK_FAILS(gpt2c_bpe_train_files(missing, 1, 300, out1, &st), GPT2C_ERR_IO);
    free(text);
}

int main(void) {
#if !defined(GPT2C_HAVE_JANSSON) || !defined(GPT2C_HAVE_UTF8PROC)
    tu_skip("built without jansson or utf8proc");
#endif
    snprintf(dir, sizeof dir, "/tmp/gpt2c_test_tok_%ld", (long)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd) != 0) return 1;
    test_loader();
    test_trainer();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return tu_finish("test_tokenizer_loader");
}
