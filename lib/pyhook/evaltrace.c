/*
 * evaltrace.c: mechanism EVAL_TRACE, for CPython 3.8-3.11.
 *
 * A PEP 523 frame evaluation hook sees every frame start and end.  Line
 * events come from a C trace function, but only where they are wanted:
 * CPython keeps a per-thread trace function and (3.10+) a per-evaluator-
 * call `use_tracing` flag in the _PyCFrame on the C stack, copied into the
 * callee at entry and back into the caller at exit.  The hook sets that
 * flag for each frame it starts: on when the frame's code has a breakpoint
 * or a step is under way on the thread, off otherwise; so code without
 * breakpoints runs at full speed (what the hook itself costs aside), and
 * code with one gets line events.  3.8/3.9 have no _PyCFrame: there the
 * trace function itself is set and cleared around each frame.
 *   Frames that were already running when a breakpoint was set (attach to
 * a training loop, break inside the loop) are found by walking every
 * thread's frames at each sync: their evaluator calls ("segments") get
 * use_tracing on at once, by plain stores into the _PyCFrame of a thread
 * that is blocked (it re-reads the flag before its next instruction).
 * Inner segments that were started before the hook existed return to their
 * caller without passing through it, copying their flag outward, so they
 * are kept traced too (the `keep` set).
 *   The exception slots (exceptions.c) need the PyTrace_EXCEPTION events
 * of every frame, not its lines.  CPython gives them to the thread's trace
 * function whatever the frame's tracing: 3.10+ at a use_tracing flag of 0
 * (watch_exceptions()); 3.8/3.9, where the trace function is per thread,
 * with the thread's use_tracing 0 (no call and return events) and the
 * frame's f_trace_lines 0 (no line events) for a frame that wants none.
 *   A thread whose trace function belongs to someone else (sys.settrace:
 * pdb, debugpy, coverage) is left alone and counted in
 * control.foreign_tracers.
 */
#include <patchlevel.h>
#if PY_VERSION_HEX < 0x030c0000 /* the opcode tables are defined once */
#define PYHOOK_OPCODE_TABLES
#endif
#include "pyhook.h"

#if !PY312

#include <string.h>

#define MAX_KEEP 256

#if PY311
#define IFRAME_OF(f) ((f)->f_frame)
typedef PyObject *(*eval_fn)(PyThreadState *, _PyInterpreterFrame *, int);
#define USE_TRACING_ON 255
#else
#define IFRAME_OF(f) (f)
#if PY_VERSION_HEX >= 0x03090000
typedef PyObject *(*eval_fn)(PyThreadState *, PyFrameObject *, int);
#else
typedef PyObject *(*eval_fn)(PyFrameObject *, int);
#endif
#define USE_TRACING_ON 1
#endif

/* A frame starting from its beginning (not a generator resuming). */
static inline int frame_is_fresh(iframe *fr, int throwflag)
{
    if (throwflag)
        return 0;
#if PY311
    return _PyInterpreterFrame_LASTI(fr) < 0;
#else
    return fr->f_lasti < 0;
#endif
}

static eval_fn g_prev_eval; /* what the hook chains to */

/* Frames of segments that must stay traced because an outer segment wants
 * line events (see the header comment). */
static iframe *g_keep[MAX_KEEP];
static int g_nkeep;

static int trace_func(PyObject *obj, PyFrameObject *f, int what, PyObject *arg);

/* Is FR the first frame its evaluator call ran (3.11 inlines Python-to-
 * Python calls; earlier versions run one frame per call)? */
static inline int segment_ends(iframe *fr)
{
#if PY311
    return fr->is_entry;
#else
    (void)fr;
    return 1;
#endif
}

static inline int in_keep(iframe *fr)
{
    for (int i = 0; i < g_nkeep; i++)
        if (g_keep[i] == fr)
            return 1;
    return 0;
}

/* The frames one evaluator call runs: FR and its callers up to the frame
 * the call was entered with (3.11 inlines Python-to-Python calls; earlier
 * versions run one frame per call). */
