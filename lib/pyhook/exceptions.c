/*
 * exceptions.c: stops at Python exceptions (TDB_PYHOOK_BP_EXCEPTION slots:
 * raised, uncaught, leaving the user's code), for every mechanism.
 *
 * A mechanism calls exc_event() for each frame an exception is raised in
 * or propagates into, while that frame is still running (3.12+: the RAISE
 * event of sys.monitoring, which CPython gives in each frame the exception
 * reaches; 3.8-3.11: the trace function's PyTrace_EXCEPTION, which 3.10+
 * gives to the thread's trace function in frames that trace no lines).  Whether the frame and
 * its caller handle it is read from the code: the handler covering the
 * frame's current instruction (3.11+: the exception table; 3.8-3.10: the
 * SETUP_FINALLY blocks of its block stack), whose 'except' clauses are
 * matched against the exception as CPython would (handler_catches()).  A
 * 'finally' lets it go on.  A 'with' decides when its __exit__ has run
 * (contextlib.suppress swallows, most context managers do not): an
 * uncaught or user-unhandled stop whose frame's own handler is a 'with'
 * is deferred (g_defer) to the moment the exception leaves that frame, which
 * the mechanism reports with exc_leave() (3.8-3.11: the trace function's
 * PyTrace_RETURN of a frame kept traced for it; 3.12+: PY_UNWIND); if
 * __exit__ swallows the exception, that never comes.  A 'with' in the
 * caller of the user's code counts as letting it go (the user's frame is
 * gone by the time its __exit__ has run).
 */
#include <patchlevel.h>
#include "pyhook.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int g_exc_n;
static int *g_exc_slots;
static int g_exc_cap;

void exc_index_reset(void)
{
    g_exc_n = 0;
}

void exc_index_add(int slot)
{
    if (g_exc_n == g_exc_cap) {
        int cap = g_exc_cap ? 2 * g_exc_cap : 8;
        int *v = PyMem_RawRealloc(g_exc_slots, (size_t)cap * sizeof *v);
        if (!v)
            return;
        g_exc_slots = v;
        g_exc_cap = cap;
    }
    g_exc_slots[g_exc_n++] = slot;
}

/* PATH (absolute) without its "." and ".." components, in place: a
 * module found through a relative sys.path entry ("../lib") has a
 * co_filename such as "/cwd/../lib/m.py" (3.8: "../lib/m.py"), which is
 * not under the working directory. */
static void drop_dots(char *path)
{
    char *out = path;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *end = strchrnul(p, '/');
        size_t n = (size_t)(end - p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (out > path && *--out != '/')
                ;
        } else if (n && !(n == 1 && p[0] == '.')) {
            *out++ = '/';
            memmove(out, p, n);
            out += n;
        }
        p = end;
    }
    if (out == path)
        *out++ = '/';
    *out = 0;
}

/* Is FILE under one of control.my_code's directories?  (A relative
 * co_filename, as 3.8 gives a script's, is the working directory's.) */
static int is_mine(const char *file)
{
    char abs[TDB_PYHOOK_FILE_MAX];
    if (!file || file[0] == '<' || !file[0])
        return 0;
    if (file[0] != '/') {
        char cwd[TDB_PYHOOK_FILE_MAX];
        if (!getcwd(cwd, sizeof cwd) || snprintf(abs, sizeof abs, "%s/%s", cwd, file) >= (int)sizeof abs)
            return 0;
    } else if (snprintf(abs, sizeof abs, "%s", file) >= (int)sizeof abs) {
        return 0;
    }
    drop_dots(abs);
    file = abs;
    const char *d = C.my_code, *end = C.my_code + sizeof C.my_code;
    while (d < end && *d) {
        size_t n = strnlen(d, (size_t)(end - d));
        if (d + n >= end)
            break;
        if (strncmp(file, d, n) == 0 && file[n] == '/')
            return 1;
        d += n + 1;
    }
    return 0;
}

