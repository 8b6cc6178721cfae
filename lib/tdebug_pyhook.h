/*
 * tdebug_pyhook.h: the contract between tdebug and the library it loads
 * into a Python process for Python breakpoints and stepping
 * (build/pyhook/libtdebug-pyhook-cpython-3X.so, lib/pyhook/pyhook.c).
 *
 * tdebug drives the library through gdb: it reads and writes the exported
 * control block `tdebug_pyhook_control` (by `print`/`set var`, or through
 * /proc/PID/mem at the address gdb gives for it) while the process is
 * stopped, and keeps a gdb breakpoint on `tdebug_pyhook_stop`, which the
 * library calls, holding the GIL, after filling in `report`.  Nothing here
 * is a function tdebug calls while the program runs; the only calls are
 * made by gdb at a safe point (see "Safe points").  This header is plain C
 * with fixed-size fields, so that the session can share it.
 *
 * Loading and installing (tdebug, once per process):
 *   1. Reach a safe point (below): `call (int) Py_AddPendingCall(
 *      PyErr_CheckSignals, 0)` first (any stopped thread: it takes only
 *      CPython's pending-calls lock, no GIL, no malloc), then gdb breakpoints
 *      at the exact entries `break *_PyEval_EvalFrameDefault` and `break
 *      *PyErr_CheckSignals` (both in the dynamic symbol table of Debian's
 *      python3.11 and of every libpython3.X.so), continue until a thread hits
 *      one, delete both.  The evaluator's entry alone is not enough: 3.11+
 *      inline Python-to-Python calls, so a loop of pure Python never enters
 *      it again; the pending call makes the main thread run
 *      PyErr_CheckSignals (harmless, returns 0) at its next instruction
 *      boundary, with the GIL.  The call comes before the breakpoints
 *      because gdb lets other threads run during a call and one of them
 *      reaching a breakpoint would abandon it.
 *   2. `call (void *) dlopen("/path/libtdebug-pyhook-cpython-3X.so", 2)`
 *      (RTLD_NOW); NULL means it failed (`call (char *) dlerror()`).
 *   3. Check tdebug_pyhook_control.magic, .abi and .size, write the
 *      breakpoint table (below, .table), bump .generation, then `call (int)
 *      tdebug_pyhook_install()`: 0 installed, -1 refused (.error says why).
 *   4. `break tdebug_pyhook_stop` and continue.
 *
 * Edits (the table, `disable`) are memory writes made while the process
 * is stopped.  The library applies them on return from tdebug_pyhook_stop
 * when the process stopped there; otherwise at its next safe point, which
 * tdebug brings about: when .sync_slot is not 0 (3.12+), write the 8 bytes
 * of .sync_eval_frame at the address .sync_slot (the interpreter's PEP 523
 * eval_frame slot): the next Python call in any thread runs the library,
 * which puts the slot back as it was and applies the edit.  Without it,
 * a 3.12+ process applies an edit only when one of the library's own
 * events next happens, which code without breakpoints never has.  (3.8-
 * 3.11: .sync_slot is 0; the hook sees every call anyway.)  A loop that
 * calls no Python function at all applies it at its next call.
 *
 * Safe points: the library calls into CPython, so every gdb `call` of it
 * (dlopen, install, sync, step_arm) must be made on a thread that holds the
 * GIL and is at a point where CPython can be re-entered: the entry of
 * _PyEval_EvalFrameDefault (the evaluator is always entered with the GIL
 * held, between two calls, with no CPython or libc lock taken), inside
 * tdebug_pyhook_stop (the library calls it with the GIL, from a trace or
 * monitoring callback), or a pc inside _PyEval_EvalFrameDefault reached by
 * leaving a native function it called (gdb `finish`) on the thread holding
 * the GIL: the same state as a C function called by the evaluator.  Never
 * at an arbitrary stop (Ctrl-C, a native breakpoint): that thread may hold
 * no GIL, or be inside malloc, the dynamic loader or a CPython lock, and
 * the call would deadlock or corrupt the process.  gdb lets the other
 * threads run during a `call` (scheduler-locking off), which is what lets a
 * lock they hold be released; they cannot run Python: the calling thread
 * holds the GIL.
 */
