/*
 * monitoring.c: mechanism MONITORING, for CPython 3.12+ (PEP 669,
 * sys.monitoring).
 *
 * The library takes a sys.monitoring tool id (DEBUGGER_ID, else 4, else 3)
 * and registers C callbacks.  sys.monitoring rewrites a code object's
 * bytecode in place when its events change, so code without events runs
 * with no hook at all, and a frame already running a loop sees the new
 * instrumented instructions from its next one: no walk of C stacks as
 * 3.11 needs, only a walk of the frames to find which running code objects
 * have breakpoints.
 *
 *   Breakpoints.  While a breakpoint is enabled, PY_START and PY_RESUME
 *   are set for the whole interpreter; the first start of each code object
 *   looks it up in the per-code cache: one with a breakpoint gets LINE
 *   events of its own (set_local_events), any other answers DISABLE, which
 *   takes the event off that code object (until restart_events(), called
 *   when the table changes), so a program pays one callback per code
 *   object, not per call.  Code objects running when the table changes are
 *   found in every thread's frames.  A function breakpoint keeps PY_START
 *   on its code (each call marks the new frame; its first LINE stops).
 *
 *   Steps, on one thread, events set only while the step lasts:
 *     step    the start code: LINE, INSTRUCTION, CALL, PY_RETURN, PY_YIELD;
 *             the interpreter: PY_START, PY_RESUME (a new frame gets LINE:
 *             its first line stops) and PY_UNWIND.  CALL gives the callable
 *             itself; INSTRUCTION the operator, subscript or attribute an
 *             instruction runs, read from the value stack (below).
 *     next    the start code: LINE, PY_RETURN, PY_YIELD; PY_UNWIND.
 *     finish  the start code: PY_RETURN, PY_YIELD; PY_UNWIND.
 *   When the start frame returns (or unwinds), its Python caller's code
 *   gets INSTRUCTION and LINE: the caller's next instruction ends the step.
 *
 *   The value stack.  CPython saves the frame's stack pointer before a
 *   LINE callback but not before an INSTRUCTION one; so the depth is known
 *   at the line's start and carried from instruction to instruction with
 *   the compiler's own stack effects (PyCompile_OpcodeStackEffectWithJump),
 *   an exception handler's from the exception table.  Anything else (a
 *   FOR_ITER leaving its loop, a SEND) makes it unknown until the next
 *   line, and an operator there is not resolved: the step then stops at
 *   the next line, or in the Python code it calls.
 *
 *   Exceptions: while an exception slot is enabled, RAISE for the whole
 * interpreter (exceptions.c decides): a program pays only per exception.
 *
 *   Edits while no callback runs (the usual case: code without breakpoints
 *   has no events) are applied through control.sync_slot: tdebug writes
 *   the address of sync_eval_frame into the interpreter's PEP 523
 *   eval_frame slot; the next Python call in any thread runs it, which puts
 *   the slot back and applies the edit.
 *
 * sys.settrace users (pdb, coverage, debugpy before 1.8) are other
 * sys.monitoring tools since 3.12: they and tdebug do not meet
 * (control.foreign_tracers stays 0).
 */
#include <patchlevel.h>
#if PY_VERSION_HEX >= 0x030c0000 /* the opcode tables are defined once */
#define PYHOOK_OPCODE_TABLES
#endif
#include "pyhook.h"

