#include "gpt2c/status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char errbuf[1024];

gpt2c_status gpt2c_fail(gpt2c_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    /* keep it one line: a message must never spill over several lines */
    for (char *p = errbuf; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    return st;
}

const char *gpt2c_errmsg(void) { return errbuf; }

const char *gpt2c_status_name(gpt2c_status st) {
    switch (st) {
    case GPT2C_OK: return "ok";
    case GPT2C_ERR_IO: return "io";
    case GPT2C_ERR_FORMAT: return "format";
    case GPT2C_ERR_ARG: return "argument";
    case GPT2C_ERR_NOMEM: return "memory";
    case GPT2C_ERR_RANGE: return "range";
    case GPT2C_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown";
}
