/* Conformance with the reference tokenizer: every case of the fixture files
 * (tests/fixtures/tokenizer_cases.tsv, tokenizer_special.tsv with special
 * tokens allowed, tokenizer_bytes.tsv with invalid UTF-8), one per line as
 *   name <TAB> hex bytes <TAB> ids (space- or comma-separated)
 * must encode to exactly those ids and decode back to exactly those bytes.
 * Lines starting with '#' and a "name..." header are skipped. Without the
 * fixture files, the facts published with the shared data are checked. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/fileio.h"
#include "gpt2c/tokenizer.h"
#include "testutil.h"

static gpt2c_tokenizer *tok;

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static int check_case(const char *name, const char *bytes, size_t n, const int32_t *want, size_t nwant, int special) {
    int32_t *ids;
    size_t nids;
    if (gpt2c_tokenizer_encode(tok, bytes, n, special, &ids, &nids) != GPT2C_OK) {
        fprintf(stderr, "%s: encode failed: %s\n", name, gpt2c_errmsg());
        return 0;
    }
    int ok = nids == nwant && (nids == 0 || memcmp(ids, want, nids * sizeof *ids) == 0);
    if (!ok) {
        fprintf(stderr, "%s: ids differ\n  want:", name);
        for (size_t i = 0; i < nwant; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n  got: ");
        for (size_t i = 0; i < nids; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    char *back;
    size_t nb;
    if (gpt2c_tokenizer_decode(tok, want, nwant, &back, &nb) == GPT2C_OK) {
        if (nb != n || memcmp(back, bytes, n) != 0) {
            fprintf(stderr, "%s: decoding the reference ids does not give the bytes back\n", name);
            ok = 0;
        }
        free(back);
    } else {
        fprintf(stderr, "%s: %s\n", name, gpt2c_errmsg());
        ok = 0;
    }
    free(ids);
    return ok;
}

/* Returns the number of cases run, or -1 when the file is absent. */
static long run_file(const char *path, int special) {
    void *data;
    size_t size;
    if (gpt2c_read_file(path, &data, &size) != GPT2C_OK) return -1;
    char *s = data;
    long cases = 0;
    size_t cap = 1 << 16;
    char *bytes = malloc(cap);
    int32_t *ids = malloc(cap * sizeof *ids);
    int lineno = 0;
    for (char *line = s; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        lineno++;
        size_t L = strlen(line);
        if (L && line[L - 1] == '\r') line[--L] = 0;
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!L || line[0] == '#' || (lineno == 1 && strncmp(line, "name", 4) == 0)) goto next;
        if (!t1 || !t2) {
            CHECK_MSG(0, "%s:%d: expected name<TAB>hex<TAB>ids", path, lineno);
            goto next;
        }
        *t1 = *t2 = 0;
        size_t hl = strlen(t1 + 1), nb = 0, ni = 0;
        if (hl / 2 + 1 > cap || strlen(t2 + 1) + 1 > cap) {
            cap = (hl / 2 + strlen(t2 + 1)) * 2 + 16;
            bytes = realloc(bytes, cap);
            ids = realloc(ids, cap * sizeof *ids);
        }
        int bad = hl % 2 != 0;
        for (size_t i = 0; i + 1 < hl && !bad; i += 2) {
            int a = hexval(t1[1 + i]), b = hexval(t1[2 + i]);
            if (a < 0 || b < 0) bad = 1;
            bytes[nb++] = (char)(a * 16 + b);
        }
        for (char *p = t2 + 1; *p && !bad;) {
            while (*p == ' ' || *p == ',' || *p == '[' || *p == ']') p++;
            if (!*p) break;
            char *e;
            long v = strtol(p, &e, 10);
            if (e == p) bad = 1;
            ids[ni++] = (int32_t)v;
            p = e;
        }
        CHECK_MSG(!bad, "%s:%d: malformed hex or ids", path, lineno);
        if (!bad) {
            CHECK_MSG(check_case(line, bytes, nb, ids, ni, special), "%s:%d: case %s", path, lineno, line);
            cases++;
        }
    next:
        line = nl ? nl + 1 : NULL;
    }
    free(bytes);
    free(ids);
    free(data);
    printf("  %s: %ld cases\n", path, cases);
    return cases;
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
    if (!tok) return tu_finish("test_tokenizer_conformance");
    static const struct {
        const char *file;
        int special;
    } files[] = {{"tokenizer_cases.tsv", 0}, {"tokenizer_special.tsv", 1}, {"tokenizer_bytes.tsv", 0}};
    long total = 0;
    int found = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", GPT2C_FIXTURES, files[i].file);
        long c = run_file(path, files[i].special);
        if (c >= 0) {
            found++;
            total += c;
        }
    }
    if (!found) printf("  no fixture files in %s: checking the published facts only\n", GPT2C_FIXTURES);
    else CHECK_MSG(total > 0, "fixture files hold no cases");
    CHECK(check_case("Hello world", "Hello world", 11, (int32_t[]){15496, 995}, 2, 0));
    CHECK(check_case("hello world", "hello world", 11, (int32_t[]){31373, 995}, 2, 0));
    CHECK(check_case("Hello World!", " Hello World!", 13, (int32_t[]){18435, 2159, 0}, 3, 0));
    CHECK(check_case("newlines", "\n\n", 2, (int32_t[]){628}, 1, 0));
    gpt2c_tokenizer_free(tok);
    return tu_finish("test_tokenizer_conformance");
}
