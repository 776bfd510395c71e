#include "gpt2c/data.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"
#include "gpt2c/fileio.h"
#include "gpt2c/shard.h"

/* Reads and validates one shard into dl->tokens. */
static gpt2c_status load_shard(gpt2c_dataloader *dl, int file) {
    if (dl->loaded == file) return GPT2C_OK;
    const char *path = dl->files[file];
    FILE *f = fopen(path, "rb");
    if (!f) return gpt2c_fail(GPT2C_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    int32_t hdr[GPT2C_SHARD_HEADER_INTS];
    size_t n = dl->file_tokens[file];
    int ok = fread(hdr, sizeof hdr, 1, f) == 1 && fread(dl->tokens, sizeof(uint16_t), n, f) == n;
    fclose(f);
    if (!ok) return gpt2c_fail(GPT2C_ERR_IO, "%s: read failed (file changed while training?)", path);
    for (size_t i = 0; i < n; i++)
        if (dl->tokens[i] >= dl->vocab_size)
            return gpt2c_fail(GPT2C_ERR_RANGE, "%s: token id %u at position %zu is outside the model's vocabulary [0, %d)",
                              path, dl->tokens[i], i, dl->vocab_size);
    dl->ntokens = n;
    dl->loaded = file;
    return GPT2C_OK;
}

/* Reads a shard's header only, checking it against the file size. */
static gpt2c_status probe_shard(const char *path, size_t *ntokens) {
    FILE *f;
    size_t file_size;
    GPT2C_TRY(gpt2c_open_regular(path, &f, &file_size));
    int32_t hdr[GPT2C_SHARD_HEADER_INTS];
    size_t got = fread(hdr, 1, sizeof hdr, f);
    fclose(f);
    /* the same checks as the full parser, on the header and the file size */
    const uint16_t *payload;
    if (got < sizeof hdr) return gpt2c_shard_parse(path, hdr, got, &payload, ntokens);
    if (hdr[0] != GPT2C_SHARD_MAGIC || hdr[1] != GPT2C_SHARD_VERSION || hdr[2] < 0)
        return gpt2c_shard_parse(path, hdr, sizeof hdr, &payload, ntokens);
    size_t want = sizeof hdr + (size_t)hdr[2] * sizeof(uint16_t);
    if (file_size != want)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: header says %d tokens (%zu bytes) but the file has %zu bytes", path,
                          hdr[2], want, file_size);
    *ntokens = (size_t)hdr[2];
    return GPT2C_OK;
}

static void shuffle_ints(int *a, int n, gpt2c_rng *r) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(gpt2c_rng_u64(r) % (uint64_t)(i + 1));
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* The order of shards and of rows is a function of (seed, epoch, shard) only. */
static void plan_epoch(gpt2c_dataloader *dl) {
    for (int i = 0; i < dl->nfiles; i++) dl->shard_order[i] = i;
    if (dl->shuffle) {
        gpt2c_rng r;
        gpt2c_rng_seed(&r, dl->seed, 0x5a4dull << 32 | dl->pos.epoch);
        shuffle_ints(dl->shard_order, dl->nfiles, &r);
    }
}

static gpt2c_status enter_shard(gpt2c_dataloader *dl) {
    int file = dl->shard_order[dl->pos.shard];
    GPT2C_TRY(load_shard(dl, file));
    if (dl->shuffle) {
        dl->nrows = (dl->ntokens - 1) / dl->T;
        for (size_t i = 0; i < dl->nrows; i++) dl->rows[i] = (uint32_t)i;
        gpt2c_rng r;
        gpt2c_rng_seed(&r, dl->seed, (dl->pos.epoch << 24) ^ (uint64_t)(file + 1));
        for (size_t i = dl->nrows - 1; i > 0; i--) {
            size_t j = (size_t)(gpt2c_rng_u64(&r) % (uint64_t)(i + 1));
            uint32_t t = dl->rows[i];
            dl->rows[i] = dl->rows[j];
            dl->rows[j] = t;
        }
    }
    return GPT2C_OK;
}

