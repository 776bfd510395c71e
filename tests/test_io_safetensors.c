/* safetensors parser: valid files, dtype conversion, and one test per kind of
 * malformed header, each failing with a one-line message naming the file (and
 * the tensor where there is one). */
#include <stdint.h>

#include "io_testutil.h"

#define NAME "mem.safetensors"

static unsigned char buf[1 << 16];

/* 8-byte length + header JSON + `data` bytes of a counting pattern; returns the size. */
static size_t make(const char *json, size_t data) {
    size_t h = strlen(json);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, json, h);
    for (size_t i = 0; i < data; i++) buf[8 + h + i] = (unsigned char)i;
    return 8 + h + data;
}

#define BAD(json, data, ...)                                                                              \
    do {                                                                                                  \
        gpt2c_st_file *f_ = NULL;                                                                         \
        CHECK_FAILS_NAMING(gpt2c_st_parse(NAME, buf, make(json, data), &f_), GPT2C_ERR_FORMAT, NAME, __VA_ARGS__); \
        CHECK(f_ == NULL);                                                                                \
    } while (0)

static void test_valid(void) {
    /* a: F32 [2] = 1, -2.5 ; h: F16 [3] = 1, -2, 65504 ; b: BF16 [1] = 3 ; e: empty I64 [0, 5] */
    const char *json = "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"},"
                       "\"h\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[8,14]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"BF16\",\"shape\":[1,1],\"data_offsets\":[14,16]},"
                       "\"e\":{\"dtype\":\"I64\",\"shape\":[0,5],\"data_offsets\":[16,16]}}";
    size_t n = make(json, 16);
    unsigned char *d = buf + 8 + strlen(json);
    float a[2] = {1.0f, -2.5f};
    memcpy(d, a, 8);
    const uint16_t h[3] = {0x3c00, 0xc000, 0x7bff}, b = 0x4040;
    memcpy(d + 8, h, 6);
    memcpy(d + 14, &b, 2);
    gpt2c_st_file *f = NULL;
    CHECK_OK(gpt2c_st_parse(NAME, buf, n, &f));
    if (!f) return;
    CHECK(gpt2c_st_count(f) == 4);
    CHECK(strcmp(gpt2c_st_get(f, 0)->name, "a") == 0); /* offset order */
    CHECK(gpt2c_st_get(f, 4) == NULL && gpt2c_st_get(f, -1) == NULL);
    const gpt2c_st_tensor *t = gpt2c_st_find(f, "b");
    CHECK(t && t->dtype == GPT2C_DT_BF16 && t->ndim == 2 && t->shape[0] == 1 && t->nbytes == 2);
    CHECK(gpt2c_st_find(f, "zz") == NULL && gpt2c_st_find(f, "__metadata__") == NULL);
    CHECK(gpt2c_st_meta(f, "k") && strcmp(gpt2c_st_meta(f, "k"), "v") == 0);
    CHECK(gpt2c_st_meta_count(f) == 2);
    float out[3];
    CHECK_OK(gpt2c_st_read_f32(f, "a", out, 2));
    CHECK(out[0] == 1.0f && out[1] == -2.5f);
    CHECK_OK(gpt2c_st_read_f32(f, "h", out, 3));
    CHECK(out[0] == 1.0f && out[1] == -2.0f && out[2] == 65504.0f);
    CHECK_OK(gpt2c_st_read_f32(f, "b", out, 1));
    CHECK(out[0] == 3.0f);
    CHECK_OK(gpt2c_st_read_f32(f, "e", out, 0));
    CHECK_FAILS_NAMING(gpt2c_st_read_f32(f, "a", out, 3), GPT2C_ERR_FORMAT, NAME, "'a'");
    CHECK_FAILS_NAMING(gpt2c_st_read_f32(f, "nope", out, 1), GPT2C_ERR_FORMAT, NAME, "'nope'");
    gpt2c_st_close(f);

    /* an empty header object and trailing whitespace padding are fine */
    CHECK_OK(gpt2c_st_parse(NAME, buf, make("{}      ", 0), &f));
    if (f) CHECK(gpt2c_st_count(f) == 0);
    gpt2c_st_close(f);
}

