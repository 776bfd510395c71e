/* A profiling session on a tiny model: aggregates are consistent, the trace is
 * valid Chrome trace JSON with properly nested events per thread, every op
 * sits in its layer type's group span ("attention", "ffn", "norm" inside a
 * "block N" span in forward and backward; "optimizer", "head", ... outside),
 * on the main track and on each thread track, and summary.json carries
 * forward / backward / optimizer figures. */
#include <stdint.h>
#include <unistd.h>

#include "gpt2c/model.h"
#include "gpt2c/profile_session.h"
#include "profile/session.h"
#include "testutil.h"
#include "model/model_internal.h"
#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>
#endif

#ifdef GPT2C_HAVE_JANSSON
static const char *str_of(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static double num_of(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }
static json_int_t int_of(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* Is b's interval inside a's (same track)? */
static int inside(json_t *a, json_t *b) {
    const double eps = 0.0015; /* rounding to 1 ns in microseconds */
    return int_of(a, "tid") == int_of(b, "tid") && num_of(a, "ts") <= num_of(b, "ts") + eps &&
           num_of(b, "ts") + num_of(b, "dur") <= num_of(a, "ts") + num_of(a, "dur") + eps;
}

/* The smallest event of category cat named name that encloses e on its track, or NULL. */
static json_t *enclosing(json_t *evs, json_t *e, const char *cat, const char *name) {
    json_t *best = NULL;
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *a = json_array_get(evs, i);
        const char *c = str_of(a, "cat");
        if (a == e || !c || strcmp(c, cat) || strcmp(str_of(a, "name"), name) || !inside(a, e)) continue;
        if (!best || num_of(a, "dur") < num_of(best, "dur")) best = a;
    }
    return best;
}

/* Every op (main track) and per-thread op is inside a group of its layer type,
 * itself inside "block L" for the ops of block L; blocks hold attention, ffn
 * and norm groups in forward and in backward, on every track that has ops. */
static void check_structure(json_t *evs) {
    size_t ops = 0, misplaced = 0;
    int groups[8][2][3] = {{{0}}}; /* [tid][forward, backward][attention, ffn, norm] */
    int tracks = 0, optimizer_groups = 0;
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *e = json_array_get(evs, i);
        const char *cat = str_of(e, "cat");
        if (!cat || (strcmp(cat, "op") && strcmp(cat, "thread"))) continue;
        json_t *args = json_object_get(e, "args");
        const char *lt = str_of(args, "layer_type"), *phase = str_of(args, "phase");
        json_int_t layer = int_of(args, "layer"), tid = int_of(e, "tid");
        ops++;
        json_t *g = lt ? enclosing(evs, e, "group", lt) : NULL;
        int ok = g != NULL;
        if (ok && layer >= 0) {
            char block[32];
            snprintf(block, sizeof block, "block %d", (int)layer);
            json_t *bl = enclosing(evs, g, "layer", block);
            ok = bl != NULL && inside(bl, e);
        }
        if (!ok) {
            if (misplaced++ < 5) printf("  op %s (layer %d, %s, tid %d) is not in its group/block span\n", str_of(e, "name"), (int)layer, lt ? lt : "?", (int)tid);
            continue;
        }
        if (tid < 8 && tid + 1 > tracks) tracks = (int)tid + 1;
        int ph = phase && !strcmp(phase, "forward") ? 0 : phase && !strcmp(phase, "backward") ? 1 : -1;
        int k = !strcmp(lt, "attention") ? 0 : !strcmp(lt, "ffn") ? 1 : !strcmp(lt, "norm") ? 2 : -1;
        if (ph >= 0 && k >= 0 && tid < 8) groups[tid][ph][k]++;
        optimizer_groups += !strcmp(lt, "optimizer");
    }
    CHECK_MSG(ops > 0 && misplaced == 0, "%zu of %zu ops outside their group / block span", misplaced, ops);
    for (int tid = 1; tid < tracks; tid++)
        for (int ph = 0; ph < 2; ph++)
            for (int k = 0; k < 3; k++)
                CHECK_MSG(groups[tid][ph][k] > 0, "track %d: no %s ops in a %s group", tid, ph ? "backward" : "forward",
                          k == 0 ? "attention" : k == 1 ? "ffn" : "norm");
    CHECK(optimizer_groups > 0);
    printf("  trace structure: %zu ops in their group and block spans on %d track(s)\n", ops, tracks - 1);
}
#endif

