/* The trainer state a gpt2c checkpoint carries in its safetensors metadata
 * (gpt2c.step, gpt2c.data.epoch/shard/cursor, gpt2c.seed, gpt2c.data.shuffle),
 * parsed strictly: every value must be a plain decimal in range, or the read
 * fails naming the file and the field.  Consistency with the data (shard
 * index, cursor inside the shard) is checked by gpt2c_dataloader_seek. */
#ifndef GPT2C_RESUME_H
#define GPT2C_RESUME_H

#include <stdint.h>

#include "gpt2c/data.h"
#include "gpt2c/io.h"

/* Upper bound on a saved epoch count: far more passes than any run makes, and
 * small enough that epoch arithmetic (seeding) never wraps. */
#define GPT2C_RESUME_MAX_EPOCH ((uint64_t)1 << 40)

typedef struct gpt2c_resume_state {
    int step;            /* optimizer steps done, >= 0 */
    gpt2c_data_pos pos;  /* where the training data loader stood */
    int has_seed;        /* gpt2c.seed present */
    uint64_t seed;
    int has_shuffle;     /* gpt2c.data.shuffle present */
    int shuffle;         /* 0 or 1 */
} gpt2c_resume_state;

/* Fails (GPT2C_ERR_FORMAT) when the file is not a training checkpoint (no
 * gpt2c.step / gpt2c.data.* metadata) or a value is malformed or out of range. */
gpt2c_status gpt2c_resume_read(const gpt2c_st_file *f, gpt2c_resume_state *rs);

#endif
