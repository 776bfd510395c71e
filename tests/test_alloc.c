/* The allocators of gpt2c/core.h: gpt2c_alloc's blocks are 64-byte aligned
 * and zero-filled; gpt2c_alloc_huge's (the slabs AdamW streams) from 4 MiB on
 * start on a 2 MiB boundary and span whole 2 MiB pages, below that they are
 * gpt2c_alloc's; both refuse an impossible size with an error naming the
 * block.  Whether Linux backs a block with huge pages is its choice (free
 * memory, /sys/kernel/mm/transparent_hugepage/enabled): printed, not checked. */
#include <stdint.h>

#include "testutil.h"

static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* AnonHugePages of the mapping holding p, in KiB (-1: not found) */
static long huge_kib(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    long kib = -1;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        } else if (in && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1) {
            break;
        }
    }
    fclose(f);
    return kib;
}

int main(void) {
    const size_t MiB = (size_t)1 << 20;
    const size_t sizes[] = {1, 100, 4096, 3 * MiB, 4 * MiB, 4 * MiB + 1, 9 * MiB + 77};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        const size_t n = sizes[i];
        unsigned char *a = gpt2c_alloc(n, "test block"), *h = gpt2c_alloc_huge(n, "test slab");
        CHECK(a && h);
        if (!a || !h) continue;
        CHECK((uintptr_t)a % GPT2C_ALIGN == 0);
        CHECK((uintptr_t)h % (n >= 4 * MiB ? 2 * MiB : GPT2C_ALIGN) == 0);
        CHECK(all_zero(a, n) && all_zero(h, n));
        memset(a, 0xab, n), memset(h, 0xcd, n); /* every byte asked for is writable (ASan checks the bounds) */
        CHECK(a[n - 1] == 0xab && h[n - 1] == 0xcd);
        if (n >= 4 * MiB) {
            /* gpt2c_huge_page_bytes reads the same smaps field as this test's own parser */
            const void *blk[2] = {h, NULL};
            const long long hb = gpt2c_huge_page_bytes(blk, 2);
            const long kib = huge_kib(h);
            printf("huge slab of %zu bytes: %ld KiB of its mapping in huge pages (the OS's choice)\n", n, kib);
            CHECK(kib < 0 || hb == (long long)kib * 1024);
        }
        gpt2c_free(a), gpt2c_free(h);
    }
    /* no block: no mapping found, so unknown, not 0 */
    const void *none[1] = {NULL};
    CHECK(gpt2c_huge_page_bytes(none, 1) == -1);
    char mode[32];
    const char *thp = gpt2c_thp_mode(mode, sizeof mode);
    CHECK(!thp || !strcmp(thp, "always") || !strcmp(thp, "madvise") || !strcmp(thp, "never"));
    printf("transparent huge pages: %s\n", thp ? thp : "(mode unknown)");
#ifndef __SANITIZE_ADDRESS__ /* (ASan aborts on such a request, by its default allocator_may_return_null=0) */
    /* an impossible size: NULL and an error naming the block, not a crash */
    void *p = gpt2c_alloc_huge(SIZE_MAX / 2, "the impossible slab");
    CHECK(p == NULL);
    CHECK(strstr(gpt2c_errmsg(), "the impossible slab") != NULL);
    p = gpt2c_alloc(SIZE_MAX / 2, "the impossible block");
    CHECK(p == NULL);
    CHECK(strstr(gpt2c_errmsg(), "the impossible block") != NULL);
#endif
    return tu_finish("test_alloc");
}
