/* The result of a run (opaque outside src/wse). */
#ifndef GPT2C_WSE_RESULT_H
#define GPT2C_WSE_RESULT_H

#include "wse/gpt2_map.h"

struct gpt2c_wse_result {
    gpt2c_wse_run_cfg cfg;
    gpt2c_wse_params params;
    wse_gpt2 g;
    uint64_t cycles, prefill_cycles;
    int32_t *prompt; /* seq + decode tokens */
    int32_t *tokens; /* decode tokens */
    double sim_seconds;
    double max_rel_err; /* < 0: not checked */
    int tokens_match;   /* -1 not checked */
    char summary[1024];
};

#endif