#if PY312

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define EV(e) (1u << PY_MONITORING_EVENT_##e)
#define EV_STEP_LOCAL (EV(LINE) | EV(INSTRUCTION) | EV(CALL) | EV(PY_RETURN) | EV(PY_YIELD))
#define COMPARE_SHIFT (PY313 ? 5 : 4) /* COMPARE_OP's oparg: the operator above */

static PyObject *g_mon;     /* sys.monitoring */
static PyObject *g_disable; /* sys.monitoring.DISABLE */
static PyObject *g_missing; /* sys.monitoring.MISSING */
static int g_tool = -1;
static uint32_t g_global;   /* the interpreter-wide events in force */
static _PyFrameEvalFunction g_saved_eval; /* the eval_frame slot's own value */

/* Code objects with events of ours: what breakpoints and the step want,
 * and what is set.  Owned references. */
typedef struct watched {
    PyCodeObject *code;
    uint32_t bp, step, applied;
} watched;
static watched *g_watch;
static int g_nwatch, g_capwatch;

/* What a LINE event knows of its frame: where the line starts and the
 * value stack's depth there.  The ctx of stop() and mech_step_take(). */
typedef struct anchor {
    iframe *frame;
    int off;   /* bytes */
    int depth; /* -1: unknown */
} anchor;

static void failed(const char *what)
{
    /* The reason stays in control.error for tdebug to read; the program's
     * exception state is the caller's to restore. */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *s = ev ? PyObject_Str(ev) : NULL;
    snprintf(C.error, sizeof C.error, "sys.monitoring.%s: %s", what,
             s && utf8(s) ? utf8(s) : "failed");
    Py_XDECREF(s);
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    PyErr_Clear();
}

static int mon_call(const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *fn = PyObject_GetAttrString(g_mon, method);
    PyObject *args = fn ? Py_VaBuildValue(fmt, ap) : NULL;
    va_end(ap);
    PyObject *r = args ? PyObject_CallObject(fn, args) : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(args);
    if (!r) {
        failed(method);
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

static void set_global(uint32_t ev)
{
    if (ev != g_global && mon_call("set_events", "(iI)", g_tool, (unsigned)ev) == 0)
        g_global = ev;
}

/* The interpreter-wide events breakpoints and (WITH_STEP) the step want. */
static uint32_t global_wanted(int with_step)
{
    uint32_t ev = any_enabled() ? EV(PY_START) | EV(PY_RESUME) : 0;
    if (g_exc_n)
        ev |= EV(RAISE) | EV(PY_UNWIND); /* exceptions.c */
    if (with_step && g_step.mode) {
        ev |= EV(PY_UNWIND);
        if (g_step.mode == TDB_PYHOOK_STEP_STEP)
            ev |= EV(PY_START) | EV(PY_RESUME);
    }
    return ev;
}

static watched *watch(PyCodeObject *co)
{
    for (int i = 0; i < g_nwatch; i++)
        if (g_watch[i].code == co)
            return &g_watch[i];
    if (g_nwatch == g_capwatch) {
        int cap = g_capwatch ? 2 * g_capwatch : 16;
        watched *w = PyMem_RawRealloc(g_watch, (size_t)cap * sizeof *w);
        if (!w)
            return NULL;
        g_watch = w;
        g_capwatch = cap;
    }
    watched *w = &g_watch[g_nwatch++];
    w->code = (PyCodeObject *)Py_NewRef(co);
    w->bp = w->step = w->applied = 0;
    return w;
}

/* Set each watched code object's events to what is wanted; forget the
 * ones that want none. */
static void watch_apply(void)
{
    int n = 0;
    for (int i = 0; i < g_nwatch; i++) {
        watched *w = &g_watch[i];
        uint32_t want = w->bp | w->step;
        if (want != w->applied &&
            mon_call("set_local_events", "(iOI)", g_tool, (PyObject *)w->code, (unsigned)want) == 0)
            w->applied = want;
        if (w->applied == 0 && want == 0)
            Py_DECREF(w->code);
        else
            g_watch[n++] = *w;
    }
    g_nwatch = n;
}

/* CO wants STEP events (on top of its breakpoints') for the step. */
static void watch_for_step(PyCodeObject *co, uint32_t step)
{
    watched *w = watch(co);
    if (w && (w->step & step) != step) {
        w->step |= step;
        watch_apply();
    }
}

/* ------------------------------------------------------------------ */
/* Sync                                                                */

static void watch_running(PyThreadState *ts)
{
    int n = 0;
    for (iframe *fr = thread_frame(ts); fr && n < MAX_WALK; fr = FRAME_BACK(fr), n++) {
        if (!frame_is_python(fr) || !PyCode_Check(frame_code(fr)))
            continue;
        if (code_lookup(frame_code(fr))) {
            watched *w = watch(frame_code(fr));
            if (w)
                w->bp = EV(LINE);
        }
    }
    C.traced_threads++;
}

void mech_sync(void)
{
    for (int i = 0; i < g_nwatch; i++)
        g_watch[i].bp = code_lookup(g_watch[i].code) ? EV(LINE) : 0;
    C.traced_threads = 0;
    C.foreign_tracers = 0;
    for_each_thread(watch_running);
    set_global(global_wanted(1));
    /* Code objects that answered DISABLE to PY_START under the old table
     * are looked at again. */
    if (any_enabled())
        mon_call("restart_events", "()");
    watch_apply();
}

/* ------------------------------------------------------------------ */
/* The value stack of the start frame (see the header comment)         */

/* The stack depth where an exception handler of CO starting at byte OFF
 * begins, or -1 when none starts there. */
static int handler_depth(PyCodeObject *co, int off)
{
    exc_table t;
    exc_entry e;
    if (exc_table_open(co, &t) < 0)
        return -1;
    while (exc_table_next(&t, &e) == 0)
        if (2 * e.target == off)
            return (e.dl >> 1) + (e.dl & 1) + 1; /* lasti, then the exception */
    return -1;
}

/* Jumps whose stack effect CPython gives exactly taken or not. */
static int plain_jump(int op)
{
    switch (op) {
    case JUMP_FORWARD:
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
    case POP_JUMP_IF_FALSE:
    case POP_JUMP_IF_TRUE:
    case POP_JUMP_IF_NONE:
    case POP_JUMP_IF_NOT_NONE:
        return 1;
    default:
        return 0;
    }
}

/* The start frame is about to run the instruction at byte OFF: the stack
 * depth before it, or -1 when unknown. */
static int track_depth(PyCodeObject *co, int off)
{
    int d = -1, h = handler_depth(co, off);
    if (h >= 0) {
        d = h;
    } else if (g_step.anchored) {
        if (off == g_step.last_off)
            d = g_step.depth;
    } else if (g_step.last_off >= 0 && g_step.depth >= 0) {
        int op, arg, next;
        if (decode_instruction(g_step.bytecode, g_step.last_off, &op, &arg, &next) == 0) {
            const char *b = PyBytes_AS_STRING(g_step.bytecode);
            int after = next; /* past EXTENDED_ARG prefixes of the next one */
            while (after + 1 < PyBytes_GET_SIZE(g_step.bytecode) &&
                   (unsigned char)b[after] == EXTENDED_ARG)
                after += 2;
            int jump = off != next && off != after;
            if (!jump || plain_jump(op)) {
                int e = PyCompile_OpcodeStackEffectWithJump(op, arg, jump);
                if (e != PY_INVALID_STACK_EFFECT)
                    d = g_step.depth + e;
            } else if (op == FOR_ITER) {
                /* The loop is over (a comprehension inlined in the line,
                 * 3.12+): the iterator is popped and the jump lands past
                 * the END_FOR at its target (3.13: and the POP_TOP after
                 * it), which never run.  The compiler's effect is that of
                 * the jump to END_FOR: not this. */
                int t = next + 2 * arg;
                if (t + 1 < PyBytes_GET_SIZE(g_step.bytecode) && (unsigned char)b[t] == END_FOR) {
                    t += 2;
                    if (PY313 && t + 1 < PyBytes_GET_SIZE(g_step.bytecode) &&
                        (unsigned char)b[t] == POP_TOP)
                        t += 2;
                    if (off == t)
                        d = g_step.depth - 1;
                }
            }
            PyErr_Clear();
        }
    }
    if (d < 0 || d > co->co_stacksize)
        d = -1;
    g_step.anchored = 0;
    g_step.last_off = off;
    g_step.depth = d;
    return d;
}

/* The instruction at byte OFF of the start frame FR (stack depth DEPTH)
 * is an operator, a subscript or an attribute access: does it run native
 * code outside the interpreter first?  Calls are CALL events'. */
static int resolve_instruction(resolved *r, iframe *fr, PyCodeObject *co, int off, int depth)
{
    int op, arg, next;
    if (decode_instruction(g_step.bytecode, off, &op, &arg, &next) < 0)
        return 0;
    PyObject **sp = fr->localsplus + co->co_nlocalsplus + depth;
#define PEEK(n) ((n) <= depth ? sp[-(n)] : NULL)
#define NEED(v) if (!(v)) return 0
    PyObject *a = NULL, *b = NULL;
    switch (op) {
    case BINARY_OP:
        NEED(a = PEEK(2));
        NEED(b = PEEK(1));
        if (arg >= NB_INPLACE_ADD)
            return resolve_binop(r, a, b, arg - NB_INPLACE_ADD, 1);
        return resolve_binop(r, a, b, arg, 0);
    case BINARY_SUBSCR:
    case STORE_SUBSCR:
        NEED(a = PEEK(2));
        return resolve_subscr(r, a, op == STORE_SUBSCR);
    case BINARY_SLICE:
    case STORE_SLICE:
        NEED(a = PEEK(3));
        return resolve_subscr(r, a, op == STORE_SLICE);
    case COMPARE_OP:
        NEED(a = PEEK(2));
        return resolve_compare(r, a, arg >> COMPARE_SHIFT);
    case LOAD_ATTR:
    case STORE_ATTR:
        NEED(a = PEEK(1));
        return resolve_getattr(r, a, PyTuple_GetItem(co->co_names, op == LOAD_ATTR ? arg >> 1 : arg),
                               op == STORE_ATTR);
    default:
        return 0;
    }
#undef PEEK
#undef NEED
}

/* ------------------------------------------------------------------ */
/* Steps                                                               */

/* CTX: an anchor when the thread stopped at a LINE event. */
int mech_step_take(void *ctx)
{
    const anchor *a = ctx;
    iframe *fr = g_step.frame;
    if (!PyCode_Check(frame_code(fr))) {
        copy_str(C.error, sizeof C.error, "step: that frame runs no code object");
        return -1;
    }
    PyCodeObject *co = frame_code(fr);
    uint32_t local = EV(PY_RETURN) | EV(PY_YIELD);
    g_step.code = (PyCodeObject *)Py_NewRef(co);
    g_step.target = NULL;
    g_step.last_off = -1;
    g_step.depth = -1;
    g_step.anchored = 0;
    if (g_step.mode == TDB_PYHOOK_STEP_STEP) {
        local = EV_STEP_LOCAL;
        g_step.bytecode = PyCode_GetCode(co);
        if (!g_step.bytecode)
            PyErr_Clear();
        if (g_step.bytecode && a && a->frame == fr && a->depth >= 0) {
            g_step.last_off = a->off;
            g_step.depth = a->depth;
            g_step.anchored = 1;
        }
        /* PY_START must reach every code object again: any of them may
         * be the one the line calls. */
        mon_call("restart_events", "()");
    } else if (g_step.mode == TDB_PYHOOK_STEP_NEXT) {
        local |= EV(LINE);
    }
    set_global(global_wanted(1));
    watch_for_step(co, local);
    return 0;
}

void mech_step_end(void)
{
    for (int i = 0; i < g_nwatch; i++)
        g_watch[i].step = 0;
    Py_CLEAR(g_step.code);
    Py_CLEAR(g_step.bytecode);
    set_global(global_wanted(0));
    watch_apply();
}

/* The start frame FR (or, unwinding, the caller it returned to) is gone:
 * the step ends at its Python caller's next instruction. */
static void step_returned(iframe *fr)
{
    iframe *caller = FRAME_BACK(fr);
    while (caller && !frame_is_python(caller))
        caller = FRAME_BACK(caller);
    g_step.returned = 1;
    g_step.target = caller;
    g_epoch++;
    if (caller && PyCode_Check(frame_code(caller)))
        watch_for_step(frame_code(caller), EV(INSTRUCTION) | EV(LINE));
}

static void stop_step(PyThreadState *ts, iframe *fr, void *ctx, int line)
{
    stop(g_step.mode == TDB_PYHOOK_STEP_FINISH ? TDB_PYHOOK_STOP_FINISH : TDB_PYHOOK_STOP_STEP, -1,
         ts, fr, ctx, line, NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* The callbacks                                                       */

/* Every callback starts here: 1 when the event is nothing for us (inside
 * the library, or uninstalled by what tdebug wrote). */
static inline int ignore(void)
{
    C.stats_frames++;
    if (UNLIKELY(g_busy || !g_installed))
        return 1;
    watch_tick();
    if (UNLIKELY(C.disable | (C.generation != g_gen))) {
        apply_control();
        if (!g_installed)
            return 1;
    }
    return 0;
}

#define CODE_ARG(args, nargs) ((nargs) >= 2 && PyCode_Check((args)[0]) ? (PyCodeObject *)(args)[0] : NULL)

/* PY_START (FRESH) and PY_RESUME: (code, offset). */
static PyObject *on_start(PyObject *const *args, Py_ssize_t nargs, int fresh)
{
    PyCodeObject *co = CODE_ARG(args, nargs);
    if (ignore() || !co)
        Py_RETURN_NONE;
    PyThreadState *ts = PyThreadState_Get();
    code_info *ci = code_lookup(co);
    if (ci) {
        watched *w = watch(co);
        if (w && w->bp != EV(LINE)) {
            w->bp = EV(LINE);
            watch_apply();
        }
        if (fresh && ci->fn_slot >= 0) {
            tls_fn_frame = thread_frame(ts);
            tls_fn_slot = ci->fn_slot;
        }
        Py_RETURN_NONE;
    }
    if (stepping(ts) && g_step.mode == TDB_PYHOOK_STEP_STEP) {
        /* a frame the step went into: its first line ends the step */
        watch_for_step(co, EV(LINE));
        Py_RETURN_NONE;
    }
    if (g_step.mode == TDB_PYHOOK_STEP_STEP)
        Py_RETURN_NONE; /* the stepping thread may start this code later */
    PyErr_Clear();
    return Py_NewRef(g_disable);
}

static PyObject *cb_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return on_start(args, nargs, 1);
}

static PyObject *cb_resume(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return on_start(args, nargs, 0);
}

/* LINE: (code, line). */
static PyObject *cb_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyCodeObject *co = CODE_ARG(args, nargs);
    if (ignore() || !co)
        Py_RETURN_NONE;
    PyThreadState *ts = PyThreadState_Get();
    iframe *fr = thread_frame(ts);
    int line = (int)PyLong_AsLong(args[1]);
    PyErr_Clear();
    if (!fr || frame_code(fr) != co)
        Py_RETURN_NONE;
    /* CPython saved the stack pointer for this event: the depth at the
     * start of the line, for a step that starts here. */
    anchor a = {fr, _PyInterpreterFrame_LASTI(fr) * (int)sizeof(_Py_CODEUNIT),
                fr->stacktop >= co->co_nlocalsplus ? fr->stacktop - co->co_nlocalsplus : -1};
    code_info *ci = code_lookup(co);
    if (ci) {
        if (ci->fn_slot >= 0 && tls_fn_frame == fr) {
            tls_fn_frame = NULL;
            if (bp_should_stop(ci->fn_slot))
                stop(TDB_PYHOOK_STOP_FUNCTION, ci->fn_slot, ts, fr, &a, line, NULL, NULL);
            Py_RETURN_NONE;
        }
        int slot = code_info_slot_at(ci, line);
        if (slot >= 0) {
            if (bp_should_stop(slot))
                stop(TDB_PYHOOK_STOP_BREAKPOINT, slot, ts, fr, &a, line, NULL, NULL);
            Py_RETURN_NONE;
        }
    }
    if (stepping(ts) && step_stops_at_line(fr))
        stop_step(ts, fr, &a, line);
    Py_RETURN_NONE;
}

/* An event only a step wants: (code, offset, ...) of a thread. */
typedef struct step_ev {
    PyCodeObject *co;
    PyThreadState *ts;
    iframe *fr;
    int off;
} step_ev;

/* 1 when the thread having the event is stepping, with E filled in. */
static int step_event(PyObject *const *args, Py_ssize_t nargs, step_ev *e)
{
    e->co = CODE_ARG(args, nargs);
    if (ignore() || !e->co)
        return 0;
    e->ts = PyThreadState_Get();
    if (!stepping(e->ts))
        return 0;
    e->fr = thread_frame(e->ts);
    e->off = (int)PyLong_AsLong(args[1]);
    PyErr_Clear();
    return 1;
}

/* INSTRUCTION: (code, offset). */
static PyObject *cb_instruction(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    step_ev e;
    if (!step_event(args, nargs, &e))
        Py_RETURN_NONE;
    PyCodeObject *co = e.co;
    iframe *fr = e.fr;
    int off = e.off;
    if (g_step.returned) {
        /* the first instruction of the caller after the call returned
         * that has a line (an exception handler's PUSH_EXC_INFO has none) */
        int line = fr == g_step.target ? PyCode_Addr2Line(co, off) : -1;
        if (line > 0)
            stop_step(e.ts, fr, NULL, line);
        Py_RETURN_NONE;
    }
    if (g_step.mode != TDB_PYHOOK_STEP_STEP || fr != g_step.frame || !g_step.bytecode)
        Py_RETURN_NONE;
    int depth = track_depth(co, off);
    resolved r = {0};
    if (depth >= 0 && resolve_instruction(&r, fr, co, off, depth) && r.kind == R_NATIVE)
        stop(TDB_PYHOOK_STOP_NATIVE, -1, e.ts, fr, NULL, PyCode_Addr2Line(co, off), r.addr, r.what);
    PyErr_Clear();
    Py_RETURN_NONE;
}

/* CALL: (code, offset, callable, arg0). */
static PyObject *cb_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    step_ev e;
    if (!step_event(args, nargs, &e) || nargs < 4 || g_step.mode != TDB_PYHOOK_STEP_STEP ||
        g_step.returned || e.fr != g_step.frame)
        Py_RETURN_NONE;
    resolved r = {0};
    if (resolve_callable(&r, args[2], args[3] == g_missing ? NULL : args[3], 0) &&
        r.kind == R_NATIVE)
        stop(TDB_PYHOOK_STOP_NATIVE, -1, e.ts, e.fr, NULL, PyCode_Addr2Line(e.co, e.off), r.addr,
             r.what);
    PyErr_Clear();
    Py_RETURN_NONE;
}

/* PY_RETURN, PY_YIELD: (code, offset, value); PY_UNWIND: (code, offset,
 * exception).  The frame leaving is the current one. */
static PyObject *cb_leave(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    step_ev e;
    if (!step_event(args, nargs, &e))
        Py_RETURN_NONE;
    if (e.fr && e.fr == (g_step.returned ? g_step.target : g_step.frame))
        step_returned(e.fr);
    Py_RETURN_NONE;
}

/* PY_UNWIND: (code, offset, exception), the frame leaving with it is the
 * current one: a step's, and the stop a 'with' decided (exceptions.c). */
static PyObject *cb_unwind(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyCodeObject *co = CODE_ARG(args, nargs);
    if (g_exc_n && !ignore() && co && nargs >= 3) {
        PyThreadState *ts = PyThreadState_Get();
        iframe *fr = thread_frame(ts);
        if (fr && exc_deferred(fr) && frame_code(fr) == co) {
            int line = PyCode_Addr2Line(co, (int)PyLong_AsLong(args[1]));
            PyErr_Clear();
            exc_leave(ts, fr, 1, args[2], NULL, line);
        }
    }
    return cb_leave(self, args, nargs);
}

/* RAISE: (code, offset, exception), in each frame the exception reaches
 * (the raising one first), before its handler runs or it unwinds. */
static PyObject *cb_raise(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyCodeObject *co = CODE_ARG(args, nargs);
    if (ignore() || !co || nargs < 3 || !g_exc_n)
        Py_RETURN_NONE;
    PyThreadState *ts = PyThreadState_Get();
    iframe *fr = thread_frame(ts);
    if (!fr || frame_code(fr) != co)
        Py_RETURN_NONE;
    int line = PyCode_Addr2Line(co, (int)PyLong_AsLong(args[1]));
    PyErr_Clear();
    exc_event(ts, fr, args[2], NULL, NULL, line);
    Py_RETURN_NONE;
}

static PyMethodDef cb_defs[] = {
    {"tdebug_py_start", (PyCFunction)(void (*)(void))cb_start, METH_FASTCALL, NULL},
    {"tdebug_py_resume", (PyCFunction)(void (*)(void))cb_resume, METH_FASTCALL, NULL},
    {"tdebug_line", (PyCFunction)(void (*)(void))cb_line, METH_FASTCALL, NULL},
    {"tdebug_instruction", (PyCFunction)(void (*)(void))cb_instruction, METH_FASTCALL, NULL},
    {"tdebug_call", (PyCFunction)(void (*)(void))cb_call, METH_FASTCALL, NULL},
    {"tdebug_leave", (PyCFunction)(void (*)(void))cb_leave, METH_FASTCALL, NULL},
    {"tdebug_raise", (PyCFunction)(void (*)(void))cb_raise, METH_FASTCALL, NULL},
    {"tdebug_unwind", (PyCFunction)(void (*)(void))cb_unwind, METH_FASTCALL, NULL},
};
enum { CB_START, CB_RESUME, CB_LINE, CB_INSTRUCTION, CB_CALL, CB_LEAVE, CB_RAISE, CB_UNWIND, N_CB };

/* Which callback each event has.  The callback objects live as long as
 * the library: CPython calls them through a borrowed reference. */
static const struct {
    int event, cb;
} g_events[] = {
    {PY_MONITORING_EVENT_PY_START, CB_START},      {PY_MONITORING_EVENT_PY_RESUME, CB_RESUME},
    {PY_MONITORING_EVENT_LINE, CB_LINE},           {PY_MONITORING_EVENT_INSTRUCTION, CB_INSTRUCTION},
    {PY_MONITORING_EVENT_CALL, CB_CALL},           {PY_MONITORING_EVENT_PY_RETURN, CB_LEAVE},
    {PY_MONITORING_EVENT_PY_YIELD, CB_LEAVE},      {PY_MONITORING_EVENT_PY_UNWIND, CB_UNWIND},
    {PY_MONITORING_EVENT_RAISE, CB_RAISE},
};
static PyObject *g_cb[N_CB];

/* ------------------------------------------------------------------ */
/* Applying edits at the next Python call: control.sync_slot           */

static PyObject *sync_eval_frame(PyThreadState *ts, _PyInterpreterFrame *fr, int throwflag)
{
    PyInterpreterState *is = ts->interp;
    if (is->eval_frame == sync_eval_frame)
        is->eval_frame = g_saved_eval;
    if (g_installed && !g_busy)
        apply_control();
    _PyFrameEvalFunction next = is->eval_frame;
    return next ? next(ts, fr, throwflag) : _PyEval_EvalFrameDefault(ts, fr, throwflag);
}

/* ------------------------------------------------------------------ */
/* Install / uninstall                                                 */

static PyObject *mon_get(const char *name)
{
    PyObject *v = PyObject_GetAttrString(g_mon, name);
    if (!v)
        failed(name);
    return v;
}

int mech_install(void)
{
#ifdef Py_GIL_DISABLED
    /* Everything here relies on the GIL serializing the callbacks. */
    copy_str(C.error, sizeof C.error,
             "a free-threaded CPython (built without the GIL) is not supported");
    return -1;
#endif
    if (!g_mon) {
        PyObject *m = PySys_GetObject("monitoring"); /* borrowed */
        if (!m) {
            copy_str(C.error, sizeof C.error, "this Python has no sys.monitoring");
            return -1;
        }
        g_mon = Py_NewRef(m);
        if (!(g_disable = mon_get("DISABLE")) || !(g_missing = mon_get("MISSING")))
            return -1;
        for (int i = 0; i < N_CB; i++)
            if (!(g_cb[i] = PyCFunction_New(&cb_defs[i], NULL))) {
                failed("callbacks");
                return -1;
            }
    }
    /* DEBUGGER_ID; 3 and 4 have no assigned user */
    static const int ids[] = {PY_MONITORING_DEBUGGER_ID, 4, 3};
    char users[160] = "";
    g_tool = -1;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && g_tool < 0; i++) {
        PyObject *who = PyObject_CallMethod(g_mon, "get_tool", "i", ids[i]);
        if (!who) {
            failed("get_tool");
            return -1;
        }
        if (who == Py_None && mon_call("use_tool_id", "(is)", ids[i], "tdebug") == 0)
            g_tool = ids[i];
        else if (utf8(who))
            snprintf(users + strlen(users), sizeof users - strlen(users), "%s%d: %s",
                     users[0] ? ", " : "", ids[i], utf8(who));
        Py_DECREF(who);
        PyErr_Clear();
    }
    if (g_tool < 0) {
        snprintf(C.error, sizeof C.error,
                 "every sys.monitoring tool id tdebug can take is in use (%s)", users);
        return -1;
    }
    for (size_t i = 0; i < sizeof g_events / sizeof g_events[0]; i++)
        if (mon_call("register_callback", "(iiO)", g_tool, 1 << g_events[i].event,
                     g_cb[g_events[i].cb]) < 0) {
            mon_call("free_tool_id", "(i)", g_tool);
            return -1;
        }
    g_global = 0;
    PyInterpreterState *is = PyInterpreterState_Main();
    g_saved_eval = is->eval_frame == sync_eval_frame ? NULL : is->eval_frame;
    C.sync_slot = (uint64_t)(uintptr_t)&is->eval_frame;
    C.sync_eval_frame = (uint64_t)(uintptr_t)sync_eval_frame;
    C.mechanism = TDB_PYHOOK_MECH_MONITORING;
    return 0;
}

void mech_uninstall(void)
{
    set_global(0);
    for (int i = 0; i < g_nwatch; i++)
        g_watch[i].bp = g_watch[i].step = 0;
    watch_apply();
    for (size_t i = 0; i < sizeof g_events / sizeof g_events[0]; i++)
        mon_call("register_callback", "(iiO)", g_tool, 1 << g_events[i].event, Py_None);
    mon_call("free_tool_id", "(i)", g_tool);
    g_tool = -1;
    PyInterpreterState *is = PyInterpreterState_Main();
    if (is->eval_frame == sync_eval_frame)
        is->eval_frame = g_saved_eval;
    C.sync_slot = 0;
    C.sync_eval_frame = 0;
    C.traced_threads = 0;
}

#endif /* PY312 */
