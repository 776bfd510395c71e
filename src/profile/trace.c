/* Chrome trace-event export (opens in Perfetto and chrome://tracing):
 * {"traceEvents": [...]} with "ph":"X" complete events, ts/dur in microseconds.
 * Track "main" (tid 1) nests step > phase > layer > op; with software
 * counters, each OpenMP thread gets a track (tid 2+) whose op events carry the
 * CPU time that thread was counted for during the op. */
#include <stdio.h>

#include "profile/session.h"

static double us(const gpt2c_profile_session *s, uint64_t t) { return (double)(int64_t)(t - s->t_origin) * 1e-3; }

static void ev(sbuf *b, int *first, const char *name, const char *cat, int tid, double ts, double dur) {
    sb_printf(b, "%s\n{\"name\":\"", *first ? "" : ",");
    sb_json_str(b, name);
    sb_printf(b, "\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", cat, tid, ts, dur);
    *first = 0;
}

gpt2c_status gpt2c_prof_write_trace(gpt2c_profile_session *s, sbuf *b) {
    int first = 1;
    sb_puts(b, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
    sb_printf(b, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"gpt2c %s\"}}",
              s->model_name);
    sb_puts(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"main (steps, phases, layers, ops)\"}}");
    int per_thread = s->ctr && gpt2c_counters_have(s->ctr, GPT2C_CTR_TASK_CLOCK);
    if (per_thread)
        for (int t = 0; t < s->nthreads; t++)
            sb_printf(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"omp thread %d (cpu time per op)\"}}",
                      t + 2, t);
    first = 0;
    char name[64];
    for (size_t i = 0; i < s->trace_spans; i++) {
        const span *sp = &s->spans[i];
        if (sp->is_step) snprintf(name, sizeof name, "step %d", sp->step);
        else snprintf(name, sizeof name, "%s", gpt2c_phase_name((gpt2c_phase)sp->phase));
        ev(b, &first, name, sp->is_step ? "step" : "phase", 1, us(s, sp->t0), (double)(sp->t1 - sp->t0) * 1e-3);
        sb_printf(b, ",\"args\":{\"step\":%d}}", sp->step);
    }
    /* layer spans: runs of consecutive ops of one block within one phase and step */
    size_t n = s->trace_events;
    const gpt2c_prof_event *E = s->prof.events;
    for (size_t i = 0; i < n;) {
        if (E[i].t1_ns == 0 || E[i].layer < 0) {
            i++;
            continue;
        }
        size_t j = i;
        while (j + 1 < n && E[j + 1].t1_ns && E[j + 1].layer == E[i].layer && E[j + 1].phase == E[i].phase &&
               E[j + 1].step == E[i].step)
            j++;
        snprintf(name, sizeof name, "block %d", E[i].layer);
        ev(b, &first, name, "layer", 1, us(s, E[i].t0_ns), (double)(E[j].t1_ns - E[i].t0_ns) * 1e-3);
        sb_printf(b, ",\"args\":{\"layer\":%d,\"phase\":\"%s\"}}", E[i].layer, gpt2c_phase_name((gpt2c_phase)E[i].phase));
        i = j + 1;
    }
    for (size_t i = 0; i < n; i++) {
        const gpt2c_prof_event *e = &E[i];
        if (e->t1_ns == 0) continue;
        double dur = (double)(e->t1_ns - e->t0_ns) * 1e-3;
        ev(b, &first, gpt2c_op_name((gpt2c_op)e->op), "op", 1, us(s, e->t0_ns), dur);
        sb_printf(b, ",\"args\":{\"layer\":%d,\"phase\":\"%s\",\"layer_type\":\"%s\",\"step\":%d,\"flops\":%.0f,\"bytes\":%.0f",
                  e->layer, gpt2c_phase_name((gpt2c_phase)e->phase),
                  gpt2c_layer_type_name(gpt2c_op_layer_type((gpt2c_op)e->op)), e->step, e->flops, e->bytes);
        if (dur > 0) sb_printf(b, ",\"gflops_per_s\":%.3f,\"gb_per_s\":%.3f", e->flops / (dur * 1e3), e->bytes / (dur * 1e3));
        if (s->ctr)
            for (int c = 0; c < GPT2C_CTR_COUNT; c++)
                if (gpt2c_counters_have(s->ctr, (gpt2c_ctr)c))
                    sb_printf(b, ",\"%s\":%.0f", gpt2c_ctr_name((gpt2c_ctr)c), s->ev_ctr[i * GPT2C_CTR_COUNT + c]);
        sb_puts(b, "}}");
        if (per_thread)
            for (int t = 0; t < s->nthreads; t++) {
                double cpu_ns = s->ev_thr[i * (size_t)s->nthreads + t];
                ev(b, &first, gpt2c_op_name((gpt2c_op)e->op), "thread", t + 2, us(s, e->t0_ns), dur);
                sb_printf(b, ",\"args\":{\"cpu_ms\":%.4f,\"busy_pct\":%.1f}}", cpu_ns * 1e-6,
                          dur > 0 ? 100 * cpu_ns / (dur * 1e3) : 0.0);
            }
    }
    sb_printf(b, "\n],\"otherData\":{\"dropped_events\":%zu,\"trace_truncated\":%s}}\n", s->prof.dropped,
              s->trace_full ? "true" : "false");
    return GPT2C_OK;
}
