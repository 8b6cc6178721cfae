/*
 * pyhook.c: Python breakpoints and stepping, from inside the interpreter.
 *
 * tdebug loads this library into the target with gdb (dlopen at a safe
 * point, then tdebug_pyhook_install()) and drives it through the control
 * block of lib/tdebug_pyhook.h; read that header first: it is the contract.
 * Built once per CPython version against that version's internal headers
 * (-DPy_BUILD_CORE); Py* symbols resolve against the process.
 *
 * 3.8-3.11 (mechanism EVAL_TRACE).  A PEP 523 frame evaluation hook sees
 * every frame start and end.  Line events come from a C trace function, but
 * only where they are wanted: CPython keeps a per-thread trace function and
 * (3.10+) a per-evaluator-call `use_tracing` flag in the _PyCFrame on the C
 * stack, copied into the callee at entry and back into the caller at exit.
 * The hook sets that flag for each frame it starts: on when the frame's code
 * has a breakpoint or a step is under way on the thread, off otherwise; so
 * code without breakpoints runs at full speed (what the hook itself costs
 * aside), and code with one gets line events.  3.8/3.9 have no _PyCFrame:
 * there the trace function itself is set and cleared around each frame.
 *   Frames that were already running when a breakpoint was set (attach to
 * a training loop, break inside the loop) are found by walking every
 * thread's frames at each sync: their evaluator calls ("segments") get
 * use_tracing on at once, by plain stores into the _PyCFrame of a thread
 * that is blocked (it re-reads the flag before its next instruction).
 * Inner segments that were started before the hook existed return to their
 * caller without passing through it, copying their flag outward, so they
 * are kept traced too (the `keep` set).
 *
 * Per code object, what the breakpoint table means for it is cached in
 * co_extra, keyed by the generation it was computed for; a code object
 * that matches nothing costs a tagged integer, no allocation.
 *
 * Rules kept everywhere: the GIL is held whenever CPython is called (the
 * hook and the trace function run with it; gdb calls us only at safe
 * points); an exception raised inside the library is cleared and the one
 * the program had is restored; nothing is printed; a thread whose trace
 * function belongs to someone else (sys.settrace: pdb, debugpy, coverage)
 * is left alone and counted in control.foreign_tracers.
 */
#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030c0000
/* 3.12+: see the PY312 section below */
#elif PY_VERSION_HEX >= 0x030b0000
#define NEED_OPCODE_TABLES
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_opcode.h>
#include <internal/pycore_pystate.h>
#undef NEED_OPCODE_TABLES
#elif PY_VERSION_HEX >= 0x03090000
#include <internal/pycore_interp.h>
#include <internal/pycore_pystate.h>
#include <opcode.h>
#else
#include <internal/pycore_pystate.h>
#include <opcode.h>
#endif

#include "tdebug_pyhook.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifndef Py_IS_TYPE /* 3.8 */
#define Py_IS_TYPE(o, t) (Py_TYPE(o) == (t))
#endif

#define PY310 (PY_VERSION_HEX >= 0x030a0000)
#define PY311 (PY_VERSION_HEX >= 0x030b0000)
#define PY312 (PY_VERSION_HEX >= 0x030c0000)

#define MAX_WALK 10000 /* frames per thread: above any recursion limit */
#define MAX_KEEP 256

EXPORT tdb_pyhook_control tdebug_pyhook_control = {
    .magic = TDB_PYHOOK_MAGIC,
    .abi = TDB_PYHOOK_ABI,
    .size = sizeof(tdb_pyhook_control),
    .py_version = PY_VERSION_HEX,
};
#define C tdebug_pyhook_control

EXPORT __attribute__((noinline)) void tdebug_pyhook_stop(void)
{
    /* tdebug's gdb breakpoint is here; the asm keeps the call and the
     * function from being folded away. */
    __asm__ volatile("" ::: "memory");
}

#if PY312
/* 3.12+ want sys.monitoring: not implemented in this version of the
 * library.  Everything below refuses cleanly. */
static int refuse(void)
{
    snprintf(C.error, sizeof C.error,
             "this library does not support Python %d.%d yet (3.8-3.11 only)",
             (PY_VERSION_HEX >> 24) & 0xff, (PY_VERSION_HEX >> 16) & 0xff);
    return -1;
}
EXPORT int tdebug_pyhook_install(void) { return refuse(); }
EXPORT int tdebug_pyhook_sync(void) { return refuse(); }
EXPORT int tdebug_pyhook_step_arm(void) { return refuse(); }
EXPORT int tdebug_pyhook_uninstall(void) { return 0; }
#else

/* ------------------------------------------------------------------ */
/* Version shims                                                       */

