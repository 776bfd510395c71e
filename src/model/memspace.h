/* Where the model's slabs live: in the backend's memory.  For host backends
 * (k->dev_alloc == NULL) that is gpt2c_alloc and memcpy; for a device backend
 * (cuda) it is the backend's dev_alloc / memcpy_h2d / memcpy_d2h hooks.  Model
 * code allocates and copies only through these, so the CPU path is unchanged. */
#ifndef GPT2C_MEMSPACE_H
#define GPT2C_MEMSPACE_H

#include <stddef.h>

#include "kernels/kernels.h"

static inline int gpt2c_mem_is_device(const gpt2c_kernels *k) { return k->dev_alloc != NULL; }

/* zero-filled; NULL with gpt2c_fail set on failure */
void *gpt2c_mem_alloc(const gpt2c_kernels *k, size_t bytes, const char *what);
/* The same, for the slabs streamed whole every step: in 2 MiB pages on the host (gpt2c_alloc_huge). */
void *gpt2c_mem_alloc_huge(const gpt2c_kernels *k, size_t bytes, const char *what);
void gpt2c_mem_free(const gpt2c_kernels *k, void *p);
/* host -> backend memory, backend memory -> host (memcpy on host backends) */
gpt2c_status gpt2c_mem_upload(const gpt2c_kernels *k, void *dst, const void *src, size_t bytes);
gpt2c_status gpt2c_mem_download(const gpt2c_kernels *k, void *dst, const void *src, size_t bytes);
/* Moves *slab (bytes) from the memory of `from` into that of `to`, freeing
 * the old copy; NULL slabs stay NULL.  On failure *slab is unchanged. */
gpt2c_status gpt2c_mem_move(const gpt2c_kernels *from, const gpt2c_kernels *to, void **slab,
                            size_t bytes, const char *what);

#endif
