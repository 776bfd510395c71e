/* The part of the memory lines of `train` and `bench train` that says how
 * much of the slabs streamed every step the OS put in 2 MiB pages. */
#ifndef GPT2C_CLI_MEMORY_NOTE_H
#define GPT2C_CLI_MEMORY_NOTE_H

#include <stddef.h>

#include "gpt2c/model.h"

/* "; slabs in 2 MiB pages: X of Y MiB (transparent huge pages: MODE)", or
 * the reason it is unknown; "" for a model with no slabs yet */
void cli_huge_pages_note(char *buf, size_t n, const gpt2c_model *m);

#endif