#if PY311
typedef _PyInterpreterFrame iframe;  /* a frame's identity for us */
#define FRAME_BACK(fr) ((fr)->previous)
#define IFRAME_OF(f) ((f)->f_frame)
typedef PyObject *(*eval_fn)(PyThreadState *, _PyInterpreterFrame *, int);
#define USE_TRACING_ON 255
#else
typedef PyFrameObject iframe;
#define FRAME_BACK(fr) ((fr)->f_back)
#define IFRAME_OF(f) (f)
#if PY_VERSION_HEX >= 0x03090000
typedef PyObject *(*eval_fn)(PyThreadState *, PyFrameObject *, int);
#else
typedef PyObject *(*eval_fn)(PyFrameObject *, int);
#endif
#define USE_TRACING_ON 1
#endif

static inline PyCodeObject *frame_code(iframe *fr) { return fr->f_code; }

static inline iframe *thread_frame(PyThreadState *ts)
{
#if PY311
    return ts->cframe->current_frame;
#else
    return ts->frame;
#endif
}

static int frame_line(iframe *fr)
{
#if PY311
    return PyCode_Addr2Line(fr->f_code, _PyInterpreterFrame_LASTI(fr) * (int)sizeof(_Py_CODEUNIT));
#else
    return PyFrame_GetLineNumber(fr);
#endif
}

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

/* ------------------------------------------------------------------ */
/* State                                                               */

static Py_ssize_t g_extra_index = -1;
static uint64_t g_gen = (uint64_t)-1; /* generation applied */
static int g_installed;
static int g_active;     /* some enabled breakpoint, or a step: look at frames */
static int g_busy;       /* inside the library: let frames through */
static unsigned g_epoch; /* +1 whenever what frames want may change */
static eval_fn g_prev_eval; /* what the hook chains to */
static void *g_interp_base; /* load address of the interpreter's image */

/* Frames of segments that must stay traced because an outer segment wants
 * line events (see the header comment). */
static iframe *g_keep[MAX_KEEP];
static int g_nkeep;

/* The step under way (one at a time). */
static struct {
    int mode;
    int returned;             /* the start frame returned: stop at the next event */
    PyThreadState *ts;
    iframe *frame;
    int line;
    PyFrameObject *opcodes[4]; /* frame objects we set f_trace_opcodes on (owned) */
    int nopcodes;
} g_step;

/* Function breakpoint waiting for the first line of a new frame. */
static __thread iframe *tls_fn_frame;
static __thread int tls_fn_slot;

static int trace_func(PyObject *obj, PyFrameObject *f, int what, PyObject *arg);

/* ------------------------------------------------------------------ */
/* Breakpoint matching and the per-code cache                          */

typedef struct code_info {
    uint64_t gen;
    int fn_slot;       /* a function breakpoint on this code, else -1 */
    int n;             /* line breakpoints */
    struct { int line, slot; } v[];
} code_info;

#define TAG(gen) ((void *)(uintptr_t)(((gen) << 1) | 1))

static void code_info_free(void *p)
{
    if (p && !((uintptr_t)p & 1))
        PyMem_RawFree(p);
}

static const char *utf8(PyObject *s)
{
    if (!s || !PyUnicode_Check(s))
        return NULL;
    const char *r = PyUnicode_AsUTF8(s);
    if (!r)
        PyErr_Clear();
    return r;
}

/* Does co_filename match the breakpoint's file (see tdebug_pyhook.h)? */
static int file_matches(const char *bp, const char *co)
{
    if (!bp[0])
        return 1;
    if (!co)
        return 0;
    size_t lb = strlen(bp), lc = strlen(co);
    if (bp[0] == '/' && co[0] == '/')
        return lb == lc && memcmp(bp, co, lb) == 0;
    /* the shorter must be a tail of the longer at a '/' boundary */
    const char *longer = lb >= lc ? bp : co, *shorter = lb >= lc ? co : bp;
    size_t ll = lb >= lc ? lb : lc, ls = lb >= lc ? lc : lb;
    if (shorter[0] == '/' || ls == 0)
        return 0;
    if (memcmp(longer + ll - ls, shorter, ls) != 0)
        return 0;
    return ll == ls || longer[ll - ls - 1] == '/';
}

/* Does CO have an instruction on LINE (its own, not a nested function's)? */
static int code_has_line(PyCodeObject *co, int line)
{
    if (line < co->co_firstlineno)
        return 0;
#if PY310
    int found = 0;
    PyObject *it = PyObject_CallMethod((PyObject *)co, "co_lines", NULL);
    PyObject *item;
    if (!it) {
        PyErr_Clear();
        return 0;
    }
    PyObject *iter = PyObject_GetIter(it);
    Py_DECREF(it);
    if (!iter) {
        PyErr_Clear();
        return 0;
    }
    while (!found && (item = PyIter_Next(iter))) {
        if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 3) {
            PyObject *l = PyTuple_GET_ITEM(item, 2);
            if (PyLong_Check(l) && PyLong_AsLong(l) == line)
                found = 1;
        }
        Py_DECREF(item);
    }
    Py_DECREF(iter);
    PyErr_Clear();
    return found;
