/* Checkpoint I/O: safetensors (read + write), llm.c .bin, GPT-2 model load/save.
 *
 * safetensors layout: an 8-byte little-endian u64 N, then N bytes of a JSON
 * object mapping each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} (offsets relative to the first byte after the header), plus an
 * optional "__metadata__" object of string -> string.  Everything in the header
 * is validated on open; a file that opens cleanly can be read without further
 * bounds checks.  Needs jansson (GPT2C_HAVE_JANSSON); without it these
 * functions return GPT2C_ERR_UNSUPPORTED.
 *
 * llm.c .bin: 256 int32 header (magic 20240326, version 3 = fp32 or 5 = bf16,
 * maxT, V, L, NH, C, Vp) followed by the parameters in slab order. */
#ifndef GPT2C_IO_H
#define GPT2C_IO_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/dtype.h"
#include "gpt2c/model.h"
#include "gpt2c/status.h"

/* ---- safetensors reader ---------------------------------------------------- */
typedef struct {
    const char *name;
    gpt2c_dtype dtype;
    int ndim;
    int64_t shape[8];
    const void *data; /* inside the file's buffer; may be unaligned */
    size_t nbytes;
} gpt2c_st_tensor;

typedef struct gpt2c_st_file gpt2c_st_file;

/* Reads or mmaps the file and validates the header fully. */
gpt2c_status gpt2c_st_open(const char *path, gpt2c_st_file **out);
/* Same from memory (the fuzzer); buf must outlive the file object; `name` is used in errors. */
gpt2c_status gpt2c_st_parse(const char *name, const void *buf, size_t size, gpt2c_st_file **out);
/* Tensors in data-offset order. */
int gpt2c_st_count(const gpt2c_st_file *f);
const gpt2c_st_tensor *gpt2c_st_get(const gpt2c_st_file *f, int i);
const gpt2c_st_tensor *gpt2c_st_find(const gpt2c_st_file *f, const char *name);
/* __metadata__ string value, or NULL. */
const char *gpt2c_st_meta(const gpt2c_st_file *f, const char *key);
int gpt2c_st_meta_count(const gpt2c_st_file *f);
/* i-th metadata pair (sorted by key); returns the key, *value gets the value. */
const char *gpt2c_st_meta_get(const gpt2c_st_file *f, int i, const char **value);
/* Header size in bytes (N), and the file's name as given to open/parse. */
size_t gpt2c_st_header_bytes(const gpt2c_st_file *f);
const char *gpt2c_st_path(const gpt2c_st_file *f);
/* Copies tensor `name` converted to fp32 into dst (n floats); fails naming the
 * file and tensor if missing or numel != n. */
gpt2c_status gpt2c_st_read_f32(const gpt2c_st_file *f, const char *name, float *dst, size_t n);
void gpt2c_st_close(gpt2c_st_file *f);

/* ---- safetensors writer ---------------------------------------------------- */
/* Collects tensors (pointers to caller data, kept until write) and metadata,
 * then writes atomically (temp file, fsync, rename). */
typedef struct gpt2c_st_writer gpt2c_st_writer;
gpt2c_status gpt2c_st_writer_new(gpt2c_st_writer **w);
gpt2c_status gpt2c_st_writer_add(gpt2c_st_writer *w, const char *name, gpt2c_dtype dt, int ndim,
                                 const int64_t *shape, const void *data);
gpt2c_status gpt2c_st_writer_meta(gpt2c_st_writer *w, const char *key, const char *value);
gpt2c_status gpt2c_st_writer_write(gpt2c_st_writer *w, const char *path);
void gpt2c_st_writer_free(gpt2c_st_writer *w);

/* ---- models ------------------------------------------------------------------ */
typedef enum {
    GPT2C_FMT_UNKNOWN, GPT2C_FMT_SAFETENSORS, GPT2C_FMT_LLMC, GPT2C_FMT_SHARD
} gpt2c_file_format;

/* Guesses a file's format from its first bytes (GPT2C_FMT_UNKNOWN if unreadable). */
gpt2c_file_format gpt2c_detect_format(const char *path);

/* Loads GPT-2 from a Hugging Face model directory (see below), an llm.c .bin (recognised by its magic, or a .bin name) or a
 * Hugging Face / gpt2c safetensors file (with or without the "transformer."
 * prefix; Conv1D weights transposed; tied lm_head ignored; attention-mask
 * buffers skipped).  Restores AdamW state when the file holds gpt2c's. */
