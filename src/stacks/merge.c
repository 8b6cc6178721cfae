/* stacks/merge.c: interleave native and Python frames; JSON and text. */
#include "stacks/merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVAL_NAME "_PyEval_EvalFrameDefault"

/* "_PyEval_EvalFrameDefault", or a part GCC split off it (".cold"). */
static int is_eval_name(const char *name)
{
    size_t len = sizeof(EVAL_NAME) - 1;
    return name && strncmp(name, EVAL_NAME, len) == 0 && (name[len] == '\0' || name[len] == '.');
}

/* CPython's calling machinery between a C function and the evaluator:
 * folded even where the thread is right now, as it says nothing of what
 * the thread does. */
static int is_call_plumbing(const char *name)
{
    static const char *const prefixes[] = {
        "_PyObject_Call", "PyObject_Call", "_PyObject_MakeTpCall", "cfunction_call",
        "slot_tp_call",   "_PyFunction_",  "_PyEval_Vector",      "do_call_core",
        "PyEval_EvalCode", "_PyEval_EvalFrame",
    };
    if (strstr(name, "vectorcall") || strstr(name, "Vectorcall"))
        return 1;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

void tdb_native_frames_classify(tdb_native_frame *frames, size_t n, const tdb_py_process *py)
{
    for (size_t i = 0; i < n; i++) {
        tdb_native_frame *f = &frames[i];
        /* Callers' pcs are return addresses: test the call instruction. */
        uint64_t at = i > 0 && f->pc ? f->pc - 1 : f->pc;
        /* By address only when the frame has no name: with debug info gdb
         * lists the functions inlined into the evaluator (call_function,
         * _PyEval_EvalFrame...) as frames of their own at the same pc, and
         * only the one named _PyEval_EvalFrameDefault is the call. */
        f->is_eval = is_eval_name(f->function) ||
                     (!f->function && py && tdb_py_is_eval_pc(py, at));
        f->in_interp = f->is_eval || (py && tdb_py_owns_pc(py, at));
    }
}

/* --- the merge ----------------------------------------------------------- */

static tdb_frame *push(tdb_merged_stack *m, size_t *cap)
{
    TDB_GROW(m->frames, m->n, *cap);
    tdb_frame *f = &m->frames[m->n++];
    memset(f, 0, sizeof(*f));
    return f;
}

void tdb_stack_merge(const tdb_native_frame *native, size_t n_native, const tdb_py_frame *py,
                     size_t n_py, tdb_merged_stack *out)
{
    tdb_merged_stack m;
    size_t cap = 0;
    memset(&m, 0, sizeof(m));
    m.native = native;
    m.n_native = native ? n_native : 0;
    m.py = py;
    m.n_py = py ? n_py : 0;

    for (size_t i = 0; i < m.n_native; i++)
        m.n_eval += native[i].is_eval ? 1 : 0;
    for (size_t i = 0; i < m.n_py; i++)
        m.n_entry += py[i].is_entry ? 1 : 0;
    /* A chain that ends on a non-entry frame was cut short: its last
     * frames belong to an evaluator call of their own. */
    if (m.n_py && !py[m.n_py - 1].is_entry)
        m.n_entry++;

    if (!m.n_native || !m.n_py) {
        /* One side only: it is the stack. */
        m.status = m.n_native ? TDB_MERGE_NATIVE_ONLY : TDB_MERGE_PYTHON_ONLY;
        for (size_t i = 0; i < m.n_native + m.n_py; i++) {
            tdb_frame *f = push(&m, &cap);
            f->kind = m.n_native ? TDB_FRAME_NATIVE : TDB_FRAME_PYTHON;
            f->native = m.n_native ? &native[i] : NULL;
            f->py = m.n_native ? NULL : &py[i];
        }
        *out = m;
        return;
    }
    if (m.n_eval != m.n_entry) {
        m.status = TDB_MERGE_MISMATCH;
        *out = m;
        return;
    }

    m.status = TDB_MERGE_OK;
    size_t next_py = 0;
    int seen_eval = 0;
    for (size_t i = 0; i < m.n_native; i++) {
        const tdb_native_frame *nf = &native[i];
        if (nf->is_eval) {
            /* The Python frames this evaluator call runs, innermost first,
             * then the evaluator itself (plumbing). */
            while (next_py < m.n_py) {
                tdb_frame *f = push(&m, &cap);
                f->kind = TDB_FRAME_PYTHON;
                f->py = &py[next_py];
                if (py[next_py++].is_entry)
                    break;
            }
            seen_eval = 1;
        }
        tdb_frame *f = push(&m, &cap);
        f->kind = TDB_FRAME_NATIVE;
        f->native = nf;
        /* Above the innermost evaluator is what the thread is doing right
         * now (sleeping, waiting for the GIL, collecting garbage): the
         * named CPython functions there are kept, the calling machinery
         * and unnamed frames are not. */
        f->plumbing = nf->is_eval ||
                      (nf->in_interp &&
                       (seen_eval || !nf->function || is_call_plumbing(nf->function)));
    }
    *out = m;
}

void tdb_merged_stack_free(tdb_merged_stack *m)
{
    if (!m)
        return;
    free(m->frames);
    m->frames = NULL;
    m->n = 0;
}

/* --- JSON ---------------------------------------------------------------- */

static json_t *py_frame_json(const tdb_py_frame *f, const tdb_py_frame_extra *extra)
{
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("python"));
    tdb_json_set_str(o, "function", f->qualname);
    tdb_json_set_str(o, "name", f->name);
    tdb_json_set_str(o, "file", f->filename);
    json_object_set_new(o, "line", f->line >= 0 ? json_integer(f->line) : json_null());
    json_object_set_new(o, "first_line", json_integer(f->first_line));
    json_t *more = extra && extra->json ? extra->json(f, extra->ctx) : NULL;
    if (more)
        json_object_set_new(o, "locals", more);
    return o;
}