#else
    /* co_lnotab: (bytecode increment, signed line increment) pairs; a line
     * is present when some bytecode starts on it (dis.findlinestarts). */
    PyObject *tab = co->co_lnotab;
    if (!tab || !PyBytes_Check(tab))
        return 0;
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(tab);
    Py_ssize_t n = PyBytes_GET_SIZE(tab), len = PyBytes_GET_SIZE(co->co_code);
    int lineno = co->co_firstlineno, last = -1;
    Py_ssize_t addr = 0;
    for (Py_ssize_t i = 0; i + 1 < n; i += 2) {
        if (p[i]) {
            if (lineno != last) {
                if (lineno == line)
                    return 1;
                last = lineno;
            }
            addr += p[i];
            if (addr >= len)
                return 0;
        }
        lineno += (signed char)p[i + 1];
    }
    return lineno != last && addr < len && lineno == line;
#endif
}

static int name_matches(const char *want, PyCodeObject *co)
{
    const char *name = utf8(co->co_name);
    if (name && strcmp(name, want) == 0)
        return 1;
#if PY311
    const char *qual = utf8(co->co_qualname);
    if (qual && strcmp(qual, want) == 0)
        return 1;
#else
    /* No co_qualname: "Class.method" matches a code named "method". */
    const char *dot = strrchr(want, '.');
    if (dot && name && strcmp(name, dot + 1) == 0)
        return 1;
#endif
    return 0;
}

static code_info *code_compute(PyCodeObject *co)
{
    code_info *ci = NULL;
    const char *file = utf8(co->co_filename);
    int nslots = C.n_breakpoints;
    if (nslots > TDB_PYHOOK_MAX_BREAKPOINTS)
        nslots = TDB_PYHOOK_MAX_BREAKPOINTS;
    int fn_slot = -1, n = 0;
    int lines[TDB_PYHOOK_MAX_BREAKPOINTS][2];
    for (int i = 0; i < nslots; i++) {
        tdb_pyhook_breakpoint *bp = &C.bp[i];
        if (bp->id <= 0 || !bp->enabled)
            continue;
        char bfile[TDB_PYHOOK_FILE_MAX];
        memcpy(bfile, bp->file, sizeof bfile);
        bfile[sizeof bfile - 1] = 0;
        if (bp->kind == TDB_PYHOOK_BP_LINE) {
            if (bfile[0] && file_matches(bfile, file) && code_has_line(co, bp->line)) {
                lines[n][0] = bp->line;
                lines[n][1] = i;
                n++;
                bp->bound++;
            }
        } else if (bp->kind == TDB_PYHOOK_BP_FUNCTION) {
            char fn[TDB_PYHOOK_NAME_MAX];
            memcpy(fn, bp->function, sizeof fn);
            fn[sizeof fn - 1] = 0;
            if (fn[0] && fn_slot < 0 && file_matches(bfile, file) && name_matches(fn, co)) {
                fn_slot = i;
                bp->bound++;
            }
        }
    }
    if (fn_slot >= 0 || n > 0) {
        ci = PyMem_RawMalloc(sizeof *ci + (size_t)n * sizeof ci->v[0]);
        if (ci) {
            ci->gen = g_gen;
            ci->fn_slot = fn_slot;
            ci->n = n;
            for (int i = 0; i < n; i++) {
                ci->v[i].line = lines[i][0];
                ci->v[i].slot = lines[i][1];
            }
        }
    }
    /* _PyCode_SetExtra frees the value it replaces (code_info_free). */
    if (_PyCode_SetExtra((PyObject *)co, g_extra_index, ci ? (void *)ci : TAG(g_gen)) < 0) {
        PyErr_Clear();
        PyMem_RawFree(ci);
        return NULL;
    }
    return ci;
}

/* co_extra's layout (Objects/codeobject.c, the same in 3.6-3.11): read
 * inline, since this runs at every call. */
typedef struct {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} code_extra;

/* The breakpoints of CO for the current generation, NULL when none. */
static inline code_info *code_lookup(PyCodeObject *co)
{
    void *x = NULL;
    code_extra *ce = co->co_extra;
    if (LIKELY(ce && ce->ce_size > g_extra_index))
        x = ce->ce_extras[g_extra_index];
    if ((uintptr_t)x & 1) {
        if (((uintptr_t)x >> 1) == (uintptr_t)((g_gen << 1) >> 1))
            return NULL;
    } else if (x && ((code_info *)x)->gen == g_gen) {
        return x;
    }
    return code_compute(co);
}

static inline int in_keep(iframe *fr)
{
    for (int i = 0; i < g_nkeep; i++)
        if (g_keep[i] == fr)
            return 1;
    return 0;
}

static inline int stepping(PyThreadState *ts)
{
    return g_step.mode && g_step.ts == ts;
}

/* The frames one evaluator call runs: FR and its callers up to the frame
 * the call was entered with (3.11 inlines Python-to-Python calls; earlier
 * versions run one frame per call). */
