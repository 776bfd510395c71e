/* safetensors reader: validates the whole header up front, so that every
 * tensor handed out afterwards lies inside the buffer with the size its dtype
 * and shape promise.  Inputs are untrusted (fuzzed): no assumption about the
 * header survives without a check. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpt2c/fileio.h"
#include "gpt2c/io.h"

#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>
#endif

#define ST_MAX_HEADER (100u * 1024u * 1024u) /* larger headers are refused as absurd */
#define ST_MMAP_MIN (1u << 20)               /* smaller files are simply read */

struct gpt2c_st_file {
    char *path;
    const unsigned char *buf;
    size_t size;
    void *map; /* mmap'd file (gpt2c_st_open), or NULL */
    size_t map_len;
    void *heap; /* read-into-memory file (gpt2c_st_open), or NULL */
    size_t header_bytes;
    int n;
    gpt2c_st_tensor *t; /* sorted by data offset */
    const gpt2c_st_tensor **by_name; /* into t, sorted by name */
    int nmeta;
    char **mkey, **mval; /* sorted by key */
};

int gpt2c_st_count(const gpt2c_st_file *f) { return f->n; }
const gpt2c_st_tensor *gpt2c_st_get(const gpt2c_st_file *f, int i) { return i >= 0 && i < f->n ? &f->t[i] : NULL; }
size_t gpt2c_st_header_bytes(const gpt2c_st_file *f) { return f->header_bytes; }
const char *gpt2c_st_path(const gpt2c_st_file *f) { return f->path; }
int gpt2c_st_meta_count(const gpt2c_st_file *f) { return f->nmeta; }

const char *gpt2c_st_meta_get(const gpt2c_st_file *f, int i, const char **value) {
    if (i < 0 || i >= f->nmeta) return NULL;
    if (value) *value = f->mval[i];
    return f->mkey[i];
}

