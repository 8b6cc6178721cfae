/*
 * pyhook.h: what the parts of the Python breakpoint library share
 * (internal; the contract with tdebug is lib/tdebug_pyhook.h).
 *
 *   pyhook.c      the control block, breakpoint matching and the per-code
 *                 cache, stops and step bookkeeping, where a step goes
 *                 native, the exported functions
 *   evaltrace.c   mechanism EVAL_TRACE (3.8-3.11): a PEP 523 frame
 *                 evaluation hook and a C trace function
 *   monitoring.c  mechanism MONITORING (3.12+): sys.monitoring
 *
 * A mechanism provides the mech_* functions below; pyhook.c calls them
 * with the GIL held and g_busy raised.  One translation unit a
 * mechanism: the one not for this CPython compiles to nothing.
 */
#ifndef TDB_PYHOOK_INT_H
#define TDB_PYHOOK_INT_H

#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030b0000
#ifdef PYHOOK_OPCODE_TABLES
#define NEED_OPCODE_TABLES   /* 3.11, 3.12: _PyOpcode_Deopt, _PyOpcode_Caches */
#define NEED_OPCODE_METADATA /* 3.13 */
#endif
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_pystate.h>
#if PY_VERSION_HEX >= 0x030d0000
#include <internal/pycore_opcode_metadata.h>
#else
#include <internal/pycore_opcode.h>
#endif
#include <opcode.h>
#elif PY_VERSION_HEX >= 0x03090000
#include <internal/pycore_interp.h>
#include <internal/pycore_pystate.h>
#include <opcode.h>
#else
#include <internal/pycore_pystate.h>
#include <opcode.h>
#endif

#include "tdebug_pyhook.h"

#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifndef Py_IS_TYPE /* 3.8 */
#define Py_IS_TYPE(o, t) (Py_TYPE(o) == (t))
#endif

#define PY310 (PY_VERSION_HEX >= 0x030a0000)
#define PY311 (PY_VERSION_HEX >= 0x030b0000)
#define PY312 (PY_VERSION_HEX >= 0x030c0000)
#define PY313 (PY_VERSION_HEX >= 0x030d0000)

#define MAX_WALK 10000 /* frames per thread: above any recursion limit */

/* The control block through a hidden alias (pyhook.c): the hot paths
 * reach it PC-relative, not through the GOT as an exported symbol. */
extern tdb_pyhook_control g_control __attribute__((visibility("hidden")));
#define C g_control

/* ------------------------------------------------------------------ */
/* Frames: a frame's identity is what the report gives tdebug           */

#if PY311
typedef _PyInterpreterFrame iframe;
#define FRAME_BACK(fr) ((fr)->previous)
#else
typedef PyFrameObject iframe;
#define FRAME_BACK(fr) ((fr)->f_back)
#endif

static inline PyCodeObject *frame_code(iframe *fr)
{
#if PY313
    return (PyCodeObject *)fr->f_executable;
#else
    return fr->f_code;
#endif
}

/* The thread's innermost frame (3.11+: maybe a C-stack entry frame). */
static inline iframe *thread_frame(PyThreadState *ts)
{
#if PY313
    return ts->current_frame;
#elif PY311
    return ts->cframe->current_frame;
#else
    return ts->frame;
#endif
}

/* A frame running Python code (3.12+: not the evaluator's C-stack entry
 * frame, whose code is a trampoline). */
static inline int frame_is_python(iframe *fr)
{
#if PY312
    return fr->owner != FRAME_OWNED_BY_CSTACK;
#else
    (void)fr;
    return 1;
#endif
}

int frame_line(iframe *fr);

/* ------------------------------------------------------------------ */
/* State (hidden, so that other files reach it PC-relative)            */

#pragma GCC visibility push(hidden)

extern Py_ssize_t g_extra_index;
extern uint64_t g_gen;      /* generation applied */
extern void *g_tag;         /* TAG(g_gen): a code object's co_extra when
                             * nothing in the table concerns it */
extern int g_installed;
extern int g_active;        /* some enabled breakpoint, or a step: look at frames */
extern int g_busy;          /* inside the library: let frames through */
extern unsigned g_epoch;    /* +1 whenever what frames want may change */
extern void *g_interp_base; /* load address of the interpreter's image */

/* The step under way (one at a time).  The mechanism keeps what else it
 * needs in `m`. */