gpt2c_status gpt2c_dataloader_open(gpt2c_dataloader *dl, const char *pattern, int B, int T, int shuffle,
                                   uint64_t seed, int vocab_size) {
    return gpt2c_dataloader_open_part(dl, pattern, B, T, shuffle, seed, vocab_size, 0, 1);
}

gpt2c_status gpt2c_dataloader_open_part(gpt2c_dataloader *dl, const char *pattern, int B, int T, int shuffle,
                                        uint64_t seed, int vocab_size, int rank, int nranks) {
    memset(dl, 0, sizeof *dl);
    dl->loaded = -1;
    if (B <= 0 || T <= 0) return gpt2c_fail(GPT2C_ERR_ARG, "data: batch and sequence length must be positive");
    if (nranks <= 0 || rank < 0 || rank >= nranks || (int64_t)B * nranks > INT32_MAX)
        return gpt2c_fail(GPT2C_ERR_ARG, "data: rank %d of %d processes with batch %d is not a valid split", rank,
                          nranks, B);
    glob_t g;
    int rc = glob(pattern, 0, NULL, &g);
    if (rc != 0) {
        if (rc == GLOB_NOMATCH) return gpt2c_fail(GPT2C_ERR_IO, "%s: no such file (no shard matches)", pattern);
        return gpt2c_fail(GPT2C_ERR_IO, "%s: cannot expand the pattern", pattern);
    }
    dl->B = B;
    dl->T = T;
    dl->rank = rank;
    dl->nranks = nranks;
    dl->shuffle = shuffle;
    dl->seed = seed;
    dl->vocab_size = vocab_size;
    dl->nfiles = (int)g.gl_pathc;
    dl->files = calloc(dl->nfiles, sizeof(char *));
    dl->file_tokens = calloc(dl->nfiles, sizeof(size_t));
    dl->shard_order = calloc(dl->nfiles, sizeof(int));
    gpt2c_status st = GPT2C_OK;
    if (!dl->files || !dl->file_tokens || !dl->shard_order) st = gpt2c_fail(GPT2C_ERR_NOMEM, "data: out of memory");
    size_t maxtok = 0, need = (size_t)B * nranks * T + 1;
    for (int i = 0; st == GPT2C_OK && i < dl->nfiles; i++) {
        dl->files[i] = strdup(g.gl_pathv[i]);
        if (!dl->files[i]) st = gpt2c_fail(GPT2C_ERR_NOMEM, "data: out of memory");
        else st = probe_shard(dl->files[i], &dl->file_tokens[i]);
        if (st == GPT2C_OK && dl->file_tokens[i] < need)
            st = nranks > 1 ? gpt2c_fail(GPT2C_ERR_ARG,
                                         "%s: %zu tokens is too few for one global batch of %d processes x B=%d x "
                                         "(T=%d + 1): fewer processes or a smaller batch",
                                         dl->files[i], dl->file_tokens[i], nranks, B, T)
                            : gpt2c_fail(GPT2C_ERR_ARG, "%s: %zu tokens is too few for one batch of B=%d x (T=%d + 1)",
                                         dl->files[i], dl->file_tokens[i], B, T);
        if (st == GPT2C_OK && dl->file_tokens[i] > maxtok) maxtok = dl->file_tokens[i];
    }
    globfree(&g);
    if (st == GPT2C_OK) {
        dl->tokens = gpt2c_alloc(maxtok * sizeof(uint16_t), "data shard buffer");
        dl->rows = shuffle ? gpt2c_alloc((maxtok / T + 1) * sizeof(uint32_t), "data row permutation") : NULL;
        dl->inputs = gpt2c_alloc((size_t)B * T * sizeof(int32_t), "batch");
        dl->targets = gpt2c_alloc((size_t)B * T * sizeof(int32_t), "batch");
        if (!dl->tokens || (shuffle && !dl->rows) || !dl->inputs || !dl->targets) st = GPT2C_ERR_NOMEM;
    }
    if (st == GPT2C_OK) st = gpt2c_dataloader_reset(dl);
    if (st != GPT2C_OK) gpt2c_dataloader_close(dl);
    return st;
}

