/*
 * stacks/merge.h: one stack that reads top to bottom, native and Python.
 *
 * Input: a thread's native frames (innermost first: from gdb's
 * -stack-list-frames or from src/native/unwind.c) and its Python frames (from
 * src/cpython/frames.c).  At each native _PyEval_EvalFrameDefault frame the
 * Python frames that evaluator call runs are inserted: the frames up to
 * and including the next entry frame (tdb_py_frame.is_entry).  CPython's
 * own plumbing (native frames in the interpreter's code between two
 * evaluator frames, or below the outermost one) is folded unless
 * TDB_STACK_RAW.  When the number of evaluator frames and of Python entry
 * frames differ, no merge is guessed: the result says so and keeps both
 * stacks whole.
 *
 * Use from a debugging session, after a stop (gdb holds the process):
 *
 *     tdb_native_frame *nf; size_t nn;
 *     tdb_native_frames_from_mi(stack, &nf, &nn);       // -stack-list-frames
 *     tdb_native_frames_classify(nf, nn, py);           // py may be NULL
 *     tdb_merged_stack m;
 *     tdb_stack_merge(nf, nn, t ? t->frames : NULL, t ? t->n_frames : 0, &m);
 *     tdb_stack_render(&buf, &m, flags, "  ");          // or tdb_stack_json()
 *     tdb_merged_stack_free(&m); tdb_native_frames_free(nf, nn);
 */
#ifndef TDB_STACKMERGE_H
#define TDB_STACKMERGE_H

#include "base/common.h"
#include "cpython/frames.h"
#include "native/frames.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Set is_eval and in_interp: from the function names
 * ("_PyEval_EvalFrameDefault" and its ".cold" part), and for frames
 * without a name from the interpreter's address ranges when PY is given
 * (an inlined frame gdb lists at the evaluator's pc is not the call). */
void tdb_native_frames_classify(tdb_native_frame *frames, size_t n, const tdb_py_process *py);

typedef enum tdb_frame_kind { TDB_FRAME_NATIVE, TDB_FRAME_PYTHON } tdb_frame_kind;

/* One frame of a merged stack: points into the inputs (borrowed). */
typedef struct tdb_frame {
    tdb_frame_kind kind;
    const tdb_native_frame *native; /* when kind == TDB_FRAME_NATIVE */
    const tdb_py_frame *py;         /* when kind == TDB_FRAME_PYTHON */
    int plumbing;                   /* CPython plumbing: hidden unless RAW */
} tdb_frame;

typedef enum tdb_merge_status {
    TDB_MERGE_OK,          /* frames holds the interleaved stack */
    TDB_MERGE_MISMATCH,    /* counts differ: frames is empty, use the inputs */
    TDB_MERGE_NATIVE_ONLY, /* no Python frames given */
    TDB_MERGE_PYTHON_ONLY  /* no native frames given */
} tdb_merge_status;

typedef struct tdb_merged_stack {
    tdb_merge_status status;
    tdb_frame *frames; /* innermost first */
    size_t n;
    size_t n_eval;     /* native evaluator frames seen */
    size_t n_entry;    /* Python entry frames seen (plus one for a chain
                        * whose outermost frame is not an entry frame) */
    /* The inputs, borrowed, for TDB_MERGE_MISMATCH and the renderers. */
    const tdb_native_frame *native;
    size_t n_native;
    const tdb_py_frame *py;
    size_t n_py;
} tdb_merged_stack;

/* Merge.  Either input may be NULL/0 (then the result is the other one).
 * The inputs must outlive OUT.  Always succeeds. */
void tdb_stack_merge(const tdb_native_frame *native, size_t n_native, const tdb_py_frame *py,
                     size_t n_py, tdb_merged_stack *out);
void tdb_merged_stack_free(tdb_merged_stack *m); /* frees the frame array only */

/* What to show. */
enum {
    TDB_STACK_RAW = 1,         /* keep CPython plumbing frames */
    TDB_STACK_NATIVE_ONLY = 2, /* native frames only (all of them) */
    TDB_STACK_PYTHON_ONLY = 4, /* Python frames only */
    TDB_STACK_LOCALS = 8,      /* each Python frame's locals (stacks/stacks.h) */
    TDB_STACK_FULL_NAMES = 16  /* C++ names whole (native/cxxnames.h; RAW too) */
};

/* What to add to each Python frame (its locals): JSON to put under the
 * frame's "locals" key (new reference, or NULL for none), and lines of
 * text to print under it. */
typedef struct tdb_py_frame_extra {
    json_t *(*json)(const tdb_py_frame *f, void *ctx);
    void (*text)(tdb_buf *b, const tdb_py_frame *f, const char *indent, void *ctx);
    void *ctx;
} tdb_py_frame_extra;

/* The frames as a JSON array of objects, innermost first:
 *   {"kind": "python", "function": qualname, "name": co_name,
 *    "file": ..., "line": N or null, "first_line": N}
 *   {"kind": "native", "pc": "0x...", "function": name or null,
 *    "offset": N (with function), "library": path or null}
 * plumbing frames only with TDB_STACK_RAW (then "plumbing": true).  For
 * TDB_MERGE_MISMATCH the native frames alone.  New reference. */
json_t *tdb_stack_json(const tdb_merged_stack *m, unsigned flags);
/* The same, with EXTRA (may be NULL) adding to each Python frame. */
json_t *tdb_stack_json_ex(const tdb_merged_stack *m, unsigned flags,
                          const tdb_py_frame_extra *extra);
/* The same frames with kind python only (EXTRA, may be NULL, adding to
 * each), or native only.  New reference. */
json_t *tdb_py_frames_json(const tdb_py_frame *py, size_t n, const tdb_py_frame_extra *extra);
json_t *tdb_native_frames_json(const tdb_native_frame *native, size_t n);

/* Append the stack as text, one frame a line, each line starting with
 * INDENT: Python frames as tracebacks print them,
 *   File "/path/x.py", line 12, in Model.forward
 * native ones as
 *   0x00007f2a3b4c5d6e at::native::add(...)+0x2e (libtorch_cpu.so)
 * For TDB_MERGE_MISMATCH, a line saying so, then the Python stack and the
 * native stack, each under a heading. */
void tdb_stack_render(tdb_buf *b, const tdb_merged_stack *m, unsigned flags, const char *indent);
/* The same, with EXTRA (may be NULL) adding lines under each Python frame. */
void tdb_stack_render_ex(tdb_buf *b, const tdb_merged_stack *m, unsigned flags,
                         const char *indent, const tdb_py_frame_extra *extra);

#endif
