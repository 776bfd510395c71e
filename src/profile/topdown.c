#include "profile/topdown.h"

const char *gpt2c_td_scheme_name(gpt2c_td_scheme s) {
    switch (s) {
    case GPT2C_TD_INTEL: return "intel-perf-metrics";
    case GPT2C_TD_ZEN4: return "amd-zen4 (6 slots/cycle)";
    case GPT2C_TD_ZEN5: return "amd-zen5 (8 slots/cycle)";
    default: return "none";
    }
}

int gpt2c_td_width(gpt2c_td_scheme s) { return s == GPT2C_TD_ZEN4 ? 6 : s == GPT2C_TD_ZEN5 ? 8 : 0; }

gpt2c_status gpt2c_topdown_compute(gpt2c_td_scheme s, const double raw[8], int have_l2_raw, gpt2c_topdown *o) {
    *o = (gpt2c_topdown){0};
    if (s == GPT2C_TD_INTEL) {
        double slots = raw[0];
        if (!(slots > 0)) return gpt2c_fail(GPT2C_ERR_ARG, "top-down: slot count is zero");
        o->retiring = raw[1] / slots;
        o->bad_speculation = raw[2] / slots;
        o->frontend_bound = raw[3] / slots;
        o->backend_bound = raw[4] / slots;
        if (have_l2_raw) {
            o->memory_bound = raw[5] / slots;
            o->core_bound = o->backend_bound - o->memory_bound;
            o->have_l2 = 1;
        }
        return GPT2C_OK;
    }
    if (s == GPT2C_TD_ZEN4 || s == GPT2C_TD_ZEN5) {
        double slots = gpt2c_td_width(s) * raw[0];
        if (!(slots > 0)) return gpt2c_fail(GPT2C_ERR_ARG, "top-down: cycle count is zero");
        o->frontend_bound = raw[1] / slots;
        o->backend_bound = raw[2] / slots;
        o->bad_speculation = (raw[3] - raw[4]) / slots;
        if (o->bad_speculation < 0) o->bad_speculation = 0; /* counts from different multiplex windows */
        o->retiring = raw[4] / slots;
        o->smt_contention = raw[7] / slots;
        if (have_l2_raw && raw[6] > 0) {
            o->memory_bound = o->backend_bound * (raw[5] / raw[6]);
            o->core_bound = o->backend_bound - o->memory_bound;
            o->have_l2 = 1;
        }
        return GPT2C_OK;
    }
    return gpt2c_fail(GPT2C_ERR_ARG, "top-down: no scheme for this CPU");
}