static iframe *python_caller(iframe *fr)
{
    for (fr = FRAME_BACK(fr); fr && !frame_is_python(fr); fr = FRAME_BACK(fr))
        ;
    return fr;
}

#if PY311
/* A varint of co_exceptiontable (6-bit groups, bit 6: more) at *PP (moved
 * past it), or -1 at END. */
static int read_varint(const unsigned char **pp, const unsigned char *end, int *out)
{
    const unsigned char *p = *pp;
    if (p >= end)
        return -1;
    unsigned b = *p++;
    int v = b & 63;
    while (b & 64) {
        if (p >= end || v > (1 << 24))
            return -1;
        b = *p++;
        v = (v << 6) | (b & 63);
    }
    *pp = p;
    *out = v;
    return 0;
}

int exc_table_open(PyCodeObject *co, exc_table *t)
{
    PyObject *b = co->co_exceptiontable;
    if (!b || !PyBytes_Check(b))
        return -1;
    t->p = (const unsigned char *)PyBytes_AS_STRING(b);
    t->end = t->p + PyBytes_GET_SIZE(b);
    return 0;
}

int exc_table_next(exc_table *t, exc_entry *e)
{
    return read_varint(&t->p, t->end, &e->start) == 0 && read_varint(&t->p, t->end, &e->len) == 0 &&
                   read_varint(&t->p, t->end, &e->target) == 0 &&
                   read_varint(&t->p, t->end, &e->dl) == 0
               ? 0
               : -1;
}
#endif


/* ---- Does a frame handle an exception? ---- */

int decode_instruction(PyObject *bytecode, int off, int *op, int *arg, int *next)
{
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bytecode);
    Py_ssize_t n = PyBytes_GET_SIZE(bytecode);
    if (off < 0 || off + 1 >= n)
        return -1;
    *op = b[off];
    int a = b[off + 1], shift = 8;
    for (int p = off - 2; p >= 0 && b[p] == EXTENDED_ARG && shift < 32; p -= 2, shift += 8)
        a |= b[p + 1] << shift;
    *arg = a;
#if PY311
    *next = off + 2 * (1 + _PyOpcode_Caches[*op]);
#else
    *next = off + 2;
#endif
    return 0;
}

#if PY311
/* The handler (a byte offset) of the exception table entry of CO covering
 * code unit LASTI, or -1. */
static int table_handler(PyCodeObject *co, int lasti)
{
    exc_table t;
    exc_entry e;
    if (exc_table_open(co, &t) < 0)
        return -1;
    while (exc_table_next(&t, &e) == 0)
        if (lasti >= e.start && lasti < e.start + e.len)
            return 2 * e.target;
    return -1;
}
#endif

static PyObject *global_named(PyObject *globals, PyObject *builtins, PyObject *name)
{
    PyObject *v = globals && PyDict_Check(globals) ? PyDict_GetItemWithError(globals, name) : NULL;
    if (!v && builtins && PyDict_Check(builtins))
        v = PyDict_GetItemWithError(builtins, name);
    PyErr_Clear();
    return v; /* borrowed */
}

#define HSTACK 16

/* Does the handler code at byte PC of FR (code CO) catch EXC?  What the
 * compiler emits for 'except A:', 'except (A, m.B) as e:' and a bare
 * 'except:' is read: the classes loaded (globals, builtins, attributes)
 * and matched as CPython would; the next clause when they do not match.
 * 1 it catches (or what it matches against cannot be read: no stop), 0
 * it lets the exception go on (a 'finally', no clause matched), MAYBE a
 * 'with' decides (its __exit__, when it has run). */
