/* perf_event_open counters, one group set per OpenMP thread (see counters.h). */
#include <errno.h>
#include <linux/perf_event.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "gpt2c/core.h"
#include "profile/counters.h"
#include "profile/topdown.h"

#define MAX_MEMBERS 8
#define MAX_GROUPS 4
#define MAX_THREADS 256

static const char *const CTR_NAMES[GPT2C_CTR_COUNT] = {
    "task_clock_ns", "page_faults", "context_switches", "cpu_migrations", "cycles", "instructions",
    "branch_misses", "l1d_misses", "llc_misses", "td0", "td1", "td2", "td3", "td4", "td5", "td6", "td7",
};
const char *gpt2c_ctr_name(gpt2c_ctr c) { return (unsigned)c < GPT2C_CTR_COUNT ? CTR_NAMES[c] : "?"; }

typedef struct {
    uint32_t type;
    uint64_t config;
    int id;       /* gpt2c_ctr */
    int optional; /* a member that may fail without failing the group */
} ev_spec;

typedef struct {
    const char *name;
    int hw;
    int n;
    ev_spec ev[MAX_MEMBERS];
} group_spec;

struct gpt2c_counters {
    int nthreads, ngroups;
    group_spec g[MAX_GROUPS];
    int *fd; /* [thread][group][member] */
    int have[GPT2C_CTR_COUNT];
    int td;
    char cpu[128];
    char hw_reason[256], sw_reason[256];
    double min_ratio;
};

static int *fdp(gpt2c_counters *c, int t, int g, int k) { return &c->fd[(t * MAX_GROUPS + g) * MAX_MEMBERS + k]; }

static int open_one(uint32_t type, uint64_t config, int group_fd) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.exclude_hv = 1;
    a.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) { /* perf_event_paranoid: user space only */
        a.exclude_kernel = 1;
        fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
    }
    return fd;
}

#if defined(__x86_64__) || defined(__i386__) /* only the x86 vendor probes read sysfs */
static int read_sysfs_int(const char *path, int *v) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fscanf(f, "%d", v) == 1;
    fclose(f);
    return ok;
}
#endif

static void detect_cpu(gpt2c_counters *c, uint32_t *intel_type) {
    c->td = GPT2C_TD_NONE;
    *intel_type = 0;
    snprintf(c->cpu, sizeof c->cpu, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                char *p = strchr(line, ':');
                if (p) {
                    p++;
                    while (*p == ' ') p++;
                    p[strcspn(p, "\n")] = 0;
                    snprintf(c->cpu, sizeof c->cpu, "%s", p);
                }
                break;
            }
        fclose(f);
    }
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, cc, d;
    if (!__get_cpuid(0, &a, &b, &cc, &d)) return;
    int amd = b == 0x68747541; /* "Auth" */
    int intel = b == 0x756e6547; /* "Genu" */
    __get_cpuid(1, &a, &b, &cc, &d);
    unsigned family = ((a >> 8) & 0xf) + ((a >> 20) & 0xff);
    unsigned model = ((a >> 4) & 0xf) | (((a >> 16) & 0xf) << 4);
    if (amd && family == 0x1a) c->td = GPT2C_TD_ZEN5;
    /* family 19h: Zen 4 = models 10h-1Fh, 60h-7Fh, A0h-AFh; the rest are Zen 3 */
    if (amd && family == 0x19 && ((model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0x7f) ||
                                  (model >= 0xa0 && model <= 0xaf)))
        c->td = GPT2C_TD_ZEN4;
    if (intel) {
        static const char *const pmus[] = {"cpu", "cpu_core"};
        for (int i = 0; i < 2; i++) {
            char p[256];
            snprintf(p, sizeof p, "/sys/bus/event_source/devices/%s/events/topdown-retiring", pmus[i]);
            if (access(p, R_OK) != 0) continue;
            snprintf(p, sizeof p, "/sys/bus/event_source/devices/%s/type", pmus[i]);
            int t;
            if (read_sysfs_int(p, &t)) {
                *intel_type = (uint32_t)t;
                c->td = GPT2C_TD_INTEL;
            }
            break;
        }
    }