/* The roofline's op labels (font-size 10 text) never overlap one another:
 * boxes estimated as in svg.c (6 px a character, 12 px high). */
static void check_roofline_labels(const char *dir) {
    char path[300];
    snprintf(path, sizeof path, "%s/roofline.svg", dir);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "%s missing", path);
    if (!f) return;
    static char svg[1 << 16];
    size_t n = fread(svg, 1, sizeof svg - 1, f);
    fclose(f);
    svg[n] = 0;
    double x[64], y[64], w[64];
    int k = 0;
    for (const char *p = svg; (p = strstr(p, "<text x=\"")) && k < 64; p++) {
        double tx, ty;
        int used = 0;
        if (sscanf(p, "<text x=\"%lf\" y=\"%lf\" font-size=\"10\">%n", &tx, &ty, &used) != 2 || !used) continue;
        const char *end = strstr(p + used, "</text>");
        if (!end) break;
        x[k] = tx, y[k] = ty - 9.5, w[k] = 6.0 * (double)(end - (p + used));
        k++;
    }
    int overlaps = 0;
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++)
            overlaps += x[i] < x[j] + w[j] && x[j] < x[i] + w[i] && y[i] < y[j] + 12 && y[j] < y[i] + 12;
    CHECK_MSG(k >= 3 && overlaps == 0, "roofline: %d labels, %d overlapping pairs", k, overlaps);
    printf("  roofline: %d op labels, none overlapping\n", k);
}

static gpt2c_status step(gpt2c_model *m, gpt2c_profile_session *s, int i, const int32_t *tok, const int32_t *tgt) {
    gpt2c_adamw_cfg o = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0};
    float loss, norm;
    gpt2c_profile_session_step_begin(s, i);
    gpt2c_profile_session_phase(s, GPT2C_PHASE_FORWARD);
    GPT2C_TRY(gpt2c_model_forward(m, tok, tgt, 2, 8, &loss));
    gpt2c_profile_session_phase(s, GPT2C_PHASE_BACKWARD);
    GPT2C_TRY(gpt2c_model_backward(m, 1.0f));
    gpt2c_profile_session_phase(s, GPT2C_PHASE_OPTIMIZER);
    GPT2C_TRY(gpt2c_model_update(m, &o, 1e-3f, &norm));
    gpt2c_model_zero_grad(m);
    gpt2c_profile_session_step_end(s);
    return GPT2C_OK;
}