#ifndef TDEBUG_PYHOOK_H
#define TDEBUG_PYHOOK_H

#include <stdint.h>

#define TDB_PYHOOK_MAGIC 0x6b6f6f6879706474ULL /* "tdpyhook" */
#define TDB_PYHOOK_ABI 2

/* Slots of the table the library starts with (see .table). */
#define TDB_PYHOOK_FIRST_CAPACITY 64
#define TDB_PYHOOK_FILE_MAX 512   /* bytes, with the terminating NUL */
#define TDB_PYHOOK_NAME_MAX 128

/* tdb_pyhook_breakpoint.kind */
enum {
    TDB_PYHOOK_BP_LINE = 1,     /* file + line */
    TDB_PYHOOK_BP_FUNCTION = 2  /* function (+ file when not empty) */
};

/*
 * One Python breakpoint, a slot of the table (tdebug_pyhook_control.table).
 * A slot with id 0 is free.  tdebug writes every field but `hits` and
 * `bound` (the strings up to their NUL), then bumps
 * tdebug_pyhook_control.generation.
 *
 * file: an absolute path, compared with co_filename exactly (or, when
 *   co_filename is relative, as its tail at a '/' boundary); or a relative
 *   path ("train.py", "pkg/mod.py"), matched as the tail of co_filename at
 *   a '/' boundary.  Empty for a function breakpoint means any file.
 * line: a line holding code (the first line of a statement); a line of a
 *   nested function belongs to that function's code, as in tracebacks.
 * function: matched against co_name, or (3.11+) co_qualname ("Model.forward").
 *   The stop is at the first line of the body, on every call (not on a
 *   generator's resumption).
 */
typedef struct tdb_pyhook_breakpoint {
    int32_t id;           /* tdebug's number, > 0; 0: free slot */
    int32_t enabled;      /* 0 or 1 */
    int32_t kind;         /* TDB_PYHOOK_BP_* */
    int32_t line;         /* TDB_PYHOOK_BP_LINE */
    uint64_t hits;        /* written by the library: stops reported */
    uint64_t bound;       /* written by the library: code objects that
                           * matched since the last generation (0: not
                           * bound yet, e.g. its module is not imported) */
    char file[TDB_PYHOOK_FILE_MAX];
    char function[TDB_PYHOOK_NAME_MAX];
} tdb_pyhook_breakpoint;

/* tdb_pyhook_step.mode */
enum {
    TDB_PYHOOK_STEP_NONE = 0,
    TDB_PYHOOK_STEP_STEP = 1,   /* into what the line calls first */
    TDB_PYHOOK_STEP_NEXT = 2,   /* the next line of this frame (or its caller) */
    TDB_PYHOOK_STEP_FINISH = 3  /* the caller, right after the call returns */
};

/*
 * A step request.  tdebug writes it while the process is stopped: tstate
 * (or tid), frame and line as tdebug_pyhook_report gave them (frame 0 and
 * line 0: the thread's innermost Python frame and its current line), then
 * mode last.  The library reads it when the thread continues from a stop in
 * tdebug_pyhook_stop, or when tdebug calls tdebug_pyhook_step_arm() (a step
 * from any other safe point, e.g. after a native `finish` returned into the
 * evaluator).  It sets `armed` when it has taken the request and clears
 * mode (and armed) when it reports the stop that ends the step.
 *
 * Cancelling: tdebug writes mode 0 (while the process is stopped, e.g. at
 * the native breakpoint a step into native code reached, over the `next`
 * it had armed in case the call never got there).  A step the library has
 * armed ends without a report at the library's next event of any thread;
 * one it has not taken yet is never taken.  Writing a new request (mode
 * last) over an armed step replaces it the same way.
 *
 * What a step reaches (3.12+ as on 3.11): `step` stops at the first line
 * of a Python function the line calls, or reports (STOP_NATIVE) the C
 * function a call, an operator, a subscript, a comparison or an attribute
 * getter/setter is about to run when it is outside the interpreter.  On
 * 3.12+ an operator is recognised only where the value stack's depth is
 * known: from the start of the line the step started at, across jumps and
 * comprehension loops, not after an exception caught in the line nor for
 * the rest of a line whose step started elsewhere (after a native
 * `finish`); calls always are.
 */
