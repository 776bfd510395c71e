/* Shared between the files of src/io (not public). */
#ifndef GPT2C_IO_INTERNAL_H
#define GPT2C_IO_INTERNAL_H

#include <stdint.h>

#include "gpt2c/io.h"

/* Parameters of a config as llm.c counts them (wte with Vp rows, no padding). */
uint64_t gpt2c_io_param_count(const gpt2c_config *c);
gpt2c_status gpt2c_io_load_llmc(const char *path, gpt2c_model **out);
gpt2c_status gpt2c_io_load_safetensors(const char *path, gpt2c_model **out);
/* A Hugging Face model directory (model_dir.c). */
gpt2c_status gpt2c_io_load_dir(const char *dir, gpt2c_model **out);

/* The tensors of one checkpoint: one safetensors file, or the shards an
 * index names; `path` (the file or the index) is what messages name. */
typedef struct {
    gpt2c_st_file **files;
    int n;
    const char *path;
} gpt2c_st_set;

/* First tensor of that name in any file of the set, or NULL. */
const gpt2c_st_tensor *gpt2c_st_set_find(const gpt2c_st_set *s, const char *name);
/* gpt2c_st_gpt2_config over a set; config_json (NULL: none) is read and checked against the tensors. */
gpt2c_status gpt2c_st_set_config(const gpt2c_st_set *s, const char *config_json, gpt2c_config *cfg,
                                 const char **prefix, const char **heads_from);
/* Builds the model from a set (and its optimizer state, if the first file has it). */
gpt2c_status gpt2c_io_load_set(const gpt2c_st_set *s, const char *config_json, gpt2c_model **out);

/* Tensor names of gpt2c's optimizer state in safetensors. */
#define GPT2C_ST_ADAM_M "gpt2c.adamw.m"
#define GPT2C_ST_ADAM_V "gpt2c.adamw.v"
#define GPT2C_ST_OPT_STEP "gpt2c.opt_step"

#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>
/* Reads and parses the JSON file at path (duplicate keys refused); on failure a
 * one-line error names the file and the line. The caller json_decref()s *root. */
gpt2c_status gpt2c_io_json_read(const char *path, json_t **root);
/* Writes root (indented, keys in insertion order) to path atomically; takes root's reference. */
gpt2c_status gpt2c_io_json_write(json_t *root, const char *path);
#endif

/* The config as safetensors metadata, as Hugging Face's GPT-2 names it
 * (format pt, n_layer, n_head, n_embd, n_positions, vocab_size) plus
 * padded_vocab_size: what gpt2c_model_load reads back. */
struct gpt2c_config;
gpt2c_status gpt2c_st_writer_config_meta(gpt2c_st_writer *w, const struct gpt2c_config *c);

#endif
