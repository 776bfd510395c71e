/* Decode streams every quantized weight once per token, 96-143 MB for GPT-2
 * 124M.  In 4 KiB pages that stream crosses a page boundary every 4 KiB, and
 * the hardware prefetchers stop at each one (and every page needs a TLB
 * entry); in 2 MiB pages, 512x less often.  Measured on this Zen 4, one
 * thread, weights out of cache (bench/qmatmul_micro.c, interleaved): the
 * same kernels read 1.25-1.3x faster (q4, nf4) and 1.3-1.5x (q8) from 2 MiB
 * pages.  Each tensor's codes were malloc'ed on their own (0.3-43 MB each),
 * so they are gathered here into one mapping advised MADV_HUGEPAGE (used by
 * Linux's transparent huge pages in their "madvise" mode as well as
 * "always"), in the order of the decode pass so that one weight's stream
 * runs into the next.  The values are copied, not changed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gpt2c/model.h"
#include "gpt2c/quant.h"
#include "quant/quant_arena.h"

enum { ARENA_ALIGN = 64 };
#define HUGE_PAGE ((size_t)2 << 20)

static size_t up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* the quantized tensors in decode order: the layers' weights layer by layer, then the LM head */
static int next_tensor(const gpt2c_qweights *q, int *l, int *id) {
    int maxl = 0;
    for (int i = 0; i < GPT2C_NUM_PARAM_TENSORS; i++)
        if (q->layers[i] > maxl) maxl = q->layers[i];
    for (;;) {
        if (++*id >= GPT2C_NUM_PARAM_TENSORS) *id = 0, ++*l;
        if (*l > maxl) return 0;
        const int last = *l == maxl; /* the pass over the LM head (and any other single tensor) */
        if (!q->t[*id] || (*id == GPT2C_P_WTE) != last) continue;
        const int layer = last ? 0 : *l;
        if (layer < q->layers[*id] && gpt2c_format_is_quantized(q->t[*id][layer].fmt)) return 1;
    }
}

static gpt2c_tensor *at(gpt2c_qweights *q, int l, int id) { return &q->t[id][id == GPT2C_P_WTE ? 0 : l]; }

void gpt2c_qweights_pack_arena(gpt2c_qweights *q) {
    const char *e = getenv("GPT2C_QUANT_ARENA");
    if (!q || q->arena || (e && strcmp(e, "0") == 0)) return;
    size_t total = 0;
    for (int l = 0, id = -1; next_tensor(q, &l, &id);) {
        const gpt2c_tensor *t = at(q, l, id);
        total += up(gpt2c_quant_code_bytes(t->fmt, t->rows, t->cols, t->block), ARENA_ALIGN) +
                 up(sizeof(float) * gpt2c_quant_nscales(t->fmt, t->rows, t->cols, t->block), ARENA_ALIGN);
    }
    if (!total) return;
    /* a mapping 2 MiB larger, so that the block can start on a 2 MiB boundary */
    const size_t bytes = up(total, HUGE_PAGE) + HUGE_PAGE;
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return;
    char *p = (char *)up((uintptr_t)map, HUGE_PAGE);
#ifdef MADV_HUGEPAGE
    (void)madvise(p, up(total, HUGE_PAGE), MADV_HUGEPAGE);
#endif
    for (int l = 0, id = -1; next_tensor(q, &l, &id);) {
        gpt2c_tensor *t = at(q, l, id);
        const size_t cb = gpt2c_quant_code_bytes(t->fmt, t->rows, t->cols, t->block);
        const size_t sb = sizeof(float) * gpt2c_quant_nscales(t->fmt, t->rows, t->cols, t->block);
        memcpy(p, t->data, cb);
        free(t->data);
        t->data = p, p += up(cb, ARENA_ALIGN);
        memcpy(p, t->scales, sb);
        free(t->scales);
        t->scales = (float *)p, p += up(sb, ARENA_ALIGN);
    }
    q->arena = map, q->arena_bytes = bytes;
}

void gpt2c_qweights_arena_free(gpt2c_qweights *q) {
    if (q && q->arena) munmap(q->arena, q->arena_bytes);
    if (q) q->arena = NULL, q->arena_bytes = 0;
}