int main(void) {
    gpt2c_config cfg = {32, 64, 0, 2, 2, 16};
    CHECK_OK(gpt2c_config_check(&cfg, "tiny"));
    gpt2c_model *m = NULL;
    CHECK_OK(gpt2c_model_create(&cfg, &m));
    if (!m) return tu_finish("test_profile_trace");
    gpt2c_model_init_random(m, 1);
    CHECK_OK(gpt2c_model_prepare(m, 2, 8));
    int32_t tok[16], tgt[16];
    for (int i = 0; i < 16; i++) tok[i] = (i * 7) % 64, tgt[i] = (i * 5 + 1) % 64;

    gpt2c_profile_opts o = gpt2c_profile_opts_default();
    o.use_peak = 0;
    o.max_events = 200; /* small: the trace freezes, aggregation carries on */
    gpt2c_profile_session *s = NULL;
    CHECK_OK(gpt2c_profile_session_begin(&s, m, &o));
    CHECK(m->prof != NULL);
    for (int i = 0; i < 4; i++) CHECK_OK(step(m, s, i, tok, tgt));
    CHECK_OK(gpt2c_profile_session_end(s));
    CHECK(m->prof == NULL);
    CHECK(gpt2c_profile_session_trials(s) == 4);
    gpt2c_stat st = gpt2c_profile_session_step_ms(s);
    CHECK(st.n == 4 && st.mean > 0 && st.min <= st.mean && st.mean <= st.max);
    /* per-step aggregates: ops sum to the phases' op time; layer types partition the ops */
    double ops = 0, lts = 0;
    for (int g = G_OP0; g < G_COMP0; g++) ops += S_have(s, g, F_MS) ? S_mean(s, g, F_MS) : 0;
    for (int g = G_LT0; g < G_OP0; g++) lts += S_have(s, g, F_MS) ? S_mean(s, g, F_MS) : 0;
    CHECK(fabs(ops - lts) < 1e-9 * (1 + ops));
    CHECK(fabs(ops - S_mean(s, G_STEP, F_OPMS)) < 1e-6 * (1 + ops));
    CHECK(ops <= S_mean(s, G_STEP, F_MS) * 1.0001);
    CHECK(S_mean(s, G_OP0 + GPT2C_OP_MATMUL_QKV, F_CALLS) == 4); /* 2 layers x (fwd + bwd) */
    CHECK(S_mean(s, G_OP0 + GPT2C_OP_MATMUL_QKV, F_FLOPS) > 0);
    CHECK(S_have(s, G_PHASE0 + GPT2C_PHASE_FORWARD, F_MS) && S_have(s, G_PHASE0 + GPT2C_PHASE_OPTIMIZER, F_MS));
    CHECK(s->trace_full); /* 200 events hold fewer than 4 steps */

    char dir[] = "/tmp/gpt2c_test_profile_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK_OK(gpt2c_profile_session_write(s, dir));
    CHECK_FAILS(gpt2c_profile_session_write(s, "/nonexistent/dir/x"), GPT2C_ERR_IO);
    check_roofline_labels(dir);
#ifdef GPT2C_HAVE_JANSSON
    char path[256];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    CHECK_MSG(root != NULL, "trace.json: %s (line %d)", err.text, err.line);
    json_t *evs = root ? json_object_get(root, "traceEvents") : NULL;
    CHECK(json_is_array(evs));
    size_t n = json_array_size(evs), nx = 0, nested_ok = 1, cats[4] = {0};
    /* events of one track must be disjoint or nested (complete events) */
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(evs, i);
        const char *ph = json_string_value(json_object_get(a, "ph"));
        CHECK(ph && json_is_integer(json_object_get(a, "pid")) && json_is_integer(json_object_get(a, "tid")));
        if (!ph || strcmp(ph, "X")) continue;
        nx++;
        const char *cat = json_string_value(json_object_get(a, "cat"));
        if (cat) cats[0] += !strcmp(cat, "step"), cats[1] += !strcmp(cat, "phase"), cats[2] += !strcmp(cat, "layer"), cats[3] += !strcmp(cat, "op");
        double t0 = json_number_value(json_object_get(a, "ts")), d0 = json_number_value(json_object_get(a, "dur"));
        json_int_t tid = json_integer_value(json_object_get(a, "tid"));
        CHECK(d0 >= 0 && t0 >= 0);
        for (size_t j = i + 1; j < n; j++) {
            json_t *b = json_array_get(evs, j);
            if (json_integer_value(json_object_get(b, "tid")) != tid) continue;
            const char *pb = json_string_value(json_object_get(b, "ph"));
            if (!pb || strcmp(pb, "X")) continue;
            double t1 = json_number_value(json_object_get(b, "ts")), d1 = json_number_value(json_object_get(b, "dur"));
            const double eps = 0.0015; /* rounding to 1 ns in microseconds */
            int disjoint = t0 + d0 <= t1 + eps || t1 + d1 <= t0 + eps;
            int a_in_b = t1 <= t0 + eps && t0 + d0 <= t1 + d1 + eps, b_in_a = t0 <= t1 + eps && t1 + d1 <= t0 + d0 + eps;
            if (!(disjoint || a_in_b || b_in_a)) nested_ok = 0;
        }
    }
    CHECK(nx > 20 && nested_ok);
    CHECK(cats[0] >= 1 && cats[1] >= 3 && cats[2] >= 2 && cats[3] >= 10);
    if (evs) check_structure(evs);
    json_decref(root);

    snprintf(path, sizeof path, "%s/summary.json", dir);
    root = json_load_file(path, 0, &err);
    CHECK_MSG(root != NULL, "summary.json: %s (line %d)", err.text, err.line);
    json_t *ph = root ? json_object_get(root, "phases") : NULL;
    static const char *const need[] = {"forward", "backward", "optimizer"};
    for (int i = 0; i < 3; i++) {
        json_t *ms = json_object_get(json_object_get(ph, need[i]), "ms");
        CHECK_MSG(json_is_number(json_object_get(ms, "mean")) && json_number_value(json_object_get(ms, "mean")) > 0, "%s", need[i]);
    }
    CHECK(json_is_object(json_object_get(root, "ops")) && json_is_array(json_object_get(root, "findings")));
    json_decref(root);
#else
    printf("  (jansson absent: trace JSON not parsed)\n");
#endif
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    gpt2c_profile_session_free(s);
    gpt2c_model_free(m);
    return tu_finish("test_profile_trace");
}
