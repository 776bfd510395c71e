/* gpt2c tokenize --vocab DIR --in FILE... --out DIR: text files -> llm.c token
 * shards (<out>/<name>_val_000000.bin, <out>/<name>_train_000000.bin, ...).
 *
 * Documents are split as llm.c's dev/data/tinyshakespeare.py does: each file
 * is cut at every "\n\n"; each section is EOT + encode(section + "\n\n") (the
 * file's last section without "\n\n"). The first --val-tokens tokens (or
 * --val-frac of them) are the validation split, the rest the training split. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/outpaths.h"
#include "gpt2c/fileio.h"
#include "gpt2c/shard.h"
#include "gpt2c/tokenizer.h"

#define BLOCK_BYTES ((size_t)16 << 20) /* progress granularity */

typedef struct {
    int tty;
    size_t total, done;
    int last_quarter;
    double t0;
} progress;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress_show(progress *p) {
    double dt = now_s() - p->t0, mb = (double)p->done / 1e6;
    double frac = p->total ? (double)p->done / (double)p->total : 1.0;
    if (p->tty) {
        int w = 30, fill = (int)(frac * w + 0.5);
        fprintf(stderr, "\rtokenize [%.*s%*s] %3.0f%% %8.1f MB %6.1f MB/s", fill, "##############################",
                w - fill, "", 100 * frac, mb, dt > 0 ? mb / dt : 0.0);
        fflush(stderr);
    } else {
        int q = (int)(frac * 4);
        if (q > p->last_quarter) {
            p->last_quarter = q;
            fprintf(stderr, "tokenize: %3.0f%% (%.1f MB, %.1f MB/s)\n", 100 * frac, mb, dt > 0 ? mb / dt : 0.0);
        }
    }
}

typedef struct {
    uint16_t *v;
    size_t n, cap;
} u16vec;

static int append_ids(u16vec *o, const int32_t *ids, size_t n) {
    if (o->n + n > o->cap) {
        size_t c = o->cap ? o->cap : (1 << 20);
        while (c < o->n + n) c *= 2;
        uint16_t *p = realloc(o->v, c * sizeof *p);
        if (!p) return -1;
        o->v = p;
        o->cap = c;
    }
    for (size_t i = 0; i < n; i++) o->v[o->n + i] = (uint16_t)ids[i];
    o->n += n;
    return 0;
}

/* Encodes one file in blocks cut after "\n\n", appending to *out. */
static int tokenize_file(const char *path, const gpt2c_tokenizer *tok, int threads, u16vec *out, size_t *docs,
                         progress *pr) {
    void *data;
    size_t size;
    if (gpt2c_read_file(path, &data, &size) != GPT2C_OK) return cli_fail_status("tokenize");
    const char *s = data;
    size_t a = 0;
    do {
        size_t b = size;
        if (size - a > BLOCK_BYTES) {
            const char *sep = memmem(s + a + BLOCK_BYTES, size - a - BLOCK_BYTES, "\n\n", 2);
            if (sep) b = (size_t)(sep - s) + 2;
        }
        int32_t *ids;
        size_t nids, nd;
        if (gpt2c_tokenizer_encode_docs(tok, s + a, b - a, b < size, threads, &ids, &nids, &nd) != GPT2C_OK) {
            free(data);
            return cli_error("tokenize", "%s: %s", path, gpt2c_errmsg());
        }
        int bad = append_ids(out, ids, nids);
        free(ids);
        if (bad) {
            free(data);
            return cli_error("tokenize", "%s: out of memory", path);
        }
        *docs += nd;
        pr->done += b - a;
        progress_show(pr);
        a = b;
    } while (a < size);
    free(data);
    return 0;
}

static char *shard_path(const char *out, const char *name, const char *split, int k) {
    size_t n = strlen(out) + strlen(name) + 32;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s_%s_%06d.bin", out, name, split, k);
    return p;
}

/* Stages tokens [a, b) as shards of at most per tokens, each written (atomically)
 * to "<shard>.tmp.<pid>"; the caller renames them all into place once every
 * one is written, so a failure leaves the output folder as it was.  Records the
 * staged paths (*written, shard names + ".tmp.<pid>"). */