#endif
}

/* AMD raw event encoding: event[7:0] -> config[7:0], event[11:8] -> config[35:32]. */
static uint64_t amd_raw(unsigned event, unsigned umask) {
    return ((uint64_t)(event & 0xf00) << 24) | (event & 0xff) | ((uint64_t)umask << 8);
}

static uint64_t cache_cfg(unsigned cache) {
    return cache | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
}

static void build_groups(gpt2c_counters *c, int want_hw, uint32_t intel_type) {
    group_spec *g = c->g;
    int n = 0;
    g[n++] = (group_spec){"software", 0, 4,
                          {{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, GPT2C_CTR_TASK_CLOCK, 0},
                           {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, GPT2C_CTR_PAGE_FAULTS, 1},
                           {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, GPT2C_CTR_CTX_SWITCHES, 1},
                           {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, GPT2C_CTR_MIGRATIONS, 1}}};
    if (want_hw) {
        g[n++] = (group_spec){"basic", 1, 5,
                              {{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, GPT2C_CTR_CYCLES, 0},
                               {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, GPT2C_CTR_INSTRUCTIONS, 1},
                               {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, GPT2C_CTR_BRANCH_MISSES, 1},
                               {PERF_TYPE_HW_CACHE, cache_cfg(PERF_COUNT_HW_CACHE_L1D), GPT2C_CTR_L1D_MISSES, 1},
                               {PERF_TYPE_HW_CACHE, cache_cfg(PERF_COUNT_HW_CACHE_LL), GPT2C_CTR_LLC_MISSES, 1}}};
        if (c->td == GPT2C_TD_INTEL) {
            g[n++] = (group_spec){"topdown", 1, 6,
                                  {{intel_type, 0x0400, GPT2C_CTR_TD0, 0},
                                   {intel_type, 0x8000, GPT2C_CTR_TD1, 0},
                                   {intel_type, 0x8100, GPT2C_CTR_TD2, 0},
                                   {intel_type, 0x8200, GPT2C_CTR_TD3, 0},
                                   {intel_type, 0x8300, GPT2C_CTR_TD4, 0},
                                   {intel_type, 0x8700, GPT2C_CTR_TD5, 1}}};
        } else if (c->td == GPT2C_TD_ZEN4 || c->td == GPT2C_TD_ZEN5) {
            g[n++] = (group_spec){"topdown", 1, 6,
                                  {{PERF_TYPE_RAW, amd_raw(0x076, 0x00), GPT2C_CTR_TD0, 0},
                                   {PERF_TYPE_RAW, amd_raw(0x1a0, 0x01), GPT2C_CTR_TD1, 0},
                                   {PERF_TYPE_RAW, amd_raw(0x1a0, 0x1e), GPT2C_CTR_TD2, 0},
                                   {PERF_TYPE_RAW, amd_raw(0x0aa, 0x07), GPT2C_CTR_TD3, 0},
                                   {PERF_TYPE_RAW, amd_raw(0x0c1, 0x00), GPT2C_CTR_TD4, 0},
                                   {PERF_TYPE_RAW, amd_raw(0x1a0, 0x60), GPT2C_CTR_TD7, 1}}};
            g[n++] = (group_spec){"topdown-l2", 1, 2,
                                  {{PERF_TYPE_RAW, amd_raw(0x0d6, 0x02), GPT2C_CTR_TD5, 0},
                                   {PERF_TYPE_RAW, amd_raw(0x0d6, 0x01), GPT2C_CTR_TD6, 0}}};
        }
    }
    c->ngroups = n;
}

