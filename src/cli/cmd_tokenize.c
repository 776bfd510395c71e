/* gpt2c tokenize --vocab DIR --in FILE... --out DIR: text files -> llm.c token
 * shards (<out>/<name>_val_000000.bin, <out>/<name>_train_000000.bin, ...).
 *
 * Documents are split as llm.c's dev/data/tinyshakespeare.py does: each file
 * is cut at every "\n\n"; each section is EOT + encode(section + "\n\n") (the
 * file's last section without "\n\n"). The first --val-tokens tokens (or
 * --val-frac of them) are the validation split, the rest the training split.
 *
 * Streaming: files are read and encoded in parts of 16 MB and every shard is
 * written as it fills, so memory stays bounded whatever the input size (for
 * --val-frac the tokens are spooled to a temporary file in --out first: the
 * split point needs their count).  The shards are byte for byte those of
 * encoding everything at once. */
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
#include "cli/run_arg.h"
#include "gpt2c/fileio.h"
#include "gpt2c/shard.h"
#include "gpt2c/tokenizer.h"

#define PART_BYTES ((size_t)16 << 20) /* text encoded at once (and progress granularity) */

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

static char *shard_path(const char *out, const char *name, const char *split, int k) {
    size_t n = strlen(out) + strlen(name) + 32;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s_%s_%06d.bin", out, name, split, k);
    return p;
}

/* Where the tokens go, as they come: the first nval to val shards, the rest to
 * train shards, each shard closed when it holds `per` tokens or its split
 * ends, staged as "<shard>.tmp.<pid>" (publish_shards renames them all into
 * place at the end, so a failure leaves the output folder as it was).  With
 * spool set, tokens go to a temporary file instead (--val-frac: the split is
 * known once every token is). */
typedef struct {
    const char *out, *name;
    size_t per, nval, total;
    FILE *spool;
    gpt2c_shard_writer w;
    int open, split, k[2];
    char **written; /* staged shards completed */
    int nwritten;
} token_sink;

static int sink_close(token_sink *k) {
    if (!k->open) return 0;
    k->open = 0;
    char *p = strdup(k->w.a.path);
    char **w = realloc(k->written, (size_t)(k->nwritten + 1) * sizeof *w);
    if (!p || !w) {
        free(p);
        if (w) k->written = w;
        gpt2c_shard_writer_abort(&k->w);
        return cli_error("tokenize", "%s: out of memory", k->out);
    }
    k->written = w;
    if (gpt2c_shard_writer_close(&k->w) != GPT2C_OK) {
        free(p);
        return cli_error("tokenize", "%s; no shard was written (the output folder is as it was)", gpt2c_errmsg());
    }
    k->written[k->nwritten++] = p;
    return 0;
}

static int sink_put16(token_sink *k, const uint16_t *t, size_t n) {
    if (k->spool) {
        if (fwrite(t, sizeof *t, n, k->spool) != n) return cli_error("tokenize", "%s: cannot write the token spool", k->out);
        k->total += n;
        return 0;
    }
    while (n > 0) {
        int split = k->total < k->nval ? 0 : 1;
        if (!k->open) {
            char *p = shard_path(k->out, k->name, split ? "train" : "val", k->k[split]++);
            char staged[4200];
            if (!p) return cli_error("tokenize", "%s: out of memory", k->out);
            snprintf(staged, sizeof staged, "%s.tmp.%ld", p, (long)getpid());
            free(p);
            if (gpt2c_shard_writer_open(&k->w, staged) != GPT2C_OK)
                return cli_error("tokenize", "%s; no shard was written (the output folder is as it was)", gpt2c_errmsg());
            k->open = 1;
            k->split = split;
        }
        size_t room = k->per - k->w.n;
        if (split == 0 && k->nval - k->total < room) room = k->nval - k->total;
        size_t m = n < room ? n : room;
        if (gpt2c_shard_writer_add(&k->w, t, m) != GPT2C_OK) {
            k->open = 0;
            return cli_error("tokenize", "%s; no shard was written (the output folder is as it was)", gpt2c_errmsg());
        }
        k->total += m, t += m, n -= m;
        if ((k->w.n == k->per || (split == 0 && k->total == k->nval)) && sink_close(k)) return 1;
    }
    return 0;
}

static int sink_put(token_sink *k, const int32_t *ids, size_t n) {
    uint16_t t[4096];
    for (size_t i = 0; i < n;) {
        size_t m = n - i < 4096 ? n - i : 4096;
        for (size_t j = 0; j < m; j++) t[j] = (uint16_t)ids[i + j];
        if (sink_put16(k, t, m)) return 1;
        i += m;
    }
    return 0;
}

/* Encodes one file in parts of up to PART_BYTES (more only for a section
 * with no safe cut), read as they are needed, so memory does not grow with
 * the file; parts are cut where gpt2c_tokenizer_docs_cut says, so the ids are
 * those of the whole file. */
