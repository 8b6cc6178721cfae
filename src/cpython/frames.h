/*
 * Folder cpython/: CPython read out of another process's memory or a core:
 * each version's layout (the generated offsets table, or the process's
 * _Py_DebugOffsets), finding the interpreter, objects, threads and frames,
 * the values of locals.  It includes no CPython header, never prints, never
 * exits, and never trusts target memory: every read is bounded, every loop
 * capped, every object's type checked.
 * May include: base, process, native
 *
 * cpython/frames.h: the Python stacks of another process, read from its memory.
 *
 * The reader finds _PyRuntime in the interpreter (the executable or a
 * libpython mapped in the process), tells its version (Py_Version, the
 * file's name, the cookie of _Py_DebugOffsets), takes that version's
 * layout (src/cpython/offsets.h: the table generated from each version's
 * headers, and from 3.13 on the offsets the runtime publishes itself),
 * then walks interpreters -> thread states -> frames -> code objects and
 * decodes each code object's line table to the line of the current
 * instruction.  CPython 3.8 to 3.13 are read (3.14 through
 * _Py_DebugOffsets), whichever Python tdebug was built with:
 *   3.8-3.10  the chain of PyFrameObject (f_back); every frame is run by
 *             its own _PyEval_EvalFrameDefault call (is_entry is always 1);
 *             lines from co_lnotab (3.8, 3.9) or co_linetable (PEP 626,
 *             3.10); the native thread id from glibc's thread descriptor;
 *   3.11      _PyInterpreterFrame, with is_entry; location tables;
 *   3.12      the entry frame each evaluator call pushes
 *             (FRAME_OWNED_BY_CSTACK) instead of is_entry: such frames are
 *             left out and the frame above each one is marked is_entry;
 *   3.13+     f_executable and instr_ptr (the current instruction).
 *
 * Target memory is never trusted: every read is bounded and checked, every
 * loop has a cap, every object's type is checked against the interpreter's
 * own type objects.  A corrupt or changing interpreter gives a partial
 * stack marked as such (tdb_py_thread.partial), never a crash or a hang.
 *
 * The process should be stopped while tdb_py_read() runs (by ptrace, by
 * gdb, or by the caller) for a consistent answer; a running process gives
 * a best-effort one.
 *
 * Use from a debugging session (the process is stopped by gdb):
 *
 *     tdb_py_process *py;
 *     if (tdb_py_open(pid, NULL, &py, &err) == 0) {     // once
 *         tdb_py_snapshot *s = tdb_py_read(py, &err);   // at each stop
 *         const tdb_py_thread *t = tdb_py_find_thread(s, tid);
 *         ... tdb_stack_merge() (stacks/merge.h) with gdb's native frames ...
 *         tdb_py_snapshot_free(s);
 *     }
 */
#ifndef TDB_PYFRAMES_H
#define TDB_PYFRAMES_H

#include "base/common.h"
#include "process/procfs.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct tdb_py_process tdb_py_process;

/* Who owns an interpreter frame (CPython's enum _frameowner). */
enum { TDB_PY_OWNED_BY_THREAD = 0, TDB_PY_OWNED_BY_GENERATOR = 1, TDB_PY_OWNED_BY_FRAME_OBJECT = 2 };

/* One Python frame.  Strings are owned by the snapshot; never NULL ("?"
 * when unreadable). */
typedef struct tdb_py_frame {
    const char *name;     /* co_name, as tracebacks and py-bt print it */
    const char *qualname; /* co_qualname: "Module.method" */
    const char *filename; /* co_filename */
    int line;             /* line of the current instruction; -1 unknown */
    int first_line;       /* co_firstlineno */
    int is_entry;         /* the frame a _PyEval_EvalFrameDefault call was
                           * entered with: the last (outermost) frame that
                           * native evaluator frame runs */
    int owner;            /* TDB_PY_OWNED_BY_* */
    uint64_t addr;        /* address of the _PyInterpreterFrame (3.11+) or
                           * of the PyFrameObject (3.8-3.10) */
    uint64_t code;        /* address of its code object */
} tdb_py_frame;

typedef enum tdb_gil_state {
    TDB_GIL_NONE = 0, /* neither holds nor waits for it (as far as we see) */
    TDB_GIL_HELD,     /* _PyRuntime.ceval.gil is locked by this thread */
    TDB_GIL_WAITING   /* blocked on the GIL's mutex or condition variable */
} tdb_gil_state;