static int write_split(const char *out, const char *name, const char *split, const uint16_t *tok, size_t a, size_t b,
                       size_t per, char ***written, int *nwritten, int *nshards) {
    int k = 0;
    for (size_t i = a; i < b; i += per, k++) {
        size_t n = b - i < per ? b - i : per;
        char *p = shard_path(out, name, split, k), *staged = p ? malloc(strlen(p) + 32) : NULL;
        char **w = realloc(*written, (size_t)(*nwritten + 1) * sizeof *w);
        if (w) *written = w;
        if (!p || !staged || !w) {
            free(p);
            free(staged);
            return cli_error("tokenize", "%s: out of memory", out);
        }
        sprintf(staged, "%s.tmp.%ld", p, (long)getpid());
        free(p);
        if (gpt2c_shard_write(staged, tok + i, n) != GPT2C_OK) {
            free(staged);
            return cli_error("tokenize", "%s; no shard was written (the output folder is as it was)", gpt2c_errmsg());
        }
        (*written)[(*nwritten)++] = staged;
    }
    *nshards += k;
    return 0;
}

/* Renames the staged shards into place.  Returns how many were renamed (all, unless the file system fails). */
static int publish_shards(char **staged, int n) {
    for (int i = 0; i < n; i++) {
        char *dot = strrchr(staged[i], '.'); /* ".<pid>" */
        char final_path[4096];
        snprintf(final_path, sizeof final_path, "%.*s", (int)(dot - staged[i]) - 4, staged[i]); /* less ".tmp" */
        if (rename(staged[i], final_path) != 0) {
            cli_error("tokenize", "%s: cannot rename into place: %s; %d of %d shards were written (the first %d, "
                      "complete), the rest are removed", final_path, strerror(errno), i, n, i);
            for (int k = i; k < n; k++) unlink(staged[k]);
            return i;
        }
        printf("  %s\n", final_path);
    }
    return n;
}

/* Shard names this run writes: "<name>_val_NNNNNN.bin" / "<name>_train_NNNNNN.bin". */
static int shard_output_name(const char *base, const void *user) {
    const char *nm = user;
    size_t n = strlen(nm);
    if (strncmp(base, nm, n) != 0) return 0;
    base += n;
    if (strncmp(base, "_val_", 5) == 0) base += 5;
    else if (strncmp(base, "_train_", 7) == 0) base += 7;
    else return 0;
    size_t d = strspn(base, "0123456789");
    return d > 0 && strcmp(base + d, ".bin") == 0;
}

static char *default_name(const char *path) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    const char *dot = strrchr(b, '.');
    if (dot && dot != b) n = (size_t)(dot - b);
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, b, n);
    s[n] = 0;
    return s;
}

