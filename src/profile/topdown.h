/* Top-down level 1 and level 2 from raw counts: the vendors' documented
 * formulas, kept apart from perf_event_open so they can be unit-tested on
 * recorded counts.
 *
 * Intel (Ice Lake and later, PERF_METRICS through the `slots` and `topdown-*`
 * events; the kernel reports each topdown-* value already in slots):
 *   TD0 slots, TD1 topdown-retiring, TD2 topdown-bad-spec, TD3 topdown-fe-bound,
 *   TD4 topdown-be-bound, TD5 topdown-mem-bound (Sapphire Rapids+, level 2).
 *   X = topdown-X / slots; memory bound = mem-bound / slots; core bound =
 *   backend bound - memory bound.
 *
 * AMD Zen 4 (6 dispatch slots per cycle) and Zen 5 (8), from AMD's PPR and the
 * Linux perf pipeline metrics:
 *   TD0 ls_not_halted_cyc (PMCx076)                      slots = W * TD0
 *   TD1 de_no_dispatch_per_slot.no_ops_from_frontend (PMCx1A0, umask 0x01)
 *   TD2 de_no_dispatch_per_slot.backend_stalls        (PMCx1A0, umask 0x1E)
 *   TD3 de_src_op_disp.all                            (PMCx0AA, umask 0x07)
 *   TD4 ex_ret_ops                                    (PMCx0C1)
 *   TD5 ex_no_retire.load_not_complete                (PMCx0D6, umask 0x02)
 *   TD6 ex_no_retire.not_complete                     (PMCx0D6, umask 0x01)
 *   TD7 de_no_dispatch_per_slot.smt_contention        (PMCx1A0, umask 0x60)
 *   frontend = TD1/slots, backend = TD2/slots, bad speculation = (TD3-TD4)/slots,
 *   retiring = TD4/slots, smt contention = TD7/slots,
 *   memory bound = backend * TD5/TD6, core bound = backend - memory bound. */
#ifndef GPT2C_PROFILE_TOPDOWN_H
#define GPT2C_PROFILE_TOPDOWN_H

#include "gpt2c/status.h"

typedef enum {
    GPT2C_TD_NONE,
    GPT2C_TD_INTEL, /* PERF_METRICS, level 1 (+ level 2 where topdown-mem-bound exists) */
    GPT2C_TD_ZEN4,
    GPT2C_TD_ZEN5,
} gpt2c_td_scheme;

const char *gpt2c_td_scheme_name(gpt2c_td_scheme s);
/* Dispatch slots per cycle (AMD), 0 for Intel (slots are counted) or none. */
int gpt2c_td_width(gpt2c_td_scheme s);

typedef struct gpt2c_topdown {
    double frontend_bound, bad_speculation, backend_bound, retiring; /* level 1, fractions of slots */
    double smt_contention;                                           /* AMD only, else 0 */
    double memory_bound, core_bound;                                 /* level 2 (fractions of slots) */
    int have_l2;
} gpt2c_topdown;

/* raw[0..7] = TD0..TD7 as above (multiplex-scaled counts); have_l2_raw says
 * whether the level-2 events were counted.  Fails (ERR_ARG) on a zero slot
 * count or an unknown scheme. */
gpt2c_status gpt2c_topdown_compute(gpt2c_td_scheme s, const double raw[8], int have_l2_raw, gpt2c_topdown *out);

#endif
