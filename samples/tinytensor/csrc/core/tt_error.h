/*
 * tt_error.h: how the tinytensor core reports failure.
 *
 * The core is plain C and knows nothing of Python: a function that can fail
 * returns NULL or -1 and fills an optional tt_error; the first error set
 * wins.  The Python bindings turn it into an exception (RuntimeError,
 * NotImplementedError, MemoryError), as torch/csrc/Exceptions.h turns
 * c10::Error and c10::NotImplementedError into Python ones.
 */
#ifndef TT_ERROR_H
#define TT_ERROR_H

typedef enum tt_error_code {
    TT_OK = 0,
    TT_ERR_RUNTIME,         /* bad shapes, bad arguments: RuntimeError */
    TT_ERR_NOT_IMPLEMENTED, /* no kernel for this operator and key */
    TT_ERR_NOMEM,           /* malloc failed: MemoryError */
    TT_ERR_CALLBACK         /* a caller-supplied function failed; it has
                               reported its own error (a Python exception) */
} tt_error_code;

typedef struct tt_error {
    tt_error_code code;     /* TT_OK until something fails */
    char msg[512];          /* "cannot add shapes [2] and [3]: ..." */
} tt_error;

#define TT_ERROR_INIT {TT_OK, ""}

/* Record an error in ERR (which may be NULL) unless one is already there. */
void tt_error_set(tt_error *err, tt_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