gpt2c_status gpt2c_model_load(const char *path, gpt2c_model **out);
/* gpt2c_model_load refuses weights (and AdamW moments) holding NaN or Inf,
 * naming the tensor; allow = 1 loads them anyway (debugging; process-wide). */
void gpt2c_model_load_allow_nonfinite(int allow);

/* The GPT-2 config a safetensors file describes, without loading it.  *prefix
 * gets "transformer." or ""; *heads_from says where the head count came from
 * ("metadata", "config.json" or "head size 64 rule"). `path` locates config.json. */
gpt2c_status gpt2c_st_gpt2_config(const gpt2c_st_file *f, const char *path, gpt2c_config *cfg,
                                  const char **prefix, const char **heads_from);

/* llm.c header fields of a .bin: magic, version, maxT, V, L, NH, C, Vp; checks
 * magic and version only.  *file_size gets the file's size. */
gpt2c_status gpt2c_llmc_header(const char *path, int32_t hdr[8], size_t *file_size);

typedef struct {
    const char *key, *value;
} gpt2c_kv;

/* Saves Hugging Face-loadable safetensors: "transformer.<hf name>", Conv1D
 * (in, out) layout, wte with V rows, F32, no lm_head; __metadata__ holds
 * {"format": "pt"}, the config (n_layer, n_head, n_embd, n_positions,
 * vocab_size, padded_vocab_size) and the caller's pairs.  with_optimizer adds
 * the flat AdamW slabs "gpt2c.adamw.m" / "gpt2c.adamw.v" and meta
 * "gpt2c.opt_step".  Atomic. */
gpt2c_status gpt2c_model_save(const gpt2c_model *m, const char *path, const gpt2c_kv *meta, int nmeta,
                              int with_optimizer);
/* llm.c .bin, version 3 (fp32) or 5 (bf16). Atomic. */
gpt2c_status gpt2c_model_save_llmc(const gpt2c_model *m, const char *path, int version);

/* ---- Hugging Face model directories ----------------------------------------
 * What save_pretrained writes: config.json, then model.safetensors or
 * model.safetensors.index.json ({"weight_map": {tensor: shard file}}) with its
 * shards.  gpt2c_model_load(DIR) reads config.json (when present), checks it
 * against the tensors, and loads the weights from the one file or the shards. */

/* config.json's GPT-2 keys; a size that is absent is 0 (the tensors say it). */
typedef struct gpt2c_hf_config {
    gpt2c_config cfg; /* n_layer, n_head, n_embd, n_positions, vocab_size (padded_vocab_size 0) */
    int n_inner;      /* 0: null or absent (4 n_embd) */
    double layer_norm_epsilon;
    int bos_token_id, eos_token_id; /* -1: null or absent */
} gpt2c_hf_config;

/* Reads and validates config.json: each key's JSON type and range, and
 * refuses what gpt2c does not implement (another activation, another
 * layer_norm_epsilon, n_inner != 4 n_embd, scale_attn_by_inverse_layer_idx,
 * reorder_and_upcast_attn, cross-attention, untied lm_head, model_type != gpt2). */
gpt2c_status gpt2c_hf_config_read(const char *path, gpt2c_hf_config *hc);
/* Checks a config.json against the sizes the tensors hold (t): a one-line
 * error names the key, its value and the tensor's shape.  wte, wpe: tensor
 * names; layers: the per-layer prefix ("transformer.h."). */
gpt2c_status gpt2c_hf_config_check(const gpt2c_hf_config *hc, const gpt2c_config *t, const char *path,
                                   const char *wte, const char *wpe, const char *layers);
/* Writes DIR/config.json (GPT2LMHeadModel, gelu_new, no dropout, tied
 * embeddings) and DIR/generation_config.json; eot: bos/eos id, or -1 (null). Atomic. */
gpt2c_status gpt2c_hf_config_write(const gpt2c_config *cfg, int eot, const char *dir);

/* Is path an existing directory? */
int gpt2c_is_dir(const char *path);
/* Writes a directory GPT2LMHeadModel.from_pretrained loads: DIR/model.safetensors
 * (as gpt2c_model_save), config.json, generation_config.json; with vocab_dir
 * (a tokenizer directory, may be NULL) also vocab.json + merges.txt, so DIR is
 * a tokenizer directory too.  Creates DIR (one level) if needed. */
gpt2c_status gpt2c_model_save_dir(const gpt2c_model *m, const char *dir, const gpt2c_kv *meta, int nmeta,
                                  int with_optimizer, const char *vocab_dir);

#endif
