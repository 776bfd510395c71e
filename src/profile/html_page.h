/* The page around every HTML report gpt2c writes (profile, pipeline, wse):
 * one head and one stylesheet, so the reports look alike. */
#ifndef GPT2C_PROFILE_HTML_PAGE_H
#define GPT2C_PROFILE_HTML_PAGE_H

#include "profile/sbuf.h"

/* <!DOCTYPE html> ... <body><h1>heading</h1>; title and heading are escaped. */
void gpt2c_html_page_begin(sbuf *b, const char *title, const char *heading);
/* </body></html> */
void gpt2c_html_page_end(sbuf *b);

#endif