static int segment_wants(iframe *fr)
{
    for (int n = 0; fr && n < MAX_WALK; fr = FRAME_BACK(fr), n++) {
        if (code_lookup(frame_code(fr)) || in_keep(fr))
            return 1;
#if PY311
        if (fr->is_entry)
            break;
#else
        break;
#endif
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

/* 3.8/3.9: line events depend on the thread's trace function itself. */
static inline void set_tracing(PyThreadState *ts, void *unused, int on)
{
    Py_tracefunc want = on ? trace_func : NULL;
    if (ts->c_tracefunc == want)
        return;
    *tracing_possible(ts) += (want != NULL) - (ts->c_tracefunc != NULL);
    if (on)
        Py_CLEAR(ts->c_traceobj);
    ts->c_tracefunc = want;
    ts->use_tracing = (ts->c_tracefunc != NULL || ts->c_profilefunc != NULL);
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
#if PY311
            if (fr->is_entry)
                break;
#else
            break;
#endif
        }
    }
#if PY310
    for (int i = 0; i < nseg; i++)
        set_tracing(ts, cfs[i], step || i <= outer);
#else
    set_tracing(ts, NULL, step || outer >= 0);
#endif
    (void)cfs;
}

/* ------------------------------------------------------------------ */
/* Sync: apply the breakpoint table                                    */

static void for_each_thread(void (*fn)(PyThreadState *))
{
    for (PyInterpreterState *is = PyInterpreterState_Head(); is; is = PyInterpreterState_Next(is))
        for (PyThreadState *ts = PyInterpreterState_ThreadHead(is); ts; ts = PyThreadState_Next(ts))
            fn(ts);
}

static void count_traced(PyThreadState *ts)
{
    if (ts->c_tracefunc == trace_func)
        C.traced_threads++;
}

static void do_sync(void)
{
    g_epoch++;
    g_gen = C.generation;
    g_nkeep = 0;
    C.foreign_tracers = 0;
    int nslots = C.n_breakpoints > TDB_PYHOOK_MAX_BREAKPOINTS ? TDB_PYHOOK_MAX_BREAKPOINTS
                                                               : C.n_breakpoints;
    int any = 0;
    for (int i = 0; i < nslots; i++) {
        C.bp[i].bound = 0;
        if (C.bp[i].id > 0 && C.bp[i].enabled)
            any = 1;
    }
    g_active = any || g_step.mode;
    for_each_thread(retrace);
    C.traced_threads = 0;
    for_each_thread(count_traced);
    C.applied_generation = g_gen;
}

/* ------------------------------------------------------------------ */
/* Stops                                                               */

