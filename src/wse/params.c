/* The simulator's machine parameters, each with its source label.
 * Labels: [doc] Cerebras SDK docs/examples, [code] public code, [paper],
 * [3p] unverified third-party measurement, [est] our estimate ("assumed").
 * S-numbers refer to the sources of ../shared/design/wse.md and docs/WSE.md. */
#include <string.h>

#include "gpt2c/wse.h"

typedef struct {
    const char *name, *source, *help;
    double wse2, wse3;
} param_desc;

static const param_desc DESC[GPT2C_WSE_NPARAMS] = {
    [GPT2C_WSE_P_WIDTH] = {"width", "[doc S2] 750x994 program rectangle on CS-2; [code S3] 755x1170 WSE-3",
                           "mesh columns", 750, 755},
    [GPT2C_WSE_P_HEIGHT] = {"height", "[doc S2]/[code S3]", "mesh rows", 994, 1170},
    [GPT2C_WSE_P_CLOCK] = {"clock_ghz", "[doc S2] examples convert cycles at 850 MHz", "clock (GHz)", 0.85, 0.85},
    [GPT2C_WSE_P_CLOCK_ALT] = {"clock_alt_ghz", "[code S3] WaferLLM converts at 1.1 GHz", "second clock (GHz)", 1.1,
                               1.1},
    [GPT2C_WSE_P_HOP] = {"hop", "[code S2] 1 cycle/hop sync correction; [3p S12] 2.0 measured (range 1-2)",
                         "cycles per hop", 1, 1},
    [GPT2C_WSE_P_TURN] = {"turn", "[3p S12] ~20 cycles per turn measured; default 0 assumed (range 0-20)",
                          "extra cycles where a route turns", 0, 0},
    [GPT2C_WSE_P_SETUP] = {"setup", "[3p S12] 15-17 cycles per DSD op (range 5-20)", "cycles to start a DSD op", 16,
                           16},
    [GPT2C_WSE_P_FMA32] = {"fma32_rate", "[est] @fmacs not in the SIMD table: 1 assumed; [3p S12] 0.5 measured",
                           "fp32 FMA elements per cycle", 1, 1},
    [GPT2C_WSE_P_SIMD16] = {"simd16", "[doc S6] @fmach/@faddh/@fmulh width 4 (WSE-2) / 8 (WSE-3)",
                            "fp16 elements per cycle", 4, 8},
    [GPT2C_WSE_P_SIMD32] = {"simd32", "[doc S6] @fadds/@fmovs/@mov32 width 2 (WSE-2) / 4 (WSE-3)",
                            "fp32 add/move elements per cycle", 2, 4},
    [GPT2C_WSE_P_SRAM] = {"sram", "[doc S6] 48 KiB per PE", "SRAM bytes per PE", 49152, 49152},
    [GPT2C_WSE_P_RESERVE] = {"reserve", "[3p S12] code and memcpy take 4,176-8,336 B; 6 KiB assumed (4-9 KiB)",
                             "SRAM bytes kept for code", 6144, 6144},
    [GPT2C_WSE_P_COLORS] = {"colors", "[doc S4] 24 routable colors (0-23)", "routable colors", 24, 24},
    [GPT2C_WSE_P_RESERVED_COLORS] = {"reserved_colors", "[code S2] memcpy reserves colors 21-23",
                                     "colors reserved at the top", 3, 3},
    [GPT2C_WSE_P_LINK] = {"link_rate", "[doc S4] one 32-bit wavelet per cycle per link direction",
                          "wavelets per cycle per link", 1, 1},
    [GPT2C_WSE_P_REDUCE_LAT] = {"reduce_lat", "[3p S12] dependent FP ops 2 cycles apart (assumed per in-stream add)",
                                "extra cycles per hop of a streaming reduction", 2, 2},
    [GPT2C_WSE_P_SPECIAL] = {"special", "[est] exp/tanh/rsqrt as ~8 dependent FP ops: assumed 16 cycles/element",
                             "cycles per element of exp, tanh, rsqrt", 16, 16},
    [GPT2C_WSE_P_TASK_SWITCH] = {"task_switch", "[3p S12] 7 cycles to the first wavelet of a data task",
                                 "cycles to switch tasks", 7, 7},
    [GPT2C_WSE_P_IO_LAT_US] = {"io_latency_us", "[doc S2] ~200 us TCP overhead per transaction",
                               "host transaction overhead (us)", 200, 200},
    [GPT2C_WSE_P_IO_GBPS] = {"io_gbps", "[doc S2] ~7 Gb/s per I/O channel", "Gb/s per host channel", 7, 7},
    [GPT2C_WSE_P_IO_CHANNELS] = {"io_channels", "[doc S2] <= 16 channels", "host channels", 16, 16},
};

gpt2c_status gpt2c_wse_params_preset(const char *name, gpt2c_wse_params *p) {
    int w3;
    if (!name || strcmp(name, "wse2") == 0) w3 = 0;
    else if (strcmp(name, "wse3") == 0) w3 = 1;
    else return gpt2c_fail(GPT2C_ERR_ARG, "wse: unknown machine preset '%s' (wse2, wse3)", name);
    for (int i = 0; i < GPT2C_WSE_NPARAMS; i++) p->v[i] = w3 ? DESC[i].wse3 : DESC[i].wse2;
    p->wse3 = w3;
    return GPT2C_OK;
}

gpt2c_status gpt2c_wse_param_set(gpt2c_wse_params *p, const char *name, double value) {
    for (int i = 0; i < GPT2C_WSE_NPARAMS; i++)
        if (strcmp(DESC[i].name, name) == 0) {
            if (!(value >= 0) || value > 1e9 || (i == GPT2C_WSE_P_FMA32 && value <= 0) ||
                ((i == GPT2C_WSE_P_CLOCK || i == GPT2C_WSE_P_CLOCK_ALT || i == GPT2C_WSE_P_SIMD16 ||
                  i == GPT2C_WSE_P_SIMD32 || i == GPT2C_WSE_P_LINK || i == GPT2C_WSE_P_WIDTH ||
                  i == GPT2C_WSE_P_HEIGHT || i == GPT2C_WSE_P_COLORS) &&
                 value <= 0))
                return gpt2c_fail(GPT2C_ERR_RANGE, "wse: parameter %s=%g is out of range", name, value);
            if (i == GPT2C_WSE_P_COLORS && value > 24)
                return gpt2c_fail(GPT2C_ERR_RANGE, "wse: colors=%g: a wavelet's 5-bit tag routes at most 24", value);
            if (i == GPT2C_WSE_P_RESERVE && value >= p->v[GPT2C_WSE_P_SRAM])
                return gpt2c_fail(GPT2C_ERR_RANGE, "wse: reserve=%g leaves no SRAM", value);
            p->v[i] = value;
            return GPT2C_OK;
        }
    return gpt2c_fail(GPT2C_ERR_ARG, "wse: unknown parameter '%s'", name);
}

const char *gpt2c_wse_param_name(int i) { return i >= 0 && i < GPT2C_WSE_NPARAMS ? DESC[i].name : "?"; }
const char *gpt2c_wse_param_source(int i) { return i >= 0 && i < GPT2C_WSE_NPARAMS ? DESC[i].source : "?"; }
const char *gpt2c_wse_param_help(int i) { return i >= 0 && i < GPT2C_WSE_NPARAMS ? DESC[i].help : "?"; }