static int segment_wants(iframe *fr)
{
    for (int n = 0; fr && n < MAX_WALK; fr = FRAME_BACK(fr), n++) {
        if (code_lookup(frame_code(fr)) || in_keep(fr) || exc_deferred(fr))
            return 1;
        if (segment_ends(fr))
            break;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Turning line events on and off                                      */

static inline int owns_tracing(PyThreadState *ts)
{
    return ts->c_tracefunc == NULL || ts->c_tracefunc == trace_func;
}

#if PY310
/* 3.10+: our trace function stays set on the thread; the per-call flag
 * decides.  CF is the _PyCFrame whose evaluator (or whose callee, which
 * copies it at entry) is concerned. */
static inline void set_tracing(PyThreadState *ts, void *cfp, int on)
{
#if PY311
    _PyCFrame *cf = cfp;
#else
    CFrame *cf = cfp;
#endif
    if (ts->c_tracefunc != trace_func) {
        if (!on)
            return;
        Py_CLEAR(ts->c_traceobj);
        ts->c_tracefunc = trace_func;
    }
    cf->use_tracing = (ts->tracing == 0 && (on || ts->c_profilefunc)) ? USE_TRACING_ON : 0;
}
#else
static inline int *tracing_possible(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x03090000
    return &ts->interp->ceval.tracing_possible;
#else
    return &_PyRuntime.ceval.tracing_possible;
#endif
}

/* 3.8/3.9: line events depend on the thread's trace function itself
 * (and on each frame's f_trace_lines), call and return events on its
 * use_tracing too; an exception slot keeps the function set (the header
 * comment). */
static inline void put_tracefunc(PyThreadState *ts, Py_tracefunc want)
{
    if (ts->c_tracefunc == want)
        return;
    *tracing_possible(ts) += (want != NULL) - (ts->c_tracefunc != NULL);
    if (want)
        Py_CLEAR(ts->c_traceobj);
    ts->c_tracefunc = want;
}

static inline void set_tracing(PyThreadState *ts, void *unused, int on)
{
    (void)unused;
    put_tracefunc(ts, on || g_exc_n ? trace_func : NULL);
    ts->use_tracing = ((on && ts->c_tracefunc) || ts->c_profilefunc != NULL);
}

/* Every running frame of TS gets line events again where its thread
 * traces (a breakpoint or a step may want one that started without). */
static void lines_on(PyThreadState *ts)
{
    int n = 0;
    for (PyFrameObject *f = ts->frame; f && n < MAX_WALK; f = f->f_back, n++)
        f->f_trace_lines = 1;
}
#endif

#if PY310
/* 3.10+: CPython gives a thread's trace function the exceptions of every
 * frame (PyTrace_EXCEPTION, at its 'error:' label), whether or not that
 * frame's evaluator call traces lines: with an exception slot enabled our
 * trace function is set on the thread, and only the frames that want line
 * events run traced.  (A trace call turns its frame's flag on; the next
 * call or return through the hook turns it off again.) */
static inline void watch_exceptions(PyThreadState *ts)
{
    if (g_exc_n && ts->c_tracefunc == NULL) {
        Py_CLEAR(ts->c_traceobj);
        ts->c_tracefunc = trace_func;
    }
}
#endif

static inline void *current_cframe(PyThreadState *ts)
{
#if PY310
    return ts->cframe;
#else
    return NULL;
#endif
}

/* Recompute line events for every frame of thread TS: at each sync, step
 * start and end.  Also rebuilds the keep set for TS's segments. */
static void retrace(PyThreadState *ts)
{
    if (!owns_tracing(ts)) {
        C.foreign_tracers++;
        return;
    }
    int step = stepping(ts);
    iframe *segs[512];
    void *cfs[512];
    int nseg = 0;
#if PY311
    for (_PyCFrame *cf = ts->cframe; cf && nseg < 512; cf = cf->previous) {
        if (!cf->current_frame)
            continue;
        segs[nseg] = cf->current_frame;
        cfs[nseg++] = cf;
    }
#elif PY310
    CFrame *cf = ts->cframe;
    for (PyFrameObject *f = ts->frame; f && cf && nseg < 512; f = f->f_back, cf = cf->previous) {
        segs[nseg] = f;
        cfs[nseg++] = cf;
    }
#else
    for (PyFrameObject *f = ts->frame; f && nseg < 512; f = f->f_back) {
        segs[nseg] = f;
        cfs[nseg++] = NULL;
    }
#endif
    /* The outermost segment that wants line events: every segment inside
     * it is kept traced, so that its flag reaches the wanting one. */
    int outer = -1;
    for (int i = 0; i < nseg; i++)
        if (segment_wants(segs[i]))
            outer = i;
    for (int i = 0; i < outer; i++) {
        int n = 0;
        for (iframe *fr = segs[i]; fr && n < MAX_WALK; fr = FRAME_BACK(fr), n++) {
            if (g_nkeep < MAX_KEEP && !in_keep(fr))
                g_keep[g_nkeep++] = fr;
            if (segment_ends(fr))
                break;
        }
    }
#if PY310
    for (int i = 0; i < nseg; i++)
        set_tracing(ts, cfs[i], step || i <= outer);
    watch_exceptions(ts);
#else
    lines_on(ts);
    set_tracing(ts, NULL, step || outer >= 0);
#endif
    (void)cfs;
}

/* ------------------------------------------------------------------ */
/* Sync: apply the breakpoint table                                    */

static void count_traced(PyThreadState *ts)
{
    if (ts->c_tracefunc == trace_func)
        C.traced_threads++;
}

void mech_sync(void)
{
    g_nkeep = 0;
    C.foreign_tracers = 0;
    for_each_thread(retrace);
    C.traced_threads = 0;
    for_each_thread(count_traced);
}

/* ------------------------------------------------------------------ */
/* Steps                                                               */

static void step_clear_opcodes(void)
{
    for (int i = 0; i < g_step.nopcodes; i++) {
        g_step.opcodes[i]->f_trace_opcodes = 0;
        Py_DECREF(g_step.opcodes[i]);
    }
    g_step.nopcodes = 0;
}

static void step_want_opcodes(PyFrameObject *f)
{
    if (!f || g_step.nopcodes == 4)
        return;
    for (int i = 0; i < g_step.nopcodes; i++)
        if (g_step.opcodes[i] == f)
            return;
    Py_INCREF(f);
    f->f_trace_opcodes = 1;
    g_step.opcodes[g_step.nopcodes++] = f;
}

void mech_step_end(void)
{
    step_clear_opcodes();
}

/* The frame object of thread TS's innermost frame (new reference). */
static PyFrameObject *thread_frame_object(PyThreadState *ts)
{
    if (ts == PyThreadState_Get()) {
        PyFrameObject *f = PyEval_GetFrame();
        Py_XINCREF(f);
        return f;
    }
    PyObject *d = _PyThread_CurrentFrames();
    PyObject *f = NULL;
    if (d) {
        PyObject *key = PyLong_FromUnsignedLong(ts->thread_id);
        if (key) {
            f = PyDict_GetItemWithError(d, key);
            Py_XINCREF(f);
            Py_DECREF(key);
        }
        Py_DECREF(d);
    }
    PyErr_Clear();
    return (PyFrameObject *)f;
}

/* CTX: the frame object of the frame the step starts in, when the thread
 * stopped in its trace function. */
int mech_step_take(void *ctx)
{
    PyFrameObject *f = ctx;
    PyThreadState *ts = g_step.ts;
    if (!owns_tracing(ts)) {
        copy_str(C.error, sizeof C.error,
                 "step: another trace function (sys.settrace) owns that thread");
        return -1;
    }
    if (g_step.mode == TDB_PYHOOK_STEP_STEP) {
        PyFrameObject *own = NULL;
        if (!f || IFRAME_OF(f) != g_step.frame) {
            own = thread_frame_object(ts);
            f = own;
        }
        if (f && IFRAME_OF(f) == g_step.frame)
            step_want_opcodes(f);
        Py_XDECREF(own);
    }
    retrace(ts);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Where a step goes native                                            */

/* The instruction frame F is about to run: does it call native code
 * outside the interpreter first?  Fills R. */
static int resolve_instruction(resolved *r, PyFrameObject *f)
{
    PyCodeObject *co = frame_code(IFRAME_OF(f));
    int opcode, oparg;
    PyObject **sp;
#if PY311
    _PyInterpreterFrame *fr = f->f_frame;
    _Py_CODEUNIT *ip = fr->prev_instr;
    _Py_CODEUNIT *end = _PyCode_CODE(co) + Py_SIZE(co);
    if (ip < _PyCode_CODE(co) || ip >= end || fr->stacktop < 0)
        return 0;
    opcode = _PyOpcode_Deopt[_Py_OPCODE(*ip)];
    oparg = _Py_OPARG(*ip);
    while (opcode == EXTENDED_ARG && ip + 1 < end) {
        ip++;
        opcode = _PyOpcode_Deopt[_Py_OPCODE(*ip)];
        oparg = (oparg << 8) | _Py_OPARG(*ip);
    }
    sp = fr->localsplus + fr->stacktop;
#else
    const unsigned char *code = (const unsigned char *)PyBytes_AS_STRING(co->co_code);
    Py_ssize_t len = PyBytes_GET_SIZE(co->co_code);
#if PY310
    Py_ssize_t i = (Py_ssize_t)f->f_lasti * 2;
    sp = f->f_valuestack + f->f_stackdepth;
#else
    Py_ssize_t i = f->f_lasti;
    sp = f->f_stacktop;
    if (!sp)
        return 0;
#endif
    if (i < 0 || i + 1 >= len)
        return 0;
    opcode = code[i];
    oparg = code[i + 1];
    while (opcode == EXTENDED_ARG && i + 3 < len) {
        i += 2;
        opcode = code[i];
        oparg = (oparg << 8) | code[i + 1];
    }
#endif
#define PEEK(n) (sp[-(n)])
    PyObject *names = co->co_names;
    switch (opcode) {
#if PY311
    case CALL:
#else
    case CALL_FUNCTION:
        return resolve_callable(r, PEEK(oparg + 1), NULL, 0);
    case CALL_FUNCTION_KW:
        return resolve_callable(r, PEEK(oparg + 2), NULL, 0);
    case CALL_METHOD:
#endif
        /* a method and its self, or NULL and the callable */
        if (PEEK(oparg + 2))
            return resolve_callable(r, PEEK(oparg + 2), PEEK(oparg + 1), 0);
        return resolve_callable(r, PEEK(oparg + 1), NULL, 0);
    case CALL_FUNCTION_EX:
        return resolve_callable(r, PEEK(2 + (oparg & 1)), NULL, 0);
#if PY311
    case BINARY_OP:
        if (oparg >= NB_INPLACE_ADD)
            return resolve_binop(r, PEEK(2), PEEK(1), oparg - NB_INPLACE_ADD, 1);
        return resolve_binop(r, PEEK(2), PEEK(1), oparg, 0);
#else
#define BIN(opc, op, inplace) case opc: return resolve_binop(r, PEEK(2), PEEK(1), op, inplace);
    BIN(BINARY_ADD, 0, 0) BIN(BINARY_AND, 1, 0) BIN(BINARY_FLOOR_DIVIDE, 2, 0)
    BIN(BINARY_LSHIFT, 3, 0) BIN(BINARY_MATRIX_MULTIPLY, 4, 0) BIN(BINARY_MULTIPLY, 5, 0)
    BIN(BINARY_MODULO, 6, 0) BIN(BINARY_OR, 7, 0) BIN(BINARY_POWER, 8, 0)
    BIN(BINARY_RSHIFT, 9, 0) BIN(BINARY_SUBTRACT, 10, 0) BIN(BINARY_TRUE_DIVIDE, 11, 0)
    BIN(BINARY_XOR, 12, 0)
    BIN(INPLACE_ADD, 0, 1) BIN(INPLACE_AND, 1, 1) BIN(INPLACE_FLOOR_DIVIDE, 2, 1)
    BIN(INPLACE_LSHIFT, 3, 1) BIN(INPLACE_MATRIX_MULTIPLY, 4, 1) BIN(INPLACE_MULTIPLY, 5, 1)
    BIN(INPLACE_MODULO, 6, 1) BIN(INPLACE_OR, 7, 1) BIN(INPLACE_POWER, 8, 1)
    BIN(INPLACE_RSHIFT, 9, 1) BIN(INPLACE_SUBTRACT, 10, 1) BIN(INPLACE_TRUE_DIVIDE, 11, 1)
    BIN(INPLACE_XOR, 12, 1)
#undef BIN
#endif
    case BINARY_SUBSCR:
        return resolve_subscr(r, PEEK(2), 0);
    case STORE_SUBSCR:
        return resolve_subscr(r, PEEK(2), 1);
    case COMPARE_OP:
        return resolve_compare(r, PEEK(2), oparg);
    case LOAD_ATTR:
    case LOAD_METHOD:
        return resolve_getattr(r, PEEK(1), PyTuple_GetItem(names, oparg), 0);
    case STORE_ATTR:
        return resolve_getattr(r, PEEK(1), PyTuple_GetItem(names, oparg), 1);
    default:
        return 0;
    }
#undef PEEK
}

/* ------------------------------------------------------------------ */
/* The trace function: line, opcode and return events of traced frames */

static void on_line(PyThreadState *ts, PyFrameObject *f)
{
    iframe *fr = IFRAME_OF(f);
    int line = PyFrame_GetLineNumber(f);
    code_info *ci = code_lookup(frame_code(fr));
    if (ci) {
        if (ci->fn_slot >= 0 && tls_fn_frame == fr) {
            tls_fn_frame = NULL;
            if (bp_should_stop(ci->fn_slot))
                stop(TDB_PYHOOK_STOP_FUNCTION, ci->fn_slot, ts, fr, f, line, NULL, NULL);
            return;
        }
        int slot = code_info_slot_at(ci, line);
        if (slot >= 0) {
            if (bp_should_stop(slot))
                stop(TDB_PYHOOK_STOP_BREAKPOINT, slot, ts, fr, f, line, NULL, NULL);
            return;
        }
    }
    if (stepping(ts) && step_stops_at_line(fr))
        stop(g_step.mode == TDB_PYHOOK_STEP_FINISH ? TDB_PYHOOK_STOP_FINISH : TDB_PYHOOK_STOP_STEP,
             -1, ts, fr, f, line, NULL, NULL);
}

static void on_opcode(PyThreadState *ts, PyFrameObject *f)
{
    if (!stepping(ts))
        return;
    iframe *fr = IFRAME_OF(f);
    if (g_step.returned) {
        /* the first instruction of the caller after the call returned
         * that has a line (3.11: an exception handler's PUSH_EXC_INFO has
         * none) */
        int line = PyFrame_GetLineNumber(f);
        if (line > 0)
            stop(g_step.mode == TDB_PYHOOK_STEP_FINISH ? TDB_PYHOOK_STOP_FINISH
                                                       : TDB_PYHOOK_STOP_STEP,
                 -1, ts, fr, f, line, NULL, NULL);
        return;
    }
    if (g_step.mode != TDB_PYHOOK_STEP_STEP || fr != g_step.frame)
        return;
    resolved r = {0};
    if (resolve_instruction(&r, f) && r.kind == R_NATIVE)
        stop(TDB_PYHOOK_STOP_NATIVE, -1, ts, fr, f, PyFrame_GetLineNumber(f), r.addr, r.what);
    PyErr_Clear();
}

static void on_return(PyThreadState *ts, PyFrameObject *f)
{
    if (!stepping(ts) || IFRAME_OF(f) != g_step.frame)
        return;
    /* Stop at the caller's next instruction, right after the call. */
    g_step.returned = 1;
    g_epoch++;
    step_clear_opcodes();
#if PY_VERSION_HEX >= 0x03090000
    PyFrameObject *back = PyFrame_GetBack(f);
#else
    PyFrameObject *back = f->f_back;
    Py_XINCREF(back);
#endif
    step_want_opcodes(back);
    Py_XDECREF(back);
    retrace(ts);
}

static int trace_func(PyObject *obj, PyFrameObject *f, int what, PyObject *arg)
{
    if (g_busy || !g_installed)
        return 0;
    watch_tick();
    if (UNLIKELY(C.disable)) {
        /* a loop that calls nothing reaches no frame start */
        apply_control();
        return 0;
    }
    PyThreadState *ts = PyThreadState_Get();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    switch (what) {
    case PyTrace_LINE:
        on_line(ts, f);
        break;
    case PyTrace_OPCODE:
        on_opcode(ts, f);
        break;
    case PyTrace_RETURN:
        on_return(ts, f);
        /* ARG: the value returned, or NULL when an exception leaves */
        if (exc_deferred(IFRAME_OF(f)))
            exc_leave(ts, IFRAME_OF(f), arg == NULL, NULL, f, PyFrame_GetLineNumber(f));
        break;
    case PyTrace_EXCEPTION:
        /* ARG: (type, value, traceback), the value normalized; the
         * traceback is the one so far (the value's __traceback__ is set
         * only once caught) */
        if (g_exc_n && arg && PyTuple_Check(arg) && PyTuple_GET_SIZE(arg) == 3)
            exc_event(ts, IFRAME_OF(f), PyTuple_GET_ITEM(arg, 1), PyTuple_GET_ITEM(arg, 2), f,
                      PyFrame_GetLineNumber(f));
        break;
    default:
        break;
    }
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The frame evaluation hook                                           */

/* Back in the caller's evaluator call (segment): its line events. */
static void recompute_caller(PyThreadState *ts)
{
    if (g_installed && owns_tracing(ts)) {
        iframe *caller = thread_frame(ts);
        int cw = stepping(ts) || (caller && segment_wants(caller));
        set_tracing(ts, current_cframe(ts), cw);
    }
}

/* Does the caller's evaluator call (the current segment) have line events? */
static inline int caller_traced(PyThreadState *ts)
{
#if PY311
    return ts->cframe->use_tracing != 0;
#elif PY310
    return ts->cframe->use_tracing != 0;
#else
    return ts->c_tracefunc != NULL;
#endif
}

#if PY_VERSION_HEX >= 0x03090000
#define EVAL_ARGS PyThreadState *ts, iframe *fr, int throwflag
#define CALL_PREV(ts, fr, thr) g_prev_eval(ts, fr, thr)
#define CALL_HOOK(ts, fr, thr) hook_eval(ts, fr, thr)
#else
#define EVAL_ARGS iframe *fr, int throwflag
#define CALL_PREV(ts, fr, thr) g_prev_eval(fr, thr)
#define CALL_HOOK(ts, fr, thr) hook_eval(fr, thr)
#endif

static PyObject *hook_eval(EVAL_ARGS);

/* tdebug edited the table or said disable (or the library runs this
 * frame itself): apply it, then start the frame as the hook would. */
static __attribute__((noinline)) PyObject *eval_control(PyThreadState *ts, iframe *fr,
                                                        int throwflag)
{
    if (g_busy)
        return CALL_PREV(ts, fr, throwflag);
    apply_control();
    if (!g_installed)
        return CALL_PREV(ts, fr, throwflag);
    return CALL_HOOK(ts, fr, throwflag);
}

/* A frame that gets line events, or whose caller has them, or a step
 * under way: what the hook does besides starting it. */
static __attribute__((noinline)) PyObject *eval_traced(PyThreadState *ts, iframe *fr,
                                                       int throwflag)
{
    code_info *ci = code_lookup(frame_code(fr));
    int step = stepping(ts);
    int want = ci != NULL ||
               (step && (g_step.mode == TDB_PYHOOK_STEP_STEP || fr == g_step.frame));
    if (ci && ci->fn_slot >= 0 && frame_is_fresh(fr, throwflag)) {
        tls_fn_frame = fr;
        tls_fn_slot = ci->fn_slot;
    }
#if PY310
    watch_exceptions(ts);
    if (!want && !caller_traced(ts))
        return CALL_PREV(ts, fr, throwflag); /* a step on another thread */
#else
    if (!want && !caller_traced(ts) && !g_exc_n)
        return CALL_PREV(ts, fr, throwflag); /* a step on another thread */
    if (g_exc_n)
        fr->f_trace_lines = want;
#endif
    if (want)
        C.stats_traced++;
    set_tracing(ts, current_cframe(ts), want);
    PyObject *res = CALL_PREV(ts, fr, throwflag);
    recompute_caller(ts);
    return res;
}

/* A thread whose trace function is another's (sys.settrace): no
 * breakpoint can stop there.  The first frame of code with one that starts
 * there is reported (once a thread), so that tdebug can tell the user why
 * their breakpoint never stops. */
static __thread int tls_foreign_told;

static __attribute__((noinline)) PyObject *eval_foreign(PyThreadState *ts, iframe *fr,
                                                        int throwflag)
{
    if (!tls_foreign_told && !g_busy && code_lookup(frame_code(fr))) {
        tls_foreign_told = 1;
        stop(TDB_PYHOOK_STOP_FOREIGN, -1, ts, fr, NULL, frame_code(fr)->co_firstlineno, NULL,
             NULL);
    }
    return CALL_PREV(ts, fr, throwflag);
}

/* Every Python frame starts here.  The common case (neither the frame
 * nor its caller has line events, no step) is a few loads and a tail call
 * of the evaluator: no frame of the hook's on the C stack, nothing done on
 * return.  That needs nothing after the call: the callee's evaluator
 * copies its use_tracing flag back into the caller's, and the callee's is
 * the caller's (0) unless a frame inside it turned it on, which then set
 * it back on its own return (eval_traced), or a sync turned on this whole
 * thread's segments from the one that wants line events inward (retrace),
 * which may leave the caller traced (correct, slower) until it returns,
 * never untraced where it should be traced. */
static PyObject *hook_eval(EVAL_ARGS)
{
#if PY_VERSION_HEX < 0x03090000
    PyThreadState *ts = _PyThreadState_GET();
#endif
    C.stats_frames++;
    watch_tick();
    if (UNLIKELY(C.disable | g_busy | (C.generation != g_gen)))
        return eval_control(ts, fr, throwflag);
    if (LIKELY(!g_active))
        return CALL_PREV(ts, fr, throwflag);
    if (UNLIKELY(!owns_tracing(ts)))
        return eval_foreign(ts, fr, throwflag);
    if (LIKELY(code_clean(frame_code(fr)) && !g_step.mode && !caller_traced(ts) &&
               (!g_exc_n || ts->c_tracefunc == trace_func)))
        return CALL_PREV(ts, fr, throwflag);
    return eval_traced(ts, fr, throwflag);
}

/* ------------------------------------------------------------------ */
/* Install / uninstall                                                 */

static eval_fn default_eval(void)
{
    return (eval_fn)_PyEval_EvalFrameDefault;
}

static eval_fn get_eval(PyInterpreterState *is)
{
#if PY_VERSION_HEX >= 0x03090000
    return (eval_fn)_PyInterpreterState_GetEvalFrameFunc(is);
#else
    return is->eval_frame;
#endif
}

static void set_eval(PyInterpreterState *is, eval_fn fn)
{
#if PY_VERSION_HEX >= 0x03090000
    _PyInterpreterState_SetEvalFrameFunc(is, (_PyFrameEvalFunction)fn);
#else
    is->eval_frame = fn;
#endif
}

static void untrace_thread(PyThreadState *ts)
{
    if (ts->c_tracefunc != trace_func)
        return;
#if PY310
    ts->c_tracefunc = NULL;
    int on = ts->c_profilefunc != NULL && ts->tracing == 0;
#if PY311
    for (_PyCFrame *cf = ts->cframe; cf; cf = cf->previous)
        cf->use_tracing = on ? 255 : 0;
#else
    for (CFrame *cf = ts->cframe; cf; cf = cf->previous)
        cf->use_tracing = on;
#endif
#else
    lines_on(ts);
    put_tracefunc(ts, NULL);
    ts->use_tracing = ts->c_profilefunc != NULL;
#endif
}

void mech_uninstall(void)
{
    for (PyInterpreterState *is = PyInterpreterState_Head(); is; is = PyInterpreterState_Next(is))
        if (get_eval(is) == (eval_fn)hook_eval)
            set_eval(is, g_prev_eval);
    for_each_thread(untrace_thread);
    C.traced_threads = 0;
    for_each_thread(count_traced);
    g_nkeep = 0;
}

int mech_install(void)
{
    PyInterpreterState *main_is = PyInterpreterState_Head();
    eval_fn prev = get_eval(main_is);
    if (!prev)
        prev = default_eval();
    if (prev == (eval_fn)hook_eval)
        prev = default_eval();
    g_prev_eval = prev;
    for (PyInterpreterState *is = main_is; is; is = PyInterpreterState_Next(is))
        set_eval(is, hook_eval);
    C.mechanism = TDB_PYHOOK_MECH_EVAL_TRACE;
    return 0;
}

#endif /* !PY312 */
