/* Encode throughput of gpt2c's tokenizer: median of R runs, MB/s, for one
 * thread and for all threads.  usage: bench_tokenizer VOCAB_DIR FILE [RUNS] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpt2c/fileio.h"
#include "gpt2c/tokenizer.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s VOCAB_DIR FILE [RUNS]\n", argv[0]);
        return 2;
    }
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    if (runs < 1 || runs > 99) runs = 5;
    gpt2c_tokenizer *tok;
    void *text;
    size_t n;
    if (gpt2c_tokenizer_load(argv[1], &tok) != GPT2C_OK || gpt2c_read_file(argv[2], &text, &n) != GPT2C_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", gpt2c_errmsg());
        return 1;
    }
    int all = omp_get_max_threads();
    int modes[2] = {1, all};
    for (int m = 0; m < 2; m++) {
        double t[99];
        size_t nids = 0;
        for (int r = 0; r < runs; r++) {
            int32_t *ids;
            double t0 = now();
            if (gpt2c_tokenizer_encode_parallel(tok, text, n, 0, modes[m], &ids, &nids) != GPT2C_OK) {
                fprintf(stderr, "bench_tokenizer: %s\n", gpt2c_errmsg());
                return 1;
            }
            t[r] = now() - t0;
            free(ids);
        }
        qsort(t, (size_t)runs, sizeof t[0], cmp);
        printf("gpt2c\t%d\t%.1f\t%zu\n", modes[m], (double)n / 1e6 / t[runs / 2], nids);
    }
    free(text);
    gpt2c_tokenizer_free(tok);
    return 0;
}