int cmd_tokenize(int argc, char **argv) {
    const char *vocab = NULL, *out = NULL, *name = NULL;
    cli_strlist in = {0};
    double val_frac = 0;
    long long val_tokens = 32768, shard_tokens = 100000000;
    int threads = 0;
    cli_opt opts[] = {
        {"--vocab", CLI_STR, &vocab, "directory with encoder.json+vocab.bpe or vocab.json+merges.txt", 0, 0},
        {"--in", CLI_STRLIST, &in, "input text files (each file, and each \\n\\n-separated section, a document)", 0, 0},
        {"--out", CLI_STR, &out, "output directory for the shards (created if absent)", 0, 0},
        {"--name", CLI_STR, &name, "shard name prefix (default: first input's basename)", 0, 0},
        {"--val-tokens", CLI_LONG, &val_tokens, "validation = the first N tokens (default 32768, as llm.c)", 0, 1e15},
        {"--val-frac", CLI_FLOAT, &val_frac, "validation = this fraction of the tokens (instead of --val-tokens)", 0, 1},
        {"--shard-tokens", CLI_LONG, &shard_tokens, "tokens per shard (default 100,000,000)", 1, 2147483647},
        {"--threads", CLI_INT, &threads, "encoding threads (0: all)", 0, 4096},
    };
    int rc = cli_parse("tokenize", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (!vocab || !out || in.n == 0)
        return cli_error("tokenize", "--vocab DIR, --in FILE... and --out DIR are required"), 2;
    if (cli_given("--val-frac") && cli_given("--val-tokens"))
        return cli_error("tokenize", "give --val-tokens or --val-frac, not both"), 2;

    gpt2c_tokenizer *tok;
    if (gpt2c_tokenizer_load(vocab, &tok) != GPT2C_OK) return cli_fail_status("tokenize");
    rc = 0;
    if (gpt2c_tokenizer_vocab_size(tok) > 65536)
        rc = cli_error("tokenize", "%s: %d tokens do not fit llm.c's uint16 shards", vocab,
                       gpt2c_tokenizer_vocab_size(tok));
    else if (gpt2c_tokenizer_eot(tok) < 0)
        rc = cli_error("tokenize", "%s: the vocabulary has no <|endoftext|> token to separate documents", vocab);
    progress pr = {isatty(2), 0, 0, 0, now_s()};
    for (int i = 0; i < in.n && !rc; i++) {
        struct stat sb;
        if (stat(in.items[i], &sb) != 0) rc = cli_error("tokenize", "%s: cannot open: %s", in.items[i], strerror(errno));
        else if (!S_ISREG(sb.st_mode)) rc = cli_error("tokenize", "%s: not a regular file", in.items[i]);
        else pr.total += (size_t)sb.st_size;
    }
    if (!rc && mkdir(out, 0777) != 0 && errno != EEXIST)
        rc = cli_error("tokenize", "%s: cannot create the output directory: %s", out, strerror(errno));
    if (!rc && access(out, W_OK | X_OK) != 0)
        rc = cli_error("tokenize", "%s: output directory is not writable: %s", out, strerror(errno));
    char *nm = NULL;
    if (!rc && !(nm = name ? strdup(name) : default_name(in.items[0]))) rc = cli_error("tokenize", "out of memory");

    for (int i = 0; i < in.n && !rc; i++) {
        const cli_path ins[] = {{"--in", in.items[i]}};
        rc = cli_check_output_names("tokenize", "--out", out, shard_output_name, nm, ins, 1);
    }

    u16vec all = {0};
    size_t docs = 0;
    for (int i = 0; i < in.n && !rc; i++) rc = tokenize_file(in.items[i], tok, threads, &all, &docs, &pr);
    if (pr.tty) fputc('\n', stderr);
    double dt = now_s() - pr.t0;

    size_t nval = 0;
    if (!rc) {
        nval = cli_given("--val-frac") ? (size_t)(val_frac * (double)all.n) : (size_t)val_tokens;
        if (nval >= all.n)
            rc = cli_error("tokenize", "only %zu tokens in the input: nothing left for training after %zu validation "
                           "tokens (lower --val-tokens or --val-frac)", all.n, nval);
    }
    char **written = NULL;
    int nwritten = 0, nshards = 0;
    if (!rc) {
        printf("tokenize: writing shards\n");
        rc = write_split(out, nm, "val", all.v, 0, nval, (size_t)shard_tokens, &written, &nwritten, &nshards);
        if (!rc)
            rc = write_split(out, nm, "train", all.v, nval, all.n, (size_t)shard_tokens, &written, &nwritten, &nshards);
        if (rc) /* nothing was published: remove the staged shards */
            for (int i = 0; i < nwritten; i++) unlink(written[i]);
        else if (publish_shards(written, nwritten) != nwritten)
            rc = 1;
    }
    if (!rc)
        printf("tokenize: %d file(s), %zu documents, %zu tokens (%zu val, %zu train) in %d shards; %.1f MB in %.2f s "
               "= %.1f MB/s\n",
               in.n, docs, all.n, nval, all.n - nval, nshards, (double)pr.total / 1e6, dt,
               dt > 0 ? (double)pr.total / 1e6 / dt : 0.0);
    for (int i = 0; i < nwritten; i++) free(written[i]);
    free(written);
    free(all.v);
    free(nm);
    gpt2c_tokenizer_free(tok);
    return rc;
}
