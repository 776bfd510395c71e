/* Shared by `gpt2c generate` and `gpt2c bench generate`: open a model by
 * preset name (fresh random weights) or checkpoint path, and find a vocabulary. */
#ifndef GPT2C_CLI_INFER_COMMON_H
#define GPT2C_CLI_INFER_COMMON_H

#include <stdint.h>

#include "gpt2c/model.h"

/* NAME (gpt2, gpt2-medium, ...: gpt2c_model_init_random(seed)) or a checkpoint
 * PATH, file or Hugging Face directory (gpt2c_model_load); then selects the backend. */
gpt2c_status cli_open_model(const char *name_or_path, const char *backend, uint64_t seed, gpt2c_model **out);
/* --vocab if given, else $GPT2C_DATA/gpt2-tokenizer, else ../shared/data/gpt2-tokenizer
 * or ../../shared/data/gpt2-tokenizer when present; NULL if none. */
const char *cli_find_vocab(const char *given);
/* dir holds a tokenizer: vocab.json + merges.txt, or encoder.json + vocab.bpe. */
int cli_is_tokenizer_dir(const char *dir);

#endif