typedef struct tdb_pyhook_step {
    int32_t mode;         /* TDB_PYHOOK_STEP_* */
    int32_t armed;        /* written by the library */
    uint64_t tstate;      /* PyThreadState * of the thread, or 0: use tid */
    int64_t tid;          /* its native thread id (Linux TID) */
    uint64_t frame;       /* the frame it starts in (see report.frame) */
    int32_t line;         /* its line when the step started */
    int32_t pad;
} tdb_pyhook_step;

/* tdb_pyhook_report.reason */
enum {
    TDB_PYHOOK_STOP_NONE = 0,
    TDB_PYHOOK_STOP_BREAKPOINT = 1, /* a line breakpoint: breakpoint_id */
    TDB_PYHOOK_STOP_FUNCTION = 2,   /* a function breakpoint, at the first
                                     * line of the body: breakpoint_id */
    TDB_PYHOOK_STOP_STEP = 3,       /* a step/next ended at a Python line */
    TDB_PYHOOK_STOP_NATIVE = 4,     /* step: the line is about to call the
                                     * native function at native_addr; the
                                     * frame and line are the caller's */
    TDB_PYHOOK_STOP_FINISH = 5      /* finish: the caller, right after the
                                     * call returned, at its current line */
};

/*
 * What the library fills in before calling tdebug_pyhook_stop().  The
 * thread that calls it holds the GIL; every other thread is stopped by gdb
 * (all-stop) wherever it was.
 */
typedef struct tdb_pyhook_report {
    uint64_t serial;      /* +1 for each stop */
    int32_t reason;       /* TDB_PYHOOK_STOP_* */
    int32_t breakpoint_id;/* BREAKPOINT, FUNCTION: the breakpoint's id; else 0 */
    uint64_t frame;       /* the Python frame stopped in: its
                           * _PyInterpreterFrame * (3.11+) or
                           * PyFrameObject * (3.8-3.10) */
    uint64_t code;        /* its PyCodeObject * */
    int32_t line;         /* its current line */
    int32_t step_mode;    /* the step this stop ended, else 0 */
    uint64_t tstate;      /* the thread: PyThreadState * */
    int64_t tid;          /* and native thread id */
    uint64_t native_addr; /* NATIVE: the C function about to be called */
    char native_what[TDB_PYHOOK_NAME_MAX]; /* NATIVE: what it implements, as
                                            * a user names it: "torch.add",
                                            * "Tensor.__add__", "len",
                                            * "Linear.weight" (a getter) */
    char file[TDB_PYHOOK_FILE_MAX];        /* co_filename (truncated) */
    char function[TDB_PYHOOK_NAME_MAX];    /* co_qualname (3.11+) or co_name */
} tdb_pyhook_report;

/*
 * The control block.  Read-only for tdebug unless said otherwise; every
 * field tdebug writes is written while the process is stopped.
 */
