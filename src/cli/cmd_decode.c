/* gpt2c decode --vocab DIR: whitespace-separated token ids on stdin -> the
 * exact bytes on stdout. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/decode_ids.h"
#include "cli/readall.h"
#include "gpt2c/tokenizer.h"

int cmd_decode(int argc, char **argv) {
    const char *vocab = NULL;
    cli_opt opts[] = {
        {"--vocab", CLI_STR, &vocab, "directory with encoder.json+vocab.bpe or vocab.json+merges.txt", 0, 0},
    };
    int rc = cli_parse("decode", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (!vocab) return cli_error("decode", "--vocab DIR is required"), 2;
    gpt2c_tokenizer *tok;
    if (gpt2c_tokenizer_load(vocab, &tok) != GPT2C_OK) return cli_fail_status("decode");
    char *text;
    size_t n;
    if (cli_read_stream(stdin, &text, &n) != 0) {
        gpt2c_tokenizer_free(tok);
        return cli_error("decode", "stdin: read failed: %s", strerror(errno));
    }
    int32_t *ids = NULL;
    size_t nids = 0;
    char err[512];
    rc = cli_decode_ids(text, n, gpt2c_tokenizer_vocab_size(tok), "stdin", vocab, &ids, &nids, err, sizeof err);
    if (rc) cli_error("decode", "%s", err);
    char *out = NULL;
    size_t nout = 0;
    if (!rc && gpt2c_tokenizer_decode(tok, ids, nids, &out, &nout) != GPT2C_OK) rc = cli_fail_status("decode");
    if (!rc && (fwrite(out, 1, nout, stdout) != nout || fflush(stdout) != 0))
        rc = cli_error("decode", "stdout: write failed: %s", strerror(errno));
    free(out);
    free(ids);
    free(text);
    gpt2c_tokenizer_free(tok);
    return rc;
}
