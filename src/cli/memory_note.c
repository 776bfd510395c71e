#include "cli/memory_note.h"

#include <stdio.h>
#include <string.h>

#include "gpt2c/core.h"

void cli_huge_pages_note(char *buf, size_t n, const gpt2c_model *m) {
    size_t slabs = 0;
    const long long huge = gpt2c_model_huge_page_bytes(m, &slabs);
    char mode[32], text[160];
    const char *thp = gpt2c_thp_mode(mode, sizeof mode);
    /* THP "never": say what it costs (BENCHMARKS.md, twenty-fifth session) */
    const char *note = thp && !strcmp(thp, "never") ? "; AdamW ran up to 1.2x faster in 2 MiB pages on Zen 4" : "";
    if (!slabs)
        snprintf(buf, n, "%s", "");
    else
        snprintf(buf, n, "; slabs in 2 MiB pages: %s", gpt2c_huge_pages_text(text, sizeof text, huge, slabs, thp, note));
}
