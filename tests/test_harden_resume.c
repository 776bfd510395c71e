/* Resume metadata is untrusted: every gpt2c.* value a checkpoint carries is
 * parsed strictly and checked against the data before the loader uses it
 * (issue 20: a cursor near 2^64 made the loader read outside its buffer). */
#include <stdint.h>

#include "gpt2c/data.h"
#include "gpt2c/parse.h"
#include "gpt2c/resume.h"
#include "gpt2c/shard.h"
#include "io_testutil.h"

/* A checkpoint-like safetensors file holding only the trainer metadata. */
static gpt2c_status write_meta(const char *path, const char *step, const char *epoch, const char *shard,
                               const char *cursor, const char *seed, const char *shuffle) {
    gpt2c_st_writer *w;
    GPT2C_TRY(gpt2c_st_writer_new(&w));
    float x = 0;
    int64_t shape[1] = {1};
    gpt2c_status st = gpt2c_st_writer_add(w, "x", GPT2C_DT_F32, 1, shape, &x);
    const char *kv[][2] = {{"gpt2c.step", step},     {"gpt2c.data.epoch", epoch}, {"gpt2c.data.shard", shard},
                           {"gpt2c.data.cursor", cursor}, {"gpt2c.seed", seed}, {"gpt2c.data.shuffle", shuffle}};
    for (int i = 0; i < 6 && st == GPT2C_OK; i++)
        if (kv[i][1]) st = gpt2c_st_writer_meta(w, kv[i][0], kv[i][1]);
    if (st == GPT2C_OK) st = gpt2c_st_writer_write(w, path);
    gpt2c_st_writer_free(w);
    return st;
}

static gpt2c_status read_state(const char *path, gpt2c_resume_state *rs) {
    gpt2c_st_file *f;
    GPT2C_TRY(gpt2c_st_open(path, &f));
    gpt2c_status st = gpt2c_resume_read(f, rs);
    gpt2c_st_close(f);
    return st;
}

static void test_parse_helpers(void) {
    int64_t v = 0;
    uint64_t u = 0;
    int i = 0;
    CHECK(gpt2c_parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX, &v) && v == INT64_MIN);
    CHECK(gpt2c_parse_i64("9223372036854775807", INT64_MIN, INT64_MAX, &v) && v == INT64_MAX);
    CHECK(!gpt2c_parse_i64("9223372036854775808", INT64_MIN, INT64_MAX, &v));
    CHECK(gpt2c_parse_u64("18446744073709551615", UINT64_MAX, &u) && u == UINT64_MAX);
    CHECK(!gpt2c_parse_u64("18446744073709551616", UINT64_MAX, &u));
    CHECK(!gpt2c_parse_u64("-1", UINT64_MAX, &u));
    const char *bad[] = {"", " 1", "1 ", "+1", "1e3", "0x10", "12abc", "-", "--1"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) CHECK_MSG(!gpt2c_parse_int(bad[k], -100, 100000, &i), "'%s'", bad[k]);
    CHECK(gpt2c_parse_int("-5", -10, 10, &i) && i == -5);
    CHECK(!gpt2c_parse_int("11", -10, 10, &i));
}