static void copy_str(char *dst, size_t n, const char *src)
{
    if (!src)
        src = "";
    size_t l = strlen(src);
    if (l >= n)
        l = n - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

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

static void step_end(void)
{
    PyThreadState *ts = g_step.ts;
    g_epoch++;
    step_clear_opcodes();
    memset(&g_step, 0, sizeof g_step);
    C.step.mode = TDB_PYHOOK_STEP_NONE;
    C.step.armed = 0;
    g_active = 0;
    for (int i = 0; i < C.n_breakpoints && i < TDB_PYHOOK_MAX_BREAKPOINTS; i++)
        if (C.bp[i].id > 0 && C.bp[i].enabled)
            g_active = 1;
    (void)ts;
}

static PyThreadState *find_thread(uint64_t tstate, int64_t tid)
{
    for (PyInterpreterState *is = PyInterpreterState_Head(); is; is = PyInterpreterState_Next(is))
        for (PyThreadState *ts = PyInterpreterState_ThreadHead(is); ts; ts = PyThreadState_Next(ts)) {
            if (tstate && (uint64_t)(uintptr_t)ts == tstate)
                return ts;
#if PY311
            if (!tstate && tid && (int64_t)ts->native_thread_id == tid)
                return ts;
#endif
        }
    return NULL;
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

/* Take the step request tdebug wrote.  F: the frame object of the frame
 * it starts in, when the caller has it. */
static int step_take(PyFrameObject *f)
{
    PyThreadState *ts = find_thread(C.step.tstate, C.step.tid);
    if (!ts) {
        copy_str(C.error, sizeof C.error, "step: no Python thread with that tstate/tid");
        C.step.mode = TDB_PYHOOK_STEP_NONE;
        return -1;
    }
    if (!owns_tracing(ts)) {
        copy_str(C.error, sizeof C.error,
                 "step: another trace function (sys.settrace) owns that thread");
        C.step.mode = TDB_PYHOOK_STEP_NONE;
        return -1;
    }
    iframe *fr = C.step.frame ? (iframe *)(uintptr_t)C.step.frame : thread_frame(ts);
    if (!fr) {
        copy_str(C.error, sizeof C.error, "step: the thread runs no Python code");
        C.step.mode = TDB_PYHOOK_STEP_NONE;
        return -1;
    }
    step_clear_opcodes();
    g_epoch++;
    g_step.mode = C.step.mode;
    g_step.ts = ts;
    g_step.frame = fr;
    g_step.line = C.step.line ? C.step.line : frame_line(fr);
    g_step.returned = 0;
    g_active = 1;
    if (g_step.mode == TDB_PYHOOK_STEP_STEP) {
        PyFrameObject *own = NULL;
        if (!f || IFRAME_OF(f) != fr) {
            own = thread_frame_object(ts);
            f = own;
        }
        if (f && IFRAME_OF(f) == fr)
            step_want_opcodes(f);
        Py_XDECREF(own);
    }
    C.step.armed = 1;
    retrace(ts);
    return 0;
}

static void do_uninstall(void);

/* Back from tdebug_pyhook_stop (or a gdb call): apply what tdebug wrote. */
static void after_stop(PyFrameObject *f)
{
    if (C.disable) {
        do_uninstall();
        return;
    }
    if (C.generation != g_gen)
        do_sync();
    if (C.step.mode != TDB_PYHOOK_STEP_NONE && !C.step.armed)
        step_take(f);
}

/* Report a stop to tdebug and wait for it (the gdb breakpoint). */
static void stop(int reason, int slot, PyThreadState *ts, iframe *fr, PyFrameObject *f,
                 int line, void *native, const char *what)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    g_busy++;
    tdb_pyhook_report *r = &C.report;
    r->serial++;
    r->reason = reason;
    r->breakpoint_id = 0;
    if (slot >= 0) {
        C.bp[slot].hits++;
        r->breakpoint_id = C.bp[slot].id;
    }
    r->frame = (uint64_t)(uintptr_t)fr;
    PyCodeObject *co = fr ? frame_code(fr) : NULL;
    r->code = (uint64_t)(uintptr_t)co;
    r->line = line;
    r->step_mode = stepping(ts) ? g_step.mode : 0;
    r->tstate = (uint64_t)(uintptr_t)ts;
#if PY311
    r->tid = (int64_t)ts->native_thread_id;
#else
    r->tid = ts == PyThreadState_Get() ? (int64_t)syscall(SYS_gettid) : 0;
#endif
    r->native_addr = (uint64_t)(uintptr_t)native;
    copy_str(r->native_what, sizeof r->native_what, what);
    copy_str(r->file, sizeof r->file, co ? utf8(co->co_filename) : NULL);
#if PY311
    copy_str(r->function, sizeof r->function, co ? utf8(co->co_qualname) : NULL);
#else
    copy_str(r->function, sizeof r->function, co ? utf8(co->co_name) : NULL);
#endif
    PyErr_Clear();
    if (g_step.mode)
        step_end();
    tdebug_pyhook_stop();
    after_stop(f);
    PyErr_Clear();
    g_busy--;
    PyErr_Restore(et, ev, tb);
}

/* ------------------------------------------------------------------ */
/* Where a step goes native                                            */

enum { R_NONE, R_PYTHON, R_NATIVE };
typedef struct resolved {
    int kind;
    void *addr;
    char what[TDB_PYHOOK_NAME_MAX];
} resolved;

/* Is ADDR in CPython itself (the interpreter's image or its lib-dynload
 * modules)?  That code is stepped through; the first native function
 * outside it is where `step` stops. */
static int in_interpreter(void *addr)
{
    Dl_info info;
    if (!dladdr(addr, &info))
        return 1; /* no object: not something to stop in */
    if (info.dli_fbase == g_interp_base)
        return 1;
    return info.dli_fname && strstr(info.dli_fname, "/lib-dynload/") != NULL;
}

static int native(resolved *r, void *fn, const char *type, const char *name)
{
    if (!fn || in_interpreter(fn))
        return 0;
    r->kind = R_NATIVE;
    r->addr = fn;
    snprintf(r->what, sizeof r->what, "%s%s%s", type ? type : "", type ? "." : "", name ? name : "?");
    return 1;
}

/* What calling descriptor/attribute value D (found on TYPE) runs first. */
static int resolve_descr(resolved *r, PyObject *d, PyTypeObject *type, const char *name)
{
    if (!d)
        return 0;
    if (PyFunction_Check(d)) {
        r->kind = R_PYTHON;
        return 1;
    }
    if (Py_IS_TYPE(d, &PyMethodDescr_Type) || Py_IS_TYPE(d, &PyClassMethodDescr_Type)) {
        PyMethodDescrObject *m = (PyMethodDescrObject *)d;
        return native(r, (void *)m->d_method->ml_meth, m->d_common.d_type->tp_name,
                      m->d_method->ml_name);
    }
    if (Py_IS_TYPE(d, &PyWrapperDescr_Type)) {
        PyWrapperDescrObject *w = (PyWrapperDescrObject *)d;
        return native(r, w->d_wrapped, w->d_common.d_type->tp_name, name);
    }
    if (PyCFunction_Check(d)) {
        PyCFunctionObject *c = (PyCFunctionObject *)d;
        return native(r, (void *)c->m_ml->ml_meth, type ? type->tp_name : NULL, c->m_ml->ml_name);
    }
    return 0;
}

/* Slot SLOT of TYPE, for the special method DUNDER. */
static int resolve_slot(resolved *r, PyTypeObject *type, void *slot, const char *dunder)
{
    if (!slot)
        return 0;
    if (native(r, slot, type->tp_name, dunder))
        return 1;
    /* A slot in the interpreter: a generic slot_* wrapper calling the
     * special method, or CPython's own implementation. */
    PyObject *name = PyUnicode_InternFromString(dunder);
    if (!name) {
        PyErr_Clear();
        return 0;
    }
    PyObject *d = _PyType_Lookup(type, name); /* borrowed */
    Py_DECREF(name);
    return resolve_descr(r, d, type, dunder);
}

static int resolve_callable(resolved *r, PyObject *c, int depth)
{
    if (!c || depth > 4)
        return 0;
    if (PyFunction_Check(c)) {
        r->kind = R_PYTHON;
        return 1;
    }
    if (PyMethod_Check(c))
        return resolve_callable(r, PyMethod_GET_FUNCTION(c), depth + 1);
    if (PyCFunction_Check(c)) {
        PyCFunctionObject *f = (PyCFunctionObject *)c;
        const char *owner = NULL;
        if (f->m_self && !PyModule_Check(f->m_self))
            owner = Py_TYPE(f->m_self)->tp_name;
        return native(r, (void *)f->m_ml->ml_meth, owner, f->m_ml->ml_name);
    }
    if (Py_IS_TYPE(c, &PyMethodDescr_Type) || Py_IS_TYPE(c, &PyClassMethodDescr_Type) ||
        Py_IS_TYPE(c, &PyWrapperDescr_Type))
        return resolve_descr(r, c, NULL, NULL);
    if (Py_IS_TYPE(c, &_PyMethodWrapper_Type)) {
        /* a bound slot wrapper (x.__add__ of a C type): descrobject.c's
         * wrapperobject, whose first field is the descriptor */
        PyWrapperDescrObject *d = *(PyWrapperDescrObject **)((char *)c + sizeof(PyObject));
        return d ? native(r, d->d_wrapped, d->d_common.d_type->tp_name,
                          utf8(d->d_common.d_name))
                 : 0;
    }
    if (PyType_Check(c)) {
        PyTypeObject *t = (PyTypeObject *)c;
        if (native(r, (void *)t->tp_new, t->tp_name, "__new__") ||
            native(r, (void *)t->tp_init, t->tp_name, "__init__"))
            return 1;
        return 0; /* Python __new__/__init__ show up as frames */
    }
    return resolve_slot(r, Py_TYPE(c), (void *)Py_TYPE(c)->tp_call, "__call__");
}

static int resolve_getattr(resolved *r, PyObject *obj, PyObject *name, int store)
{
    PyTypeObject *t = Py_TYPE(obj);
    void *hook = store ? (void *)t->tp_setattro : (void *)t->tp_getattro;
    if (native(r, hook, t->tp_name, store ? "__setattr__" : "__getattribute__"))
        return 1;
    if (!name || !PyUnicode_Check(name) || PyType_Check(obj))
        return 0;
    PyObject *d = _PyType_Lookup(t, name);
    if (!d)
        return 0;
    if (Py_IS_TYPE(d, &PyGetSetDescr_Type)) {
        PyGetSetDescrObject *g = (PyGetSetDescrObject *)d;
        return native(r, store ? (void *)g->d_getset->set : (void *)g->d_getset->get,
                      t->tp_name, g->d_getset->name);
    }
    if (PyObject_TypeCheck(d, &PyProperty_Type)) {
        PyObject *fn = PyObject_GetAttrString(d, store ? "fset" : "fget");
        int ok = 0;
        if (fn) {
            ok = resolve_callable(r, fn, 1);
            Py_DECREF(fn);
        }
        PyErr_Clear();
        return ok;
    }
    return 0;
}

/* Binary operators: the PyNumberMethods slot and its special methods. */
typedef struct binop {
    size_t slot, islot;
    const char *dunder, *rdunder, *idunder;
} binop;
#define NB(s, n) offsetof(PyNumberMethods, nb_##s), offsetof(PyNumberMethods, nb_inplace_##s), \
                 "__" n "__", "__r" n "__", "__i" n "__"
static const binop binops[] = {
    [0] = {NB(add, "add")},
    [1] = {NB(and, "and")},
    [2] = {NB(floor_divide, "floordiv")},
    [3] = {NB(lshift, "lshift")},
    [4] = {NB(matrix_multiply, "matmul")},
    [5] = {NB(multiply, "mul")},
    [6] = {NB(remainder, "mod")},
    [7] = {NB(or, "or")},
    [8] = {NB(power, "pow")},
    [9] = {NB(rshift, "rshift")},
    [10] = {NB(subtract, "sub")},
    [11] = {NB(true_divide, "truediv")},
    [12] = {NB(xor, "xor")},
};

static void *nb_slot(PyTypeObject *t, size_t off)
{
    if (!t->tp_as_number)
        return NULL;
    return *(void **)((char *)t->tp_as_number + off);
}

static int resolve_binop(resolved *r, PyObject *a, PyObject *b, int op, int inplace)
{
    if (op < 0 || op > 12)
        return 0;
    const binop *o = &binops[op];
    PyTypeObject *ta = Py_TYPE(a), *tb = Py_TYPE(b);
    if (inplace && resolve_slot(r, ta, nb_slot(ta, o->islot), o->idunder))
        return 1;
    int b_first = ta != tb && PyType_IsSubtype(tb, ta);
    if (b_first && resolve_slot(r, tb, nb_slot(tb, o->slot), o->rdunder))
        return 1;
    if (resolve_slot(r, ta, nb_slot(ta, o->slot), o->dunder))
        return 1;
    if (!b_first && ta != tb && resolve_slot(r, tb, nb_slot(tb, o->slot), o->rdunder))
        return 1;
    return 0;
}

static int resolve_subscr(resolved *r, PyObject *container, int store)
{
    PyTypeObject *t = Py_TYPE(container);
    const char *dunder = store ? "__setitem__" : "__getitem__";
    void *slot = NULL;
    if (t->tp_as_mapping)
        slot = store ? (void *)t->tp_as_mapping->mp_ass_subscript : (void *)t->tp_as_mapping->mp_subscript;
    if (!slot && t->tp_as_sequence)
        slot = store ? (void *)t->tp_as_sequence->sq_ass_item : (void *)t->tp_as_sequence->sq_item;
    return resolve_slot(r, t, slot, dunder);
}

static int resolve_compare(resolved *r, PyObject *a, int op)
{
    static const char *const names[] = {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"};
    if (op < 0 || op > 5)
        return 0;
    return resolve_slot(r, Py_TYPE(a), (void *)Py_TYPE(a)->tp_richcompare, names[op]);
}

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
    case CALL: {
        PyObject *meth = PEEK(oparg + 2);
        return resolve_callable(r, meth ? meth : PEEK(oparg + 1), 0);
    }
#else
    case CALL_FUNCTION:
        return resolve_callable(r, PEEK(oparg + 1), 0);
    case CALL_FUNCTION_KW:
        return resolve_callable(r, PEEK(oparg + 2), 0);
    case CALL_METHOD: {
        PyObject *meth = PEEK(oparg + 2);
        return resolve_callable(r, meth ? meth : PEEK(oparg + 1), 0);
    }
#endif
    case CALL_FUNCTION_EX:
        return resolve_callable(r, PEEK(2 + (oparg & 1)), 0);
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
            stop(TDB_PYHOOK_STOP_FUNCTION, ci->fn_slot, ts, fr, f, line, NULL, NULL);
            return;
        }
        for (int i = 0; i < ci->n; i++)
            if (ci->v[i].line == line) {
                stop(TDB_PYHOOK_STOP_BREAKPOINT, ci->v[i].slot, ts, fr, f, line, NULL, NULL);
                return;
            }
    }
    if (!stepping(ts))
        return;
    int stop_here = 0;
    switch (g_step.mode) {
    case TDB_PYHOOK_STEP_STEP:
        stop_here = 1;
        break;
    case TDB_PYHOOK_STEP_NEXT:
        if (fr == g_step.frame || g_step.returned) {
            stop_here = 1;
        } else {
            /* deeper (a breakpoint's frame that is not at its line) or a
             * caller after the start frame returned without our seeing it */
            stop_here = 1;
            int n = 0;
            for (iframe *p = FRAME_BACK(fr); p && n < MAX_WALK; p = FRAME_BACK(p), n++)
                if (p == g_step.frame) {
                    stop_here = 0;
                    break;
                }
        }
        break;
    case TDB_PYHOOK_STEP_FINISH:
        stop_here = g_step.returned;
        break;
    }
    if (stop_here)
        stop(g_step.mode == TDB_PYHOOK_STEP_FINISH ? TDB_PYHOOK_STOP_FINISH : TDB_PYHOOK_STOP_STEP,
             -1, ts, fr, f, line, NULL, NULL);
}

