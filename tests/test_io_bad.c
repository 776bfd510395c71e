/* Bad checkpoints and failed saves, one case each: every one must fail with a
 * non-zero status and a one-line message naming the file (and the tensor
 * where one is at fault); a failed save must leave the previous file as it was. */
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpt2c/shard.h"
#include "io_testutil.h"

#ifdef GPT2C_HAVE_JANSSON
#define HAVE_J 1
#else
#define HAVE_J 0
#endif

static char dir[512];

/* Rewrites safetensors `src` into `dst`, dropping tensor `drop`, giving tensor
 * `retype` dtype I32 (same bytes), or giving tensor `reshape` a swapped shape. */
static void rewrite(const char *src, const char *dst, const char *drop, const char *retype, const char *reshape) {
    gpt2c_st_file *f = NULL;
    gpt2c_st_writer *w = NULL;
    if (gpt2c_st_open(src, &f) != GPT2C_OK || gpt2c_st_writer_new(&w) != GPT2C_OK) {
        fprintf(stderr, "rewrite: %s\n", gpt2c_errmsg());
        exit(1);
    }
    for (int i = 0; i < gpt2c_st_count(f); i++) {
        const gpt2c_st_tensor *t = gpt2c_st_get(f, i);
        if (drop && strcmp(t->name, drop) == 0) continue;
        gpt2c_dtype dt = retype && strcmp(t->name, retype) == 0 ? GPT2C_DT_I32 : t->dtype;
        int64_t shape[8];
        memcpy(shape, t->shape, sizeof shape);
        if (reshape && strcmp(t->name, reshape) == 0) {
            int64_t s = shape[0];
            shape[0] = shape[1];
            shape[1] = s;
        }
        CHECK_OK(gpt2c_st_writer_add(w, t->name, dt, t->ndim, shape, t->data));
    }
    for (int i = 0; i < gpt2c_st_meta_count(f); i++) {
        const char *v;
        const char *k = gpt2c_st_meta_get(f, i, &v);
        CHECK_OK(gpt2c_st_writer_meta(w, k, v));
    }
    CHECK_OK(gpt2c_st_writer_write(w, dst));
    gpt2c_st_writer_free(w);
    gpt2c_st_close(f);
}

static void truncate_copy(const char *src, const char *dst, size_t cut) {
    size_t n;
    unsigned char *b = io_slurp(src, &n);
    io_spit(dst, b, n - cut);
    free(b);
}

static void test_bin(gpt2c_model *m) {
    gpt2c_model *r = NULL;
    const char *good = io_path(dir, "good.bin");
    CHECK_OK(gpt2c_model_save_llmc(m, good, 3));
    size_t n;
    unsigned char *b = io_slurp(good, &n);

    const char *p = io_path(dir, "truncated.bin");
    truncate_copy(good, p, 10);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "truncated");
    truncate_copy(good, p, n - 100); /* inside the header */
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "truncated");

    p = io_path(dir, "magic.bin");
    int32_t v = 12345;
    memcpy(b, &v, 4);
    io_spit(p, b, n);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "magic");

    p = io_path(dir, "version.bin");
    v = 20240326;
    memcpy(b, &v, 4);
    v = 4;
    memcpy(b + 4, &v, 4);
    io_spit(p, b, n);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_UNSUPPORTED, p, "version 4");

    p = io_path(dir, "sizes.bin");
    v = 3;
    memcpy(b + 4, &v, 4);
    v = -7;
    memcpy(b + 4 * 6, &v, 4); /* channels */
    io_spit(p, b, n);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "positive");
    v = 33; /* not divisible by 2 heads */
    memcpy(b + 4 * 6, &v, 4);
    io_spit(p, b, n);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "divisible");
    v = 64; /* consistent but does not match the bytes that follow */
    memcpy(b + 4 * 6, &v, 4);
    io_spit(p, b, n);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "truncated");
    free(b);

    /* a token shard is not a model */
    p = io_path(dir, "tokens.bin");
    uint16_t toks[4] = {1, 2, 3, 4};
    CHECK_OK(gpt2c_shard_write(p, toks, 4));
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "shard");

    p = io_path(dir, "nothing.bin");
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_IO, p);
    CHECK(r == NULL);
}