static void test_metadata(const char *dir) {
    const char *p = io_path(dir, "ck.safetensors");
    gpt2c_resume_state rs;
    CHECK_OK(write_meta(p, "5", "1", "0", "32", "7", "1"));
    CHECK_OK(read_state(p, &rs));
    CHECK(rs.step == 5 && rs.pos.epoch == 1 && rs.pos.shard == 0 && rs.pos.cursor == 32 && rs.has_seed &&
          rs.seed == 7 && rs.has_shuffle && rs.shuffle == 1);
    struct {
        const char *step, *epoch, *shard, *cursor, *seed, *shuffle, *field;
    } bad[] = {
        {"-1", "0", "0", "0", NULL, NULL, "gpt2c.step"},
        {"abc", "0", "0", "0", NULL, NULL, "gpt2c.step"},
        {"5x", "0", "0", "0", NULL, NULL, "gpt2c.step"},
        {"2147483648", "0", "0", "0", NULL, NULL, "gpt2c.step"},
        {"5", "-1", "0", "0", NULL, NULL, "gpt2c.data.epoch"},
        {"5", "18446744073709551615", "0", "0", NULL, NULL, "gpt2c.data.epoch"},
        {"5", "0", "-1", "0", NULL, NULL, "gpt2c.data.shard"},
        {"5", "0", "0", "18446744073709551600", NULL, NULL, "gpt2c.data.cursor"},
        {"5", "0", "0", "-16", NULL, NULL, "gpt2c.data.cursor"},
        {"5", "0", "0", "0", "-3", NULL, "gpt2c.seed"},
        {"5", "0", "0", "0", "7", "2", "gpt2c.data.shuffle"},
        {"0", "3", "0", "0", NULL, NULL, "gpt2c.data.epoch"}, /* epochs without a single step */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK_OK(write_meta(p, bad[k].step, bad[k].epoch, bad[k].shard, bad[k].cursor, bad[k].seed, bad[k].shuffle));
        CHECK_FAILS_NAMING(read_state(p, &rs), GPT2C_ERR_FORMAT, p, bad[k].field);
    }
    CHECK_OK(write_meta(p, "5", NULL, "0", "0", NULL, NULL));
    CHECK_FAILS_NAMING(read_state(p, &rs), GPT2C_ERR_FORMAT, p, "not a training checkpoint");
}

static void test_loader_bounds(const char *dir) {
    enum { N = 200, B = 2, T = 8, V = 50 };
    uint16_t tok[N];
    for (int i = 0; i < N; i++) tok[i] = (uint16_t)(i % V);
    const char *shard = io_path(dir, "d.bin");
    CHECK_OK(gpt2c_shard_write(shard, tok, N));
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        gpt2c_dataloader dl;
        CHECK_OK(gpt2c_dataloader_open(&dl, shard, B, T, shuffle, 1, V));
        gpt2c_data_pos far = {0, 0, UINT64_MAX - 5};
        CHECK_FAILS_NAMING(gpt2c_dataloader_seek(&dl, far), GPT2C_ERR_RANGE, "d.bin", "past the end");
        gpt2c_data_pos past = {0, 0, shuffle ? N : N + 1};
        CHECK_FAILS_NAMING(gpt2c_dataloader_seek(&dl, past), GPT2C_ERR_RANGE, "cursor");
        gpt2c_data_pos noshard = {0, 1, 0};
        CHECK_FAILS_NAMING(gpt2c_dataloader_seek(&dl, noshard), GPT2C_ERR_ARG, "shard 1");
        /* the loader is still usable after a refused seek, and a cursor forced
         * past the end (the old overflow) moves on to the next shard instead of
         * reading outside the buffer */
        CHECK_OK(gpt2c_dataloader_next(&dl));
        dl.pos.cursor = UINT64_MAX - 3;
        CHECK_OK(gpt2c_dataloader_next(&dl));
        CHECK(dl.pos.epoch == 1);
        for (int i = 0; i < B * T; i++) CHECK(dl.inputs[i] >= 0 && dl.inputs[i] < V && dl.targets[i] < V);
        /* the last exact position is accepted */
        gpt2c_data_pos end = {0, 0, shuffle ? (N - 1) / T : N};
        CHECK_OK(gpt2c_dataloader_seek(&dl, end));
        CHECK_OK(gpt2c_dataloader_next(&dl));
        gpt2c_dataloader_close(&dl);
    }
    /* ids beyond the vocabulary are refused when the shard is read */
    gpt2c_dataloader dl;
    CHECK_FAILS_NAMING(gpt2c_dataloader_open(&dl, shard, B, T, 0, 1, V - 1), GPT2C_ERR_RANGE, "d.bin", "vocabulary");
}

int main(void) {
#ifndef GPT2C_HAVE_JANSSON
    test_parse_helpers();
    tu_skip("built without jansson: no safetensors checkpoints to resume from");
#endif
    const char *dir = io_scratch("resume");
    test_parse_helpers();
    test_metadata(dir);
    test_loader_bounds(dir);
    io_rm_rf(dir);
    return tu_finish("test_harden_resume");
}
