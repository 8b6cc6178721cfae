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
 * A session's end: the library outlives no session.  While installed, it
 * watches the process's tracer (TracerPid at install) and that tracer's
 * parent (the tdebug that runs gdb) through pidfds, looking every 16384 of
 * its own events (frame starts, line events: what it costs the program)
 * and on return from each stop; when either exited, the library disarms
 * as for `disable` and sets `orphaned`: the program goes back to its own
 * speed.  (No thread of its own: it would show in every thread list.)  From the moment it
 * is loaded, a SIGTRAP handler (lib/untraced_trap.h) makes any breakpoint
 * gdb left in the process's code harmless once no debugger catches it: the
 * byte is put back, the program runs on and the library disarms.  (Where
 * the tracer is not visible, as from inside a PID namespace, TracerPid is
 * 0 and only the handler is there.)  A child the program forks is never
 * the session's (gdb follows the parent): its copy disarms the same way.
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
#define TDB_PYHOOK_ABI 3

/* Slots of the table the library starts with (see .table). */
#define TDB_PYHOOK_FIRST_CAPACITY 64
#define TDB_PYHOOK_FILE_MAX 512   /* bytes, with the terminating NUL */
#define TDB_PYHOOK_NAME_MAX 128
#define TDB_PYHOOK_EXPR_MAX 512   /* a condition or log message, with the NUL */
#define TDB_PYHOOK_LOG_PATH_MAX 256
#define TDB_PYHOOK_TRACEBACK_MAX 4096 /* report.exc_traceback, with the NUL */
#define TDB_PYHOOK_MY_CODE_MAX 2048   /* control.my_code, with its NULs */

/* tdb_pyhook_breakpoint.kind */
enum {
    TDB_PYHOOK_BP_LINE = 1,     /* file + line */
    TDB_PYHOOK_BP_FUNCTION = 2, /* function (+ file when not empty) */
    TDB_PYHOOK_BP_EXCEPTION = 3 /* a Python exception (ABI 3): exc_when says
                                 * which events stop; function, when not
                                 * empty, the exception's class (its
                                 * __qualname__, __name__ or
                                 * "module.qualname"), which also takes the
                                 * classes derived from it */
};

/* tdb_pyhook_breakpoint.exc_when, tdb_pyhook_report.exc_when: the events of
 * an exception a TDB_PYHOOK_BP_EXCEPTION slot stops at (bits).  A frame
 * "handles" an exception when an exception handler (try/except, finally,
 * with) covers its current instruction (3.11+: co_exceptiontable; 3.8-3.10:
 * the frame's block stack).  A file is the user's when it is under one of
 * control.my_code's directories. */
enum {
    TDB_PYHOOK_EXC_RAISED = 1,   /* raised in this frame (not propagated
                                  * from a callee), at its line; not
                                  * StopIteration, StopAsyncIteration,
                                  * GeneratorExit nor in <frozen ...> code
                                  * unless the slot names the class */
    TDB_PYHOOK_EXC_UNCAUGHT = 2, /* about to leave the outermost Python
                                  * frame of its thread (no handler there;
                                  * not <frozen ...> code, which the
                                  * interpreter's start calls from C): once,
                                  * before the thread's end */
    TDB_PYHOOK_EXC_USER = 4      /* about to leave a frame of the user's
                                  * code, which does not handle it, into a
                                  * Python caller outside it that does not
                                  * handle it either */
};
/* UNCAUGHT and USER where the frame's own handler is a 'with': decided
 * when the exception leaves the frame, after __exit__ ran (none when it
 * swallows the exception); the stop is then in that frame, at the line it
 * raised at. */

/* tdb_pyhook_breakpoint.hit_op: when a hit whose condition holds stops
 * (N: hit_value; the count includes this hit) */
enum {
    TDB_PYHOOK_HIT_ANY = 0, /* every hit */
    TDB_PYHOOK_HIT_EQ = 1,  /* the Nth only */
    TDB_PYHOOK_HIT_GE = 2,  /* from the Nth on */
    TDB_PYHOOK_HIT_GT = 3,
    TDB_PYHOOK_HIT_LE = 4,
    TDB_PYHOOK_HIT_LT = 5,
    TDB_PYHOOK_HIT_MOD = 6  /* every Nth */
};

/* Does the Nth hit (whose condition held) pass hit condition OP VALUE?
 * (tdebug counts native breakpoints' hits with the same rule.) */
