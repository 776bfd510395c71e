/* What the OS made of gpt2c_alloc_huge's advice (gpt2c/core.h): the bytes of
 * some blocks' mappings backed by 2 MiB pages, from /proc/self/smaps, and the
 * machine's transparent-huge-page mode, for the memory lines of `train` and
 * `bench train` (on 4 KiB pages AdamW ran up to 1.2x slower: BENCHMARKS.md). */
#include <stdio.h>
#include <string.h>

#include "gpt2c/core.h"

long long gpt2c_huge_page_bytes(const void *const *blocks, int n) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    long long total = 0;
    int in = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char dash;
        /* a mapping's header: "lo-hi perms ..." (a field line's name fails the hex or the '-') */
        if (sscanf(line, "%llx%c%llx ", &lo, &dash, &hi) == 3 && dash == '-') {
            in = 0; /* each mapping counted once, however many blocks it holds */
            for (int i = 0; i < n; i++)
                if (blocks[i] && (uintptr_t)blocks[i] >= lo && (uintptr_t)blocks[i] < hi) in = 1;
            continue;
        }
        long long kib;
        if (in && sscanf(line, "AnonHugePages: %lld kB", &kib) == 1) total += kib * 1024, found = 1, in = 0;
    }
    fclose(f);
    return found ? total : -1;
}

const char *gpt2c_thp_mode(char *buf, size_t n) {
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return NULL;
    char line[128] = "";
    const char *r = NULL;
    if (fgets(line, sizeof line, f)) { /* "always [madvise] never": the bracketed one */
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && (size_t)(b - a - 1) < n) {
            memcpy(buf, a + 1, (size_t)(b - a - 1));
            buf[b - a - 1] = '\0';
            r = buf;
        }
    }
    fclose(f);
    return r;
}

const char *gpt2c_huge_pages_text(char *buf, size_t n, long long huge, size_t slabs, const char *thp, const char *note) {
    if (huge < 0)
        snprintf(buf, n, "unknown (device memory, or no AnonHugePages in /proc/self/smaps)");
    else
        snprintf(buf, n, "%.1f of %.1f MiB (transparent huge pages: %s%s)", huge / 1048576.0, slabs / 1048576.0,
                 thp && *thp ? thp : "mode unknown", note ? note : "");
    return buf;
}