const gpt2c_st_tensor *gpt2c_st_find(const gpt2c_st_file *f, const char *name) {
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(name, f->by_name[mid]->name);
        if (c == 0) return f->by_name[mid];
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *gpt2c_st_meta(const gpt2c_st_file *f, const char *key) {
    int lo = 0, hi = f->nmeta - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(key, f->mkey[mid]);
        if (c == 0) return f->mval[mid];
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

gpt2c_status gpt2c_st_read_f32(const gpt2c_st_file *f, const char *name, float *dst, size_t n) {
    const gpt2c_st_tensor *t = gpt2c_st_find(f, name);
    if (!t) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' not found", f->path, name);
    size_t numel = t->nbytes / gpt2c_dtype_size(t->dtype);
    if (numel != n)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' has %zu elements, expected %zu", f->path, name, numel, n);
    gpt2c_dtype_to_f32(t->dtype, t->data, dst, n);
    return GPT2C_OK;
}

void gpt2c_st_close(gpt2c_st_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) free((char *)f->t[i].name);
    for (int i = 0; i < f->nmeta; i++) {
        free(f->mkey[i]);
        free(f->mval[i]);
    }
    free(f->t);
    free(f->by_name);
    free(f->mkey);
    free(f->mval);
    if (f->map) munmap(f->map, f->map_len);
    free(f->heap);
    free(f->path);
    free(f);
}

#ifndef GPT2C_HAVE_JANSSON

#define NO_JANSSON "built without jansson (apt-get install libjansson-dev)"
gpt2c_status gpt2c_st_parse(const char *name, const void *buf, size_t size, gpt2c_st_file **out) {
    (void)buf;
    (void)size;
    *out = NULL;
    return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: safetensors: " NO_JANSSON, name);
}
gpt2c_status gpt2c_st_open(const char *path, gpt2c_st_file **out) { return gpt2c_st_parse(path, NULL, 0, out); }

#else

static int dtype_from_name(const char *s, gpt2c_dtype *dt) {
    for (int d = GPT2C_DT_F32; d <= GPT2C_DT_BOOL; d++)
        if (strcmp(s, gpt2c_dtype_name((gpt2c_dtype)d)) == 0) {
            *dt = (gpt2c_dtype)d;
            return 1;
        }
    return 0;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Validates one tensor entry of the header into *t (name already set). */
static gpt2c_status parse_entry(const gpt2c_st_file *f, const char *key, json_t *v, const unsigned char *data,
                                size_t data_size, gpt2c_st_tensor *t) {
    const char *p = f->path;
    if (!json_is_object(v)) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': entry is not a JSON object", p, key);
    json_t *jd = json_object_get(v, "dtype"), *js = json_object_get(v, "shape"), *jo = json_object_get(v, "data_offsets");
    if (!json_is_string(jd))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': missing or non-string \"dtype\"", p, key);
    if (!dtype_from_name(json_string_value(jd), &t->dtype))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%s'", p, key, json_string_value(jd));
    if (!json_is_array(js))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': missing or non-array \"shape\"", p, key);
    size_t nd = json_array_size(js);
    if (nd > 8) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': shape has %zu dims (at most 8)", p, key, nd);
    const size_t dsize = gpt2c_dtype_size(t->dtype), limit = SIZE_MAX / dsize;
    size_t numel = 1;
    t->ndim = (int)nd;
    for (size_t i = 0; i < nd; i++) {
        json_t *e = json_array_get(js, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0)
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': shape[%zu] is not a non-negative integer", p, key, i);
        json_int_t d = json_integer_value(e);
        t->shape[i] = (int64_t)d;
        if ((uint64_t)d > limit || (d != 0 && numel > limit / (size_t)d))
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': shape overflows (element count too large)", p, key);
        numel *= (size_t)d;
    }
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_is_integer(json_array_get(jo, 0)) ||
        !json_is_integer(json_array_get(jo, 1)))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': \"data_offsets\" must be [begin, end] integers", p, key);
    json_int_t b = json_integer_value(json_array_get(jo, 0)), e = json_integer_value(json_array_get(jo, 1));
    if (b < 0 || e < b)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': bad data_offsets [%lld, %lld]", p, key, (long long)b,
                          (long long)e);
    if ((uint64_t)e > data_size)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': data_offsets [%lld, %lld] run past the data (%zu bytes; truncated file?)",
                          p, key, (long long)b, (long long)e, data_size);
    t->nbytes = (size_t)(e - b);
    if (t->nbytes != numel * dsize)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s': %zu data bytes but %s shape needs %zu", p, key,
                          t->nbytes, gpt2c_dtype_name(t->dtype), numel * dsize);
    t->data = data + b;
    return GPT2C_OK;
}

static gpt2c_status parse_meta(gpt2c_st_file *f, json_t *v) {
    if (!json_is_object(v)) return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: __metadata__ is not a JSON object", f->path);
    size_t n = json_object_size(v);
    f->mkey = calloc(n + 1, sizeof *f->mkey);
    f->mval = calloc(n + 1, sizeof *f->mval);
    if (!f->mkey || !f->mval) return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", f->path);
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        if (!json_is_string(x))
            return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: __metadata__ value of '%s' is not a string", f->path, k);
        f->mkey[f->nmeta] = dup_str(k);
        f->mval[f->nmeta] = dup_str(json_string_value(x));
        if (!f->mkey[f->nmeta] || !f->mval[f->nmeta]) {
            free(f->mkey[f->nmeta]);
            free(f->mval[f->nmeta]);
            return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", f->path);
        }
        f->nmeta++;
    }
    /* sort by key (insertion sort: metadata is small, keys are distinct) */
    for (int i = 1; i < f->nmeta; i++)
        for (int j = i; j > 0 && strcmp(f->mkey[j - 1], f->mkey[j]) > 0; j--) {
            char *tk = f->mkey[j], *tv = f->mval[j];
            f->mkey[j] = f->mkey[j - 1];
            f->mval[j] = f->mval[j - 1];
            f->mkey[j - 1] = tk;
            f->mval[j - 1] = tv;
        }
    return GPT2C_OK;
}

