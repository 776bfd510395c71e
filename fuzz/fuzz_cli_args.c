/* libFuzzer target: the declarative option parser every command uses.  Input:
 * NUL-separated arguments, parsed against a table with every option type. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[64];
    int argc = 0;
    for (size_t i = 0; i <= size && argc < 64;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    int i1 = 0, flag = 0;
    long long l1 = 0;
    double d1 = 0;
    const char *s1 = NULL;
    cli_strlist sl = {0}, pos = {0};
    cli_intlist il = {{0}, 0}, il2 = {{0}, 0};
    cli_opt opts[] = {
        {"--int", CLI_INT, &i1, "int", 1, 1 << 20},
        {"--int-any", CLI_INT, &i1, "int", 0, 0},
        {"--long", CLI_LONG, &l1, "long", 0, 9.2e18},
        {"--float", CLI_FLOAT, &d1, "float", 0, 1},
        {"--str", CLI_STR, &s1, "str", 0, 0},
        {"--flag", CLI_FLAG, &flag, "flag", 0, 0},
        {"--list", CLI_STRLIST, &sl, "list", 0, 0},
        {"--ints", CLI_INTLIST, &il, "ints", 1, 1024},
        {"--ints-any", CLI_INTLIST, &il2, "ints", 0, 0},
    };
    int rc = cli_parse("fuzz", argc, argv, opts, CLI_NOPTS(opts), data[0] & 1 ? &pos : NULL);
    if (rc == 0) {
        if (i1 < 0 || i1 > (1 << 20)) {
            if (!cli_given("--int-any")) abort();
        }
        for (int k = 0; k < sl.n; k++) (void)strlen(sl.items[k]);
        for (int k = 0; k < pos.n; k++) (void)strlen(pos.items[k]);
        if (il.n > 64 || il2.n > 64) abort();
        for (int k = 0; k < il.n; k++)
            if (il.items[k] < 1 || il.items[k] > 1024) abort();
    }
    free(buf);
    return 0;
}
