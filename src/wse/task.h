/* A CSL-like task layer (src/wse/task.c): per-PE task tables (local tasks run
 * when activated and unblocked, to completion), async DSD ops with fabric
 * operands as microthreads on a queue that fire .activate on completion, and
 * wavelets that follow the routes set with wse_route (set_color_config).
 * Vendor examples port task by task onto it (ex_residual.c). */
#ifndef GPT2C_WSE_TASK_H
#define GPT2C_WSE_TASK_H

#include "wse/wse_internal.h"

typedef struct wse_prog wse_prog;
typedef void (*wse_task_fn)(wse_prog *pg, int x, int y);

gpt2c_status wse_prog_create(wse_mesh *m, void *user, wse_prog **out);
void wse_prog_free(wse_prog *pg);
void *wse_prog_user(wse_prog *pg);
wse_mesh *wse_prog_mesh(wse_prog *pg);
gpt2c_status wse_prog_status(wse_prog *pg); /* the first failure inside a task body */
/* @bind_local_task(fn, id) */
gpt2c_status wse_bind_local(wse_prog *pg, int x, int y, int id, wse_task_fn fn);
/* @activate(id), @block(id), @unblock(id): at the PE's current time */
void wse_activate(wse_prog *pg, int x, int y, int id);
void wse_block(wse_prog *pg, int x, int y, int id);
void wse_unblock(wse_prog *pg, int x, int y, int id);
/* @mov32(fabout(color, oq), mem, .async, .activate = id) (id < 0: none); the values are read now */
void wse_send_async(wse_prog *pg, int x, int y, int color, int oq, const float *src, int n, int activate);
/* @mov32(mem, fabin(color, iq), .async, .activate = id) */
void wse_recv_async(wse_prog *pg, int x, int y, int color, int iq, float *dst, int n, int activate);
/* launches fn on every PE of the list at time 0 (an RPC from the host), runs until quiet */
gpt2c_status wse_prog_launch(wse_prog *pg, wse_task_fn fn);

#endif