static void on_opcode(PyThreadState *ts, PyFrameObject *f)
{
    if (!stepping(ts))
        return;
    iframe *fr = IFRAME_OF(f);
    if (g_step.returned) {
        /* the first instruction of the caller after the call returned */
        stop(g_step.mode == TDB_PYHOOK_STEP_FINISH ? TDB_PYHOOK_STOP_FINISH : TDB_PYHOOK_STOP_STEP,
             -1, ts, fr, f, PyFrame_GetLineNumber(f), NULL, NULL);
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
#define CALL_PREV(ts, fr, thr) g_prev_eval(ts, fr, thr)
static PyObject *hook_eval(PyThreadState *ts, iframe *fr, int throwflag)
#else
#define CALL_PREV(ts, fr, thr) g_prev_eval(fr, thr)
static PyObject *hook_eval(iframe *fr, int throwflag)
#endif
{
#if PY_VERSION_HEX < 0x03090000
    PyThreadState *ts = _PyThreadState_GET();
#endif
    C.stats_frames++;
    if (UNLIKELY(C.disable | g_busy)) {
        if (C.disable && !g_busy)
            do_uninstall();
        return CALL_PREV(ts, fr, throwflag);
    }
    if (UNLIKELY(C.generation != g_gen)) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        g_busy++;
        do_sync();
        g_busy--;
        PyErr_Restore(et, ev, tb);
    }
    if (LIKELY(!g_active))
        return CALL_PREV(ts, fr, throwflag);
    if (!owns_tracing(ts))
        return CALL_PREV(ts, fr, throwflag);

    code_info *ci = code_lookup(frame_code(fr));
    int step = stepping(ts);
    int want = ci != NULL || (step && (g_step.mode == TDB_PYHOOK_STEP_STEP || fr == g_step.frame));
    if (ci && ci->fn_slot >= 0 && frame_is_fresh(fr, throwflag)) {
        tls_fn_frame = fr;
        tls_fn_slot = ci->fn_slot;
    }
    if (want)
        C.stats_traced++;
    else if (!caller_traced(ts)) {
        /* The common case: neither this frame nor its caller has line
         * events.  Unless something changed meanwhile (a sync, a step, a
         * stop: the epoch), the caller's state after the call is the one
         * it had: no lookup of the caller's code. */
        unsigned epoch = g_epoch;
        PyObject *res = CALL_PREV(ts, fr, throwflag);
        if (LIKELY(epoch == g_epoch && g_installed)) {
            set_tracing(ts, current_cframe(ts), 0);
            return res;
        }
        recompute_caller(ts);
        return res;
    }
    set_tracing(ts, current_cframe(ts), want);
    PyObject *res = CALL_PREV(ts, fr, throwflag);
    recompute_caller(ts);
    return res;
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
    set_tracing(ts, NULL, 0);
#endif
}

static void do_uninstall(void)
{
    if (!g_installed)
        return;
    for (PyInterpreterState *is = PyInterpreterState_Head(); is; is = PyInterpreterState_Next(is))
        if (get_eval(is) == (eval_fn)hook_eval)
            set_eval(is, g_prev_eval);
    step_clear_opcodes();
    memset(&g_step, 0, sizeof g_step);
    C.step.mode = TDB_PYHOOK_STEP_NONE;
    C.step.armed = 0;
    for_each_thread(untrace_thread);
    C.traced_threads = 0;
    for_each_thread(count_traced);
    g_installed = 0;
    g_active = 0;
    g_nkeep = 0;
    C.installed = 0;
    C.mechanism = TDB_PYHOOK_MECH_NONE;
    C.disable = 0;
}

EXPORT int tdebug_pyhook_install(void)
{
    if (g_installed)
        return 0;
    if (!Py_IsInitialized() || !PyGILState_Check()) {
        copy_str(C.error, sizeof C.error,
                 "not at a safe point: this thread does not hold the GIL");
        return -1;
    }
    Dl_info info;
    if (!dladdr((void *)PyEval_SaveThread, &info)) {
        copy_str(C.error, sizeof C.error, "dladdr cannot place the interpreter");
        return -1;
    }
    g_interp_base = info.dli_fbase;
    if (g_extra_index < 0) {
        g_extra_index = _PyEval_RequestCodeExtraIndex(code_info_free);
        if (g_extra_index < 0) {
            PyErr_Clear();
            copy_str(C.error, sizeof C.error, "no co_extra index left in this interpreter");
            return -1;
        }
    }
    PyInterpreterState *main_is = PyInterpreterState_Head();
    eval_fn prev = get_eval(main_is);
    if (!prev)
        prev = default_eval();
    if (prev == (eval_fn)hook_eval)
        prev = default_eval();
    g_prev_eval = prev;
    for (PyInterpreterState *is = main_is; is; is = PyInterpreterState_Next(is))
        set_eval(is, hook_eval);
    g_installed = 1;
    C.installed = 1;
    C.disable = 0;
    C.mechanism = TDB_PYHOOK_MECH_EVAL_TRACE;
    C.error[0] = 0;
    g_busy++;
    do_sync();
    g_busy--;
    return 0;
}

/* A gdb call of WHAT: are we installed and on a thread holding the GIL? */
static int callable_here(const char *what)
{
    if (g_installed && PyGILState_Check())
        return 1;
    snprintf(C.error, sizeof C.error, "%s: %s", what,
             g_installed ? "this thread does not hold the GIL (not a safe point)" : "not installed");
    return 0;
}

EXPORT int tdebug_pyhook_sync(void)
{
    if (!callable_here("sync"))
        return -1;
    g_busy++;
    if (C.disable)
        do_uninstall();
    else
        do_sync();
    g_busy--;
    return 0;
}

EXPORT int tdebug_pyhook_step_arm(void)
{
    if (!callable_here("step"))
        return -1;
    if (C.step.mode == TDB_PYHOOK_STEP_NONE)
        return 0;
    g_busy++;
    if (C.generation != g_gen)
        do_sync();
    int rc = step_take(NULL);
    g_busy--;
    return rc;
}

EXPORT int tdebug_pyhook_uninstall(void)
{
    if (!g_installed)
        return 0;
    if (!PyGILState_Check()) {
        copy_str(C.error, sizeof C.error, "uninstall: this thread does not hold the GIL");
        return -1;
    }
    do_uninstall();
    return 0;
}

#endif /* !PY312 */