typedef struct tdb_pyhook_control {
    uint64_t magic;               /* TDB_PYHOOK_MAGIC */
    uint32_t abi;                 /* TDB_PYHOOK_ABI */
    uint32_t size;                /* sizeof(tdb_pyhook_control) */
    uint32_t py_version;          /* PY_VERSION_HEX the library was built for */
    int32_t installed;            /* 1 while the hook is in place */
    int32_t disable;              /* tdebug writes 1: the library removes
                                   * every hook at its next safe point (the
                                   * next Python call in any thread, or on
                                   * return from tdebug_pyhook_stop; 3.12+:
                                   * with sync_slot written, see "Edits")
                                   * and sets installed to 0 */
    int32_t mechanism;            /* TDB_PYHOOK_MECH_* in use */
    uint64_t generation;          /* tdebug bumps it after editing the table */
    uint64_t applied_generation;  /* the library: the generation in force */
    /* 3.12+, while installed: after an edit made outside a hook stop,
     * tdebug writes the 8 bytes of sync_eval_frame at the address
     * sync_slot (see "Edits" above).  0 otherwise. */
    uint64_t sync_slot;
    uint64_t sync_eval_frame;
    int32_t foreign_tracers;      /* threads where another sys.settrace
                                   * user (debugpy, coverage, pdb) holds the
                                   * trace function: breakpoints cannot stop
                                   * there (3.8-3.11; always 0 on 3.12+,
                                   * where those are other sys.monitoring
                                   * tools) */
    int32_t n_breakpoints;        /* slots tdebug uses: table[0..n-1] */
    int32_t traced_threads;       /* threads whose trace function is the
                                   * library's (3.12+: every thread of the
                                   * interpreter, whose events are the
                                   * library's; after the last sync or
                                   * uninstall: 0 once disabled) */
    int32_t reserved;
    tdb_pyhook_step step;         /* tdebug writes (see above) */
    tdb_pyhook_report report;     /* the library writes */
    uint64_t stats_frames;        /* frames the hook saw (diagnostics) */
    uint64_t stats_traced;        /* of them, run with line events */
    char error[256];              /* why the last install/sync failed */
    /* The breakpoint table: capacity slots of tdb_pyhook_breakpoint at
     * address table.  The library starts with TDB_PYHOOK_FIRST_CAPACITY
     * slots of its own; for more, tdebug maps a larger zeroed region in the
     * process (`call (void *) mmap(0, SIZE, 3, 0x22, -1, 0)`: a system
     * call, no lock taken, so any stop will do), copies the slots in use
     * into it and writes table, then capacity, then bumps the generation.
     * The library never frees a table (a thread of it may have been
     * stopped while reading the old one).  No limit but memory: the
     * library indexes the table by file name at each generation, so the
     * cost of a line run does not grow with the number of breakpoints. */
    uint64_t table;               /* tdb_pyhook_breakpoint[capacity]; tdebug writes */
    int32_t capacity;             /* tdebug writes (after table) */
    int32_t pad2;
} tdb_pyhook_control;

/* tdb_pyhook_control.mechanism */
enum {
    TDB_PYHOOK_MECH_NONE = 0,
    TDB_PYHOOK_MECH_EVAL_TRACE = 1,     /* 3.8-3.11: a PEP 523 frame
                                         * evaluation hook; line events only
                                         * for frames whose code has a
                                         * breakpoint (a C trace function) */
    TDB_PYHOOK_MECH_MONITORING = 2      /* 3.12+: sys.monitoring (tool id
                                         * 0, the debugger's, else 4 or 3);
                                         * line events only on code objects
                                         * with breakpoints, the rest only
                                         * while a step needs them */
};

/* The exported symbols (default visibility; everything else is hidden). */
extern tdb_pyhook_control tdebug_pyhook_control;

/* Install the hooks in every interpreter and apply the breakpoint table.
 * gdb calls it once, at a safe point.  0 installed (or already), -1 not
 * (tdebug_pyhook_control.error says why). */
int tdebug_pyhook_install(void);

/* Apply the breakpoint table now (a safe point, e.g. at a hook stop, or a
 * thread at _PyEval_EvalFrameDefault's entry).  Not needed at a hook stop
 * (the library applies edits when the thread continues); 0 or -1. */
int tdebug_pyhook_sync(void);

/* Take the step request in tdebug_pyhook_control.step now: for a step that
 * starts at a safe point that is not a hook stop.  0 armed, -1 not (no
 * such thread, no Python frame, or a foreign tracer owns it: see .error). */
int tdebug_pyhook_step_arm(void);

/* Remove every hook now (what `disable` does at the next safe point). */
int tdebug_pyhook_uninstall(void);

/* Called by the library with the report filled in; tdebug keeps a gdb
 * breakpoint here.  Returns when the process is continued; the library
 * then applies a new generation, `disable` or a step request. */
void tdebug_pyhook_stop(void);

#endif
