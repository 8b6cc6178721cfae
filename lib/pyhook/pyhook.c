/*
 * pyhook.c: Python breakpoints and stepping, from inside the interpreter.
 *
 * tdebug loads this library into the target with gdb (dlopen at a safe
 * point, then tdebug_pyhook_install()) and drives it through the control
 * block of lib/tdebug_pyhook.h; read that header first: it is the contract.
 * Built once per CPython minor version against that version's internal
 * headers (-DPy_BUILD_CORE); Py* symbols resolve against the process.
 *
 * This file is what every CPython shares: the control block, matching the
 * breakpoint table against code objects (cached per code object in
 * co_extra, keyed by the generation it was computed for; a code object
 * that matches nothing costs a tagged integer, no allocation), stops and
 * their reports, and finding the native function a step goes into.  How
 * line events are obtained is the mechanism's: evaltrace.c (3.8-3.11, a
 * PEP 523 frame evaluation hook and a C trace function) or monitoring.c
 * (3.12+, sys.monitoring); pyhook.h says what they share.
 *
 * Rules kept everywhere: the GIL is held whenever CPython is called (the
 * hooks and callbacks run with it; gdb calls us only at safe points); an
 * exception raised inside the library is cleared and the one the program
 * had is restored; nothing is printed.
 */
#include "pyhook.h"
#include "untraced_trap.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

EXPORT tdb_pyhook_control tdebug_pyhook_control = {
    .magic = TDB_PYHOOK_MAGIC,
    .abi = TDB_PYHOOK_ABI,
    .size = sizeof(tdb_pyhook_control),
    .py_version = PY_VERSION_HEX,
};
extern tdb_pyhook_control g_control __attribute__((alias("tdebug_pyhook_control")));

EXPORT __attribute__((noinline)) void tdebug_pyhook_stop(void)
{
    /* tdebug's gdb breakpoint is here; the asm keeps the call and the
     * function from being folded away. */
    __asm__ volatile("" ::: "memory");
}

/* ------------------------------------------------------------------ */
/* State                                                               */

Py_ssize_t g_extra_index = -1;
uint64_t g_gen = (uint64_t)-1;
void *g_tag = TAG((uint64_t)-1);
int g_installed;
int g_active;
int g_busy;
unsigned g_epoch;
void *g_interp_base;
/* The type of a bound slot wrapper (None.__bool__): 3.13 no longer
 * exports _PyMethodWrapper_Type. */
static PyTypeObject *g_method_wrapper_type;
step_state g_step;
static void unwatch(void); /* A session's end, below */
__thread iframe *tls_fn_frame;
__thread int tls_fn_slot;

int frame_line(iframe *fr)
{
#if PY311
    return PyCode_Addr2Line(frame_code(fr), _PyInterpreterFrame_LASTI(fr) * (int)sizeof(_Py_CODEUNIT));
#else
    return PyFrame_GetLineNumber(fr);
#endif
}

