/* The backends this build knows, in one list, and what each registers.
 *
 * A backend is a folder of kernels plus one descriptor function,
 * gpt2c_backend_<name>(), defined in its own folder (or, for an optional
 * backend this build lacks, in backends.c, saying why).  The registry
 * (kernels.c) walks the list and names no backend itself: adding a backend is
 * a row here, its descriptor and its kernels. */
#ifndef GPT2C_BACKENDS_H
#define GPT2C_BACKENDS_H

#include "kernels/kernels.h"

typedef struct gpt2c_backend {
    const char *name;
    /* The backend's own table (NULL entries are inherited from ref by a host
     * backend), or NULL when this build or machine lacks the backend.  Must
     * not touch a device: the registry calls device_init at selection. */
    const gpt2c_kernels *(*table)(void);
    /* Why table() returned NULL: one line. */
    const char *(*why_unavailable)(void);
} gpt2c_backend;

#define GPT2C_BACKEND_LIST(X) X(ref) X(cpu) X(blas) X(cuda)

/* Defines backend n's descriptor (in the backend's own file). */
#define GPT2C_BACKEND_REGISTER(n, table_fn, why_fn)                                                                   \
    const gpt2c_backend *gpt2c_backend_##n(void) {                                                                    \
        static const gpt2c_backend b = {#n, table_fn, why_fn};                                                         \
        return &b;                                                                                                     \
    }
/* why_unavailable of a backend that is always there */
const char *gpt2c_backend_always(void);

#define GPT2C_BACKEND_DECLARE(n) const gpt2c_backend *gpt2c_backend_##n(void);
GPT2C_BACKEND_LIST(GPT2C_BACKEND_DECLARE)
#undef GPT2C_BACKEND_DECLARE

#endif
