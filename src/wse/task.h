/* A CSL-like task layer (src/wse/task.c): per-PE task tables (local tasks run
 * when activated and unblocked, to completion), async DSD ops with fabric
 * operands as microthreads on a queue that fire .activate on completion, and
 * wavelets that follow the routes set with gpt2c_wse_route (set_color_config).
 * Vendor examples port task by task onto it (ex_residual.c). */
#ifndef GPT2C_WSE_TASK_H
#define GPT2C_WSE_TASK_H

#include "wse/wse_internal.h"

typedef struct wse_prog wse_prog;
typedef void (*wse_task_fn)(wse_prog *pg, int x, int y);
/* a data task: one wavelet (value, index field) */
typedef void (*wse_data_fn)(wse_prog *pg, int x, int y, float value, int idx);

gpt2c_status gpt2c_wse_prog_create(wse_mesh *m, void *user, wse_prog **out);
void gpt2c_wse_prog_free(wse_prog *pg);
void *gpt2c_wse_prog_user(wse_prog *pg);
wse_mesh *gpt2c_wse_prog_mesh(wse_prog *pg);
gpt2c_status gpt2c_wse_prog_status(wse_prog *pg); /* the first failure inside a task body */
/* @bind_local_task(fn, id) */
gpt2c_status gpt2c_wse_bind_local(wse_prog *pg, int x, int y, int id, wse_task_fn fn);
/* @bind_data_task(fn, color): WSE-2 data task IDs are colors */
gpt2c_status gpt2c_wse_bind_data(wse_prog *pg, int x, int y, int color, wse_data_fn fn);
/* @activate(id), @block(id), @unblock(id): at the PE's current time */
void gpt2c_wse_activate(wse_prog *pg, int x, int y, int id);
void gpt2c_wse_block(wse_prog *pg, int x, int y, int id);
void gpt2c_wse_unblock(wse_prog *pg, int x, int y, int id);
/* @mov32(fabout(color, oq), mem, .async, .activate = id) (id < 0: none); the values are read now */
void gpt2c_wse_send_async(wse_prog *pg, int x, int y, int color, int oq, const float *src, int n, int activate);
/* the same with an .unblock task and wavelet index fields (idx may be NULL) */
void gpt2c_wse_send_async_ex(wse_prog *pg, int x, int y, int color, int oq, const float *src, const int *idx, int n,
                       int activate, int unblock);
/* @mov32(mem, fabin(color, iq), .async, .activate = id) */
void gpt2c_wse_recv_async(wse_prog *pg, int x, int y, int color, int iq, float *dst, int n, int activate);
/* @faddh/@fadds(fabout(out_color, oq), fabin(in_color, iq), mem, .async): a streaming add of n
 * wavelets; out_color < 0 streams to the host instead (memcpy D2H into host[]) */
void gpt2c_wse_stream_add_async(wse_prog *pg, int x, int y, int in_color, int iq, const float *mem, int out_color, int oq,
                          int n, int half, float *host);
/* memcpy H2D streaming: n wavelets into (x,y)'s data task on color, one per cycle from cycle 0 */
void gpt2c_wse_host_h2d(wse_prog *pg, int x, int y, int color, const float *v, const int *idx, int n);
/* fp16 rounding (round to nearest even) */
float gpt2c_wse_to_half(float f);
/* launches fn on every PE of the list at time 0 (an RPC from the host), runs until quiet */
gpt2c_status gpt2c_wse_prog_launch(wse_prog *pg, wse_task_fn fn);

#endif