typedef struct step_state {
    int mode;
    int returned;   /* the start frame returned: stop at the next event */
    PyThreadState *ts;
    iframe *frame;  /* the frame it started in */
    int line;
#if PY312
    iframe *target;     /* after `returned`: the Python caller it went back to */
    PyCodeObject *code; /* the start frame's code (owned) */
    PyObject *bytecode; /* its co_code (owned): for the stack depth */
    int depth;          /* the stack depth before the instruction at last_off, -1: unknown */
    int last_off;       /* the last instruction of the start frame seen, in bytes, -1: none */
    int anchored;       /* depth is the line start's, for the instruction at last_off
                         * that has not run yet */
#else
    PyFrameObject *opcodes[4]; /* frame objects we set f_trace_opcodes on (owned) */
    int nopcodes;
#endif
} step_state;
extern step_state g_step;

/* A function breakpoint waiting for the first line of a new frame. */
extern __thread iframe *tls_fn_frame;
extern __thread int tls_fn_slot;

#pragma GCC visibility pop

/* ------------------------------------------------------------------ */
/* The per-code cache: what the breakpoint table means for a code object */

typedef struct code_info {
    uint64_t gen;
    int fn_slot; /* a function breakpoint on this code, else -1 */
    int n;       /* line breakpoints */
    struct {
        int line, slot;
    } v[];       /* sorted by line (then slot) */
} code_info;

/* The slot of the (first) line breakpoint of CI on LINE, else -1. */
int code_info_slot_at(const code_info *ci, int line);

#define TAG(gen) ((void *)(uintptr_t)(((gen) << 1) | 1))

code_info *code_compute(PyCodeObject *co);

/* co_extra's layout (Objects/codeobject.c, the same in 3.6-3.13): read
 * inline, since 3.8-3.11 look at every call. */
typedef struct {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} code_extra;

static inline void *code_extra_of(PyCodeObject *co)
{
    code_extra *ce = co->co_extra;
    return LIKELY(ce && ce->ce_size > g_extra_index) ? ce->ce_extras[g_extra_index] : NULL;
}

/* Is CO known to have no breakpoint in the current generation?  (One
 * compare: what every call of 3.8-3.11 pays.  0 also when not known.) */
static inline int code_clean(PyCodeObject *co)
{
    return code_extra_of(co) == g_tag;
}

/* The breakpoints of CO for the current generation, NULL when none. */
static inline code_info *code_lookup(PyCodeObject *co)
{
    void *x = code_extra_of(co);
    if (x == g_tag)
        return NULL;
    if (x && !((uintptr_t)x & 1) && ((code_info *)x)->gen == g_gen)
        return x;
    return code_compute(co);
}

/* ------------------------------------------------------------------ */
/* Steps and stops                                                     */

/* Is a step under way on TS?  A step tdebug cancelled (it wrote mode 0)
 * ends here, whatever thread asks. */
void step_cancelled(void);
static inline int stepping(PyThreadState *ts)
{
    if (LIKELY(!g_step.mode))
        return 0;
    if (UNLIKELY(C.step.mode == TDB_PYHOOK_STEP_NONE)) {
        step_cancelled();
        return 0;
    }
    return g_step.ts == ts;
}

/* A line event in frame FR of the stepping thread: does it end the step? */
int step_stops_at_line(iframe *fr);

/* A hit of the breakpoint in slot SLOT at the current line of the
 * thread's current frame (the GIL held): its condition, ignore count,
 * hit condition and log message (tdebug_pyhook.h) decide.  1: report a
 * stop (with report.message when the condition failed); 0: go on (a log
 * point's line was written). */
int bp_should_stop(int slot);

int any_enabled(void);
void copy_str(char *dst, size_t n, const char *src);
const char *utf8(PyObject *s);
PyThreadState *find_thread(uint64_t tstate, int64_t tid);
void for_each_thread(void (*fn)(PyThreadState *));

/* Report a stop to tdebug and wait for it (tdebug's gdb breakpoint),
 * then apply what tdebug wrote meanwhile.  CTX goes to mech_step_take. */
void stop(int reason, int slot, PyThreadState *ts, iframe *fr, void *ctx, int line,
          void *native, const char *what);

/* Apply a new generation, `disable` or nothing, with the exception the
 * thread had kept.  For the mechanisms' safe points. */
void apply_control(void);

/* Has the session gone (gdb or tdebug exited)?  Then `disable` as tdebug
 * would (lib/tdebug_pyhook.h, "A session's end").  watch_tick() at each
 * of the hook's events (the GIL held) looks every so many. */
