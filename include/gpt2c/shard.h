/* Token shards in llm.c's format: a header of 256 int32 (magic 20240520,
 * version 1, token count, rest 0) followed by the tokens as uint16. */
#ifndef GPT2C_SHARD_H
#define GPT2C_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/fileio.h"
#include "gpt2c/status.h"

#define GPT2C_SHARD_MAGIC 20240520
#define GPT2C_SHARD_VERSION 1
#define GPT2C_SHARD_HEADER_INTS 256

/* Writes a shard atomically (temp + fsync + rename). Every token must be < 65536. */
gpt2c_status gpt2c_shard_write(const char *path, const uint16_t *tokens, size_t n);

/* A shard written as its tokens arrive (bounded memory): the header's count
 * is filled in on close, and the file appears (atomically) only then. */
typedef struct {
    gpt2c_atomic a;
    size_t n; /* tokens written so far */
} gpt2c_shard_writer;
gpt2c_status gpt2c_shard_writer_open(gpt2c_shard_writer *w, const char *path);
gpt2c_status gpt2c_shard_writer_add(gpt2c_shard_writer *w, const uint16_t *tokens, size_t n);
gpt2c_status gpt2c_shard_writer_close(gpt2c_shard_writer *w);
/* Drops the shard (nothing appears at its path); safe after a failed call. */
void gpt2c_shard_writer_abort(gpt2c_shard_writer *w);

/* Reads a whole shard, checking magic, version and that the file size matches
 * the header's count. *tokens is malloc'd. */
gpt2c_status gpt2c_shard_read(const char *path, uint16_t **tokens, size_t *n);

/* Validates a shard file in memory (used by the reader and the fuzzer). On
 * success, *payload points at the tokens inside buf. `name` is used in errors. */
gpt2c_status gpt2c_shard_parse(const char *name, const void *buf, size_t size,
                               const uint16_t **payload, size_t *n);

#endif