static void test_safetensors(gpt2c_model *m) {
    gpt2c_model *r = NULL;
    const char *good = io_path(dir, "good.safetensors");
    CHECK_OK(gpt2c_model_save(m, good, NULL, 0, 0));
    const char *p = io_path(dir, "truncated.safetensors");
    truncate_copy(good, p, 1);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "truncated");

    p = io_path(dir, "missing.safetensors");
    rewrite(good, p, "transformer.h.1.mlp.c_fc.bias", NULL, NULL);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "'transformer.h.1.mlp.c_fc.bias'", "missing");

    p = io_path(dir, "dtype.safetensors");
    rewrite(good, p, NULL, "transformer.h.0.attn.c_proj.weight", NULL);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_UNSUPPORTED, p, "'transformer.h.0.attn.c_proj.weight'",
                       "I32");

    p = io_path(dir, "shape.safetensors");
    rewrite(good, p, NULL, NULL, "transformer.h.1.mlp.c_fc.weight");
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "'transformer.h.1.mlp.c_fc.weight'",
                       "[128, 32]", "expected [32, 128]");

    p = io_path(dir, "nowte.safetensors");
    rewrite(good, p, "transformer.wte.weight", NULL, NULL);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "wte");

    p = io_path(dir, "notjson.safetensors");
    io_spit(p, "\x08\0\0\0\0\0\0\0{garbage", 16);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "JSON");

    p = io_path(dir, "huge.safetensors");
    io_spit(p, "\0\0\0\0\0\0\1\0{}", 10);
    CHECK_FAILS_NAMING(gpt2c_model_load(p, &r), GPT2C_ERR_FORMAT, p, "absurd");
    CHECK(r == NULL);
}

/* Count files in dir whose name contains `part`. */
static int count_files(const char *d, const char *part) {
    DIR *dp = opendir(d);
    int k = 0;
    struct dirent *e;
    while (dp && (e = readdir(dp)))
        if (strstr(e->d_name, part)) k++;
    if (dp) closedir(dp);
    return k;
}

static void test_save_failures(gpt2c_model *m) {
    /* unwritable destinations */
    const char *p = "/nonexistent-gpt2c-dir/model.safetensors";
    if (HAVE_J) CHECK_FAILS_NAMING(gpt2c_model_save(m, p, NULL, 0, 0), GPT2C_ERR_IO, p);
    p = "/nonexistent-gpt2c-dir/model.bin";
    CHECK_FAILS_NAMING(gpt2c_model_save_llmc(m, p, 3), GPT2C_ERR_IO, p);
    const char *file = io_path(dir, "plainfile");
    io_spit(file, "x", 1);
    p = io_path(dir, "plainfile/model.bin"); /* parent is a file: fails even for root */
    CHECK_FAILS_NAMING(gpt2c_model_save_llmc(m, p, 3), GPT2C_ERR_IO, p);
    if (geteuid() != 0 && HAVE_J) { /* root ignores directory permissions */
        const char *ro = io_path(dir, "readonly");
        mkdir(ro, 0555);
        p = io_path(dir, "readonly/model.safetensors");
        CHECK_FAILS_NAMING(gpt2c_model_save(m, p, NULL, 0, 0), GPT2C_ERR_IO, p);
    } else {
        printf("  (running as root: read-only directory case not testable, skipped)\n");
    }
    CHECK_FAILS(gpt2c_model_save_llmc(m, io_path(dir, "v4.bin"), 4), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_model_save(m, io_path(dir, "noopt.safetensors"), NULL, 0, 1), GPT2C_ERR_ARG);

    /* a write failing midway leaves the previous checkpoint byte-identical and no temporary behind */
    const char *paths[2] = {io_path(dir, "keep.safetensors"), io_path(dir, "keep.bin")};
    for (int k = HAVE_J ? 0 : 1; k < 2; k++) {
        p = paths[k];
        CHECK_OK(k == 0 ? gpt2c_model_save(m, p, NULL, 0, 0) : gpt2c_model_save_llmc(m, p, 3));
        size_t n0, n1;
        unsigned char *before = io_slurp(p, &n0);
        gpt2c_model *m2 = io_tiny_model(99); /* different weights */
        setenv("GPT2C_FAULT_WRITE_AFTER", "3000", 1);
        CHECK_FAILS_NAMING(k == 0 ? gpt2c_model_save(m2, p, NULL, 0, 0) : gpt2c_model_save_llmc(m2, p, 3),
                           GPT2C_ERR_IO, p);
        unsetenv("GPT2C_FAULT_WRITE_AFTER");
        unsigned char *after = io_slurp(p, &n1);
        CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
        CHECK(count_files(dir, ".tmp.") == 0);
        free(before);
        free(after);
        gpt2c_model_free(m2);
    }
}

int main(void) {
    snprintf(dir, sizeof dir, "%s", io_scratch("bad"));
    gpt2c_model *m = io_tiny_model(5);
    test_bin(m);
    if (HAVE_J) test_safetensors(m); /* safetensors needs jansson */
    test_save_failures(m);
    gpt2c_model_free(m);
    io_rm_rf(dir);
    return tu_finish("test_io_bad");
}