gpt2c_status gpt2c_counters_open(gpt2c_counters **out, int nthreads, int want_hw) {
    *out = NULL;
    if (nthreads < 1 || nthreads > MAX_THREADS)
        return gpt2c_fail(GPT2C_ERR_ARG, "counters: thread count %d outside [1, %d]", nthreads, MAX_THREADS);
    gpt2c_counters *c = calloc(1, sizeof *c);
    if (!c) return gpt2c_fail(GPT2C_ERR_NOMEM, "counters: out of memory");
    c->nthreads = nthreads;
    c->min_ratio = 1;
    c->fd = malloc(sizeof(int) * (size_t)nthreads * MAX_GROUPS * MAX_MEMBERS);
    if (!c->fd) {
        free(c);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "counters: out of memory");
    }
    for (size_t i = 0; i < (size_t)nthreads * MAX_GROUPS * MAX_MEMBERS; i++) c->fd[i] = -1;
    uint32_t intel_type;
    detect_cpu(c, &intel_type);
    build_groups(c, want_hw, intel_type);

    /* errs[g * MAX_MEMBERS + k]: first errno of member k of group g on any thread */
    int errs[MAX_GROUPS * MAX_MEMBERS] = {0};
    int team = 0;
#pragma omp parallel num_threads(nthreads)
    {
        int t = omp_get_thread_num();
#pragma omp atomic
        team++;
        for (int g = 0; g < c->ngroups; g++) {
            int leader = -1;
            for (int k = 0; k < c->g[g].n; k++) {
                int fd = open_one(c->g[g].ev[k].type, c->g[g].ev[k].config, leader);
                if (fd < 0) {
                    int e = errno;
#pragma omp critical(gpt2c_counters_err)
                    if (!errs[g * MAX_MEMBERS + k]) errs[g * MAX_MEMBERS + k] = e;
                    if (k == 0) break;
                    continue;
                }
                if (k == 0) leader = fd;
                *fdp(c, t, g, k) = fd;
            }
        }
    }
    if (team != nthreads) {
        gpt2c_counters_close(c);
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "counters: OpenMP gave %d threads, not %d", team, nthreads);
    }
    /* a member counts only if it opened on every thread; a group lives if its leader did */
    for (int g = 0; g < c->ngroups; g++) {
        for (int k = 0; k < c->g[g].n; k++) {
            int all = !errs[g * MAX_MEMBERS + k];
            for (int t = 0; t < nthreads && all; t++) all = *fdp(c, t, g, k) >= 0;
            if (all) {
                c->have[c->g[g].ev[k].id] = 1;
                continue;
            }
            if (k == 0 || !c->g[g].ev[k].optional) { /* the group is unusable: close it everywhere */
                char *reason = c->g[g].hw ? c->hw_reason : c->sw_reason;
                if (!reason[0] || g == 1)
                    snprintf(reason, 256, "perf_event_open(%s group, %s): %s%s", c->g[g].name,
                             gpt2c_ctr_name(c->g[g].ev[k].id), strerror(errs[g * MAX_MEMBERS + k]),
                             errs[g * MAX_MEMBERS + k] == ENOENT || errs[g * MAX_MEMBERS + k] == EOPNOTSUPP
                                 ? " (the PMU is not exposed, as in most virtual machines)"
                                 : "");
                for (int t = 0; t < nthreads; t++)
                    for (int j = c->g[g].n - 1; j >= 0; j--) {
                        int *f = fdp(c, t, g, j);
                        if (*f >= 0) close(*f);
                        *f = -1;
                    }
                for (int j = 0; j < c->g[g].n; j++) c->have[c->g[g].ev[j].id] = 0;
                break;
            }
        }
    }
    if (!want_hw) snprintf(c->hw_reason, sizeof c->hw_reason, "not requested");
    else if (!c->hw_reason[0] && !c->have[GPT2C_CTR_CYCLES])
        snprintf(c->hw_reason, sizeof c->hw_reason, "no hardware group opened");
    else if (c->hw_reason[0] && c->have[GPT2C_CTR_CYCLES] && c->td != GPT2C_TD_NONE)
        c->hw_reason[0] = 0; /* basic counters work; a missing top-down group shows as no top-down */
    if (c->td != GPT2C_TD_NONE && !c->have[GPT2C_CTR_TD0]) c->td = GPT2C_TD_NONE;
    *out = c;
    return GPT2C_OK;
}

