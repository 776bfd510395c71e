/* `gpt2c profile --infer`: the inference passes (prefill + decode over the KV
 * cache) of a model, fp32 or quantized, inside a profile session. */
#ifndef GPT2C_CLI_PROFILE_INFER_H
#define GPT2C_CLI_PROFILE_INFER_H

#include "gpt2c/model.h"
#include "gpt2c/profile_session.h"

typedef struct {
    int B, T, decode;          /* sequences, prompt tokens prefilled, decode steps per profiled step */
    int steps, trials, warmup; /* as for training profiles */
    unsigned long long seed;   /* the random prompt */
    int decode_only;           /* the prefill runs before each step, unprofiled: a step is the decode steps alone */
    struct gpt2c_mem_probe *mem; /* the memory probe beside each trial (gpt2c/peak.h); NULL: none */
} profile_infer_cfg;

/* Warm-up, then trials x steps profiled inference steps in a new session (*out). */
gpt2c_status profile_infer_run(gpt2c_model *m, const profile_infer_cfg *c, const gpt2c_profile_opts *o,
                               gpt2c_profile_session **out);

#endif
