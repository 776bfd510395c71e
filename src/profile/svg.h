/* A horizontal bar chart as inline SVG (the profile report's style), for
 * other reports (gpt2c pipeline). */
#ifndef GPT2C_PROFILE_SVG_H
#define GPT2C_PROFILE_SVG_H

#include "profile/sbuf.h"

/* n bars labelled labels[i] of length v[i] (scaled to the largest), each
 * followed by its value and unit; id is the svg element id. */
void gpt2c_svg_hbar(sbuf *b, const char *id, const char *title, const char *const *labels, const double *v, int n,
                    const char *unit);

#endif
