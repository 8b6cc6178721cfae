/*
 * cpython/values.h: Python objects of another process (or a core), read from
 * its memory and shown as Python would show them, bounded: the locals of
 * a frame, one name, one object.  CPython 3.8 to 3.13 (3.14 where its
 * published offsets cover it), with the reader of src/cpython/frames.h.
 *
 * Shown: None, bool, int (any size), float, str, bytes, tuple, list, dict,
 * set, frozenset (the first MAX_ITEMS items, then how many more), nested to
 * MAX_DEPTH, a container inside itself as "[...]" (as repr() does);
 * exceptions ("ValueError('x', 3)"), instances of classes with a dict as
 * CPython's Tools/gdb/libpython.py shows them ("Foo(a=1, b='x')"), bound
 * and builtin methods and frame objects as repr() names them; torch
 * tensors through a callback (o->tensor), else as every other object:
 * "<TypeName object at 0x7f...>".  Every read is bounded and checked
 * against the interpreter's type objects: memory that cannot be read, or
 * does not hold what it should, gives an error for that value, never
 * garbage.  Nothing is called in the process.
 *
 * The process should be stopped (a snapshot's frames are only valid
 * while it is).
 *
 *     tdb_py_value_opts o = TDB_PY_VALUE_OPTS_INIT;
 *     json_t *locals;
 *     if (tdb_py_frame_locals(py, &thread->frames[0], &o, &locals, &err) == 0)
 *         ... [{"name": "x", "type": "int", "value": "42", ...}, ...]
 */
#ifndef TDB_PYVALUES_H
#define TDB_PYVALUES_H

#include "base/common.h"
#include "cpython/frames.h"

#include <jansson.h>
#include <stdint.h>

typedef struct tdb_py_value_opts {
    int max_depth;     /* containers nested this deep are shown; deeper ones
                        * as "[...]"; 0: 3 */
    size_t max_items;  /* items of a container shown; 0: 10 */
    size_t max_str;    /* characters of a str or bytes shown; 0: 200 */
    /* Torch tensors (objects whose type is torch.Tensor or derives from
     * torch._C's tensor base): called with the object's address; returns 0
     * and *OUT (a new reference, put under "tensor" in the value's JSON),
     * or -1 (the value then says it could not be decoded).  NULL: tensors
     * are shown as "<Tensor object at 0x...>". */
    int (*tensor)(void *ctx, uint64_t object, json_t **out);
    void *ctx;
} tdb_py_value_opts;

#define TDB_PY_VALUE_OPTS_INIT {0, 0, 0, NULL, NULL}

/* The value of the object at ADDR as JSON (*OUT, new reference):
 *   {"type": "list", "value": "[1, 2, 'a', ... (97 more)]",
 *    "address": "0x7f...", "length": 100}
 * "length" for str, bytes, tuple, list, dict; "tensor": {...} when the
 * callback decoded one; "error": "..." (and "value": null) when the object
 * cannot be read ("cannot read memory at 0x10", "not an object").  Returns
 * 0, or -1 with ERR set only when ADDR cannot be read at all (and *OUT
 * still holds the error entry). */
int tdb_py_format_object(tdb_py_process *p, uint64_t addr, const tdb_py_value_opts *o,
                         json_t **out, tdb_error *err);

/* The locals of frame F (from a snapshot of P taken while the process is
 * still stopped) as a JSON array (*OUT, new reference), in the code's
 * order: [{"name", "kind": "local"|"cell"|"free"|"global", "type",
 * "value", "address", ...}] (the fields of tdb_py_format_object).  Cell
 * and free variables are shown dereferenced; unbound ones are left out.
 * A module-level frame (code not CO_OPTIMIZED) shows the variables of its
 * globals dict (kind "global"), dunder names left out.  Returns 0, or -1
 * with ERR set when the frame itself cannot be read (*OUT untouched). */
int tdb_py_frame_locals(tdb_py_process *p, const tdb_py_frame *f, const tdb_py_value_opts *o,
                        json_t **out, tdb_error *err);

/* NAME as the frame's code would find it: its locals, then its globals,
 * then builtins.  *OUT: {"name", "scope": "local"|"global"|"builtin", ...
 * the fields of tdb_py_format_object}.  Returns 0, 1 when NAME is not
 * defined there (*OUT untouched), -1 with ERR set when the frame cannot be
 * read. */
int tdb_py_lookup_name(tdb_py_process *p, const tdb_py_frame *f, const char *name,
                       const tdb_py_value_opts *o, json_t **out, tdb_error *err);

/* The source files of the modules loaded (sys.modules of the main
 * interpreter, read from memory): a new array (*OUT) of {"name": the
 * module's, "file": its __file__} for the modules whose __file__ is a
 * Python source (".py"), in sys.modules' order, at most MAX.  Returns 0,
 * or -1 with ERR set when sys.modules cannot be read. */
int tdb_py_module_files(tdb_py_process *p, size_t max, json_t **out, tdb_error *err);

#endif
