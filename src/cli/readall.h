/* Reading a whole stream (stdin) into memory, for the commands that filter text. */
#ifndef GPT2C_CLI_READALL_H
#define GPT2C_CLI_READALL_H

#include <stddef.h>
#include <stdio.h>

/* Reads f to its end into a malloc'd buffer (NUL-terminated, NUL not counted).
 * Returns 0, or -1 with errno set. */
int cli_read_stream(FILE *f, char **buf, size_t *n);

#endif
