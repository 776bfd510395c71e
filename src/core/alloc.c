#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gpt2c/core.h"

static void *alloc_aligned(size_t bytes, size_t align, size_t unit, int huge, const char *what) {
    size_t rounded = (bytes + unit - 1) / unit * unit;
    if (rounded == 0) rounded = unit;
    void *p = aligned_alloc(align, rounded);
    if (!p) {
        gpt2c_fail(GPT2C_ERR_NOMEM, "%s: cannot allocate %.1f MiB", what, bytes / 1048576.0);
        return NULL;
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only: 4 KiB pages where no 2 MiB ones are free */
#else
    (void)huge;
#endif
    /* touched now, so the pages are had here; a large block by all threads
     * in 2 MiB pieces: the kernel zeroes each page as it is first touched, on
     * the touching core (GPT-2 124M's ~2.4 GB of slabs took ~2 s on one) */
    const size_t piece = (size_t)2 << 20;
    if (rounded >= 16 * piece && !omp_in_parallel()) {
        const long n = (long)((rounded + piece - 1) / piece);
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) {
            const size_t off = (size_t)i * piece;
            memset((char *)p + off, 0, rounded - off < piece ? rounded - off : piece);
        }
    } else {
        memset(p, 0, rounded);
    }
    return p;
}

void *gpt2c_alloc(size_t bytes, const char *what) { return alloc_aligned(bytes, GPT2C_ALIGN, GPT2C_ALIGN, 0, what); }

/* 2 MiB-aligned whole 2 MiB pages, advised MADV_HUGEPAGE: Linux's
 * transparent huge pages then back them in their "madvise" mode too (the
 * default of the VMs seen here), not only in "always".  AdamW streams six
 * slabs at once (weights, gradient, both moments, the bf16 copies and
 * panels); in 2 MiB pages those streams cross 512x fewer page boundaries
 * (the hardware prefetchers stop at each) and need 512x fewer TLB entries.
 * Measured on Zen 4 (BENCHMARKS.md, twenty-fifth session), the same ops on
 * the same arrays in one process (bench/hugepages_ab.sh): bf16 AdamW with its
 * panels 0.82-0.98x the time, fp32 AdamW 0.84-1.00x, the grad norm 0.87-1.05x.  The activations
 * stay on gpt2c_alloc (in 2 MiB pages: no gain measured), and so do small
 * blocks (a 2 MiB page each would waste memory). */
void *gpt2c_alloc_huge(size_t bytes, const char *what) {
    const size_t huge = (size_t)2 << 20;
    if (bytes < 2 * huge) return gpt2c_alloc(bytes, what);
    return alloc_aligned(bytes, huge, huge, 1, what);
}

void gpt2c_free(void *p) { free(p); }
