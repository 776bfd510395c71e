#include "cli/args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/io.h"
#include "gpt2c/status.h"

#define MAX_GIVEN 64
static const char *given[MAX_GIVEN];
static int ngiven;

static char *capture_buf;
static size_t capture_n;

void cli_capture_errors(char *buf, size_t n) {
    capture_buf = n ? buf : NULL;
    capture_n = n;
    if (capture_buf) capture_buf[0] = 0;
}

int cli_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    if (capture_buf) { /* keep the first message (the cause), print nothing */
        if (!capture_buf[0]) {
            va_start(ap, fmt);
            vsnprintf(capture_buf, capture_n, fmt, ap);
            va_end(ap);
        }
        return 1;
    }
    fprintf(stderr, "gpt2c %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

/* The command's option table (the last cli_parse), for cli_fail_status. */
static const cli_opt *cur_opts;
static int cur_nopts;

/* Library messages name the quantity; these are the options that set one
 * (longer quantities first where one starts another). */
static const struct {
    const char *quantity, *option;
} QUANTITY_OPTION[] = {
    {"temperature", "--temperature"}, {"top-k", "--top-k"}, {"top-p", "--top-p"},
    {"max tokens", "--max-tokens"},   {"max batch", "--max-batch"}, {"batch", "--batch"},
    {"context slots", "--ctx-slots"}, {"context", "--ctx"},     {"port", "--port"},
    {"host", "--host"},               {"tokenizer vocabulary", "--vocab"},   {"strategy", "--strategy"},
    {"layers per region", "--layers-per-region"}, {"prompt tokens", "--seq"}, {"chunk", "--chunk"},
    {"grid", "--grid"},               {"values", "--values"},    {"sparsity mask", "--keep-sparsity"},
    {"block", "--block"},             {"format", "--format"},    {"quantization", "--quant"},
};

static int has_option(const char *name) {
    for (int i = 0; i < cur_nopts; i++)
        if (strcmp(cur_opts[i].name, name) == 0) return 1;
    return 0;
}

/* A message that starts with a quantity this command sets with an option
 * (followed by ":" or a value) is printed with the option in its place ("top-p: 2 is outside (0, 1]" ->
 * "--top-p: 2 is outside (0, 1]"); the rest as they are. */
int cli_fail_status(const char *cmd) {
    const char *msg = gpt2c_errmsg();
    for (size_t i = 0; i < sizeof QUANTITY_OPTION / sizeof QUANTITY_OPTION[0]; i++) {
        const size_t n = strlen(QUANTITY_OPTION[i].quantity);
        if (strncmp(msg, QUANTITY_OPTION[i].quantity, n) == 0 && (msg[n] == ':' || (msg[n] == ' ' && !isalpha((unsigned char)msg[n + 1]))) &&
            has_option(QUANTITY_OPTION[i].option))
            return cli_error(cmd, "%s%s", QUANTITY_OPTION[i].option, msg + n);
    }
    if (strstr(msg, "values load only when allowed)")) /* gpt2c_model_load: the global option that allows them */
        return cli_error(cmd, "%s; --allow-nonfinite loads it anyway", msg);
    return cli_error(cmd, "%s", msg);
}
int cli_fail_option(const char *cmd, const char *opt) { return cli_error(cmd, "%s: %s", opt, gpt2c_errmsg()); }

int cli_given(const char *name) {
    for (int i = 0; i < ngiven; i++)
        if (strcmp(given[i], name) == 0) return 1;
    return 0;
}

/* --help, one style for every command: "  --name METAVAR   what it does (default X)".
 * The default is the option's value before parsing, unless the help text
 * names it itself, as "(default X)", "(default: X)" or a trailing "[X]"
 * (for defaults a value cannot say: "all cores", "the model's"); those are
 * moved to the end in the same form. */
static void help_line(const cli_opt *o) {
    static const char *const META[] = {"N", "N", "X", "S", "", "S...", "N,N,..."};
    char text[600], def[200] = "";
    snprintf(text, sizeof text, "%s", o->help ? o->help : "");
    size_t len = strlen(text);
    char *p = strstr(text, "(default"), *open = strrchr(text, '[');
    if (len && text[len - 1] == ']' && open && open > text && open[-1] == ' ') {
        snprintf(def, sizeof def, "%.*s", (int)(text + len - 1 - open - 1), open + 1);
        open[-1] = 0;
    } else if (p && strchr(p, ')')) {
        char *q = p + 8, *e = strchr(p, ')');
        q += *q == ':';
        while (*q == ' ') q++;
        snprintf(def, sizeof def, "%.*s", (int)(e - q), q);
        char *more = strstr(def, "; "); /* "(default 4; more words)": the words stay in the text */
        while (p > text && p[-1] == ' ') p--;
        memmove(p, e + 1, strlen(e + 1) + 1);
        if (more) {
            *more = 0;
            size_t t = strlen(text);
            snprintf(text + t, sizeof text - t, "; %s", more + 2);
        }
    } else {
        switch (o->type) {
        case CLI_INT:
            if (*(const int *)o->dst) snprintf(def, sizeof def, "%d", *(const int *)o->dst);
            break;
        case CLI_LONG:
            if (*(const long long *)o->dst) snprintf(def, sizeof def, "%lld", *(const long long *)o->dst);
            break;
        case CLI_FLOAT:
            if (*(const double *)o->dst != 0) snprintf(def, sizeof def, "%g", *(const double *)o->dst);
            break;
        case CLI_STR:
            if (*(const char *const *)o->dst) snprintf(def, sizeof def, "%s", *(const char *const *)o->dst);
            break;
        default: break;
        }
    }
    char lhs[64];
    snprintf(lhs, sizeof lhs, "%s%s%s", o->name, o->type == CLI_FLAG ? "" : " ", META[o->type]);
    printf("  %-24s %s%s%s%s\n", lhs, text, *def ? " (default " : "", def, *def ? ")" : "");
}

static void print_help(const char *cmd, const cli_opt *opts, int nopts) {
    printf("usage: gpt2c %s [options]\n", cmd);
    for (int i = 0; i < nopts; i++) help_line(&opts[i]);
    printf("  %-24s %s\n", "--allow-nonfinite", "load checkpoints whose weights hold NaN or Inf (debugging)");
}

static int parse_long(const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return 0;
    *out = v;
    return 1;
}

static int in_range(const cli_opt *o, double v) { return !(o->min < o->max) || (v >= o->min && v <= o->max); }

static int range_error(const char *cmd, const cli_opt *o, const char *val) {
    cli_error(cmd, "%s: '%s' is out of range [%g, %g]", o->name, val, o->min, o->max);
    return 2;
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
              cli_strlist *positional) {
    ngiven = 0;
    cur_opts = opts, cur_nopts = nopts;
    if (positional) {
        positional->items = (const char **)argv; /* reuse argv storage: values are compacted */
        positional->n = 0;
    }
    for (int i = 0; i < argc; i++) /* before any option changes a value: --help shows the defaults */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_help(cmd, opts, nopts);
            return -1;
        }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_help(cmd, opts, nopts);
            return -1;
        }
        if (strcmp(a, "--allow-nonfinite") == 0) { /* every command: checkpoints with NaN/Inf load (debugging) */
            gpt2c_model_load_allow_nonfinite(1);
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (!positional) {
                cli_error(cmd, "unexpected argument '%s' (see gpt2c %s --help)", a, cmd);
                return 2;
            }
            positional->items[positional->n++] = a;
            continue;
        }
        const cli_opt *o = NULL;
        for (int k = 0; k < nopts; k++)
            if (strcmp(opts[k].name, a) == 0) o = &opts[k];
        if (!o) {
            cli_error(cmd, "unknown option '%s' (see gpt2c %s --help)", a, cmd);
            return 2;
        }
        if (ngiven < MAX_GIVEN) given[ngiven++] = o->name;
        if (o->type == CLI_FLAG) {
            *(int *)o->dst = 1;
            continue;
        }
        if (i + 1 >= argc) {
            cli_error(cmd, "%s needs a value", a);
            return 2;
        }
        const char *v = argv[++i];
        switch (o->type) {
        case CLI_INT:
        case CLI_LONG: {
            long long x;
            if (!parse_long(v, &x)) {
                cli_error(cmd, "%s: expected an integer, got '%s'", a, v);
                return 2;
            }
            if (!in_range(o, (double)x)) return range_error(cmd, o, v);
            if (o->type == CLI_INT) {
                if (x < -2147483647LL || x > 2147483647LL) return range_error(cmd, o, v);
                *(int *)o->dst = (int)x;
            } else {
                *(long long *)o->dst = x;
            }
            break;
        }
        case CLI_FLOAT: {
            char *end;
            errno = 0;
            double x = strtod(v, &end);
            if (errno || end == v || *end || !isfinite(x)) {
                cli_error(cmd, "%s: expected a finite number, got '%s'", a, v);
                return 2;
            }
            if (!in_range(o, x)) return range_error(cmd, o, v);
            *(double *)o->dst = x;
            break;
        }
        case CLI_STR: *(const char **)o->dst = v; break;
        case CLI_STRLIST: {
            cli_strlist *l = (cli_strlist *)o->dst;
            l->items = (const char **)&argv[i];
            l->n = 0;
            /* values are consecutive in argv: count them in place */
            while (i < argc && strncmp(argv[i], "--", 2) != 0) {
                l->n++;
                i++;
            }
            i--;
            break;
        }
        case CLI_INTLIST: {
            cli_intlist *l = (cli_intlist *)o->dst;
            l->n = 0;
            const char *p = v;
            while (*p) {
                char *end;
                errno = 0;
                long x = strtol(p, &end, 10);
                if (errno || end == p || (*end && *end != ',') || l->n >= 64 || !in_range(o, (double)x) ||
                    x < -2147483647L || x > 2147483647L) { /* the list holds ints: no silent truncation */
                    cli_error(cmd, "%s: expected comma-separated integers in [%g, %g], got '%s'", a, o->min, o->max, v);
                    return 2;
                }
                l->items[l->n++] = (int)x;
                p = *end ? end + 1 : end;
            }
            if (l->n == 0) {
                cli_error(cmd, "%s: empty list", a);
                return 2;
            }
            break;
        }
        case CLI_FLAG: break;
        }
    }
    return 0;
}
