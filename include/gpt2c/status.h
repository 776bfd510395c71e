/* gpt2c status codes and error messages.
 *
 * The library never exits and never prints: every fallible function returns a
 * gpt2c_status and, on failure, leaves a one-line human-readable reason (naming
 * the file, tensor or option at fault) in a thread-local buffer, read with
 * gpt2c_errmsg().  Only src/cli decides to print and exit. */
#ifndef GPT2C_STATUS_H
#define GPT2C_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpt2c_status {
    GPT2C_OK = 0,
    GPT2C_ERR_IO,          /* open / read / write / rename failed */
    GPT2C_ERR_FORMAT,      /* file content malformed, truncated, wrong magic */
    GPT2C_ERR_ARG,         /* invalid argument or option value */
    GPT2C_ERR_NOMEM,       /* allocation failed */
    GPT2C_ERR_RANGE,       /* a value out of its allowed range (token id >= vocab, ...) */
    GPT2C_ERR_UNSUPPORTED  /* valid but not supported here (dtype, backend, ISA) */
} gpt2c_status;

/* Record a failure: formats the message (printf-style) into the thread-local
 * buffer and returns `st`, so callers write `return gpt2c_fail(GPT2C_ERR_IO, "%s: ...", path);` */
gpt2c_status gpt2c_fail(gpt2c_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The message of the most recent failure on this thread ("" if none). */
const char *gpt2c_errmsg(void);

/* A short stable name for a status ("io", "format", ...). */
const char *gpt2c_status_name(gpt2c_status st);

/* Propagate a failure: evaluate expr, return its status if not OK. */
#define GPT2C_TRY(expr)                                   \
    do {                                                  \
        gpt2c_status try_st_ = (expr);                    \
        if (try_st_ != GPT2C_OK) return try_st_;          \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
