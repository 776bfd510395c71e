/* Hardware and software counters per profiler scope, through perf_event_open.
 *
 * Threading choice: one counter group per OpenMP thread (opened from inside a
 * parallel region, pid = 0 = the calling thread), not one inherited set on
 * the process.  Reasons: `inherit` only follows threads created after the
 * counters are opened, and the OpenMP pool usually exists by then; inherited
 * counters cannot be read as a PERF_FORMAT_GROUP, so the events of a ratio
 * (CPI, top-down slots) would not be scheduled together; and per-thread
 * counts give the trace one real track per thread.  A scope reads every
 * thread's groups at begin and end (a few read() calls) and stores the delta.
 *
 * Groups are multiplexed by the kernel when the PMU has too few counters; each
 * delta is scaled by time_enabled / time_running of its group, and the
 * smallest running/enabled ratio seen is reported.  When the PMU is not
 * exposed (most virtual machines) the hardware groups fail to open: the
 * reason is kept, and the software counters (task-clock, page faults,
 * context switches, migrations) still work. */
#ifndef GPT2C_PROFILE_COUNTERS_H
#define GPT2C_PROFILE_COUNTERS_H

#include <stdint.h>

#include "gpt2c/status.h"

typedef enum {
    /* software, summed over threads */
    GPT2C_CTR_TASK_CLOCK, /* ns of CPU time */
    GPT2C_CTR_PAGE_FAULTS,
    GPT2C_CTR_CTX_SWITCHES,
    GPT2C_CTR_MIGRATIONS,
    /* generic hardware */
    GPT2C_CTR_CYCLES,
    GPT2C_CTR_INSTRUCTIONS,
    GPT2C_CTR_BRANCH_MISSES,
    GPT2C_CTR_L1D_MISSES,
    GPT2C_CTR_LLC_MISSES,
    /* top-down raw events: meaning depends on the scheme (see topdown.h) */
    GPT2C_CTR_TD0, GPT2C_CTR_TD1, GPT2C_CTR_TD2, GPT2C_CTR_TD3, GPT2C_CTR_TD4,
    GPT2C_CTR_TD5, GPT2C_CTR_TD6, GPT2C_CTR_TD7,
    GPT2C_CTR_COUNT
} gpt2c_ctr;

const char *gpt2c_ctr_name(gpt2c_ctr c);

typedef struct gpt2c_counters gpt2c_counters;

/* Opens the counters on each of `nthreads` OpenMP threads.  `want_hw` = 0
 * opens only the software counters.  Never fails for lack of a PMU: check
 * gpt2c_counters_hw_reason().  Fails only on bad arguments or no memory. */
gpt2c_status gpt2c_counters_open(gpt2c_counters **out, int nthreads, int want_hw);
void gpt2c_counters_close(gpt2c_counters *c);

int gpt2c_counters_threads(const gpt2c_counters *c);
/* Counter c is being counted (opened on every thread). */
int gpt2c_counters_have(const gpt2c_counters *c, gpt2c_ctr id);
/* "" when hardware counters are available, else why not (one line). */
const char *gpt2c_counters_hw_reason(const gpt2c_counters *c);
const char *gpt2c_counters_sw_reason(const gpt2c_counters *c);
/* The top-down scheme in use (gpt2c_td_scheme, topdown.h) and a CPU description. */
int gpt2c_counters_td_scheme(const gpt2c_counters *c);
const char *gpt2c_counters_cpu(const gpt2c_counters *c);
/* Smallest time_running / time_enabled seen over all deltas (1 = never multiplexed). */
double gpt2c_counters_min_running_ratio(const gpt2c_counters *c);

/* Raw snapshot storage: gpt2c_counters_snapshot_size() uint64 words. */
size_t gpt2c_counters_snapshot_words(const gpt2c_counters *c);
void gpt2c_counters_snapshot(gpt2c_counters *c, uint64_t *snap);
/* Multiplex-scaled deltas b - a: totals over threads into total[GPT2C_CTR_COUNT]
 * (0 where not counted), and each thread's task-clock ns into per_thread_task[]
 * (nthreads entries; may be NULL). */
void gpt2c_counters_delta(gpt2c_counters *c, const uint64_t *a, const uint64_t *b, double *total,
                          double *per_thread_task);

#endif