void gpt2c_counters_close(gpt2c_counters *c) {
    if (!c) return;
    for (int t = 0; t < c->nthreads; t++)
        for (int g = 0; g < c->ngroups; g++)
            for (int k = MAX_MEMBERS - 1; k >= 0; k--) {
                int *f = fdp(c, t, g, k);
                if (*f >= 0) close(*f);
            }
    free(c->fd);
    free(c);
}

int gpt2c_counters_threads(const gpt2c_counters *c) { return c->nthreads; }
int gpt2c_counters_have(const gpt2c_counters *c, gpt2c_ctr id) { return (unsigned)id < GPT2C_CTR_COUNT && c->have[id]; }
const char *gpt2c_counters_hw_reason(const gpt2c_counters *c) { return c->hw_reason; }
const char *gpt2c_counters_sw_reason(const gpt2c_counters *c) { return c->sw_reason; }
int gpt2c_counters_td_scheme(const gpt2c_counters *c) { return c->td; }
const char *gpt2c_counters_cpu(const gpt2c_counters *c) { return c->cpu; }
double gpt2c_counters_min_running_ratio(const gpt2c_counters *c) { return c->min_ratio; }

/* Snapshot layout: [thread][group] blocks of (3 + MAX_MEMBERS) words as
 * PERF_FORMAT_GROUP reads them: nr, time_enabled, time_running, values. */
#define BLOCK (3 + MAX_MEMBERS)
size_t gpt2c_counters_snapshot_words(const gpt2c_counters *c) {
    return (size_t)c->nthreads * MAX_GROUPS * BLOCK;
}

void gpt2c_counters_snapshot(gpt2c_counters *c, uint64_t *snap) {
    for (int t = 0; t < c->nthreads; t++)
        for (int g = 0; g < c->ngroups; g++) {
            uint64_t *b = snap + ((size_t)t * MAX_GROUPS + g) * BLOCK;
            int fd = *fdp(c, t, g, 0);
            if (fd < 0 || read(fd, b, BLOCK * sizeof(uint64_t)) <= 0) memset(b, 0, BLOCK * sizeof(uint64_t));
        }
}

void gpt2c_counters_delta(gpt2c_counters *c, const uint64_t *a, const uint64_t *b, double *total,
                          double *per_thread_task) {
    for (int i = 0; i < GPT2C_CTR_COUNT; i++) total[i] = 0;
    for (int t = 0; t < c->nthreads; t++) {
        if (per_thread_task) per_thread_task[t] = 0;
        for (int g = 0; g < c->ngroups; g++) {
            const uint64_t *x = a + ((size_t)t * MAX_GROUPS + g) * BLOCK, *y = b + ((size_t)t * MAX_GROUPS + g) * BLOCK;
            if (y[0] == 0) continue;
            double en = (double)(y[1] - x[1]), run = (double)(y[2] - x[2]);
            double scale = run > 0 ? en / run : 0;
            if (en > 0 && run / en < c->min_ratio) c->min_ratio = run / en;
            /* values come in the order the members were opened (skipping failed optional ones) */
            int v = 0;
            for (int k = 0; k < c->g[g].n && v < (int)y[0]; k++) {
                if (*fdp(c, t, g, k) < 0) continue;
                double d = (double)(y[3 + v] - x[3 + v]) * scale;
                v++;
                int id = c->g[g].ev[k].id;
                if (!c->have[id]) continue;
                total[id] += d;
                if (per_thread_task && id == GPT2C_CTR_TASK_CLOCK) per_thread_task[t] = d;
            }
        }
    }
}