static inline int tdb_pyhook_hit_passes(int32_t op, uint64_t n, int32_t value)
{
    uint64_t v = value > 0 ? (uint64_t)value : 0;
    switch (op) {
    case TDB_PYHOOK_HIT_EQ: return n == v;
    case TDB_PYHOOK_HIT_GE: return n >= v;
    case TDB_PYHOOK_HIT_GT: return n > v;
    case TDB_PYHOOK_HIT_LE: return n <= v;
    case TDB_PYHOOK_HIT_LT: return n < v;
    case TDB_PYHOOK_HIT_MOD: return v ? n % v == 0 : 1;
    default: return 1;
    }
}

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
    /* What decides whether a hit stops, in this order (all written by
     * tdebug; empty or 0: not used):
     * condition: a Python expression evaluated in the frame's globals and
     *   locals; false: the hit does not count.  Raising stops, with the
     *   exception in report.message.
     * ignore: hits (whose condition holds) to let go first; the library
     *   counts it down.
     * hit_op, hit_value: on hit_count, the hits whose condition held.
     * log_message: not a stop but a line sent to tdebug (log_path), its
     *   {expression} parts evaluated in the frame ({{ and }} are braces). */
    int32_t hit_op;       /* TDB_PYHOOK_HIT_* */
    int32_t hit_value;
    int32_t ignore;       /* tdebug writes, the library counts down */
    int32_t exc_when;     /* TDB_PYHOOK_BP_EXCEPTION: TDB_PYHOOK_EXC_* bits */
    uint64_t hit_count;   /* written by the library */
    char condition[TDB_PYHOOK_EXPR_MAX];
    char log_message[TDB_PYHOOK_EXPR_MAX];
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
    TDB_PYHOOK_STOP_FINISH = 5,     /* finish: the caller, right after the
                                     * call returned, at its current line */
    TDB_PYHOOK_STOP_FOREIGN = 6,    /* 3.8-3.11: a frame of code with a
                                     * breakpoint starts on a thread whose
                                     * trace function is another's
                                     * (sys.settrace: coverage, pdb,
                                     * debugpy): no breakpoint can stop
                                     * there.  Once a thread; frame, code
                                     * and line (the first) are that
                                     * frame's.  tdebug says so and goes on */
    TDB_PYHOOK_STOP_EXCEPTION = 7   /* an exception a TDB_PYHOOK_BP_EXCEPTION
                                     * slot wants (breakpoint_id), in the
                                     * frame and at the line it is raised in
                                     * or leaving: exc_* say which event and
                                     * what exception */
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
    char message[TDB_PYHOOK_EXPR_MAX];     /* BREAKPOINT, FUNCTION: why its
                                            * condition could not be
                                            * evaluated ("NameError: ..."),
                                            * else empty */
    /* EXCEPTION (else empty): */
    int32_t exc_when;                      /* the TDB_PYHOOK_EXC_* event */
    int32_t exc_pad;
    char exc_type[TDB_PYHOOK_NAME_MAX];    /* "ValueError", "json.decoder.JSONDecodeError" */
    char exc_message[TDB_PYHOOK_EXPR_MAX]; /* str() of the exception */
    char exc_traceback[TDB_PYHOOK_TRACEBACK_MAX]; /* as Python prints it:
                                            * "Traceback (most recent call
                                            * last):\n  File ..." and the last
                                            * line "TYPE: message"; the
                                            * frames it went through so far */
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
    int32_t orphaned;             /* the library: 1 once it found its
                                   * session gone (a breakpoint of gdb's
                                   * trapped with no debugger left, or the
                                   * debugger or its parent, tdebug, exited
                                   * while installed): it disarmed itself,
                                   * as `disable` does (see "A session's
                                   * end") */
    tdb_pyhook_step step;         /* tdebug writes (see above) */
    tdb_pyhook_report report;     /* the library writes */
    uint64_t stats_frames;        /* frames the hook saw (diagnostics) */
    uint64_t stats_traced;        /* of them, run with line events */
    char error[256];              /* why the last install/sync failed */
    /* Log points: a FIFO tdebug reads (it opens it first, for reading),
     * written before install; empty: log points are dropped.  Each line is
     * one record, "ID<TAB>TEXT<NUL>" (TEXT may hold newlines), written
     * whole while holding the GIL.  log_dropped counts records that could
     * not be written. */
    char log_path[TDB_PYHOOK_LOG_PATH_MAX];
    uint64_t log_dropped;
    /* tdebug_pyhook_eval(): tdebug writes eval_frame (a frame's address as
     * report.frame gives it; 0: the thread's innermost Python frame),
     * eval_mode and eval_text, then calls it; the library writes
     * eval_result (repr() of the value, or "TYPE: message" when it
     * raised) and eval_type (the value's type name). */
    uint64_t eval_frame;
    int32_t eval_mode;            /* TDB_PYHOOK_EVAL_* */
    int32_t eval_pad;
    char eval_text[TDB_PYHOOK_EXPR_MAX];
    char eval_result[4096];
    char eval_type[TDB_PYHOOK_NAME_MAX];
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
    /* The user's code, for TDB_PYHOOK_EXC_USER (tdebug writes, then bumps
     * the generation): absolute directories, each ending with a NUL, the
     * list with an empty one. */
    char my_code[TDB_PYHOOK_MY_CODE_MAX];
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

/* tdb_pyhook_control.eval_mode */
enum {
    TDB_PYHOOK_EVAL_EXPRESSION = 0, /* eval_text is an expression: its value */
    TDB_PYHOOK_EVAL_STATEMENTS = 1  /* statements (an assignment to a local
                                     * is written back to the frame) */
};

/* Evaluate eval_text in the frame eval_frame of the calling thread, which
 * must hold the GIL at a safe point (a hook stop: tdebug calls it on the
 * thread stopped in tdebug_pyhook_stop).  0: eval_result holds the value's
 * repr; -1: it raised, or no such frame (eval_result says why).  Python
 * breakpoints do not stop during it. */
int tdebug_pyhook_eval(void);

/* Remove every hook now (what `disable` does at the next safe point). */
int tdebug_pyhook_uninstall(void);

/* Called by the library with the report filled in; tdebug keeps a gdb
 * breakpoint here.  Returns when the process is continued; the library
 * then applies a new generation, `disable` or a step request. */
void tdebug_pyhook_stop(void);

#endif
