#include "model/memspace.h"

#include <string.h>

#include "gpt2c/core.h"

void *gpt2c_mem_alloc(const gpt2c_kernels *k, size_t bytes, const char *what) {
    return k->dev_alloc ? k->dev_alloc(bytes, what) : gpt2c_alloc(bytes, what);
}

void *gpt2c_mem_alloc_huge(const gpt2c_kernels *k, size_t bytes, const char *what) {
    return k->dev_alloc ? k->dev_alloc(bytes, what) : gpt2c_alloc_huge(bytes, what);
}

void gpt2c_mem_free(const gpt2c_kernels *k, void *p) {
    if (!p) return;
    if (k->dev_free)
        k->dev_free(p);
    else
        gpt2c_free(p);
}

gpt2c_status gpt2c_mem_upload(const gpt2c_kernels *k, void *dst, const void *src, size_t bytes) {
    if (k->memcpy_h2d) return k->memcpy_h2d(dst, src, bytes);
    memcpy(dst, src, bytes);
    return GPT2C_OK;
}

gpt2c_status gpt2c_mem_download(const gpt2c_kernels *k, void *dst, const void *src, size_t bytes) {
    if (k->memcpy_d2h) return k->memcpy_d2h(dst, src, bytes);
    memcpy(dst, src, bytes);
    return GPT2C_OK;
}

gpt2c_status gpt2c_mem_move(const gpt2c_kernels *from, const gpt2c_kernels *to, void **slab, size_t bytes,
                            const char *what) {
    if (!*slab || from->dev_alloc == to->dev_alloc) return GPT2C_OK;
    void *dst = gpt2c_mem_alloc(to, bytes, what);
    if (!dst) return GPT2C_ERR_NOMEM;
    gpt2c_status st;
    if (!gpt2c_mem_is_device(from)) {
        st = gpt2c_mem_upload(to, dst, *slab, bytes);
    } else if (!gpt2c_mem_is_device(to)) {
        st = gpt2c_mem_download(from, dst, *slab, bytes);
    } else { /* device to another device backend: through a host bounce */
        void *tmp = gpt2c_alloc(bytes, what);
        st = tmp ? gpt2c_mem_download(from, tmp, *slab, bytes) : GPT2C_ERR_NOMEM;
        if (st == GPT2C_OK) st = gpt2c_mem_upload(to, dst, tmp, bytes);
        gpt2c_free(tmp);
    }
    if (st != GPT2C_OK) {
        gpt2c_mem_free(to, dst);
        return st;
    }
    gpt2c_mem_free(from, *slab);
    *slab = dst;
    return GPT2C_OK;
}
