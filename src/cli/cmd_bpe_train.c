/* gpt2c bpe-train --in FILE... --vocab-size N --out DIR: learn a byte-level
 * BPE vocabulary and write DIR/vocab.json + DIR/merges.txt. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/outpaths.h"
#include "gpt2c/tokenizer.h"

static int vocab_output_name(const char *base, const void *user) {
    (void)user;
    return strcmp(base, "vocab.json") == 0 || strcmp(base, "merges.txt") == 0;
}

int cmd_bpe_train(int argc, char **argv) {
    cli_strlist in = {0};
    const char *out = NULL;
    int vocab_size = 0;
    cli_opt opts[] = {
        {"--in", CLI_STRLIST, &in, "training text files", 0, 0},
        {"--vocab-size", CLI_INT, &vocab_size, "ids in the result: 256 bytes + merges + <|endoftext|>", 257, 1 << 24},
        {"--out", CLI_STR, &out, "output directory (vocab.json, merges.txt)", 0, 0},
    };
    int rc = cli_parse("bpe-train", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (in.n == 0 || !out || !vocab_size)
        return cli_error("bpe-train", "--in FILE..., --vocab-size N and --out DIR are required"), 2;
    for (int i = 0; i < in.n; i++) {
        const cli_path ins[] = {{"--in", in.items[i]}};
        if ((rc = cli_check_output_names("bpe-train", "--out", out, vocab_output_name, NULL, ins, 1))) return rc;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gpt2c_bpe_stats st;
    if (gpt2c_bpe_train_files(in.items, in.n, vocab_size, out, &st) != GPT2C_OK) return cli_fail_status("bpe-train");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("bpe-train: %.1f MB, %zu words (%zu distinct), %d merges, %d ids -> %s/vocab.json, %s/merges.txt "
           "in %.2f s (%.1f MB/s)\n",
           (double)st.bytes / 1e6, st.words, st.unique_words, st.merges, st.vocab_size, out, out, dt,
           dt > 0 ? (double)st.bytes / 1e6 / dt : 0.0);
    return 0;
}
