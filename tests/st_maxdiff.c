/* st_maxdiff A B TOL: every tensor of two safetensors files, as fp32, agrees
 * within TOL (max abs difference); the same tensor names in both.  Prints the
 * worst tensor; exit 0 when within TOL, 1 otherwise, 2 on bad input.  A test
 * helper for cli_mpi.sh (the N-process and 1-process checkpoints). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt2c/io.h"

static size_t numel(const gpt2c_st_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return n;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: st_maxdiff A.safetensors B.safetensors TOL\n");
        return 2;
    }
    const double tol = atof(argv[3]);
    gpt2c_st_file *a = NULL, *b = NULL;
    if (gpt2c_st_open(argv[1], &a) != GPT2C_OK || gpt2c_st_open(argv[2], &b) != GPT2C_OK) {
        fprintf(stderr, "st_maxdiff: %s\n", gpt2c_errmsg());
        return 2;
    }
    int rc = 0;
    double worst = 0;
    const char *worst_name = "(none)";
    if (gpt2c_st_count(a) != gpt2c_st_count(b)) {
        fprintf(stderr, "st_maxdiff: %d tensors vs %d\n", gpt2c_st_count(a), gpt2c_st_count(b));
        rc = 1;
    }
    for (int i = 0; i < gpt2c_st_count(a) && rc == 0; i++) {
        const gpt2c_st_tensor *ta = gpt2c_st_get(a, i), *tb = gpt2c_st_find(b, ta->name);
        if (!tb || numel(tb) != numel(ta)) {
            fprintf(stderr, "st_maxdiff: %s: missing or of another size in %s\n", ta->name, argv[2]);
            rc = 1;
            break;
        }
        const size_t n = numel(ta);
        float *xa = malloc(n * sizeof(float) + 1), *xb = malloc(n * sizeof(float) + 1);
        if (!xa || !xb) return 2;
        gpt2c_dtype_to_f32(ta->dtype, ta->data, xa, n);
        gpt2c_dtype_to_f32(tb->dtype, tb->data, xb, n);
        for (size_t j = 0; j < n; j++) {
            const double d = fabs((double)xa[j] - xb[j]);
            if (!(d <= worst)) { /* NaN counts as worst */
                worst = isnan(d) ? INFINITY : d;
                worst_name = ta->name;
            }
        }
        free(xa);
        free(xb);
    }
    if (rc == 0) {
        printf("max abs difference %.3g (%s), %d tensors\n", worst, worst_name, gpt2c_st_count(a));
        rc = worst <= tol ? 0 : 1;
    }
    gpt2c_st_close(a);
    gpt2c_st_close(b);
    return rc;
}
