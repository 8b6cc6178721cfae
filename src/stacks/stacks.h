/*
 * Folder stacks/: stacks as tdebug shows them: native and Python frames
 * merged, every thread of a process or core read without gdb ('tdebug
 * stacks'), one thread's stack at a debugger's stop.  It returns data
 * (structs, JSON, text in a tdb_buf) for a front-end to show, never prints,
 * never exits, and lets every process it paused go.
 * May include: base, gdb, process, native, cpython, targets
 *
 * stacks/stacks.h: a snapshot of every thread of one process, native and Python,
 * merged; what 'tdebug stacks' prints for each process.
 *
 * The process is paused (src/process/pause.h) only while registers, stack tops and
 * the Python state are copied; unwinding, symbols and the merge happen
 * after it runs again.  A process traced by someone else (gdb) cannot be
 * paused: its Python stacks are read without pausing (consistent when its
 * tracer holds it stopped) and its native stacks are reported unavailable.
 */
#ifndef TDB_STACKS_H
#define TDB_STACKS_H

#include "base/common.h"
#include "cpython/frames.h"
#include "stacks/merge.h"

#include <jansson.h>
#include <sys/types.h>

typedef struct tdb_stacks_options {
    unsigned flags;    /* TDB_STACK_* (stacks/merge.h): what to collect and show;
                        * TDB_STACK_LOCALS reads each Python frame's locals
                        * (src/cpython/values.h) while the process is paused */
    size_t stack_max;  /* stack bytes copied per thread; 0: TDB_STACK_COPY_MAX */
    size_t max_frames; /* native frames per thread; 0: 1024 */
    struct tdb_symcache *symbols; /* symbols shared across processes (native/unwind.h);
                                   * NULL: one per process */
} tdb_stacks_options;

typedef struct tdb_thread_stacks {
    pid_t tid;                  /* 0 for a Python thread state with no known thread */
    char *name;                 /* /proc comm, or NULL */
    const tdb_py_thread *py;    /* its Python thread state, or NULL; with
                                 * several (subinterpreters), the newest
                                 * interpreter's: the one running */
    size_t n_states;            /* its Python thread states, all interpreters */
    const char *python_name;    /* threading's name for it (the oldest
                                 * interpreter's that has one), or NULL */
    tdb_py_frame *py_frames;    /* with several: their frames, newest
                                 * interpreter first (owned), else NULL */
    size_t n_py_frames;
    tdb_native_frame *native;   /* NULL when not collected or not available */
    size_t n_native;
    char *native_note;          /* why native frames are missing or incomplete */
    int python_process;         /* the process's Python state was read */
    int gc;                     /* collecting garbage (the interpreter says so,
                                 * or the collector is on its native stack) */
    int in_signal;              /* running a signal handler: a C one (a signal
                                 * frame on its native stack) or a Python one
                                 * (called from CPython's signal check) */
    tdb_gil_state gil;          /* from its thread state, else from its native
                                 * stack (waiting in take_gil) */
    const json_t *locals;       /* with TDB_STACK_LOCALS: the process's locals
                                 * by frame address (borrowed), else NULL */
    tdb_merged_stack merged;
} tdb_thread_stacks;

/* For a debugger that holds PID stopped ('bt' in a tdebug session): fill T
 * for thread TID from gdb's frames of it (MI_STACK: the "stack" value of
 * -stack-list-frames, innermost first) merged with its Python frames.
 * MAPS (may be NULL) names the library of frames gdb gives none (the
 * executable).  PY and SNAP are the session's reader (tdb_py_open once)
 * and this stop's snapshot (tdb_py_read once per stop, shared by all
 * threads for 'bt all'); both NULL for a process without Python.  T
 * borrows from SNAP, which must outlive it.  Returns 0, or -1 when MI_STACK
 * is not a frame list (T then holds the Python frames alone and says so). */
int tdb_thread_stacks_from_mi(tdb_thread_stacks *t, pid_t pid, pid_t tid, const json_t *mi_stack,
                              const tdb_maps *maps, const tdb_py_process *py,
                              const tdb_py_snapshot *snap);
/* Free what T owns and zero it.  Accepts NULL. */
void tdb_thread_stacks_clear(tdb_thread_stacks *t);
/* Give T its Python state from SNAP: every thread state whose native id
 * is T->tid, of every interpreter, newest interpreter first (a thread
 * running a subinterpreter called it from the older one); T borrows from
 * SNAP.  Then merge T's native frames with them and set its marks. */
void tdb_thread_stacks_attach(tdb_thread_stacks *t, const tdb_py_snapshot *snap);
/* Set T's marks (gc, in_signal, gil) from its Python thread state and its
 * native frames; called by the functions filling T. */
