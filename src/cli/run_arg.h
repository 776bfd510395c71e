/* The option rows several commands share, written once: --threads, --backend,
 * --batch, --seq, --seed.  Name, type and range are fixed here; a command
 * passes the help text where what the option means for it differs (a default
 * the value cannot say goes at the end of the text as "(default X)" or "[X]";
 * see cli/args.c), or takes the common text (the *_ARG_OPT_STD forms).
 *
 *   cli_opt opts[] = {THREADS_ARG_OPT_STD(threads), BACKEND_ARG_OPT_STD(backend), ...}; */
#ifndef GPT2C_CLI_RUN_ARG_H
#define GPT2C_CLI_RUN_ARG_H

#include "cli/args.h"

#define CLI_THREADS_MAX 4096
#define CLI_BATCH_MAX (1 << 20)
#define CLI_SEQ_MAX (1 << 20)

/* int: 0 = all cores */
#define THREADS_ARG_OPT(v, help) {"--threads", CLI_INT, &(v), help, 0, CLI_THREADS_MAX}
/* cli_intlist: one count or a sweep "1,2,4"; none given = all cores */
#define THREADS_LIST_ARG_OPT(l, help) {"--threads", CLI_INTLIST, &(l), help, 0, CLI_THREADS_MAX}
/* const char *: a backend name, or a comma-separated sweep where the command takes one */
#define BACKEND_ARG_OPT(v, help) {"--backend", CLI_STR, &(v), help, 0, 0}
/* int, 1..max: commands that hold max sequences' state at once pass a smaller max */
#define BATCH_ARG_OPT(v, help, max) {"--batch", CLI_INT, &(v), help, 1, (max)}
/* int: tokens per sequence */
#define SEQ_ARG_OPT(v, help) {"--seq", CLI_INT, &(v), help, 1, CLI_SEQ_MAX}
/* long long */
#define SEED_ARG_OPT(v, help) {"--seed", CLI_LONG, &(v), help, 0, 9.2e18}

#define THREADS_ARG_OPT_STD(v) THREADS_ARG_OPT(v, "threads the model computes with, 0 = all cores [0]")
#define BACKEND_ARG_OPT_STD(v) BACKEND_ARG_OPT(v, "kernels: ref|cpu|blas|cuda")

#endif
