/* GET /metrics: the counters in Prometheus' text format (version 0.0.4). */
#include <stdio.h>
#include <stdlib.h>

#include "serve/serve_internal.h"

char *gpt2c_srv_metrics_text(gpt2c_server *s) {
    gpt2c_serve_stats st;
    gpt2c_server_stats(s, &st);
    const double pf = st.prefill_s > 0 ? (double)st.prompt_tokens / st.prefill_s : 0;
    const double dc = st.decode_s > 0 ? (double)st.generated_tokens / st.decode_s : 0;
    const struct {
        const char *name, *type, *help;
        double v;
    } m[] = {
        {"gpt2c_requests_total", "counter", "HTTP requests answered (any route and status)", (double)st.requests},
        {"gpt2c_requests_rejected_total", "counter", "answers with a 4xx or 5xx status", (double)st.rejected},
        {"gpt2c_completions_total", "counter", "completions finished", (double)st.completions},
        {"gpt2c_completions_cancelled_total", "counter", "completions whose client went away first", (double)st.cancelled},
        {"gpt2c_prompt_tokens_total", "counter", "prompt tokens prefilled", (double)st.prompt_tokens},
        {"gpt2c_generated_tokens_total", "counter", "tokens sampled", (double)st.generated_tokens},
        {"gpt2c_decode_steps_total", "counter", "decode passes (each for up to max_batch sequences)", (double)st.decode_steps},
        {"gpt2c_prefill_seconds_total", "counter", "scheduler time in prefill passes", st.prefill_s},
        {"gpt2c_decode_seconds_total", "counter", "scheduler time in decode passes and sampling", st.decode_s},
        {"gpt2c_prefill_tokens_per_second", "gauge", "prompt tokens per second of prefill time, since start", pf},
        {"gpt2c_decode_tokens_per_second", "gauge", "tokens per second of decode time, since start", dc},
        {"gpt2c_time_to_first_token_seconds_total", "counter", "queueing + prefill until the first token, summed over completions", st.ttft_s},
        {"gpt2c_first_tokens_total", "counter", "completions that got a first token (divide the line above by this)", (double)st.ttft_count},
        {"gpt2c_queue_depth", "gauge", "requests waiting for a slot", (double)st.queue_depth},
        {"gpt2c_active_slots", "gauge", "requests holding a KV-cache slot", (double)st.active},
        {"gpt2c_slots", "gauge", "KV-cache slots", (double)s->cfg.slots},
    };
    srv_buf b = {0};
    char line[512];
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        const int n = snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", m[i].name, m[i].help,
                               m[i].name, m[i].type, m[i].name, m[i].v);
        if (gpt2c_srv_buf_add(&b, line, (size_t)n)) {
            gpt2c_srv_buf_free(&b);
            return NULL;
        }
    }
    return b.p;
}
