/*
 * stacks/view.h: one thread's stack at a debugger's stop, as a tdebug
 * session shows it: gdb's native frames (with the source lines gdb knows),
 * the frames gdb could not name named from the symbol tables, and the
 * thread's Python frames read from the interpreter's memory, merged into
 * one stack that reads top to bottom (src/stacks/merge.h).
 *
 * It knows gdb only through the frame list of -stack-list-frames, and
 * nothing of sessions: src/session/stack.c gets the frames and owns the
 * per-stop readers (memory map, symbolizer, Python snapshot).
 */
#ifndef TDB_STACKVIEW_H
#define TDB_STACKVIEW_H

#include "base/common.h"
#include "cpython/frames.h"
#include "stacks/stacks.h"
#include "native/unwind.h"

#include <jansson.h>

typedef struct tdb_stackview {
    json_t *mi;          /* gdb's frames (a new reference), innermost first */
    tdb_thread_stacks t; /* the same frames named, the Python ones, merged */
} tdb_stackview;

/* Build V for thread LWP of PID from MI_STACK (the "stack" value of
 * -stack-list-frames).  MAPS names the library of frames in the
 * executable; SYM (may be NULL) names what gdb could not; PY and SNAP (may
 * be NULL) are the session's interpreter reader and this stop's snapshot,
 * which must outlive V.  Never fails: missing parts are said in the
 * output. */
void tdb_stackview_init(tdb_stackview *v, pid_t pid, pid_t lwp, const json_t *mi_stack,
                        const tdb_maps *maps, tdb_symbolizer *sym, const tdb_py_process *py,
                        const tdb_py_snapshot *snap);
void tdb_stackview_clear(tdb_stackview *v); /* accepts a zeroed V */

/* gdb's native frames: [{level, address, function, library, file, line,
 * source}], innermost first, with the names gdb lacked filled in; FILE is
 * the full path, SOURCE (when there is debug info) the name the debug
 * info gives it, as gdb prints it.  New reference. */
json_t *tdb_stackview_native_json(const tdb_stackview *v);
/* The thread's Python frames: [{function (qualified), file, line}],
 * innermost first; NULL when the thread runs no Python.  New reference. */
json_t *tdb_stackview_python_json(const tdb_stackview *v);
/* The merged stack: [{kind: "native", level, address, function, library,
 * file, line} | {kind: "python", function, file, line}], innermost first,
 * CPython plumbing left out unless FLAGS has TDB_STACK_RAW; for a stack
 * that could not be merged, the native frames.  New reference. */
json_t *tdb_stackview_json(const tdb_stackview *v, unsigned flags);
/* Whether the thread is inside CPython's garbage collector (as 'tdebug
 * stacks' marks it: "collecting garbage"). */
static inline int tdb_stackview_in_gc(const tdb_stackview *v)
{
    return v->t.gc;
}
/* What a stack, or a stop, inside the garbage collector says of it. */
#define TDB_STACKVIEW_GC_NOTE                                                                      \
    "this thread is collecting garbage: CPython's collector runs the code below (a __del__, a "    \
    "weakref or gc callback)"
/* How the merge went: "ok", "mismatch", "native-only", "python-only". */
const char *tdb_stackview_merge_name(const tdb_stackview *v);

/* The merged stack as text, gdb's way for native frames
 *   #3  0x00007f... in at::native::add () from .../libtorch_cpu.so
 *   #7  0x00000000004f9f1b in tt_ops_add_call () at csrc/core/tt_ops.c:69
 * and the traceback's way for Python ones
 *     File "train.py", line 12, in Model.forward
 * Native frame numbers are gdb's (for 'frame N'); numbers skipped are
 * folded plumbing.  A stack that could not be merged is said so and shown
 * as its two halves. */
void tdb_stackview_render(tdb_buf *b, const tdb_stackview *v, unsigned flags);

/* The frames a user sees and selects ('frame N', 'up', 'down'): the
 * merged stack without CPython's plumbing (unless FLAGS has
 * TDB_STACK_RAW), innermost first; for a stack that could not be merged,
 * gdb's native frames. */
typedef struct tdb_view_frame {
    tdb_frame_kind kind;
    int level;                      /* native: gdb's frame number; else -1 */
    const tdb_native_frame *native; /* native: the frame */
    const json_t *mi;               /* native: gdb's frame tuple, or NULL */
    const tdb_py_frame *py;         /* python: the frame */
} tdb_view_frame;
size_t tdb_stackview_count(const tdb_stackview *v, unsigned flags);
/* Frame I of those into *OUT (borrowing from V): 0, or -1 beyond the end. */
int tdb_stackview_frame_at(const tdb_stackview *v, unsigned flags, size_t i, tdb_view_frame *out);
/* The index among those of gdb's native frame LEVEL, or -1 (folded). */
int tdb_stackview_index_of_level(const tdb_stackview *v, unsigned flags, int level);
/* Count the native frames in [LO, HI) as CPython's plumbing (a library
 * tdebug loaded into the process, whose frames are the interpreter's
 * business, not the user's) and merge again. */
void tdb_stackview_fold_range(tdb_stackview *v, uint64_t lo, uint64_t hi);
/* Fold the native frames among the first INDEX visible ones (CPython's
 * machinery above a Python frame a step came back to). */
void tdb_stackview_fold_above(tdb_stackview *v, unsigned flags, size_t index);
/* One frame as tdb_stackview_render() shows it, a line. */
void tdb_stackview_render_frame(tdb_buf *b, const tdb_stackview *v, const tdb_view_frame *f);

#endif
