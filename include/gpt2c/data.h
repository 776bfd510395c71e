/* Batches from llm.c token shards: one file or a glob of them, read
 * sequentially (as llm.c) or shuffled (seeded: same seed, same batches).
 * Every shard is validated when opened (header, size, ids < vocab) and one
 * buffer of the largest shard's size is allocated up front. */
#ifndef GPT2C_DATA_H
#define GPT2C_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/status.h"

/* Where the loader is: enough to continue exactly after a resume. */
typedef struct gpt2c_data_pos {
    uint64_t epoch;  /* passes over all shards so far */
    int shard;       /* index into the (possibly shuffled) shard order */
    uint64_t cursor; /* sequential: token offset; shuffled: rows consumed */
} gpt2c_data_pos;

typedef struct gpt2c_dataloader {
    char **files;
    int nfiles;
    size_t *file_tokens; /* token count of each shard */
    int B, T, shuffle, vocab_size; /* B: the rows this process gets per batch */
    int rank, nranks; /* data parallel: this process takes rows [rank*B, (rank+1)*B) of each global batch of nranks*B */
    uint64_t seed;
    gpt2c_data_pos pos;
    int *shard_order; /* (nfiles) this epoch's order */
    int loaded;       /* file index currently in `tokens`, -1 none */
    uint16_t *tokens; /* current shard's tokens (capacity: the largest shard) */
    size_t ntokens;
    uint32_t *rows;   /* shuffled: permutation of the current shard's row starts / T */
    size_t nrows;
    int32_t *inputs, *targets; /* (B,T) the current batch */
} gpt2c_dataloader;

/* `pattern`: a file or a glob pattern such as "data/tiny_train_[0-9]*.bin".  Fails naming the
 * shard at fault: unreadable, malformed, too short for one (B,T+1) window,
 * or holding an id >= vocab_size. */
gpt2c_status gpt2c_dataloader_open(gpt2c_dataloader *dl, const char *pattern, int B, int T, int shuffle,
                                   uint64_t seed, int vocab_size);
/* The same for one of `nranks` data-parallel processes: the loader walks the
 * data exactly as a single loader of batch nranks*B would (same order, same
 * shuffle, same positions), and each batch gives this process the rank-th
 * slice of B rows.  Every shard must hold one global batch (nranks*B x T + 1). */
gpt2c_status gpt2c_dataloader_open_part(gpt2c_dataloader *dl, const char *pattern, int B, int T, int shuffle,
                                        uint64_t seed, int vocab_size, int rank, int nranks);
/* Fills dl->inputs / dl->targets with the next batch (wraps around at the end). */
gpt2c_status gpt2c_dataloader_next(gpt2c_dataloader *dl);
/* Back to the first batch of epoch 0. */
gpt2c_status gpt2c_dataloader_reset(gpt2c_dataloader *dl);
/* Continue from a saved position. */
gpt2c_status gpt2c_dataloader_seek(gpt2c_dataloader *dl, gpt2c_data_pos pos);
/* Total tokens over all shards. */
size_t gpt2c_dataloader_total_tokens(const gpt2c_dataloader *dl);
void gpt2c_dataloader_close(gpt2c_dataloader *dl);

#endif