extern int g_watch_countdown __attribute__((visibility("hidden")));
void watch_check(void);
static inline void watch_tick(void)
{
    if (UNLIKELY(--g_watch_countdown <= 0))
        watch_check();
}

/* ------------------------------------------------------------------ */
/* Exceptions (exceptions.c)                                           */

/* Enabled TDB_PYHOOK_BP_EXCEPTION slots in the generation applied: while
 * there are any, 3.8-3.11 keep their trace function on every thread (no
 * line events where none is wanted) and 3.12+ take RAISE and PY_UNWIND
 * events. */
extern int g_exc_n __attribute__((visibility("hidden")));
void exc_index_reset(void);
void exc_index_add(int slot);

/* EXC (TB: its traceback so far, or NULL: its __traceback__) is raised in
 * or propagates into FR, the running frame of TS, at LINE: stop when a
 * slot wants it (CTX goes to stop()). */
void exc_event(PyThreadState *ts, iframe *fr, PyObject *exc, PyObject *tb, void *ctx, int line);

/* Is a stop waiting for FR to be left with an exception (its 'with'
 * decides: exceptions.c)?  3.8-3.11 keep such a frame traced, for its
 * PyTrace_RETURN. */
int exc_deferred(iframe *fr);

/* FR, the running frame of TS, is being left at LINE: RAISING with EXC
 * (3.12+: PY_UNWIND), or with the exception the mechanism cannot see (EXC
 * NULL; 3.8-3.11: PyTrace_RETURN with no value, whose exception CPython
 * takes away while the trace function runs), or returning a value
 * (RAISING 0).  The deferred stop of FR happens when the exception is
 * its own (CTX goes to stop()). */
void exc_leave(PyThreadState *ts, iframe *fr, int raising, PyObject *exc, void *ctx, int line);

#if PY311
/* The entries of CO's exception table (co_exceptiontable: start, length,
 * target, depth<<1|lasti, in code units, each a varint of 6-bit groups;
 * Objects/exception_handling_notes.txt), one after the other. */
typedef struct exc_table {
    const unsigned char *p, *end;
} exc_table;
typedef struct exc_entry {
    int start, len, target, dl;
} exc_entry;
/* 0, or -1 when CO has no table. */
int exc_table_open(PyCodeObject *co, exc_table *t);
/* 0 with the next entry in *E, or -1 at the table's end. */
int exc_table_next(exc_table *t, exc_entry *e);
#endif

/* The instruction at byte OFF of BYTECODE (co_code as CPython gives it to
 * Python: no specialization, no instrumentation, caches zeroed): opcode,
 * oparg with its EXTENDED_ARG prefixes, and where the next one starts.
 * 0, or -1 past the end. */
int decode_instruction(PyObject *bytecode, int off, int *op, int *arg, int *next);

/* Fill R's exc_* for the stop being reported (empty when it is not an
 * exception's). */
void exc_report(tdb_pyhook_report *r);

/* ------------------------------------------------------------------ */
/* Where a step goes native                                            */

enum { R_NONE, R_PYTHON, R_NATIVE };
typedef struct resolved {
    int kind;
    void *addr;
    char what[TDB_PYHOOK_NAME_MAX];
} resolved;

/* C: a callable about to be called; SELF: the object it is called on
 * (a method descriptor's first argument), or NULL. */
int resolve_callable(resolved *r, PyObject *c, PyObject *self, int depth);
int resolve_getattr(resolved *r, PyObject *obj, PyObject *name, int store);
int resolve_binop(resolved *r, PyObject *a, PyObject *b, int op, int inplace);
int resolve_subscr(resolved *r, PyObject *container, int store);
int resolve_compare(resolved *r, PyObject *a, int op);

/* ------------------------------------------------------------------ */
/* What a mechanism provides                                           */

/* Install the hooks (the GIL held, Py initialized, g_extra_index and
 * g_interp_base set); C.mechanism and C.error said.  0 or -1. */
int mech_install(void);
/* Remove every hook (the caller resets the common state). */
void mech_uninstall(void);
/* Apply the breakpoint table (g_gen, g_active already updated). */
void mech_sync(void);
/* Take the step in g_step (filled from C.step): 0, or -1 with C.error. */
int mech_step_take(void *ctx);
/* The step in g_step is over (reported or cancelled): undo what it set,
 * before g_step is cleared. */
void mech_step_end(void);

#endif
