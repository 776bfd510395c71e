/* safetensors writer: collects tensors and metadata, then writes the header
 * (padded with spaces to a multiple of 8 so the data stays 8-byte aligned) and
 * the data in the order added, atomically. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/fileio.h"
#include "gpt2c/io.h"

#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>
#endif

typedef struct {
    char *name;
    gpt2c_dtype dt;
    int ndim;
    int64_t shape[8];
    const void *data;
    size_t nbytes;
} wentry;

struct gpt2c_st_writer {
    wentry *e;
    int n, cap;
    char **mkey, **mval;
    int nmeta, mcap;
};

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

gpt2c_status gpt2c_st_writer_new(gpt2c_st_writer **w) {
    *w = calloc(1, sizeof **w);
    return *w ? GPT2C_OK : gpt2c_fail(GPT2C_ERR_NOMEM, "safetensors writer: out of memory");
}

void gpt2c_st_writer_free(gpt2c_st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->e[i].name);
    for (int i = 0; i < w->nmeta; i++) {
        free(w->mkey[i]);
        free(w->mval[i]);
    }
    free(w->e);
    free(w->mkey);
    free(w->mval);
    free(w);
}

gpt2c_status gpt2c_st_writer_add(gpt2c_st_writer *w, const char *name, gpt2c_dtype dt, int ndim,
                                 const int64_t *shape, const void *data) {
    if ((unsigned)dt > GPT2C_DT_BOOL) return gpt2c_fail(GPT2C_ERR_ARG, "safetensors writer: tensor '%s': bad dtype %d", name, (int)dt);
    if (ndim < 0 || ndim > 8)
        return gpt2c_fail(GPT2C_ERR_ARG, "safetensors writer: tensor '%s': %d dims (0..8 allowed)", name, ndim);
    if (strcmp(name, "__metadata__") == 0)
        return gpt2c_fail(GPT2C_ERR_ARG, "safetensors writer: '__metadata__' is reserved, not a tensor name");
    for (int i = 0; i < w->n; i++)
        if (strcmp(w->e[i].name, name) == 0)
            return gpt2c_fail(GPT2C_ERR_ARG, "safetensors writer: tensor '%s' added twice", name);
    size_t numel = 1, limit = SIZE_MAX / gpt2c_dtype_size(dt);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (uint64_t)shape[i] > limit || (shape[i] && numel > limit / (size_t)shape[i]))
            return gpt2c_fail(GPT2C_ERR_ARG, "safetensors writer: tensor '%s': bad shape[%d] = %lld", name, i,
                              (long long)shape[i]);
        numel *= (size_t)shape[i];
    }
    if (numel && !data) return gpt2c_fail(GPT2C_ERR_ARG, "safetensors writer: tensor '%s': no data", name);
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 64;
        wentry *e = realloc(w->e, (size_t)cap * sizeof *e);
        if (!e) return gpt2c_fail(GPT2C_ERR_NOMEM, "safetensors writer: out of memory");
        w->e = e;
        w->cap = cap;
    }
    wentry *e = &w->e[w->n];
    memset(e, 0, sizeof *e);
    if (!(e->name = dup_str(name))) return gpt2c_fail(GPT2C_ERR_NOMEM, "safetensors writer: out of memory");
    e->dt = dt;
    e->ndim = ndim;
    for (int i = 0; i < ndim; i++) e->shape[i] = shape[i];
    e->data = data;
    e->nbytes = numel * gpt2c_dtype_size(dt);
    w->n++;
    return GPT2C_OK;
}

gpt2c_status gpt2c_st_writer_meta(gpt2c_st_writer *w, const char *key, const char *value) {
    char *v = dup_str(value);
    if (!v) return gpt2c_fail(GPT2C_ERR_NOMEM, "safetensors writer: out of memory");
    for (int i = 0; i < w->nmeta; i++)
        if (strcmp(w->mkey[i], key) == 0) { /* a later value replaces an earlier one */
            free(w->mval[i]);
            w->mval[i] = v;
            return GPT2C_OK;
        }
    if (w->nmeta == w->mcap) {
        int cap = w->mcap ? 2 * w->mcap : 16;
        char **k = realloc(w->mkey, (size_t)cap * sizeof *k);
        if (k) w->mkey = k;
        char **vv = k ? realloc(w->mval, (size_t)cap * sizeof *vv) : NULL;
        if (vv) w->mval = vv;
        if (!k || !vv) {
            free(v);
            return gpt2c_fail(GPT2C_ERR_NOMEM, "safetensors writer: out of memory");
        }
        w->mcap = cap;
    }
    if (!(w->mkey[w->nmeta] = dup_str(key))) {
        free(v);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "safetensors writer: out of memory");
    }
    w->mval[w->nmeta++] = v;
    return GPT2C_OK;
}