static int tokenize_file(const char *path, const gpt2c_tokenizer *tok, int threads, token_sink *sink, size_t *docs,
                         progress *pr) {
    FILE *f = fopen(path, "rb");
    if (!f) return cli_error("tokenize", "%s: cannot open: %s", path, strerror(errno));
    size_t cap = PART_BYTES, len = 0;
    const char *test_part = getenv("GPT2C_TOKENIZE_PART_BYTES"); /* tests: small parts, many cuts */
    if (test_part && atoll(test_part) >= 16) cap = (size_t)atoll(test_part);
    char *buf = malloc(cap);
    int rc = buf ? 0 : cli_error("tokenize", "%s: out of memory", path), eof = 0, continues = 0;
    while (!rc) {
        while (!eof && len < cap) {
            size_t r = fread(buf + len, 1, cap - len, f);
            len += r;
            if (r == 0) eof = 1;
        }
        if (ferror(f)) {
            rc = cli_error("tokenize", "%s: read error: %s", path, strerror(errno));
            break;
        }
        int inside = 0;
        size_t cut = eof ? len : gpt2c_tokenizer_docs_cut(buf, len, &inside);
        if (!eof && cut == 0) { /* no safe cut in the whole buffer: read more */
            char *b = cap <= SIZE_MAX / 2 ? realloc(buf, 2 * cap) : NULL;
            if (!b) rc = cli_error("tokenize", "%s: out of memory", path);
            buf = b ? b : buf;
            cap *= 2;
            continue;
        }
        int flags = (eof ? 0 : GPT2C_DOCS_MORE_FOLLOWS) | (continues ? GPT2C_DOCS_CONTINUES : 0);
        int32_t *ids;
        size_t nids, nd;
        if (gpt2c_tokenizer_encode_docs(tok, buf, cut, flags, threads, &ids, &nids, &nd) != GPT2C_OK) {
            rc = cli_error("tokenize", "%s: %s", path, gpt2c_errmsg());
            break;
        }
        rc = sink_put(sink, ids, nids);
        free(ids);
        *docs += nd;
        pr->done += cut;
        progress_show(pr);
        if (eof) break;
        memmove(buf, buf + cut, len - cut);
        len -= cut;
        continues = inside;
    }
    free(buf);
    fclose(f);
    return rc;
}

/* --val-frac: the spooled tokens, now that their number is known, to the shards. */
static int sink_replay(token_sink *k, const char *spool_path, double val_frac) {
    FILE *f = k->spool;
    k->spool = NULL;
    k->nval = (size_t)(val_frac * (double)k->total);
    size_t total = k->total;
    k->total = 0;
    int rc = fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0 ? cli_error("tokenize", "%s: cannot read back", spool_path) : 0;
    uint16_t t[1 << 16];
    size_t got = 0;
    while (!rc && got < total) {
        size_t want = total - got < (1 << 16) ? total - got : (1 << 16);
        if (fread(t, sizeof *t, want, f) != want) rc = cli_error("tokenize", "%s: cannot read back", spool_path);
        else rc = sink_put16(k, t, want);
        got += want;
    }
    k->spool = f;
    return rc;
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
        THREADS_ARG_OPT(threads, "encoding threads, 0 = all cores [0]"),
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

    token_sink sink = {.out = out, .name = nm, .per = (size_t)shard_tokens, .nval = (size_t)val_tokens};
    char *spool_path = NULL;
    if (!rc && cli_given("--val-frac")) { /* the split needs the token count: spool to disk first */
        size_t n = strlen(out) + strlen(nm) + 64;
        if (!(spool_path = malloc(n))) rc = cli_error("tokenize", "out of memory");
        else snprintf(spool_path, n, "%s/.%s.tokens.tmp.%ld", out, nm, (long)getpid());
        if (!rc && !(sink.spool = fopen(spool_path, "w+b")))
            rc = cli_error("tokenize", "%s: cannot write: %s", spool_path, strerror(errno));
    }
    size_t docs = 0;
    for (int i = 0; i < in.n && !rc; i++) rc = tokenize_file(in.items[i], tok, threads, &sink, &docs, &pr);
    if (pr.tty) fputc('\n', stderr);
    double dt = now_s() - pr.t0;
    if (!rc && sink.spool) rc = sink_replay(&sink, spool_path, val_frac);
    if (!rc && sink.total <= sink.nval)
        rc = cli_error("tokenize", "only %zu tokens in the input: nothing left for training after %zu validation "
                       "tokens (lower --val-tokens or --val-frac)", sink.total, sink.nval);
    if (!rc) rc = sink_close(&sink);
    if (sink.open) gpt2c_shard_writer_abort(&sink.w);
    if (rc) /* nothing was published: remove the staged shards */
        for (int i = 0; i < sink.nwritten; i++) unlink(sink.written[i]);
    else if (publish_shards(sink.written, sink.nwritten) != sink.nwritten)
        rc = 1;
    if (sink.spool) fclose(sink.spool);
    if (spool_path) unlink(spool_path);
    if (!rc)
        printf("tokenize: %d file(s), %zu documents, %zu tokens (%zu val, %zu train) in %d shards; %.1f MB in %.2f s "
               "= %.1f MB/s\n",
               in.n, docs, sink.total, sink.nval, sink.total - sink.nval, sink.nwritten, (double)pr.total / 1e6, dt,
               dt > 0 ? (double)pr.total / 1e6 / dt : 0.0);
    for (int i = 0; i < sink.nwritten; i++) free(sink.written[i]);
    free(sink.written);
    free(spool_path);
    free(nm);
    gpt2c_tokenizer_free(tok);
    return rc;
}
