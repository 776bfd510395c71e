/* A small declarative option parser shared by all subcommands.
 *
 *   int B = 4; const char *model = NULL;
 *   cli_opt opts[] = {
 *       {"--batch", CLI_INT, &B, "batch size", 1, 1 << 20},
 *       {"--model", CLI_STR, &model, "model name or path", 0, 0},
 *   };
 *   int rc = cli_parse("train", argc, argv, opts, CLI_NOPTS(opts), NULL);
 *   if (rc) return rc;           // already printed a one-line error (exit 2)
 *
 * Integers and floats are range-checked against [min, max] (when min < max). */
#ifndef GPT2C_CLI_ARGS_H
#define GPT2C_CLI_ARGS_H

#include <stddef.h>

typedef enum {
    CLI_INT,     /* int */
    CLI_LONG,    /* long long */
    CLI_FLOAT,   /* double */
    CLI_STR,     /* const char * */
    CLI_FLAG,    /* int set to 1 */
    CLI_STRLIST, /* cli_strlist: one or more values until the next --option */
    CLI_INTLIST  /* cli_intlist: comma-separated integers "1,2,4" */
} cli_type;

typedef struct {
    const char **items;
    int n;
} cli_strlist;

typedef struct {
    int items[64];
    int n;
} cli_intlist;

typedef struct {
    const char *name;
    cli_type type;
    void *dst;
    const char *help;
    double min, max;
} cli_opt;

#define CLI_NOPTS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Parses argv[0..argc) (argv[0] is the first option, not the command name).
 * Positional arguments go to *positional (may be NULL: then they are an error).
 * Returns 0, or 2 after printing "gpt2c <cmd>: <reason>" to stderr.
 * "--help" prints the option table and returns -1 (caller exits 0). */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
              cli_strlist *positional);

/* Prints "gpt2c <cmd>: <message>" to stderr; returns 1 (for `return cli_error(...)`). */
int cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints "gpt2c <cmd>: <gpt2c_errmsg()>" to stderr and returns 1.  The library's
 * message names a quantity ("top-p: ..."); where the command has the option
 * that sets it (table in args.c), the option is named instead ("--top-p: ..."). */
int cli_fail_status(const char *cmd);
/* The same, the library's message (which names the quantity) after the option that set it. */
int cli_fail_option(const char *cmd, const char *opt);

/* With buf: cli_error stores its first message (without the "gpt2c <cmd>: "
 * prefix) in buf instead of printing (the ranks of an MPI job other than 0:
 * only one reports a failure every rank shares).  NULL/0: print again. */
void cli_capture_errors(char *buf, size_t n);

/* Was this option given on the command line? (after cli_parse) */
int cli_given(const char *name);

#endif
