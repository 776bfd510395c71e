/* File helpers shared by every reader and writer.
 *
 * Writers never destroy the previous file on failure: gpt2c_atomic_* writes to
 * "<path>.tmp.<pid>", fsyncs, then renames over <path>; any failure removes the
 * temporary and leaves <path> as it was.
 *
 * Fault injection (tests only): if the environment variable
 * GPT2C_FAULT_WRITE_AFTER=N is set, an atomic write fails once N bytes have
 * been written, as a full disk would. */
#ifndef GPT2C_FILEIO_H
#define GPT2C_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#include "gpt2c/status.h"

/* Opens a regular file for reading and gives its size; fails naming the
 * path (cannot open, or not a regular file). */
gpt2c_status gpt2c_open_regular(const char *path, FILE **f, size_t *size);

/* Reads a whole file into a malloc'd buffer (+1 NUL byte, not counted in *size). */
gpt2c_status gpt2c_read_file(const char *path, void **data, size_t *size);

typedef struct gpt2c_atomic {
    FILE *f;
    char *path;
    char *tmp;
    size_t written;
    long long fail_after; /* -1: no fault injection */
} gpt2c_atomic;

gpt2c_status gpt2c_atomic_open(gpt2c_atomic *a, const char *path);
gpt2c_status gpt2c_atomic_write(gpt2c_atomic *a, const void *p, size_t n);
/* Flushes, fsyncs and renames into place, then fsyncs the folder and removes
 * stale "<path>.tmp.<pid>" siblings whose writer is gone (a killed save).
 * On failure the temporary is removed. */
gpt2c_status gpt2c_atomic_commit(gpt2c_atomic *a);
/* Abandons the write: removes the temporary; <path> is untouched. Safe to call twice. */
void gpt2c_atomic_abort(gpt2c_atomic *a);

#endif