static int by_offset(const void *a, const void *b) {
    const gpt2c_st_tensor *x = a, *y = b;
    if (x->data != y->data) return (const unsigned char *)x->data < (const unsigned char *)y->data ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_name(const void *a, const void *b) {
    return strcmp((*(const gpt2c_st_tensor *const *)a)->name, (*(const gpt2c_st_tensor *const *)b)->name);
}

static gpt2c_status parse_header(gpt2c_st_file *f) {
    const char *p = f->path;
    if (f->size < 8)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: too short for a safetensors file (%zu bytes, need at least 8)", p,
                          f->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | f->buf[i]; /* little-endian u64 */
    if (hlen > ST_MAX_HEADER)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: safetensors header length %llu is absurd (more than 100 MB)", p,
                          (unsigned long long)hlen);
    if (hlen > f->size - 8)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: safetensors header length %llu runs past the end of the file (%zu bytes)",
                          p, (unsigned long long)hlen, f->size);
    f->header_bytes = (size_t)hlen;
    const unsigned char *data = f->buf + 8 + hlen;
    const size_t data_size = f->size - 8 - (size_t)hlen;

    json_error_t jerr;
    json_t *root = json_loadb((const char *)f->buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: safetensors header is not valid JSON: %s (at byte %d)", p, jerr.text,
                          jerr.position);
    gpt2c_status st = GPT2C_OK;
    if (!json_is_object(root)) {
        st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: safetensors header is not a JSON object", p);
        goto done;
    }
    size_t nent = json_object_size(root);
    f->t = calloc(nent + 1, sizeof *f->t);
    f->by_name = calloc(nent + 1, sizeof *f->by_name);
    if (!f->t || !f->by_name) {
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", p);
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if ((st = parse_meta(f, v)) != GPT2C_OK) goto done;
            continue;
        }
        gpt2c_st_tensor *t = &f->t[f->n];
        if (!(t->name = dup_str(key))) {
            st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", p);
            goto done;
        }
        f->n++;
        if ((st = parse_entry(f, key, v, data, data_size, t)) != GPT2C_OK) goto done;
    }
    qsort(f->t, (size_t)f->n, sizeof *f->t, by_offset);
    /* no two tensors may share bytes (empty tensors own none) */
    const gpt2c_st_tensor *prev = NULL;
    for (int i = 0; i < f->n; i++) {
        const gpt2c_st_tensor *t = &f->t[i];
        if (t->nbytes == 0) continue;
        if (prev && (const unsigned char *)t->data < (const unsigned char *)prev->data + prev->nbytes) {
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap (data_offsets [%zu, %zu) and [%zu, %zu))",
                            p, prev->name, t->name, (size_t)((const unsigned char *)prev->data - data),
                            (size_t)((const unsigned char *)prev->data - data) + prev->nbytes,
                            (size_t)((const unsigned char *)t->data - data),
                            (size_t)((const unsigned char *)t->data - data) + t->nbytes);
            goto done;
        }
        prev = t;
    }
    for (int i = 0; i < f->n; i++) f->by_name[i] = &f->t[i];
    qsort(f->by_name, (size_t)f->n, sizeof *f->by_name, by_name);
done:
    json_decref(root);
    return st;
}

gpt2c_status gpt2c_st_parse(const char *name, const void *buf, size_t size, gpt2c_st_file **out) {
    *out = NULL;
    gpt2c_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = dup_str(name))) {
        free(f);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", name);
    }
    f->buf = buf;
    f->size = size;
    gpt2c_status st = parse_header(f);
    if (st != GPT2C_OK) {
        gpt2c_st_close(f);
        return st;
    }
    *out = f;
    return GPT2C_OK;
}

gpt2c_status gpt2c_st_open(const char *path, gpt2c_st_file **out) {
    *out = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return gpt2c_fail(GPT2C_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return gpt2c_fail(GPT2C_ERR_IO, "%s: not a regular file", path);
    }
    size_t size = (size_t)sb.st_size;
    void *map = NULL;
    if (size >= ST_MMAP_MIN) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) map = NULL; /* fall back to reading */
    }
    close(fd);
    void *heap = NULL;
    if (!map) GPT2C_TRY(gpt2c_read_file(path, &heap, &size));
    gpt2c_st_file *f = NULL;
    gpt2c_status st = gpt2c_st_parse(path, map ? map : heap, size, &f);
    if (st != GPT2C_OK) {
        if (map) munmap(map, size);
        free(heap);
        return st;
    }
    f->map = map;
    f->map_len = size;
    f->heap = heap;
    *out = f;
    return GPT2C_OK;
}

#endif
