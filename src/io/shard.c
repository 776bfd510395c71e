#include "gpt2c/shard.h"

#include <stdlib.h>
#include <string.h>

#include "gpt2c/fileio.h"

gpt2c_status gpt2c_shard_parse(const char *name, const void *buf, size_t size,
                               const uint16_t **payload, size_t *n) {
    const size_t hdr_bytes = GPT2C_SHARD_HEADER_INTS * sizeof(int32_t);
    if (size < hdr_bytes)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: truncated shard header (%zu bytes, need %zu)", name, size, hdr_bytes);
    int32_t hdr[3];
    memcpy(hdr, buf, sizeof hdr);
    if (hdr[0] != GPT2C_SHARD_MAGIC)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: bad shard magic %d (expected %d)", name, hdr[0], GPT2C_SHARD_MAGIC);
    if (hdr[1] != GPT2C_SHARD_VERSION)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: unsupported shard version %d (expected %d)", name, hdr[1], GPT2C_SHARD_VERSION);
    if (hdr[2] < 0) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: negative token count %d", name, hdr[2]);
    size_t count = (size_t)hdr[2];
    if ((size - hdr_bytes) != count * sizeof(uint16_t))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: header says %zu tokens but the file holds %zu bytes of tokens",
                          name, count, size - hdr_bytes);
    *payload = (const uint16_t *)((const char *)buf + hdr_bytes);
    *n = count;
    return GPT2C_OK;
}

gpt2c_status gpt2c_shard_read(const char *path, uint16_t **tokens, size_t *n) {
    void *buf;
    size_t size;
    *tokens = NULL;
    *n = 0;
    GPT2C_TRY(gpt2c_read_file(path, &buf, &size));
    const uint16_t *payload = NULL;
    size_t count = 0;
    gpt2c_status st = gpt2c_shard_parse(path, buf, size, &payload, &count);
    if (st != GPT2C_OK) {
        free(buf);
        return st;
    }
    /* move the tokens to the front of the buffer and keep it */
    memmove(buf, payload, count * sizeof(uint16_t));
    *tokens = buf;
    *n = count;
    return GPT2C_OK;
}

gpt2c_status gpt2c_shard_write(const char *path, const uint16_t *tokens, size_t n) {
    if (n > 0x7fffffff) return gpt2c_fail(GPT2C_ERR_ARG, "%s: too many tokens for one shard (%zu)", path, n);
    int32_t hdr[GPT2C_SHARD_HEADER_INTS] = {GPT2C_SHARD_MAGIC, GPT2C_SHARD_VERSION, (int32_t)n};
    gpt2c_atomic a;
    GPT2C_TRY(gpt2c_atomic_open(&a, path));
    GPT2C_TRY(gpt2c_atomic_write(&a, hdr, sizeof hdr));
    GPT2C_TRY(gpt2c_atomic_write(&a, tokens, n * sizeof(uint16_t)));
    return gpt2c_atomic_commit(&a);
}

gpt2c_status gpt2c_shard_writer_open(gpt2c_shard_writer *w, const char *path) {
    int32_t hdr[GPT2C_SHARD_HEADER_INTS] = {GPT2C_SHARD_MAGIC, GPT2C_SHARD_VERSION, 0};
    w->n = 0;
    GPT2C_TRY(gpt2c_atomic_open(&w->a, path));
    return gpt2c_atomic_write(&w->a, hdr, sizeof hdr);
}

gpt2c_status gpt2c_shard_writer_add(gpt2c_shard_writer *w, const uint16_t *tokens, size_t n) {
    if (w->n + n > 0x7fffffff) {
        gpt2c_status st = gpt2c_fail(GPT2C_ERR_ARG, "%s: too many tokens for one shard (%zu)",
                                     w->a.path ? w->a.path : "shard", w->n + n);
        gpt2c_atomic_abort(&w->a);
        return st;
    }
    GPT2C_TRY(gpt2c_atomic_write(&w->a, tokens, n * sizeof(uint16_t)));
    w->n += n;
    return GPT2C_OK;
}

gpt2c_status gpt2c_shard_writer_close(gpt2c_shard_writer *w) {
    if (!w->a.f) return gpt2c_fail(GPT2C_ERR_IO, "%s: shard closed after a failure", w->a.path ? w->a.path : "?");
    int32_t count = (int32_t)w->n;
    /* the count is the header's third int32 */
    if (fflush(w->a.f) != 0 || fseek(w->a.f, 2 * sizeof(int32_t), SEEK_SET) != 0 ||
        fwrite(&count, sizeof count, 1, w->a.f) != 1) {
        gpt2c_status st = gpt2c_fail(GPT2C_ERR_IO, "%s: cannot write the shard header", w->a.path);
        gpt2c_atomic_abort(&w->a);
        return st;
    }
    return gpt2c_atomic_commit(&w->a);
}

void gpt2c_shard_writer_abort(gpt2c_shard_writer *w) { gpt2c_atomic_abort(&w->a); }