#define MAYBE 2
static int handler_catches(iframe *fr, PyCodeObject *co, PyObject *bytecode, int pc, PyObject *exc)
{
    PyObject *stack[HSTACK];
    int depth = 0, result = 1;
    PyObject *globals = fr->f_globals, *builtins = fr->f_builtins;
    for (int steps = 0; steps < 256; steps++) {
        int op, arg, next;
        if (decode_instruction(bytecode, pc, &op, &arg, &next) < 0)
            goto done;
        PyObject *v = NULL;
        switch (op) {
        case EXTENDED_ARG:
        case NOP:
#if PY311
        case PUSH_EXC_INFO:
#else
        case DUP_TOP:
#endif
            break;
        case POP_TOP: /* a bare 'except:' */
            goto done;
        case LOAD_GLOBAL:
#if PY311
            arg >>= 1;
#endif
            /* fall through */
        case LOAD_NAME:
            if (arg >= PyTuple_GET_SIZE(co->co_names) || depth == HSTACK)
                goto done;
            v = global_named(globals, builtins, PyTuple_GET_ITEM(co->co_names, arg));
            if (!v)
                goto done;
            Py_INCREF(v);
            stack[depth++] = v;
            break;
        case LOAD_ATTR:
#if PY312
            arg >>= 1;
#endif
            if (!depth || arg >= PyTuple_GET_SIZE(co->co_names))
                goto done;
            v = PyObject_GetAttr(stack[depth - 1], PyTuple_GET_ITEM(co->co_names, arg));
            PyErr_Clear();
            if (!v)
                goto done;
            Py_DECREF(stack[depth - 1]);
            stack[depth - 1] = v;
            break;
        case BUILD_TUPLE:
            if (arg > depth)
                goto done;
            v = PyTuple_New(arg);
            if (!v)
                goto done;
            for (int i = 0; i < arg; i++)
                PyTuple_SET_ITEM(v, i, stack[depth - arg + i]);
            depth -= arg;
            stack[depth++] = v;
            break;
#if PY311
        case CHECK_EXC_MATCH: {
#elif PY_VERSION_HEX >= 0x03090000
        case JUMP_IF_NOT_EXC_MATCH: {
#else
        case COMPARE_OP: {
            if (arg != PyCmp_EXC_MATCH)
                goto done;
#endif
            if (!depth)
                goto done;
            int match = PyErr_GivenExceptionMatches(exc, stack[depth - 1]);
            while (depth)
                Py_DECREF(stack[--depth]);
            if (match)
                goto done;
#if PY_VERSION_HEX >= 0x03090000 && !PY311
            /* an absolute jump: bytes (3.9), code units (3.10) */
            next = PY310 ? 2 * arg : arg;
#else
            /* then the jump to the next clause */
            int jop, jarg, after;
            if (decode_instruction(bytecode, next, &jop, &jarg, &after) < 0)
                goto done;
#if PY312
            if (jop != POP_JUMP_IF_FALSE)
                goto done;
            next = after + 2 * jarg;
#elif PY311
            if (jop != POP_JUMP_FORWARD_IF_FALSE)
                goto done;
            next = after + 2 * jarg;
#else
            if (jop != POP_JUMP_IF_FALSE)
                goto done;
            next = jarg;
#endif
#endif
            break;
        }
#if PY311
        case COPY:
        case POP_EXCEPT:
        case SWAP:
            break; /* the cleanup of an except clause, before its RERAISE */
        case RERAISE: {
            /* out of this handler: to the one covering it, if any */
            int h = table_handler(co, pc / 2);
            if (h < 0) {
                result = 0;
                goto done;
            }
            next = h;
            break;
        }
#endif
#if PY_VERSION_HEX >= 0x03090000
        case WITH_EXCEPT_START:
#else
        case WITH_CLEANUP_START:
#endif
            result = MAYBE;
            goto done;
        default: /* a 'finally' body, a re-raise */
            result = 0;
            goto done;
        }
        pc = next;
    }
done:
    while (depth)
        Py_DECREF(stack[--depth]);
    PyErr_Clear();
    return result;
}

/* Does FR handle EXC at its current instruction (tdebug_pyhook.h)?  1,
 * 0 or MAYBE (handler_catches()). */
static int frame_handles(iframe *fr, PyObject *exc)
{
    PyCodeObject *co = frame_code(fr);
    if (!PyCode_Check(co))
        return 0;
#if PY311
    int h = table_handler(co, _PyInterpreterFrame_LASTI(fr));
    if (h < 0)
        return 0;
    PyObject *bytecode = PyCode_GetCode(co);
    if (!bytecode) {
        PyErr_Clear();
        return 1;
    }
    int r = handler_catches(fr, co, bytecode, h, exc);
    Py_DECREF(bytecode);
    return r;
#else
    int r = 0;
    for (int i = fr->f_iblock - 1; i >= 0 && r != 1; i--)
        if (fr->f_blockstack[i].b_type == SETUP_FINALLY) {
            int h = handler_catches(fr, co, co->co_code,
                                    PY310 ? 2 * fr->f_blockstack[i].b_handler
                                          : fr->f_blockstack[i].b_handler, exc);
            if (h)
                r = h == 1 ? 1 : MAYBE; /* an outer 'except' may still catch */
        }
    return r;
#endif
}

static const char *attr_utf8(PyObject *o, const char *name, PyObject **keep)
{
    *keep = PyObject_GetAttrString(o, name);
    const char *s = utf8(*keep);
    if (!s)
        PyErr_Clear();
    return s;
}

/* "module.qualname" of type T ("ValueError" for builtins) into BUF. */
static void type_name(PyObject *t, char *buf, size_t n)
{
    PyObject *m = NULL, *q = NULL;
    const char *mod = attr_utf8(t, "__module__", &m);
    const char *qual = attr_utf8(t, "__qualname__", &q);
    if (!qual)
        qual = ((PyTypeObject *)t)->tp_name;
    if (mod && strcmp(mod, "builtins") != 0)
        snprintf(buf, n, "%s.%s", mod, qual);
    else
        snprintf(buf, n, "%s", qual);
    Py_XDECREF(m);
    Py_XDECREF(q);
}

/* Is WANT (empty: any) the class of EXC or one it derives from? */
static int type_matches(const char *want, PyObject *exc)
{
    if (!want[0])
        return 1;
    PyObject *mro = Py_TYPE(exc)->tp_mro;
    if (!mro || !PyTuple_Check(mro))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *t = PyTuple_GET_ITEM(mro, i), *q = NULL, *nm = NULL;
        char full[TDB_PYHOOK_NAME_MAX * 2];
        type_name(t, full, sizeof full);
        const char *qual = attr_utf8(t, "__qualname__", &q);
        const char *name = attr_utf8(t, "__name__", &nm);
        int hit = strcmp(want, full) == 0 || (qual && strcmp(want, qual) == 0) ||
                  (name && strcmp(want, name) == 0);
        Py_XDECREF(q);
        Py_XDECREF(nm);
        if (hit)
            return 1;
    }
    return 0;
}

/* Exceptions that are a loop's or a generator's way of ending. */
static int routine(PyObject *exc, const char *file)
{
    return PyErr_GivenExceptionMatches(exc, PyExc_StopIteration) ||
           PyErr_GivenExceptionMatches(exc, PyExc_StopAsyncIteration) ||
           PyErr_GivenExceptionMatches(exc, PyExc_GeneratorExit) ||
           (file && strncmp(file, "<frozen ", 8) == 0);
}

/* What the next stop() reports of its exception. */
static PyObject *g_pending_exc, *g_pending_tb;
static int g_pending_when;

static void add(char *buf, size_t n, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t n, size_t *at, const char *fmt, ...)
{
    if (*at >= n - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *at, n - *at, fmt, ap);
    va_end(ap);
    if (w > 0)
        *at = *at + (size_t)w < n - 1 ? *at + (size_t)w : n - 1;
}

void exc_report(tdb_pyhook_report *r)
{
    r->exc_when = 0;
    r->exc_type[0] = r->exc_message[0] = r->exc_traceback[0] = 0;
    PyObject *exc = g_pending_exc, *tb = g_pending_tb;
    if (!exc)
        return;
    r->exc_when = g_pending_when;
    type_name((PyObject *)Py_TYPE(exc), r->exc_type, sizeof r->exc_type);
    PyObject *s = PyObject_Str(exc);
    copy_str(r->exc_message, sizeof r->exc_message, s ? utf8(s) : "<str() raised>");
    Py_XDECREF(s);
    PyErr_Clear();
    size_t at = 0, n = sizeof r->exc_traceback;
    char *buf = r->exc_traceback;
    add(buf, n, &at, "Traceback (most recent call last):\n");
    for (int i = 0; tb && tb != Py_None && i < MAX_WALK; i++) {
        PyObject *f = NULL, *co = NULL, *ln = NULL, *file = NULL, *name = NULL, *next;
        f = PyObject_GetAttrString(tb, "tb_frame");
        co = f ? PyObject_GetAttrString(f, "f_code") : NULL;
        ln = PyObject_GetAttrString(tb, "tb_lineno");
        const char *fs = co ? attr_utf8(co, "co_filename", &file) : NULL;
        const char *ns = co ? attr_utf8(co, "co_name", &name) : NULL;
        add(buf, n, &at, "  File \"%s\", line %ld, in %s\n", fs ? fs : "?",
            ln ? PyLong_AsLong(ln) : -1L, ns ? ns : "?");
        next = PyObject_GetAttrString(tb, "tb_next");
        Py_XDECREF(f);
        Py_XDECREF(co);
        Py_XDECREF(ln);
        Py_XDECREF(file);
        Py_XDECREF(name);
        PyErr_Clear();
        if (i)
            Py_DECREF(tb);
        tb = next;
    }
    if (tb != g_pending_tb)
        Py_XDECREF(tb);
    if (r->exc_message[0])
        add(buf, n, &at, "%s: %s\n", r->exc_type, r->exc_message);
    else
        add(buf, n, &at, "%s\n", r->exc_type);
    PyErr_Clear();
}

/* The stop a frame's 'with' decides (one at a time: the last wins). */
static struct {
    PyThreadState *ts;
    iframe *fr;
    PyObject *exc; /* a reference: its identity says it is the same one */
    int slot, when;
} g_defer;

static void defer(PyThreadState *ts, iframe *fr, PyObject *exc, int slot, int when)
{
    PyObject *old = g_defer.exc;
    Py_INCREF(exc);
    g_defer.exc = exc;
    Py_XDECREF(old);
    g_defer.ts = ts;
    g_defer.fr = fr;
    g_defer.slot = slot;
    g_defer.when = when;
}

int exc_deferred(iframe *fr)
{
    return g_defer.exc && g_defer.fr == fr;
}

void exc_leave(PyThreadState *ts, iframe *fr, int raising, PyObject *exc, void *ctx, int line)
{
    if (!g_defer.exc || g_defer.fr != fr || g_defer.ts != ts)
        return;
    PyObject *mine = g_defer.exc;
    g_defer.exc = NULL;
    g_defer.fr = NULL;
    if (raising && !exc)
        exc = mine;
    int still = 0; /* its slot is still an enabled exception slot */
    for (int i = 0; i < g_exc_n; i++)
        still |= g_exc_slots[i] == g_defer.slot;
    if (raising && exc == mine && still) {
        g_busy++;
        PyObject *tb = PyException_GetTraceback(exc);
        g_busy--;
        if (bp_should_stop(g_defer.slot)) {
            g_pending_exc = exc;
            g_pending_tb = tb;
            g_pending_when = g_defer.when;
            stop(TDB_PYHOOK_STOP_EXCEPTION, g_defer.slot, ts, fr, ctx, line, NULL, NULL);
            g_pending_exc = g_pending_tb = NULL;
        }
        Py_XDECREF(tb);
    }
    Py_DECREF(mine);
    PyErr_Clear();
}

void exc_event(PyThreadState *ts, iframe *fr, PyObject *exc, PyObject *tb, void *ctx, int line)
{
    if (!g_exc_n || !exc || !PyExceptionInstance_Check(exc) || !frame_is_python(fr))
        return;
    if (g_defer.exc && g_defer.fr == fr && g_defer.exc != exc) {
        /* another exception in the frame whose 'with' was to decide (its
         * __exit__ raised): that one is decided now */
        Py_CLEAR(g_defer.exc);
        g_defer.fr = NULL;
    }
    g_busy++;
    PyObject *own_tb = NULL;
    if (!tb || tb == Py_None)
        tb = own_tb = PyException_GetTraceback(exc);
    int here = !tb || tb == Py_None || ((PyTracebackObject *)tb)->tb_next == NULL;
    PyCodeObject *co = frame_code(fr);
    const char *file = PyCode_Check(co) ? utf8(co->co_filename) : NULL;
    int known = 0, handled = 0, caller_mine = 0, caller_handles = 0;
    iframe *caller = NULL;
    int count;
    tdb_pyhook_breakpoint *t = (tdb_pyhook_breakpoint *)(uintptr_t)C.table;
    count = C.n_breakpoints < C.capacity ? C.n_breakpoints : C.capacity;
    for (int i = 0; i < g_exc_n; i++) {
        int slot = g_exc_slots[i];
        if (slot < 0 || slot >= count)
            continue;
        tdb_pyhook_breakpoint *bp = &t[slot];
        if (!type_matches(bp->function, exc))
            continue;
        int when = 0;
        /* Raised with no class named: only in the user's code (as
         * debugpy's justMyCode), or every import of the standard library
         * would stop (enum, json, types raise and catch as they load). */
        if ((bp->exc_when & TDB_PYHOOK_EXC_RAISED) && here &&
            (bp->function[0] || (!routine(exc, file) && is_mine(file))))
            when = TDB_PYHOOK_EXC_RAISED;
        else if (bp->exc_when & (TDB_PYHOOK_EXC_UNCAUGHT | TDB_PYHOOK_EXC_USER)) {
            if (!known) {
                known = 1;
                handled = frame_handles(fr, exc);
                caller = python_caller(fr);
                if (caller && PyCode_Check(frame_code(caller))) {
                    caller_mine = is_mine(utf8(frame_code(caller)->co_filename));
                    caller_handles = frame_handles(caller, exc) == 1;
                }
            }
            if (handled == 1)
                continue;
            /* The interpreter's own start calls the path hooks (frozen
             * zipimport) from C, which clears what they raise. */
            if ((bp->exc_when & TDB_PYHOOK_EXC_UNCAUGHT) && !caller &&
                !(file && strncmp(file, "<frozen ", 8) == 0))
                when = TDB_PYHOOK_EXC_UNCAUGHT;
            else if ((bp->exc_when & TDB_PYHOOK_EXC_USER) && caller && is_mine(file) &&
                     !caller_mine && !caller_handles)
                when = TDB_PYHOOK_EXC_USER;
        }
        PyErr_Clear();
        if (!when)
            continue;
        if (when != TDB_PYHOOK_EXC_RAISED && handled == MAYBE) {
            defer(ts, fr, exc, slot, when);
            continue;
        }
        g_busy--;
        int go = bp_should_stop(slot);
        g_busy++;
        if (!go)
            continue;
        g_pending_exc = exc;
        g_pending_tb = tb;
        g_pending_when = when;
        g_busy--;
        stop(TDB_PYHOOK_STOP_EXCEPTION, slot, ts, fr, ctx, line, NULL, NULL);
        g_busy++;
        g_pending_exc = g_pending_tb = NULL;
        break;
    }
    Py_XDECREF(own_tb);
    PyErr_Clear();
    g_busy--;
}