static void test_f16_subnormal(void) {
    uint16_t h[4] = {0x0001, 0x8400, 0x7c00, 0x0000};
    float out[4];
    gpt2c_dtype_to_f32(GPT2C_DT_F16, h, out, 4);
    CHECK(out[0] == ldexpf(1.0f, -24) && out[1] == -ldexpf(1.0f, -14) && isinf(out[2]) && out[3] == 0.0f);
    CHECK(gpt2c_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(gpt2c_f32_to_bf16(1.00390625f) == 0x3f80); /* halfway: ties to even */
    CHECK(gpt2c_f32_to_bf16(1.01171875f) == 0x3f82); /* halfway above odd: rounds up */
}

static void test_bad(void) {
    gpt2c_st_file *f = NULL;
    /* file shorter than the length field */
    CHECK_FAILS_NAMING(gpt2c_st_parse(NAME, "\x02\0\0", 3, &f), GPT2C_ERR_FORMAT, NAME, "short");
    /* absurd header length */
    unsigned char huge[16] = {0, 0, 0, 0, 0, 1, 0, 0, '{', '}'};
    CHECK_FAILS_NAMING(gpt2c_st_parse(NAME, huge, sizeof huge, &f), GPT2C_ERR_FORMAT, NAME, "absurd");
    /* header length past the end of the file */
    unsigned char past[12] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    CHECK_FAILS_NAMING(gpt2c_st_parse(NAME, past, sizeof past, &f), GPT2C_ERR_FORMAT, NAME, "past the end");
    BAD("{\"a\": nope}", 0, "JSON");
    BAD("[1, 2, 3]", 0, "not a JSON object");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "JSON"); /* duplicate key */
    BAD("{\"a\": 3}", 0, "'a'", "not a JSON object");
    BAD("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'a'", "dtype");
    BAD("{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'a'", "dtype");
    BAD("{\"a\":{\"dtype\":\"F8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "'a'", "unknown dtype 'F8'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4, "'a'", "shape");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "'a'", "shape[0]");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "'a'", "shape[0]");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4],\"data_offsets\":[0,4]}}", 4, "'a'",
        "overflow");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "'a'", "dims");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "'a'", "data_offsets");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "'a'", "data_offsets");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "'a'", "data_offsets");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, "'a'", "data_offsets");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "'a'", "past the data");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "'a'", "needs 8");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "'a'", "'b'", "overlap");
    BAD("{\"__metadata__\": [1]}", 0, "__metadata__");
    BAD("{\"__metadata__\": {\"step\": 3}}", 0, "__metadata__", "'step'");
}

static void test_open(void) {
    const char *dir = io_scratch("st");
    char d[512];
    snprintf(d, sizeof d, "%s", dir);
    gpt2c_st_file *f = NULL;
    const char *missing = io_path(d, "missing.safetensors");
    CHECK_FAILS_NAMING(gpt2c_st_open(missing, &f), GPT2C_ERR_IO, missing);
    CHECK_FAILS_NAMING(gpt2c_st_open(d, &f), GPT2C_ERR_IO, d); /* a directory */
    /* truncated: valid header, data cut short */
    const char *p = io_path(d, "t.safetensors");
    size_t n = make("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16);
    io_spit(p, buf, n - 3);
    CHECK_FAILS_NAMING(gpt2c_st_open(p, &f), GPT2C_ERR_FORMAT, p, "'a'");
    io_spit(p, buf, n);
    CHECK_OK(gpt2c_st_open(p, &f));
    gpt2c_st_close(f);

    /* writer: rejects bad input, writes what the reader accepts */
    gpt2c_st_writer *w = NULL;
    CHECK_OK(gpt2c_st_writer_new(&w));
    float x[3] = {1, 2, 3};
    int64_t shape[1] = {3}, neg[1] = {-3};
    CHECK_OK(gpt2c_st_writer_add(w, "x", GPT2C_DT_F32, 1, shape, x));
    CHECK_FAILS(gpt2c_st_writer_add(w, "x", GPT2C_DT_F32, 1, shape, x), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_st_writer_add(w, "y", GPT2C_DT_F32, 1, neg, x), GPT2C_ERR_ARG);
    CHECK_FAILS(gpt2c_st_writer_add(w, "__metadata__", GPT2C_DT_F32, 1, shape, x), GPT2C_ERR_ARG);
    CHECK_OK(gpt2c_st_writer_meta(w, "a", "1"));
    CHECK_OK(gpt2c_st_writer_meta(w, "a", "2"));
    const char *q = io_path(d, "w.safetensors");
    CHECK_OK(gpt2c_st_writer_write(w, q));
    gpt2c_st_writer_free(w);
    CHECK_OK(gpt2c_st_open(q, &f));
    if (f) {
        float y[3];
        CHECK_OK(gpt2c_st_read_f32(f, "x", y, 3));
        CHECK(y[2] == 3.0f && strcmp(gpt2c_st_meta(f, "a"), "2") == 0);
        CHECK(gpt2c_st_header_bytes(f) % 8 == 0);
        gpt2c_st_close(f);
    }
    io_rm_rf(d);
}

int main(void) {
#ifndef GPT2C_HAVE_JANSSON
    /* Without jansson the parser only reports that it is not built in. */
    gpt2c_st_file *f = NULL;
    CHECK_FAILS(gpt2c_st_parse(NAME, "", 0, &f), GPT2C_ERR_UNSUPPORTED);
    CHECK(f == NULL);
    (void)test_valid;
    (void)test_f16_subnormal;
    (void)test_bad;
    (void)test_open;
#else
    test_valid();
    test_f16_subnormal();
    test_bad();
    test_open();
#endif
    return tu_finish("test_io_safetensors");
}