gpt2c_status gpt2c_dataloader_seek(gpt2c_dataloader *dl, gpt2c_data_pos pos) {
    if (pos.shard < 0 || pos.shard >= dl->nfiles)
        return gpt2c_fail(GPT2C_ERR_ARG, "data: saved position names shard %d but there are %d", pos.shard, dl->nfiles);
    dl->pos = pos;
    plan_epoch(dl);
    GPT2C_TRY(enter_shard(dl));
    /* the cursor must lie inside the shard it names (an untrusted checkpoint could say anything) */
    const size_t limit = dl->shuffle ? dl->nrows : dl->ntokens;
    if (pos.cursor > limit) {
        const char *path = dl->files[dl->shard_order[pos.shard]];
        char msg[1024];
        snprintf(msg, sizeof msg, "data: saved cursor %llu is past the end of %s (%zu %s)",
                 (unsigned long long)pos.cursor, path, limit, dl->shuffle ? "rows" : "tokens");
        if (gpt2c_dataloader_reset(dl) != GPT2C_OK) return GPT2C_ERR_RANGE; /* keeps the reset's reason */
        return gpt2c_fail(GPT2C_ERR_RANGE, "%s", msg);
    }
    return GPT2C_OK;
}

gpt2c_status gpt2c_dataloader_reset(gpt2c_dataloader *dl) {
    gpt2c_data_pos zero = {0, 0, 0};
    return gpt2c_dataloader_seek(dl, zero);
}

static gpt2c_status advance_shard(gpt2c_dataloader *dl) {
    dl->pos.cursor = 0;
    if (++dl->pos.shard >= dl->nfiles) {
        dl->pos.shard = 0;
        dl->pos.epoch++;
        plan_epoch(dl);
    }
    return enter_shard(dl);
}

/* Data parallel: the loader steps through global batches of nranks*B rows
 * (the batches a single process with that batch would read) and copies only
 * rows [rank*B, (rank+1)*B) of each. */
gpt2c_status gpt2c_dataloader_next(gpt2c_dataloader *dl) {
    const size_t B = dl->B, T = dl->T;
    const size_t nranks = dl->nranks > 0 ? (size_t)dl->nranks : 1, GB = B * nranks, first = (size_t)dl->rank * B;
    if (!dl->shuffle) {
        /* llm.c: GB*T+1 consecutive tokens, advance by GB*T */
        /* written so that no sum can wrap, whatever the cursor */
        if (dl->pos.cursor > dl->ntokens || dl->ntokens - dl->pos.cursor < GB * T + 1) GPT2C_TRY(advance_shard(dl));
        const uint16_t *p = dl->tokens + dl->pos.cursor + first * T;
        for (size_t i = 0; i < B * T; i++) {
            dl->inputs[i] = p[i];
            dl->targets[i] = p[i + 1];
        }
        dl->pos.cursor += GB * T;
        return GPT2C_OK;
    }
    /* shuffled: GB rows of T+1 tokens, each starting at a permuted multiple of T */
    for (size_t gb = 0; gb < GB; gb++) {
        if (dl->pos.cursor >= dl->nrows) GPT2C_TRY(advance_shard(dl));
        const uint16_t *p = dl->tokens + (size_t)dl->rows[dl->pos.cursor++] * T;
        if (gb < first || gb >= first + B) continue;
        const size_t b = gb - first;
        for (size_t t = 0; t < T; t++) {
            dl->inputs[b * T + t] = p[t];
            dl->targets[b * T + t] = p[t + 1];
        }
    }
    return GPT2C_OK;
}

size_t gpt2c_dataloader_total_tokens(const gpt2c_dataloader *dl) {
    size_t s = 0;
    for (int i = 0; i < dl->nfiles; i++) s += dl->file_tokens[i];
    return s;
}

void gpt2c_dataloader_close(gpt2c_dataloader *dl) {
    if (dl->files)
        for (int i = 0; i < dl->nfiles; i++) free(dl->files[i]);
    free(dl->files);
    free(dl->file_tokens);
    free(dl->shard_order);
    gpt2c_free(dl->tokens);
    gpt2c_free(dl->rows);
    gpt2c_free(dl->inputs);
    gpt2c_free(dl->targets);
    memset(dl, 0, sizeof *dl);
    dl->loaded = -1;
}
