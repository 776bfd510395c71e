/* Chrome trace-event export (opens in Perfetto and chrome://tracing):
 * {"traceEvents": [...]} with "ph":"X" complete events, ts/dur in microseconds.
 * Track "main" (tid 1) nests step > phase > block > group > op, where a group
 * is a run of consecutive ops of one layer type: "attention" (QKV, attention,
 * projection), "ffn" (fc, GELU, projection) and "norm" inside each block, and
 * "embedding", "head", "optimizer", "data" outside the blocks.  With software
 * counters, each OpenMP thread gets a track (tid 2+) with the same block and
 * group spans around op events that carry the CPU time that thread was
 * counted for during the op. */
#include <stdio.h>

#include "profile/session.h"

static double us(const gpt2c_profile_session *s, uint64_t t) { return (double)(int64_t)(t - s->t_origin) * 1e-3; }

static void ev(sbuf *b, int *first, const char *name, const char *cat, int tid, double ts, double dur) {
    gpt2c_sb_printf(b, "%s\n{\"name\":\"", *first ? "" : ",");
    gpt2c_sb_json_str(b, name);
    gpt2c_sb_printf(b, "\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", cat, tid, ts, dur);
    *first = 0;
}

/* Same run: one block (by_type 0) or one block's layer type (by_type 1), in one phase and step. */
static int same_run(const gpt2c_prof_event *a, const gpt2c_prof_event *b, int by_type) {
    return b->t1_ns && b->layer == a->layer && b->phase == a->phase && b->step == a->step &&
           (!by_type || gpt2c_op_layer_type((gpt2c_op)b->op) == gpt2c_op_layer_type((gpt2c_op)a->op));
}

/* Emits the span of the run starting at event i (blocks: layer >= 0 only); returns the next run's start. */
static size_t span_run(sbuf *b, int *first, const gpt2c_profile_session *s, const gpt2c_prof_event *E, size_t n,
                       size_t i, int tid, int by_type) {
    if (E[i].t1_ns == 0 || (!by_type && E[i].layer < 0)) return i + 1;
    size_t j = i;
    while (j + 1 < n && same_run(&E[i], &E[j + 1], by_type)) j++;
    char name[64];
    if (by_type)
        snprintf(name, sizeof name, "%s", gpt2c_layer_type_name(gpt2c_op_layer_type((gpt2c_op)E[i].op)));
    else
        snprintf(name, sizeof name, "block %d", E[i].layer);
    ev(b, first, name, by_type ? "group" : "layer", tid, us(s, E[i].t0_ns), (double)(E[j].t1_ns - E[i].t0_ns) * 1e-3);
    gpt2c_sb_printf(b, ",\"args\":{\"layer\":%d,\"phase\":\"%s\",\"step\":%d}}", E[i].layer,
              gpt2c_phase_name((gpt2c_phase)E[i].phase), E[i].step);
    return j + 1;
}

gpt2c_status gpt2c_prof_write_trace(gpt2c_profile_session *s, sbuf *b) {
    int first = 1;
    gpt2c_sb_puts(b, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
    gpt2c_sb_printf(b, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"gpt2c %s\"}}",
              s->model_name);
    gpt2c_sb_puts(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"main (steps, phases, layers, ops)\"}}");
    int per_thread = s->ctr && gpt2c_counters_have(s->ctr, GPT2C_CTR_TASK_CLOCK);
    if (per_thread)
        for (int t = 0; t < s->nthreads; t++)
            gpt2c_sb_printf(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"omp thread %d (cpu time per op)\"}}",
                      t + 2, t);
    first = 0;
    char name[64];
    for (size_t i = 0; i < s->trace_spans; i++) {
        const span *sp = &s->spans[i];
        if (sp->is_step) snprintf(name, sizeof name, "step %d", sp->step);
        else snprintf(name, sizeof name, "%s", gpt2c_phase_name((gpt2c_phase)sp->phase));
        ev(b, &first, name, sp->is_step ? "step" : "phase", 1, us(s, sp->t0), (double)(sp->t1 - sp->t0) * 1e-3);
        gpt2c_sb_printf(b, ",\"args\":{\"step\":%d}}", sp->step);
    }
    /* block and group spans, on the main track and on every thread track */
    size_t n = s->trace_events;
    const gpt2c_prof_event *E = s->prof.events;
    for (int tid = 1; tid <= (per_thread ? s->nthreads + 1 : 1); tid++) {
        for (int by_type = 0; by_type < 2; by_type++)
            for (size_t i = 0; i < n;) i = span_run(b, &first, s, E, n, i, tid, by_type);
    }
    for (size_t i = 0; i < n; i++) {
        const gpt2c_prof_event *e = &E[i];
        if (e->t1_ns == 0) continue;
        double dur = (double)(e->t1_ns - e->t0_ns) * 1e-3;
        ev(b, &first, gpt2c_op_name((gpt2c_op)e->op), "op", 1, us(s, e->t0_ns), dur);
        gpt2c_sb_printf(b, ",\"args\":{\"layer\":%d,\"phase\":\"%s\",\"layer_type\":\"%s\",\"step\":%d,\"flops\":%.0f,\"bytes\":%.0f",
                  e->layer, gpt2c_phase_name((gpt2c_phase)e->phase),
                  gpt2c_layer_type_name(gpt2c_op_layer_type((gpt2c_op)e->op)), e->step, e->flops, e->bytes);
        if (dur > 0) gpt2c_sb_printf(b, ",\"gflops_per_s\":%.3f,\"gb_per_s\":%.3f", e->flops / (dur * 1e3), e->bytes / (dur * 1e3));
        if (s->ctr)
            for (int c = 0; c < GPT2C_CTR_COUNT; c++)
                if (gpt2c_counters_have(s->ctr, (gpt2c_ctr)c))
                    gpt2c_sb_printf(b, ",\"%s\":%.0f", gpt2c_ctr_name((gpt2c_ctr)c), s->ev_ctr[i * GPT2C_CTR_COUNT + c]);
        gpt2c_sb_puts(b, "}}");
        if (per_thread)
            for (int t = 0; t < s->nthreads; t++) {
                double cpu_ns = s->ev_thr[i * (size_t)s->nthreads + t];
                ev(b, &first, gpt2c_op_name((gpt2c_op)e->op), "thread", t + 2, us(s, e->t0_ns), dur);
                gpt2c_sb_printf(b, ",\"args\":{\"layer\":%d,\"phase\":\"%s\",\"layer_type\":\"%s\",\"cpu_ms\":%.4f,\"busy_pct\":%.1f}}",
                          e->layer, gpt2c_phase_name((gpt2c_phase)e->phase),
                          gpt2c_layer_type_name(gpt2c_op_layer_type((gpt2c_op)e->op)), cpu_ns * 1e-6,
                          dur > 0 ? 100 * cpu_ns / (dur * 1e3) : 0.0);
            }
    }
    gpt2c_sb_printf(b, "\n],\"otherData\":{\"dropped_events\":%zu,\"trace_truncated\":%s}}\n", s->prof.dropped,
              s->trace_full ? "true" : "false");
    return GPT2C_OK;
}