void copy_str(char *dst, size_t n, const char *src)
{
    if (!src)
        src = "";
    size_t l = strlen(src);
    if (l >= n)
        l = n - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

/* The table tdebug writes (lib/tdebug_pyhook.h: .table, .capacity) and
 * the slots of it in use. */
static tdb_pyhook_breakpoint g_first_table[TDB_PYHOOK_FIRST_CAPACITY];

__attribute__((constructor)) static void table_init(void)
{
    C.table = (uint64_t)(uintptr_t)g_first_table;
    C.capacity = TDB_PYHOOK_FIRST_CAPACITY;
}

static tdb_pyhook_breakpoint *table_slots(int *n)
{
    *n = C.n_breakpoints < C.capacity ? C.n_breakpoints : C.capacity;
    if (*n < 0)
        *n = 0;
    return (tdb_pyhook_breakpoint *)(uintptr_t)C.table;
}

/* Enabled breakpoints in the generation applied (the index's count). */
static int g_n_enabled;

int any_enabled(void)
{
    return g_n_enabled > 0;
}

void for_each_thread(void (*fn)(PyThreadState *))
{
    for (PyInterpreterState *is = PyInterpreterState_Head(); is; is = PyInterpreterState_Next(is))
        for (PyThreadState *ts = PyInterpreterState_ThreadHead(is); ts; ts = PyThreadState_Next(ts))
            fn(ts);
}

PyThreadState *find_thread(uint64_t tstate, int64_t tid)
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
#if !PY311
    /* No native thread id in a thread state before 3.11: the thread gdb
     * calls the library on (tdebug_pyhook_step_arm) is the one it names. */
    if (!tstate && tid && tid == (int64_t)syscall(SYS_gettid) && PyGILState_Check())
        return PyThreadState_Get();
#endif
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Breakpoint matching and the per-code cache                          */

static void code_info_free(void *p)
{
    if (p && !((uintptr_t)p & 1))
        PyMem_RawFree(p);
}

const char *utf8(PyObject *s)
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

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The lines CO has instructions on (its own, not a nested function's),
 * sorted, each once: *OUT (PyMem_RawFree it), their number returned, 0
 * when none or on failure. */
static int code_lines(PyCodeObject *co, int **out)
{
    int n = 0, cap = 0, *v = NULL;
    *out = NULL;
#define ADD_LINE(l)                                                                  \
    do {                                                                             \
        if (n == cap) {                                                              \
            int *nv = PyMem_RawRealloc(v, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *v); \
            if (!nv)                                                                 \
                goto fail;                                                           \
            v = nv;                                                                  \
        }                                                                            \
        v[n++] = (l);                                                                \
    } while (0)
#if PY310
    PyObject *it = PyObject_CallMethod((PyObject *)co, "co_lines", NULL);
    PyObject *iter = it ? PyObject_GetIter(it) : NULL, *item;
    Py_XDECREF(it);
    if (!iter) {
        PyErr_Clear();
        return 0;
    }
    while ((item = PyIter_Next(iter))) {
        long l = -1;
        if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 3 &&
            PyLong_Check(PyTuple_GET_ITEM(item, 2)))
            l = PyLong_AsLong(PyTuple_GET_ITEM(item, 2));
        Py_DECREF(item);
        if (l >= co->co_firstlineno && l <= INT32_MAX)
            ADD_LINE((int)l);
    }
    Py_DECREF(iter);
    PyErr_Clear();
#else
    /* co_lnotab: (bytecode increment, signed line increment) pairs; a line
     * is present when some bytecode starts on it (dis.findlinestarts). */
    PyObject *tab = co->co_lnotab;
    if (!tab || !PyBytes_Check(tab))
        return 0;
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(tab);
    Py_ssize_t nt = PyBytes_GET_SIZE(tab), len = PyBytes_GET_SIZE(co->co_code);
    int lineno = co->co_firstlineno, last = -1, ended = 0;
    Py_ssize_t addr = 0;
    for (Py_ssize_t i = 0; i + 1 < nt && !ended; i += 2) {
        if (p[i]) {
            if (lineno != last) {
                ADD_LINE(lineno);
                last = lineno;
            }
            addr += p[i];
            ended = addr >= len;
        }
        lineno += (signed char)p[i + 1];
    }
    if (!ended && lineno != last && addr < len)
        ADD_LINE(lineno);
#endif
#undef ADD_LINE
    qsort(v, (size_t)n, sizeof *v, cmp_int);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (!u || v[u - 1] != v[i])
            v[u++] = v[i];
    *out = v;
    return u;
fail:
    PyMem_RawFree(v);
    return 0;
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

/* The index of the table, rebuilt at each generation: the enabled slots
 * by the hash of their file's last component (a breakpoint's file and the
 * co_filename it matches share it: one is the other, or its tail at a '/'
 * boundary), sorted by (hash, slot); and the function breakpoints for any
 * file.  A code object seen for the first time looks at the slots of its
 * file's name only, so neither that nor a line run grows with the table. */
typedef struct idx_entry {
    uint64_t hash;
    int slot;
} idx_entry;
static idx_entry *g_idx;
static int g_idx_n;
static int *g_anyfile;
static int g_anyfile_n;

static uint64_t name_hash(const char *path)
{
    const char *base = strrchr(path, '/');
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)(base ? base + 1 : path); *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

static int cmp_idx(const void *a, const void *b)
{
    const idx_entry *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

static void index_build(void)
{
    int n;
    tdb_pyhook_breakpoint *t = table_slots(&n);
    PyMem_RawFree(g_idx);
    PyMem_RawFree(g_anyfile);
    g_idx = NULL;
    g_anyfile = NULL;
    g_idx_n = g_anyfile_n = g_n_enabled = 0;
    exc_index_reset();
    if (n == 0)
        return;
    g_idx = PyMem_RawMalloc((size_t)n * sizeof *g_idx);
    g_anyfile = PyMem_RawMalloc((size_t)n * sizeof *g_anyfile);
    if (!g_idx || !g_anyfile) {
        copy_str(C.error, sizeof C.error, "sync: out of memory for the breakpoint index");
        return;
    }
    for (int i = 0; i < n; i++) {
        tdb_pyhook_breakpoint *bp = &t[i];
        bp->bound = 0;
        if (bp->id <= 0 || !bp->enabled)
            continue;
        if (bp->kind == TDB_PYHOOK_BP_EXCEPTION) {
            bp->function[sizeof bp->function - 1] = 0;
            exc_index_add(i);
            bp->bound = 1;
            continue;
        }
        g_n_enabled++;
        bp->file[sizeof bp->file - 1] = 0;
        bp->function[sizeof bp->function - 1] = 0;
        if (bp->file[0])
            g_idx[g_idx_n++] = (idx_entry){name_hash(bp->file), i};
        else if (bp->kind == TDB_PYHOOK_BP_FUNCTION)
            g_anyfile[g_anyfile_n++] = i;
    }
    qsort(g_idx, (size_t)g_idx_n, sizeof *g_idx, cmp_idx);
}

typedef struct line_slot {
    int line, slot;
} line_slot;

static int cmp_line_slot(const void *a, const void *b)
{
    const line_slot *x = a, *y = b;
    if (x->line != y->line)
        return (x->line > y->line) - (x->line < y->line);
    return (x->slot > y->slot) - (x->slot < y->slot);
}

int code_info_slot_at(const code_info *ci, int line)
{
    int lo = 0, hi = ci->n;
    while (lo < hi) { /* the first entry with v.line >= line */
        int mid = lo + (hi - lo) / 2;
        if (ci->v[mid].line < line)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ci->n && ci->v[lo].line == line ? ci->v[lo].slot : -1;
}

/* Candidate slot SLOT for CO (of FILE): a function breakpoint lowers
 * *FN_SLOT, a line breakpoint on a line CO has joins LS. */
static void consider(PyCodeObject *co, const char *file, int slot, int *fn_slot, line_slot **ls,
                     int *n, int *cap, int **lines, int *nlines)
{
    int count;
    tdb_pyhook_breakpoint *bp = &table_slots(&count)[slot];
    if (bp->kind == TDB_PYHOOK_BP_LINE) {
        if (!bp->file[0] || bp->line < co->co_firstlineno || !file_matches(bp->file, file))
            return;
        if (*nlines < 0)
            *nlines = code_lines(co, lines);
        if (!*nlines || !bsearch(&bp->line, *lines, (size_t)*nlines, sizeof **lines, cmp_int))
            return;
        if (*n == *cap) {
            line_slot *nv = PyMem_RawRealloc(*ls, (size_t)(*cap = *cap ? 2 * *cap : 8) * sizeof **ls);
            if (!nv)
                return;
            *ls = nv;
        }
        (*ls)[(*n)++] = (line_slot){bp->line, slot};
        bp->bound++;
    } else if (bp->kind == TDB_PYHOOK_BP_FUNCTION) {
        if (bp->function[0] && (*fn_slot < 0 || slot < *fn_slot) && file_matches(bp->file, file) &&
            name_matches(bp->function, co)) {
            *fn_slot = slot;
            bp->bound++;
        }
    }
}

code_info *code_compute(PyCodeObject *co)
{
    code_info *ci = NULL;
    const char *file = utf8(co->co_filename);
    line_slot *ls = NULL;
    int fn_slot = -1, n = 0, cap = 0, *lines = NULL, nlines = -1;
    if (file && g_idx_n) {
        idx_entry key = {name_hash(file), -1};
        int lo = 0, hi = g_idx_n;
        while (lo < hi) { /* the first entry >= key */
            int mid = lo + (hi - lo) / 2;
            if (cmp_idx(&g_idx[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (int i = lo; i < g_idx_n && g_idx[i].hash == key.hash; i++)
            consider(co, file, g_idx[i].slot, &fn_slot, &ls, &n, &cap, &lines, &nlines);
    }
    for (int i = 0; i < g_anyfile_n; i++)
        consider(co, file, g_anyfile[i], &fn_slot, &ls, &n, &cap, &lines, &nlines);
    PyMem_RawFree(lines);
    if (fn_slot >= 0 || n > 0) {
        ci = PyMem_RawMalloc(sizeof *ci + (size_t)n * sizeof ci->v[0]);
        if (ci) {
            ci->gen = g_gen;
            ci->fn_slot = fn_slot;
            ci->n = n;
            qsort(ls, (size_t)n, sizeof *ls, cmp_line_slot);
            for (int i = 0; i < n; i++) {
                ci->v[i].line = ls[i].line;
                ci->v[i].slot = ls[i].slot;
            }
        }
    }
    PyMem_RawFree(ls);
    /* _PyCode_SetExtra frees the value it replaces (code_info_free). */
    if (_PyCode_SetExtra((PyObject *)co, g_extra_index, ci ? (void *)ci : TAG(g_gen)) < 0) {
        PyErr_Clear();
        PyMem_RawFree(ci);
        return NULL;
    }
    return ci;
}


/* ------------------------------------------------------------------ */
/* Conditions, hit counts and log points                               */

/* What a slot's strings compile to, for the generation they were
 * compiled in: the condition's code object, and the log message as a
 * tuple of str (literal text) and code objects ({expression} parts).
 * Kept beside the table (not in it) so that only the library's own
 * objects live here. */
static struct bp_compiled {
    uint64_t gen;
    int id;
    PyObject *cond;
    PyObject *log;
} *g_compiled; /* g_compiled_n of them, grown with the table */
static int g_compiled_n;

/* Why the condition of the stop being reported failed, else "". */
static char g_stop_message[TDB_PYHOOK_EXPR_MAX];
static int g_log_fd = -1;

static void set_message_from_exception(char *dst, size_t n, const char *what)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    const char *tname = et ? ((PyTypeObject *)et)->tp_name : "error";
    PyObject *str = ev ? PyObject_Str(ev) : NULL;
    const char *text = str ? utf8(str) : NULL;
    snprintf(dst, n, "%s%s%s%s%s", what, what[0] ? ": " : "", tname, text && *text ? ": " : "",
             text ? text : "");
    Py_XDECREF(str);
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    PyErr_Clear();
}

/* The literal text LIT[0..*N), if any, appended to PARTS as a str; *N is
 * then 0.  -1 with an exception set. */
static int append_text(PyObject *parts, const char *lit, size_t *n)
{
    if (!*n)
        return 0;
    PyObject *t = PyUnicode_DecodeUTF8(lit, (Py_ssize_t)*n, "replace");
    int rc = t ? PyList_Append(parts, t) : -1;
    Py_XDECREF(t);
    *n = 0;
    return rc;
}

/* The log message TEXT as a tuple of str and code objects, NULL with an
 * exception set when an {expression} does not compile. */
static PyObject *compile_log(const char *text)
{
    PyObject *parts = PyList_New(0), *out = NULL;
    char *lit = PyMem_RawMalloc(strlen(text) + 1);
    size_t nlit = 0;
    if (!parts || !lit)
        goto cleanup;
    for (const char *p = text; *p;) {
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            lit[nlit++] = *p;
            p += 2;
            continue;
        }
        if (*p != '{') {
            lit[nlit++] = *p++;
            continue;
        }
        const char *end = strchr(p + 1, '}');
        if (!end) { /* an unbalanced brace is text */
            lit[nlit++] = *p++;
            continue;
        }
        if (append_text(parts, lit, &nlit) < 0)
            goto cleanup;
        size_t n = (size_t)(end - p - 1);
        char *expr = PyMem_RawMalloc(n + 1);
        if (!expr)
            goto cleanup;
        memcpy(expr, p + 1, n);
        expr[n] = 0;
        PyObject *co = Py_CompileString(expr, "<log message>", Py_eval_input);
        PyMem_RawFree(expr);
        if (!co || PyList_Append(parts, co) < 0) {
            Py_XDECREF(co);
            goto cleanup;
        }
        Py_DECREF(co);
        p = end + 1;
    }
    if (append_text(parts, lit, &nlit) < 0)
        goto cleanup;
    out = PyList_AsTuple(parts);
cleanup:
    Py_XDECREF(parts);
    PyMem_RawFree(lit);
    return out;
}

static void compiled_clear(struct bp_compiled *c)
{
    Py_CLEAR(c->cond);
    Py_CLEAR(c->log);
    c->gen = 0;
    c->id = 0;
}

/* Slot SLOT's compiled strings for the current generation; a string that
 * does not compile leaves its member NULL and says why in MSG. */
static struct bp_compiled *compiled(int slot, char *msg, size_t n)
{
    if (slot >= g_compiled_n) {
        int want = C.capacity > slot ? C.capacity : slot + 1;
        struct bp_compiled *v = PyMem_RawRealloc(g_compiled, (size_t)want * sizeof *v);
        if (!v) {
            snprintf(msg, n, "out of memory for the breakpoint's condition");
            return NULL;
        }
        memset(v + g_compiled_n, 0, (size_t)(want - g_compiled_n) * sizeof *v);
        g_compiled = v;
        g_compiled_n = want;
    }
    struct bp_compiled *c = &g_compiled[slot];
    int count;
    tdb_pyhook_breakpoint *bp = &table_slots(&count)[slot];
    if (c->gen == g_gen + 1 && c->id == bp->id)
        return c;
    compiled_clear(c);
    char text[TDB_PYHOOK_EXPR_MAX];
    memcpy(text, bp->condition, sizeof text);
    text[sizeof text - 1] = 0;
    if (text[0] && !(c->cond = Py_CompileString(text, "<breakpoint condition>", Py_eval_input)))
        set_message_from_exception(msg, n, "the condition does not compile");
    memcpy(text, bp->log_message, sizeof text);
    text[sizeof text - 1] = 0;
    if (text[0] && !(c->log = compile_log(text)))
        set_message_from_exception(msg, n, "the log message does not compile");
    c->gen = g_gen + 1; /* 0: never compiled */
    c->id = bp->id;
    return c;
}

/* Evaluate code object CO in the current frame: new reference, or NULL
 * with an exception set. */
static PyObject *eval_in_frame(PyObject *co, PyObject *globals, PyObject *locals)
{
    return PyEval_EvalCode(co, globals, locals);
}

/* The globals and locals of the thread's current Python frame (new
 * references), 0; -1 with an exception set. */
static int frame_namespaces(PyObject **globals, PyObject **locals)
{
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
    if (!f) {
        PyErr_SetString(PyExc_RuntimeError, "no Python frame");
        return -1;
    }
#if PY311
    *globals = PyFrame_GetGlobals(f);
    *locals = PyFrame_GetLocals(f);
    if (!*locals) {
        Py_CLEAR(*globals);
        return -1;
    }
#else
    if (PyFrame_FastToLocalsWithError(f) < 0)
        return -1;
    *globals = f->f_globals;
    *locals = f->f_locals ? f->f_locals : f->f_globals;
    Py_INCREF(*globals);
    Py_INCREF(*locals);
#endif
    return 0;
}

static void log_write(int32_t id, const char *text, Py_ssize_t len)
{
    if (g_log_fd < 0) {
        char path[TDB_PYHOOK_LOG_PATH_MAX];
        memcpy(path, C.log_path, sizeof path);
        path[sizeof path - 1] = 0;
        if (!path[0] || (g_log_fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
            C.log_dropped++;
            return;
        }
        /* Blocking from now on: a record is never lost because tdebug was
         * busy for a moment. */
        fcntl(g_log_fd, F_SETFL, fcntl(g_log_fd, F_GETFL) & ~O_NONBLOCK);
    }
    char head[24];
    int hl = snprintf(head, sizeof head, "%d\t", (int)id);
    size_t total = (size_t)hl + (size_t)len + 1;
    char *rec = PyMem_RawMalloc(total);
    if (!rec) {
        C.log_dropped++;
        return;
    }
    memcpy(rec, head, (size_t)hl);
    for (Py_ssize_t i = 0; i < len; i++)
        rec[hl + i] = text[i] ? text[i] : ' ';
    rec[total - 1] = 0;
    size_t done = 0;
    while (done < total) {
        ssize_t w = write(g_log_fd, rec + done, total - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            C.log_dropped++;
            break;
        }
        done += (size_t)w;
    }
    PyMem_RawFree(rec);
}

static void log_emit(int32_t id, PyObject *parts, PyObject *globals, PyObject *locals)
{
    PyObject *pieces = PyList_New(0);
    if (!pieces)
        goto cleanup;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(parts); i++) {
        PyObject *p = PyTuple_GET_ITEM(parts, i), *v;
        if (PyUnicode_Check(p)) {
            v = p;
            Py_INCREF(v);
        } else {
            PyObject *r = eval_in_frame(p, globals, locals);
            v = r ? PyObject_Str(r) : NULL;
            Py_XDECREF(r);
            if (!v) {
                char msg[TDB_PYHOOK_EXPR_MAX];
                set_message_from_exception(msg, sizeof msg, "");
                v = PyUnicode_FromFormat("<%s>", msg);
            }
        }
        if (!v || PyList_Append(pieces, v) < 0) {
            Py_XDECREF(v);
            goto cleanup;
        }
        Py_DECREF(v);
    }
    PyObject *empty = PyUnicode_FromString(""), *line = empty ? PyUnicode_Join(empty, pieces) : NULL;
    Py_XDECREF(empty);
    if (line) {
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(line, &n);
        if (text)
            log_write(id, text, n);
        Py_DECREF(line);
    }
cleanup:
    Py_XDECREF(pieces);
    PyErr_Clear();
}

int bp_should_stop(int slot)
{
    int count;
    tdb_pyhook_breakpoint *bp = &table_slots(&count)[slot];
    g_stop_message[0] = 0;
    if (LIKELY(!bp->condition[0] && !bp->log_message[0] && !bp->hit_op && !bp->ignore)) {
        bp->hit_count++;
        return 1;
    }
    PyObject *et, *ev, *tb, *globals = NULL, *locals = NULL;
    PyErr_Fetch(&et, &ev, &tb);
    g_busy++;
    int go = 0;
    struct bp_compiled *c = compiled(slot, g_stop_message, sizeof g_stop_message);
    if (g_stop_message[0]) {
        go = 1; /* say why at a stop */
        goto cleanup;
    }
    if ((c->cond || c->log) && frame_namespaces(&globals, &locals) < 0) {
        set_message_from_exception(g_stop_message, sizeof g_stop_message, "the frame");
        go = 1;
        goto cleanup;
    }
    if (c->cond) {
        PyObject *r = eval_in_frame(c->cond, globals, locals);
        int truth = r ? PyObject_IsTrue(r) : -1;
        Py_XDECREF(r);
        if (truth < 0) {
            set_message_from_exception(g_stop_message, sizeof g_stop_message,
                                       "the condition raised");
            go = 1;
            goto cleanup;
        }
        if (!truth)
            goto cleanup;
    }
    bp->hit_count++;
    if (bp->ignore > 0) {
        bp->ignore--;
        goto cleanup;
    }
    if (!tdb_pyhook_hit_passes(bp->hit_op, bp->hit_count, bp->hit_value))
        goto cleanup;
    if (c->log) {
        log_emit(bp->id, c->log, globals, locals);
        goto cleanup;
    }
    go = 1;
cleanup:
    Py_XDECREF(globals);
    Py_XDECREF(locals);
    g_busy--;
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return go;
}

/* ------------------------------------------------------------------ */
/* Evaluating Python at a stop                                         */

/* The frame object of the thread's frame at FRAME (0: the innermost);
 * borrowed, or NULL. */
static PyFrameObject *frame_object_at(uint64_t frame)
{
    PyFrameObject *f = PyEval_GetFrame();
    if (!frame || !f)
        return f;
    for (int n = 0; f && n < MAX_WALK; n++) {
#if PY311
        if ((uint64_t)(uintptr_t)f->f_frame == frame)
#else
        if ((uint64_t)(uintptr_t)f == frame)
#endif
            return f;
#if PY_VERSION_HEX >= 0x03090000
        PyFrameObject *back = PyFrame_GetBack(f); /* new reference */
        Py_XDECREF(back); /* kept alive by the frame it is the back of */
        f = back;
#else
        f = f->f_back;
#endif
    }
    return NULL;
}

EXPORT int tdebug_pyhook_eval(void)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    g_busy++;
    int rc = -1;
    PyObject *globals = NULL, *locals = NULL, *co = NULL, *r = NULL, *repr = NULL;
    char text[TDB_PYHOOK_EXPR_MAX];
    memcpy(text, C.eval_text, sizeof text);
    text[sizeof text - 1] = 0;
    C.eval_type[0] = 0;
    PyFrameObject *f = frame_object_at(C.eval_frame);
    if (!f) {
        copy_str(C.eval_result, sizeof C.eval_result, "no such Python frame in this thread");
        goto cleanup;
    }
#if PY311
    globals = PyFrame_GetGlobals(f);
    locals = PyFrame_GetLocals(f);
#else
    if (PyFrame_FastToLocalsWithError(f) == 0) {
        globals = f->f_globals;
        locals = f->f_locals ? f->f_locals : f->f_globals;
        Py_INCREF(globals);
        Py_INCREF(locals);
    }
#endif
    int statements = C.eval_mode == TDB_PYHOOK_EVAL_STATEMENTS;
    if (globals && locals)
        co = Py_CompileString(text, "<tdebug>", statements ? Py_file_input : Py_eval_input);
    if (co)
        r = PyEval_EvalCode(co, globals, locals);
    if (!r) {
        set_message_from_exception(C.eval_result, sizeof C.eval_result, "");
        goto cleanup;
    }
#if !PY313
    /* 3.13's f_locals writes through; before, a changed local is copied
     * back into the frame. */
    if (statements)
        PyFrame_LocalsToFast(f, 0);
#endif
    repr = PyObject_Repr(r);
    copy_str(C.eval_result, sizeof C.eval_result, repr ? utf8(repr) : "<no repr>");
    copy_str(C.eval_type, sizeof C.eval_type, Py_TYPE(r)->tp_name);
    rc = 0;
cleanup:
    Py_XDECREF(repr);
    Py_XDECREF(r);
    Py_XDECREF(co);
    Py_XDECREF(globals);
    Py_XDECREF(locals);
    PyErr_Clear();
    g_busy--;
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(gil);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Steps and stops                                                     */

static void step_end(void)
{
    g_epoch++;
    if (g_step.mode)
        mech_step_end();
    memset(&g_step, 0, sizeof g_step);
    C.step.mode = TDB_PYHOOK_STEP_NONE;
    C.step.armed = 0;
    g_active = any_enabled() || g_exc_n;
}

void step_cancelled(void)
{
    /* tdebug wrote mode 0 over a step the library had armed (a step into
     * native code reached its native breakpoint first): nothing is to be
     * reported for it any more. */
    g_busy++;
    step_end();
    g_busy--;
}

int step_stops_at_line(iframe *fr)
{
    switch (g_step.mode) {
    case TDB_PYHOOK_STEP_STEP:
        return 1;
    case TDB_PYHOOK_STEP_NEXT:
        if (fr == g_step.frame || g_step.returned)
            return 1;
        /* Deeper (a recursive call of the same code, a breakpoint's frame
         * not at its line) or a caller the start frame returned to
         * without our seeing it. */
        int n = 0;
        for (iframe *p = FRAME_BACK(fr); p && n < MAX_WALK; p = FRAME_BACK(p), n++)
            if (p == g_step.frame)
                return 0;
        return 1;
    case TDB_PYHOOK_STEP_FINISH:
        return g_step.returned;
    default:
        return 0;
    }
}

/* Take the step request tdebug wrote.  CTX: the mechanism's (what the
 * event the thread stopped in knows of the frame). */
static int step_take(void *ctx)
{
    PyThreadState *ts = find_thread(C.step.tstate, C.step.tid);
    if (!ts) {
        copy_str(C.error, sizeof C.error, "step: no Python thread with that tstate/tid");
        C.step.mode = TDB_PYHOOK_STEP_NONE;
        return -1;
    }
    iframe *fr = C.step.frame ? (iframe *)(uintptr_t)C.step.frame : thread_frame(ts);
    while (fr && !frame_is_python(fr))
        fr = FRAME_BACK(fr);
    if (!fr) {
        copy_str(C.error, sizeof C.error, "step: the thread runs no Python code");
        C.step.mode = TDB_PYHOOK_STEP_NONE;
        return -1;
    }
    if (g_step.mode) {
        /* a new request over an armed step: the old one ends unreported */
        mech_step_end();
        memset(&g_step, 0, sizeof g_step);
    }
    g_epoch++;
    g_step.mode = C.step.mode;
    g_step.ts = ts;
    g_step.frame = fr;
    g_step.line = C.step.line ? C.step.line : frame_line(fr);
    g_step.returned = 0;
    g_active = 1;
    if (mech_step_take(ctx) < 0) {
        memset(&g_step, 0, sizeof g_step);
        C.step.mode = TDB_PYHOOK_STEP_NONE;
        g_active = any_enabled() || g_exc_n;
        return -1;
    }
    C.step.armed = 1;
    return 0;
}

static void do_uninstall(void)
{
    if (!g_installed)
        return;
    if (g_step.mode)
        mech_step_end();
    memset(&g_step, 0, sizeof g_step);
    C.step.mode = TDB_PYHOOK_STEP_NONE;
    C.step.armed = 0;
    mech_uninstall();
    unwatch();
    for (int i = 0; i < g_compiled_n; i++)
        compiled_clear(&g_compiled[i]);
    if (g_log_fd >= 0) {
        close(g_log_fd);
        g_log_fd = -1;
    }
    g_installed = 0;
    g_active = 0;
    C.installed = 0;
    C.mechanism = TDB_PYHOOK_MECH_NONE;
    C.disable = 0;
}

static void do_sync(void)
{
    g_epoch++;
    g_gen = C.generation;
    g_tag = TAG(g_gen);
    index_build();
    g_active = any_enabled() || g_exc_n || g_step.mode;
    mech_sync();
    C.applied_generation = g_gen;
}

void apply_control(void)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    g_busy++;
    if (C.disable)
        do_uninstall();
    else if (C.generation != g_gen)
        do_sync();
    g_busy--;
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

/* Back from tdebug_pyhook_stop (or a gdb call): apply what tdebug wrote. */
static void after_stop(void *ctx)
{
    if (C.disable) {
        do_uninstall();
        return;
    }
    if (C.generation != g_gen)
        do_sync();
    if (C.step.mode != TDB_PYHOOK_STEP_NONE && !C.step.armed)
        step_take(ctx);
}

void stop(int reason, int slot, PyThreadState *ts, iframe *fr, void *ctx, int line, void *native,
          const char *what)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    g_busy++;
    tdb_pyhook_report *r = &C.report;
    r->serial++;
    r->reason = reason;
    r->breakpoint_id = 0;
    int nslots;
    tdb_pyhook_breakpoint *t = table_slots(&nslots);
    if (slot >= 0 && slot < nslots) {
        t[slot].hits++;
        r->breakpoint_id = t[slot].id;
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
    memcpy(r->message, g_stop_message, sizeof r->message);
    g_stop_message[0] = 0;
    copy_str(r->native_what, sizeof r->native_what, what);
    copy_str(r->file, sizeof r->file, co ? utf8(co->co_filename) : NULL);
#if PY311
    copy_str(r->function, sizeof r->function, co ? utf8(co->co_qualname) : NULL);
#else
    copy_str(r->function, sizeof r->function, co ? utf8(co->co_name) : NULL);
#endif
    exc_report(r);
    PyErr_Clear();
    if (g_step.mode)
        step_end();
    tdebug_pyhook_stop();
    watch_check(); /* gdb may have died while we were stopped */
    after_stop(ctx);
    PyErr_Clear();
    g_busy--;
    PyErr_Restore(et, ev, tb);
}

/* ------------------------------------------------------------------ */
/* Where a step goes native                                            */

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

/* What a user calls type T: its qualified name ("Tensor", "Linear"),
 * not the module path a static type's tp_name has. */
static const char *type_qualname(PyTypeObject *t)
{
    if (t->tp_flags & Py_TPFLAGS_HEAPTYPE) {
        const char *q = utf8(((PyHeapTypeObject *)t)->ht_qualname);
        if (q)
            return q;
        PyErr_Clear();
    }
    const char *dot = strrchr(t->tp_name, '.');
    return dot ? dot + 1 : t->tp_name;
}

/* FN is native code outside the interpreter: the step goes there.  TYPE
 * and NAME make what it is called ("Tensor.__add__", "torch.add"). */
static int native(resolved *r, void *fn, const char *type, const char *name)
{
    if (!fn || in_interpreter(fn))
        return 0;
    r->kind = R_NATIVE;
    r->addr = fn;
    snprintf(r->what, sizeof r->what, "%s%s%s", type ? type : "", type ? "." : "", name ? name : "?");
    return 1;
}

/* What calling descriptor/attribute value D (found on TYPE, the type of
 * the object it is called on when known) runs first. */
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
        return native(r, (void *)m->d_method->ml_meth,
                      type_qualname(type ? type : m->d_common.d_type), m->d_method->ml_name);
    }
    if (Py_IS_TYPE(d, &PyWrapperDescr_Type)) {
        PyWrapperDescrObject *w = (PyWrapperDescrObject *)d;
        return native(r, w->d_wrapped, type_qualname(type ? type : w->d_common.d_type),
                      name ? name : utf8(w->d_common.d_name));
    }
    if (PyCFunction_Check(d)) {
        PyCFunctionObject *c = (PyCFunctionObject *)d;
        return native(r, (void *)c->m_ml->ml_meth, type ? type_qualname(type) : NULL,
                      c->m_ml->ml_name);
    }
    return 0;
}

/* Slot SLOT of TYPE, for the special method DUNDER. */
static int resolve_slot(resolved *r, PyTypeObject *type, void *slot, const char *dunder)
{
    if (!slot)
        return 0;
    if (native(r, slot, type_qualname(type), dunder))
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

int resolve_callable(resolved *r, PyObject *c, PyObject *self, int depth)
{
    if (!c || depth > 4)
        return 0;
    if (PyFunction_Check(c)) {
        r->kind = R_PYTHON;
        return 1;
    }
    if (PyMethod_Check(c))
        return resolve_callable(r, PyMethod_GET_FUNCTION(c), PyMethod_GET_SELF(c), depth + 1);
    if (PyCFunction_Check(c)) {
        /* A method bound to an instance or a class: that class's name.  A
         * function of a module, or a static method that says which module
         * it belongs to (torch.add is a static method of torch._C's
         * _VariableFunctionsClass whose __module__ is "torch"): the
         * module's, except for builtins ("len"). */
        PyCFunctionObject *f = (PyCFunctionObject *)c;
        PyObject *bound = f->m_self;
        const char *owner = NULL, *mod = utf8(f->m_module);
        PyErr_Clear();
        if (bound && !PyModule_Check(bound) && !(f->m_ml->ml_flags & METH_STATIC))
            owner = type_qualname(PyType_Check(bound) ? (PyTypeObject *)bound : Py_TYPE(bound));
        else if (mod && strcmp(mod, "builtins") != 0)
            owner = mod;
        else if (bound && PyType_Check(bound))
            owner = type_qualname((PyTypeObject *)bound);
        return native(r, (void *)f->m_ml->ml_meth, owner, f->m_ml->ml_name);
    }
    if (Py_IS_TYPE(c, &PyMethodDescr_Type) || Py_IS_TYPE(c, &PyClassMethodDescr_Type) ||
        Py_IS_TYPE(c, &PyWrapperDescr_Type))
        return resolve_descr(r, c, self ? Py_TYPE(self) : NULL, NULL);
    if (g_method_wrapper_type && Py_IS_TYPE(c, g_method_wrapper_type)) {
        /* a bound slot wrapper (x.__add__ of a C type): descrobject.c's
         * wrapperobject, whose first field is the descriptor */
        PyWrapperDescrObject *d = *(PyWrapperDescrObject **)((char *)c + sizeof(PyObject));
        return d ? native(r, d->d_wrapped, type_qualname(d->d_common.d_type),
                          utf8(d->d_common.d_name))
                 : 0;
    }
    if (PyType_Check(c)) {
        PyTypeObject *t = (PyTypeObject *)c;
        if (native(r, (void *)t->tp_new, type_qualname(t), "__new__") ||
            native(r, (void *)t->tp_init, type_qualname(t), "__init__"))
            return 1;
        return 0; /* Python __new__/__init__ show up as frames */
    }
    return resolve_slot(r, Py_TYPE(c), (void *)Py_TYPE(c)->tp_call, "__call__");
}

int resolve_getattr(resolved *r, PyObject *obj, PyObject *name, int store)
{
    PyTypeObject *t = Py_TYPE(obj);
    void *hook = store ? (void *)t->tp_setattro : (void *)t->tp_getattro;
    if (native(r, hook, type_qualname(t), store ? "__setattr__" : "__getattribute__"))
        return 1;
    if (!name || !PyUnicode_Check(name) || PyType_Check(obj))
        return 0;
    PyObject *d = _PyType_Lookup(t, name);
    if (!d)
        return 0;
    if (Py_IS_TYPE(d, &PyGetSetDescr_Type)) {
        PyGetSetDescrObject *g = (PyGetSetDescrObject *)d;
        return native(r, store ? (void *)g->d_getset->set : (void *)g->d_getset->get,
                      type_qualname(t), g->d_getset->name);
    }
    if (PyObject_TypeCheck(d, &PyProperty_Type)) {
        PyObject *fn = PyObject_GetAttrString(d, store ? "fset" : "fget");
        int ok = 0;
        if (fn) {
            ok = resolve_callable(r, fn, obj, 1);
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

int resolve_binop(resolved *r, PyObject *a, PyObject *b, int op, int inplace)
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

int resolve_subscr(resolved *r, PyObject *container, int store)
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

int resolve_compare(resolved *r, PyObject *a, int op)
{
    static const char *const names[] = {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"};
    if (op < 0 || op > 5)
        return 0;
    return resolve_slot(r, Py_TYPE(a), (void *)Py_TYPE(a)->tp_richcompare, names[op]);
}


/* ------------------------------------------------------------------ */
/* A session's end (lib/tdebug_pyhook.h): disarm, never trap unheard     */

/* The session is gone: disarm at the next safe point, as `disable` does.
 * Async-signal-safe (the SIGTRAP handler calls it) and lock-free (so does
 * the watcher, which holds no GIL): plain stores. */
static void orphaned(void)
{
    __atomic_store_n(&C.orphaned, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&C.disable, 1, __ATOMIC_SEQ_CST);
    uint64_t slot = __atomic_load_n(&C.sync_slot, __ATOMIC_SEQ_CST);
    if (slot)
        __atomic_store_n((uint64_t *)(uintptr_t)slot, C.sync_eval_frame, __ATOMIC_SEQ_CST);
}

__attribute__((constructor)) static void on_load(void)
{
    tdb_untraced_trap_install(orphaned);
    /* A child the program forks is not the session's (gdb follows the
     * parent and detaches the child): its copy of the hook disarms. */
    pthread_atfork(NULL, NULL, orphaned);
}

/* A number after KEY in /proc file PATH, or 0. */
static long proc_field(const char *path, const char *key)
{
    char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strstr(buf, key);
    return p ? strtol(p + strlen(key), NULL, 10) : 0;
}

/* The session's processes, watched through pidfds: the tracer and its
 * parent (see "A session's end").  No thread of ours: a thread would be
 * one more in every stack, thread list and DAP `threads` of the program;
 * the hook's own events look, every WATCH_EVERY of them, and on return
 * from each stop.  An idle program pays nothing, and a busy one's hooks
 * (the cost to remove) are what reach the look. */
#define WATCH_EVERY 16384
static int g_watch_fds[2] = {-1, -1};
int g_watch_countdown = WATCH_EVERY;

static void unwatch(void)
{
    for (int i = 0; i < 2; i++) {
        if (g_watch_fds[i] >= 0)
            close(g_watch_fds[i]);
        g_watch_fds[i] = -1;
    }
}

/* At install: watch the tracer and its parent. */
static void watch_session(void)
{
    char path[64];
    long pids[2];
    unwatch();
    pids[0] = proc_field("/proc/self/status", "\nTracerPid:");
    if (!pids[0])
        return; /* not traced, or by a tracer this namespace cannot see */
    snprintf(path, sizeof(path), "/proc/%ld/status", pids[0]);
    pids[1] = proc_field(path, "\nPPid:");
    for (int i = 0; i < 2; i++)
        if (pids[i] > 1)
            g_watch_fds[i] = (int)syscall(SYS_pidfd_open, (pid_t)pids[i], 0);
}

void watch_check(void)
{
    struct pollfd p[2];
    nfds_t n = 0;
    g_watch_countdown = WATCH_EVERY;
    for (int i = 0; i < 2; i++)
        if (g_watch_fds[i] >= 0)
            p[n++] = (struct pollfd){.fd = g_watch_fds[i], .events = POLLIN};
    if (!n)
        return;
    int gone = 0;
    if (poll(p, n, 0) > 0)
        for (nfds_t i = 0; i < n; i++)
            gone |= (p[i].revents & POLLIN) != 0;
    /* A dead tracer releases the process before its pidfd says so: no
     * tracer any more is the same news. */
    if (gone || proc_field("/proc/self/status", "\nTracerPid:") == 0) {
        unwatch();
        orphaned();
    }
}

/* ------------------------------------------------------------------ */
/* The exported functions                                              */

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
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (!g_method_wrapper_type) {
        PyObject *w = PyObject_GetAttrString(Py_None, "__bool__");
        if (w) {
            g_method_wrapper_type = Py_TYPE(w);
            Py_DECREF(w);
        }
        PyErr_Clear();
    }
    g_busy++;
    int rc = mech_install();
    if (rc == 0) {
        g_installed = 1;
        C.installed = 1;
        C.disable = 0;
        C.orphaned = 0;
        C.error[0] = 0;
        do_sync();
        tdb_untraced_trap_install(orphaned);
        watch_session();
    }
    g_busy--;
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return rc;
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
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    g_busy++;
    if (C.disable)
        do_uninstall();
    else
        do_sync();
    g_busy--;
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return 0;
}

EXPORT int tdebug_pyhook_step_arm(void)
{
    if (!callable_here("step"))
        return -1;
    if (C.step.mode == TDB_PYHOOK_STEP_NONE)
        return 0;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    g_busy++;
    if (C.generation != g_gen)
        do_sync();
    int rc = step_take(NULL);
    g_busy--;
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
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
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    g_busy++;
    do_uninstall();
    g_busy--;
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return 0;
}