void tdb_thread_stacks_marks(tdb_thread_stacks *t);
/* One thread as JSON (new reference): {"tid", "name", "python", "thread_id",
 * "gil", "merge", "frames", ...}: see tdb_process_stacks_json(). */
json_t *tdb_thread_stacks_json(const tdb_thread_stacks *t, unsigned flags);
/* One thread as text: 'Thread 12 "python3", threading "MainThread" (holds
 * the GIL, collecting garbage):' then its frames, indented by two spaces
 * (tdb_stack_render), then what is missing. */
void tdb_thread_stacks_render(tdb_buf *b, const tdb_thread_stacks *t, unsigned flags);

typedef struct tdb_process_stacks {
    pid_t pid;               /* for a core: the process it was made of */
    pid_t ns_pid;            /* its pid in its own PID namespace when that is
                              * not ours (a container's), else 0 */
    int signal;              /* a core's: the signal that made it, or 0 */
    char *cmdline;
    char *python_version;    /* "3.11.2", or NULL when no Python state was read */
    char *python_layout;     /* where its struct layouts came from
                              * (tdb_py_layout_source), or NULL */
    char *python_note;       /* why there are no Python stacks, or NULL */
    char *native_note;       /* why there are no native stacks at all, or NULL */
    int paused;              /* we held it (else: traced by someone else) */
    double pause_ms;         /* first seize to last detach */
    int job_stopped;         /* it was in a job-control stop (and still is) */
    unsigned long mem_reads; /* memory reads of the Python reader */
    size_t stack_bytes;      /* bytes of stack copied */
    double unwind_ms;        /* unwinding and symbols, after the pause */
    tdb_thread_stacks *threads;
    size_t n;
    tdb_py_snapshot *snapshot; /* owned */
    char **extra_notes;      /* NULL-terminated, or NULL: more notes (a core's
                              * files that changed) */
    char *core;              /* the core file read, or NULL for a process */
    json_t *locals;          /* TDB_STACK_LOCALS: {"0xFRAME": [locals] or
                              * {"error": ...}}, read while paused */
} tdb_process_stacks;

/* Snapshot PID.  0 and *OUT on success (possibly with notes: not Python,
 * native stacks unavailable, partial stacks).  -1 with ERR set when PID
 * cannot be looked at: no such process or it exited during the snapshot
 * (code ESRCH), permission refused (EPERM, the message says why and what
 * to do), or --python asked of a process that has no Python (ENOENT). */
int tdb_stacks_take(pid_t pid, const tdb_stacks_options *o, tdb_process_stacks **out,
                    tdb_error *err);
void tdb_process_stacks_free(tdb_process_stacks *s); /* accepts NULL */

struct tdb_core;
/* The same from a core file (src/native/core.h): every thread of the core, its
 * native stack unwound from the core, its Python frames read from the
 * core's memory; a note for each file of the core that changed since
 * (whose frames are then left unnamed, never misread).  0 and *OUT, or -1
 * with ERR set (--python asked of a core of a process without Python:
 * ENOENT).  CORE must outlive *OUT. */
int tdb_stacks_take_core(struct tdb_core *core, const tdb_stacks_options *o,
                         tdb_process_stacks **out, tdb_error *err);

/* The snapshot as JSON (new reference):
 *   {"pid", "ns_pid" (only for a process in another PID namespace: its pid
 *    there), "command", "python": "3.11.2" or null, "notes": [...],
 *    "paused": bool, "pause_ms", "job_stopped": bool,
 *    "threads": [{"tid", "name" (the OS's), "python": bool, "thread_id",
 *      "interpreter" (its interpreter's id), "python_name" (threading's name,
 *      or null), "gil": "held"|"waiting"|null, "gc": bool, "in_signal": bool,
 *      "merge": "ok"|"mismatch"|"native-only"|"python-only",
 *      "frames": [...] (see tdb_stack_json; with TDB_STACK_LOCALS each
 *      Python frame has "locals": [{name, kind, type, value, ...}] or
 *      {"error": ...}),
 *      "python_frames"/"native_frames" when the merge is a mismatch,
 *      "python_partial"/"native_note" when incomplete}]}
 * Strings that are not UTF-8 follow tdb_json_set_str() (base/common.h). */
json_t *tdb_process_stacks_json(const tdb_process_stacks *s, unsigned flags);

/* The snapshot as text: a process line (with "pid N in its PID namespace"
 * for a process in another one), its notes, then each thread's
 * heading and frames (tdb_stack_render). */
void tdb_process_stacks_render(tdb_buf *b, const tdb_process_stacks *s, unsigned flags);

#endif
