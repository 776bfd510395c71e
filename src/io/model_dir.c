/* Hugging Face model directories: loading DIR (config.json + model.safetensors
 * or model.safetensors.index.json and its shards) and writing one that
 * GPT2LMHeadModel.from_pretrained loads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpt2c/fileio.h"
#include "gpt2c/io.h"
#include "gpt2c/tokenizer.h"
#include "io/io_internal.h"
#include "model/model_internal.h"

#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>
#endif

#define MAX_SHARDS 4096

int gpt2c_is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static void join(char *out, size_t n, const char *dir, const char *name) {
    size_t len = strlen(dir);
    snprintf(out, n, "%s%s%s", dir, len && dir[len - 1] == '/' ? "" : "/", name);
}

static void close_all(gpt2c_st_set *s) {
    for (int i = 0; i < s->n; i++) gpt2c_st_close(s->files[i]);
    free(s->files);
    s->files = NULL;
    s->n = 0;
}

#ifdef GPT2C_HAVE_JANSSON
/* A shard name from the index must be a plain file name inside DIR. */
static int plain_name(const char *s) {
    return *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/') && strlen(s) < 1024;
}

/* Opens every shard the index names (each once) and checks that each tensor
 * of the weight map is in the shard the map gives. */
static gpt2c_status open_index(const char *dir, const char *index, gpt2c_st_set *s) {
    json_t *root;
    GPT2C_TRY(gpt2c_io_json_read(index, &root));
    json_t *map = json_object_get(root, "weight_map");
    gpt2c_status st = GPT2C_OK;
    const char **names = NULL; /* shard file name of files[i] */
    if (!json_is_object(map) || json_object_size(map) == 0)
        st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: no \"weight_map\" object (tensor name -> shard file)", index);
    else if (!(s->files = calloc(MAX_SHARDS, sizeof *s->files)) || !(names = calloc(MAX_SHARDS, sizeof *names)))
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", index);
    const char *tensor;
    json_t *v;
    json_object_foreach(map, tensor, v) {
        if (st != GPT2C_OK) break;
        if (!json_is_string(v) || !plain_name(json_string_value(v))) {
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: weight_map[\"%s\"] must be a file name in the directory", index,
                            tensor);
            break;
        }
        const char *shard = json_string_value(v);
        int k = 0;
        while (k < s->n && strcmp(names[k], shard) != 0) k++;
        if (k == s->n) {
            if (s->n == MAX_SHARDS) {
                st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: more than %d shard files", index, MAX_SHARDS);
                break;
            }
            char path[4096];
            join(path, sizeof path, dir, shard);
            st = gpt2c_st_open(path, &s->files[k]);
            if (st != GPT2C_OK) break;
            names[k] = shard;
            s->n++;
        }
        if (!gpt2c_st_find(s->files[k], tensor))
            st = gpt2c_fail(GPT2C_ERR_FORMAT, "%s: tensor '%s' is not in %s, where weight_map puts it", index, tensor,
                            shard);
    }
    free(names);
    json_decref(root);
    if (st != GPT2C_OK) close_all(s);
    return st;
}
#endif

gpt2c_status gpt2c_io_load_dir(const char *dir, gpt2c_model **out) {
    *out = NULL;
    char cfg[4096], single[4096], index[4096];
    join(cfg, sizeof cfg, dir, "config.json");
    join(single, sizeof single, dir, "model.safetensors");
    join(index, sizeof index, dir, "model.safetensors.index.json");
    gpt2c_st_set s = {NULL, 0, NULL};
    if (is_file(single)) {
        if (!(s.files = malloc(sizeof *s.files))) return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", dir);
        gpt2c_status st = gpt2c_st_open(single, &s.files[0]);
        if (st != GPT2C_OK) {
            free(s.files);
            return st;
        }
        s.n = 1;
        s.path = single;
    } else if (is_file(index)) {
#ifdef GPT2C_HAVE_JANSSON
        GPT2C_TRY(open_index(dir, index, &s));
        s.path = index;
#else
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: reading an index needs jansson (rebuild with libjansson-dev)",
                          index);
#endif
    } else {
        char pt[4096];
        join(pt, sizeof pt, dir, "pytorch_model.bin");
        if (is_file(pt))
            return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                              "%s: holds pytorch_model.bin (a pickle), which gpt2c does not read: save it with "
                              "save_pretrained(..., safe_serialization=True)",
                              dir);
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: no model.safetensors or model.safetensors.index.json in this directory",
                          dir);
    }
    gpt2c_status st = gpt2c_io_load_set(&s, is_file(cfg) ? cfg : NULL, out);
    close_all(&s);
    return st;
}

/* Copies a file atomically (small files: the tokenizer's). */
static gpt2c_status copy_file(const char *from, const char *to) {
    void *buf;
    size_t size;
    GPT2C_TRY(gpt2c_read_file(from, &buf, &size));
    gpt2c_atomic a;
    gpt2c_status st = gpt2c_atomic_open(&a, to);
    if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, buf, size);
    if (st == GPT2C_OK)
        st = gpt2c_atomic_commit(&a);
    else
        gpt2c_atomic_abort(&a);
    free(buf);
    return st;
}

/* vocab.json + merges.txt from a tokenizer directory (OpenAI's encoder.json +
 * vocab.bpe are the same files under other names).  *eot gets the EOT id. */
static gpt2c_status copy_tokenizer(const gpt2c_model *m, const char *vocab_dir, const char *dir, int *eot) {
    gpt2c_tokenizer *tok;
    GPT2C_TRY(gpt2c_tokenizer_load(vocab_dir, &tok));
    int n = gpt2c_tokenizer_vocab_size(tok);
    *eot = gpt2c_tokenizer_eot(tok);
    gpt2c_tokenizer_free(tok);
    if (n > m->cfg.vocab_size)
        return gpt2c_fail(GPT2C_ERR_ARG, "%s: the tokenizer has %d ids but the model's vocabulary is %d", vocab_dir, n,
                          m->cfg.vocab_size);
    char a[4096], b[4096], to[4096];
    join(a, sizeof a, vocab_dir, "encoder.json");
    join(b, sizeof b, vocab_dir, "vocab.bpe");
    if (!is_file(a) || !is_file(b)) {
        join(a, sizeof a, vocab_dir, "vocab.json");
        join(b, sizeof b, vocab_dir, "merges.txt");
    }
    join(to, sizeof to, dir, "vocab.json");
    GPT2C_TRY(copy_file(a, to));
    join(to, sizeof to, dir, "merges.txt");
    return copy_file(b, to);
}

gpt2c_status gpt2c_model_save_dir(const gpt2c_model *m, const char *dir, const gpt2c_kv *meta, int nmeta,
                                  int with_optimizer, const char *vocab_dir) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return gpt2c_fail(GPT2C_ERR_IO, "%s: cannot create the directory: %s", dir, strerror(errno));
    if (!gpt2c_is_dir(dir)) return gpt2c_fail(GPT2C_ERR_IO, "%s: exists and is not a directory", dir);
    /* GPT-2's own vocabulary ends with <|endoftext|> = 50256 */
    int eot = m->cfg.vocab_size == 50257 ? 50256 : -1;
    if (vocab_dir) GPT2C_TRY(copy_tokenizer(m, vocab_dir, dir, &eot));
    char path[4096];
    join(path, sizeof path, dir, "model.safetensors");
    GPT2C_TRY(gpt2c_model_save(m, path, meta, nmeta, with_optimizer));
    return gpt2c_hf_config_write(&m->cfg, eot, dir);
}