typedef struct tdb_py_thread {
    uint64_t tstate;         /* address of its PyThreadState */
    pid_t tid;               /* Linux TID (native_thread_id from 3.11; the
                              * thread's glibc descriptor before); 0 unknown */
    unsigned long thread_id; /* threading.get_ident() */
    int64_t interp_id;       /* 0 for the main interpreter */
    tdb_gil_state gil;       /* (its interpreter's GIL from 3.12) */
    int gc;                  /* collecting garbage: its interpreter's
                              * collector runs and this thread holds the GIL */
    const char *name;        /* its threading.Thread's name, or NULL (owned
                              * by the snapshot) */
    tdb_py_frame *frames;    /* innermost (most recent call) first */
    size_t n_frames;
    char *partial;           /* NULL when the chain was read to its end,
                              * else why it stops early */
} tdb_py_thread;

typedef struct tdb_py_snapshot {
    tdb_py_thread *threads;  /* in interpreter order, newest thread first */
    size_t n_threads;
    char *partial;           /* NULL, or why threads may be missing */
    struct tdb_py_strings *strings; /* internal: owns the frames' strings */
} tdb_py_snapshot;

/* Find the interpreter in process PID.  MAPS is its memory map when the
 * caller has it (NULL: read it).  Returns 0 and *OUT (free with
 * tdb_py_close) when PID runs a CPython tdebug can read; 1 when PID is
 * not a Python process (no _PyRuntime in its executable or any mapped
 * libpython); -1 with ERR set otherwise: unreadable process (code ESRCH,
 * EPERM...), or a Python tdebug cannot read (code EPROTO; the message
 * names the version and what would help: an older or newer version, a
 * debug build, a free-threaded build).
 *
 * $TDEBUG_PY_OFFSETS=table makes a 3.13+ interpreter read with the
 * committed table alone (else its _Py_DebugOffsets are preferred); for
 * comparisons and tests. */
int tdb_py_open(pid_t pid, const tdb_maps *maps, tdb_py_process **out, tdb_error *err);
struct tdb_core;
/* The same for the process a core file was made of (src/native/core.h): its
 * memory is read from the core and the files it mapped (which the core
 * checks against their build-ids). */
int tdb_py_open_core(struct tdb_core *core, tdb_py_process **out, tdb_error *err);
void tdb_py_close(tdb_py_process *p); /* accepts NULL */

/* The target's version ("3.11.2").  Borrowed. */
const char *tdb_py_version(const tdb_py_process *p);
/* Where the struct layouts came from: "headers of CPython 3.12.1" or
 * "_Py_DebugOffsets of the process (3.13.0), headers of CPython 3.13.0 for
 * the rest".  Borrowed. */
const char *tdb_py_layout_source(const tdb_py_process *p);
/* Is PC in the interpreter's own machine code (CPython "plumbing")? */
int tdb_py_owns_pc(const tdb_py_process *p, uint64_t pc);
/* Is PC inside _PyEval_EvalFrameDefault (its exported extent)? */
int tdb_py_is_eval_pc(const tdb_py_process *p, uint64_t pc);
/* The number of memory reads done so far (for --verbose). */
unsigned long tdb_py_reads(const tdb_py_process *p);

/* Read every interpreter's threads and their frames.  Returns a snapshot
 * (free with tdb_py_snapshot_free), possibly partial; NULL with ERR set
 * only when _PyRuntime itself cannot be read (the process exited: code
 * ESRCH).  A runtime not yet or no longer initialized gives no threads. */
tdb_py_snapshot *tdb_py_read(tdb_py_process *p, tdb_error *err);
void tdb_py_snapshot_free(tdb_py_snapshot *s); /* accepts NULL */
/* The thread state whose native_thread_id is TID, or NULL.  Borrowed. */
const tdb_py_thread *tdb_py_find_thread(const tdb_py_snapshot *s, pid_t tid);

/* Decode a CPython 3.11+ location table (co_linetable): the line of the
 * code unit at index LASTI (prev_instr - first instruction), starting from
 * FIRST_LINE (co_firstlineno).  LASTI < 0 gives FIRST_LINE, as in
 * PyCode_Addr2Line.  Returns -1 when the instruction has no line or lies
 * beyond the table, or the table is malformed. */
int tdb_py_linetable_line(const uint8_t *table, size_t len, int first_line, int lasti);
/* CPython 3.10's line table (PEP 626 co_linetable): the line of the
 * instruction at byte offset ADDR (f_lasti * 2); ADDR < 0 gives
 * FIRST_LINE; -1 for no line. */
int tdb_py_linetable310_line(const uint8_t *table, size_t len, int first_line, int addr);
/* CPython 3.8/3.9's co_lnotab: the line of the instruction at byte offset
 * ADDR (f_lasti), as PyCode_Addr2Line gives it. */
int tdb_py_lnotab_line(const uint8_t *table, size_t len, int first_line, int addr);

#endif