#ifndef GPT2C_HAVE_JANSSON
gpt2c_status gpt2c_st_writer_write(gpt2c_st_writer *w, const char *path) {
    (void)w;
    return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: safetensors: built without jansson (apt-get install libjansson-dev)",
                      path);
}
#else

/* The header JSON, padded with spaces to a multiple of 8 bytes; malloc'd. */
static char *build_header(const gpt2c_st_writer *w, const char *path, size_t *len) {
    json_t *root = json_object(), *meta = w->nmeta ? json_object() : NULL;
    int bad = !root || (w->nmeta && !meta);
    if (meta) {
        for (int i = 0; i < w->nmeta; i++) bad |= json_object_set_new(meta, w->mkey[i], json_string(w->mval[i])) != 0;
        bad |= json_object_set_new(root, "__metadata__", meta) != 0;
    }
    size_t off = 0;
    for (int i = 0; i < w->n && !bad; i++) {
        const wentry *e = &w->e[i];
        json_t *t = json_object(), *shape = json_array(), *offs = json_array();
        bad |= !t || !shape || !offs;
        for (int d = 0; d < e->ndim && !bad; d++) bad |= json_array_append_new(shape, json_integer(e->shape[d])) != 0;
        bad |= json_array_append_new(offs, json_integer((json_int_t)off)) != 0;
        bad |= json_array_append_new(offs, json_integer((json_int_t)(off + e->nbytes))) != 0;
        bad |= json_object_set_new(t, "dtype", json_string(gpt2c_dtype_name(e->dt))) != 0;
        bad |= json_object_set_new(t, "shape", shape) != 0;
        bad |= json_object_set_new(t, "data_offsets", offs) != 0;
        bad |= json_object_set_new(root, e->name, t) != 0;
        off += e->nbytes;
    }
    char *s = bad ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!s) {
        gpt2c_fail(GPT2C_ERR_NOMEM, "%s: cannot build the safetensors header (out of memory or invalid UTF-8 name)",
                   path);
        return NULL;
    }
    size_t n = strlen(s), padded = (n + 7) / 8 * 8;
    char *h = realloc(s, padded + 1);
    if (!h) {
        free(s);
        gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    memset(h + n, ' ', padded - n);
    h[padded] = 0;
    *len = padded;
    return h;
}

gpt2c_status gpt2c_st_writer_write(gpt2c_st_writer *w, const char *path) {
    size_t hlen;
    char *h = build_header(w, path, &hlen);
    if (!h) return GPT2C_ERR_NOMEM;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    gpt2c_atomic a;
    gpt2c_status st = gpt2c_atomic_open(&a, path);
    if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, len8, 8);
    if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, h, hlen);
    for (int i = 0; i < w->n && st == GPT2C_OK; i++) st = gpt2c_atomic_write(&a, w->e[i].data, w->e[i].nbytes);
    if (st == GPT2C_OK) st = gpt2c_atomic_commit(&a); /* write failures abort (remove the temp) themselves */
    free(h);
    return st;
}
#endif