static json_t *native_frame_json(const tdb_native_frame *f, int plumbing)
{
    char pc[32];
    snprintf(pc, sizeof(pc), "0x%016llx", (unsigned long long)f->pc);
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("native"));
    json_object_set_new(o, "pc", json_string(pc));
    tdb_json_set_str(o, "function", f->function);
    if (f->function)
        json_object_set_new(o, "offset", json_integer((json_int_t)f->offset));
    tdb_json_set_str(o, "library", f->library);
    if (plumbing)
        json_object_set_new(o, "plumbing", json_true());
    return o;
}

static json_t *py_frames_json(const tdb_py_frame *py, size_t n, const tdb_py_frame_extra *extra)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, py_frame_json(&py[i], extra));
    return a;
}

json_t *tdb_py_frames_json(const tdb_py_frame *py, size_t n, const tdb_py_frame_extra *extra)
{
    return py_frames_json(py, n, extra);
}

json_t *tdb_native_frames_json(const tdb_native_frame *native, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, native_frame_json(&native[i], 0));
    return a;
}

json_t *tdb_stack_json(const tdb_merged_stack *m, unsigned flags)
{
    return tdb_stack_json_ex(m, flags, NULL);
}

json_t *tdb_stack_json_ex(const tdb_merged_stack *m, unsigned flags,
                          const tdb_py_frame_extra *extra)
{
    if (flags & TDB_STACK_PYTHON_ONLY)
        return py_frames_json(m->py, m->n_py, extra);
    if ((flags & TDB_STACK_NATIVE_ONLY) || m->status == TDB_MERGE_MISMATCH)
        return tdb_native_frames_json(m->native, m->n_native);
    json_t *a = json_array();
    for (size_t i = 0; i < m->n; i++) {
        const tdb_frame *f = &m->frames[i];
        if (f->plumbing && !(flags & TDB_STACK_RAW))
            continue;
        json_array_append_new(a, f->kind == TDB_FRAME_PYTHON
                                     ? py_frame_json(f->py, extra)
                                     : native_frame_json(f->native, f->plumbing));
    }
    return a;
}

/* --- text ---------------------------------------------------------------- */

static void render_py(tdb_buf *b, const tdb_py_frame *f, const char *indent,
                      const tdb_py_frame_extra *extra)
{
    tdb_buf_addf(b, "%sFile \"%s\", line ", indent, f->filename);
    if (f->line >= 0)
        tdb_buf_addf(b, "%d", f->line);
    else
        tdb_buf_addc(b, '?');
    tdb_buf_addf(b, ", in %s\n", f->qualname);
    if (extra && extra->text)
        extra->text(b, f, indent, extra->ctx);
}

static void render_native(tdb_buf *b, const tdb_native_frame *f, const char *indent)
{
    tdb_buf_addf(b, "%s0x%016llx ", indent, (unsigned long long)f->pc);
    if (f->function)
        tdb_buf_addf(b, "%s+0x%llx", f->function, (unsigned long long)f->offset);
    else
        tdb_buf_adds(b, "??");
    if (f->library)
        tdb_buf_addf(b, " (%s)", tdb_base_name(f->library));
    tdb_buf_addc(b, '\n');
}

void tdb_stack_render(tdb_buf *b, const tdb_merged_stack *m, unsigned flags, const char *indent)
{
    tdb_stack_render_ex(b, m, flags, indent, NULL);
}

void tdb_stack_render_ex(tdb_buf *b, const tdb_merged_stack *m, unsigned flags,
                         const char *indent, const tdb_py_frame_extra *extra)
{
    if (flags & TDB_STACK_PYTHON_ONLY) {
        for (size_t i = 0; i < m->n_py; i++)
            render_py(b, &m->py[i], indent, extra);
        return;
    }
    if (flags & TDB_STACK_NATIVE_ONLY) {
        for (size_t i = 0; i < m->n_native; i++)
            render_native(b, &m->native[i], indent);
        return;
    }
    if (m->status == TDB_MERGE_MISMATCH) {
        tdb_buf_addf(b,
                     "%s(the stacks do not line up: %zu native evaluator frame%s, %zu Python "
                     "entry frame%s; both shown whole)\n",
                     indent, m->n_eval, m->n_eval == 1 ? "" : "s", m->n_entry,
                     m->n_entry == 1 ? "" : "s");
        tdb_buf_addf(b, "%sPython stack:\n", indent);
        char *deeper = tdb_xasprintf("%s  ", indent);
        for (size_t i = 0; i < m->n_py; i++)
            render_py(b, &m->py[i], deeper, extra);
        tdb_buf_addf(b, "%sNative stack:\n", indent);
        for (size_t i = 0; i < m->n_native; i++)
            render_native(b, &m->native[i], deeper);
        free(deeper);
        return;
    }
    for (size_t i = 0; i < m->n; i++) {
        const tdb_frame *f = &m->frames[i];
        if (f->plumbing && !(flags & TDB_STACK_RAW))
            continue;
        if (f->kind == TDB_FRAME_PYTHON)
            render_py(b, f->py, indent, extra);
        else
            render_native(b, f->native, indent);
    }
}
