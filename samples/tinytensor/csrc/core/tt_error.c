/* tt_error.c: see tt_error.h. */
#include "tt_error.h"

#include <stdarg.h>
#include <stdio.h>

void tt_error_set(tt_error *err, tt_error_code code, const char *fmt, ...)
{
    va_list ap;

    if (!err || err->code != TT_OK)
        return;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
}
