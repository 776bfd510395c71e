/* Line collectives (rows or columns of a region), batched over many lines so
 * that their streams share the fabric in one phase.  They move time only:
 * callers do the arithmetic on the values (and charge its DSD ops). */
#ifndef GPT2C_WSE_COLL_H
#define GPT2C_WSE_COLL_H

#include "wse/wse_internal.h"

/* PE k of a line is at (x + k*dx, y + k*dy), dir the direction of growing k */
typedef struct {
    int x, y, dir, len, root;
} wse_line;

void gpt2c_wse_line_pe(const wse_line *l, int k, int *x, int *y);
/* root of each line sends n wavelets to every other PE (multicast, one color) */
gpt2c_status gpt2c_wse_coll_bcast(wse_mesh *m, const wse_line *l, int nl, long n, int color);
/* every PE's n values reduced (added) into the root: chains from both ends
 * (colors c0, c1), a binomial tree per side (switched colors c0, c1), or
 * groups: chains into group roots, then a chain over the group roots (colors g0, g1). */
gpt2c_status gpt2c_wse_coll_reduce(wse_mesh *m, const wse_line *l, int nl, long n, gpt2c_wse_reduce algo, int groups,
                             int c0, int c1, int g0, int g1);
/* one stream of n wavelets from (x0,y0) to (x1,y1): X first, then Y (colors c, c^1 after the turn) */
gpt2c_status gpt2c_wse_coll_p2p(wse_mesh *m, int x0, int y0, int x1, int y1, long n, int color);
/* many point-to-point streams in one phase */
typedef struct {
    int x0, y0, x1, y1;
    long n;
} wse_p2p;
gpt2c_status gpt2c_wse_coll_p2p_many(wse_mesh *m, const wse_p2p *v, int nv, int color);

#endif
