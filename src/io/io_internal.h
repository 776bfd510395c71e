/* Shared between the files of src/io (not public). */
#ifndef GPT2C_IO_INTERNAL_H
#define GPT2C_IO_INTERNAL_H

#include <stdint.h>

#include "gpt2c/io.h"

/* Parameters of a config as llm.c counts them (wte with Vp rows, no padding). */
uint64_t gpt2c_io_param_count(const gpt2c_config *c);
gpt2c_status gpt2c_io_load_llmc(const char *path, gpt2c_model **out);
gpt2c_status gpt2c_io_load_safetensors(const char *path, gpt2c_model **out);

/* Tensor names of gpt2c's optimizer state in safetensors. */
#define GPT2C_ST_ADAM_M "gpt2c.adamw.m"
#define GPT2C_ST_ADAM_V "gpt2c.adamw.v"
#define GPT2C_ST_OPT_STEP "gpt2c.opt_step"

#endif
