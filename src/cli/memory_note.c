#include "cli/memory_note.h"

#include <stdio.h>
#include <string.h>

#include "gpt2c/core.h"

void cli_huge_pages_note(char *buf, size_t n, const gpt2c_model *m) {
    size_t slabs = 0;
    const long long huge = gpt2c_model_huge_page_bytes(m, &slabs);
    char mode[32];
    const char *thp = gpt2c_thp_mode(mode, sizeof mode);
    if (!slabs)
        snprintf(buf, n, "%s", "");
    else if (huge < 0)
        snprintf(buf, n, "; slabs in 2 MiB pages: unknown (device memory, or no AnonHugePages in /proc/self/smaps)");
    else /* THP "never": say what it costs (BENCHMARKS.md, twenty-fifth session) */
        snprintf(buf, n, "; slabs in 2 MiB pages: %.1f of %.1f MiB (transparent huge pages: %s%s)", huge / 1048576.0,
                 slabs / 1048576.0, thp ? thp : "mode unknown",
                 thp && !strcmp(thp, "never") ? "; AdamW ran up to 1.2x faster in 2 MiB pages on Zen 4" : "");
}
