#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"

void *gpt2c_alloc(size_t bytes, const char *what) {
    size_t rounded = (bytes + GPT2C_ALIGN - 1) / GPT2C_ALIGN * GPT2C_ALIGN;
    if (rounded == 0) rounded = GPT2C_ALIGN;
    void *p = aligned_alloc(GPT2C_ALIGN, rounded);
    if (!p) {
        gpt2c_fail(GPT2C_ERR_NOMEM, "%s: cannot allocate %.1f MiB", what, bytes / 1048576.0);
        return NULL;
    }
    memset(p, 0, rounded);
    return p;
}

void gpt2c_free(void *p) { free(p); }
