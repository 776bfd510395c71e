/* gpt2c encode --vocab DIR [--allow-special] [--threads N]: text on stdin ->
 * token ids on stdout, separated by spaces, one line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/readall.h"
#include "cli/run_arg.h"
#include "gpt2c/tokenizer.h"

int cmd_encode(int argc, char **argv) {
    const char *vocab = NULL;
    int allow_special = 0, threads = 0;
    cli_opt opts[] = {
        {"--vocab", CLI_STR, &vocab, "directory with encoder.json+vocab.bpe or vocab.json+merges.txt", 0, 0},
        {"--allow-special", CLI_FLAG, &allow_special, "treat <|endoftext|> in the text as the special token", 0, 0},
        THREADS_ARG_OPT(threads, "encoding threads, 0 = all cores; the output is the same [0]"),
    };
    int rc = cli_parse("encode", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (!vocab) return cli_error("encode", "--vocab DIR is required"), 2;
    gpt2c_tokenizer *tok;
    if (gpt2c_tokenizer_load(vocab, &tok) != GPT2C_OK) return cli_fail_status("encode");
    char *text;
    size_t n;
    if (cli_read_stream(stdin, &text, &n) != 0) {
        gpt2c_tokenizer_free(tok);
        return cli_error("encode", "stdin: read failed: %s", strerror(errno));
    }
    int32_t *ids;
    size_t nids;
    gpt2c_status st = gpt2c_tokenizer_encode_parallel(tok, text, n, allow_special, threads, &ids, &nids);
    free(text);
    gpt2c_tokenizer_free(tok);
    if (st != GPT2C_OK) return cli_fail_status("encode");
    char buf[16];
    for (size_t i = 0; i < nids; i++) {
        int len = snprintf(buf, sizeof buf, i ? " %d" : "%d", ids[i]);
        fwrite(buf, 1, (size_t)len, stdout);
    }
    fputc('\n', stdout);
    free(ids);
    if (fflush(stdout) != 0 || ferror(stdout)) return cli_error("encode", "stdout: write failed: %s", strerror(errno));
    return 0;
}
