/* stacks/view.c: one thread's stack at a debugger's stop (see stacks/view.h). */
#include "stacks/view.h"

#include "gdb/mi_parser.h"
#include "native/cxxnames.h"

#include <stdlib.h>
#include <string.h>

void tdb_stackview_init(tdb_stackview *v, pid_t pid, pid_t lwp, const json_t *mi_stack,
                        const tdb_maps *maps, tdb_symbolizer *sym, const tdb_py_process *py,
                        const tdb_py_snapshot *snap)
{
    memset(v, 0, sizeof(*v));
    v->mi = json_incref((json_t *)mi_stack);
    tdb_thread_stacks_from_mi(&v->t, pid, lwp, mi_stack, maps, py, snap);
    if (sym && v->t.native) {
        /* Name what gdb showed as ??, then merge again: a named frame may
         * turn out to be CPython plumbing. */
        tdb_symbolizer_name(sym, v->t.native, v->t.n_native);
        tdb_native_frames_classify(v->t.native, v->t.n_native, py);
        tdb_merged_stack_free(&v->t.merged);
        tdb_stack_merge(v->t.native, v->t.n_native, v->t.py ? v->t.py->frames : NULL,
                        v->t.py ? v->t.py->n_frames : 0, &v->t.merged);
        tdb_thread_stacks_marks(&v->t); /* the collector's frames may only now be named */
    }
}

void tdb_stackview_clear(tdb_stackview *v)
{
    json_decref(v->mi);
    tdb_thread_stacks_clear(&v->t);
    memset(v, 0, sizeof(*v));
}

/* gdb's frame I, or NULL. */
static const json_t *mi_frame(const tdb_stackview *v, size_t i)
{
    return json_array_get(v->mi, i);
}

/* The index of native frame F in V's array. */
static size_t level_of(const tdb_stackview *v, const tdb_native_frame *f)
{
    return (size_t)(f - v->t.native);
}

/* gdb's number of native frame I: its level in gdb's list, which the
 * array index is unless leading frames were left out (a hook's own). */
static int gdb_level(const tdb_stackview *v, size_t i)
{
    const char *level = tdb_mi_str(mi_frame(v, i), "level");
    return level ? atoi(level) : (int)i;
}

static json_t *native_json(const tdb_stackview *v, size_t i, int with_kind)
{
    const tdb_native_frame *f = &v->t.native[i];
    const json_t *m = mi_frame(v, i);
    const char *file = m ? (tdb_mi_str(m, "fullname") ? tdb_mi_str(m, "fullname")
                                                      : tdb_mi_str(m, "file"))
                         : NULL;
    const char *line = m ? tdb_mi_str(m, "line") : NULL;
    json_t *o = json_object();
    if (with_kind)
        json_object_set_new(o, "kind", json_string("native"));
    json_object_set_new(o, "level", json_integer(gdb_level(v, i)));
    json_object_set_new(o, "address", json_sprintf("0x%016llx", (unsigned long long)f->pc));
    /* Paths are bytes: tdb_json_set_str keeps those that are not UTF-8.
     * "function" is the name as a person reads it, "function_full" whole. */
    char *name = tdb_cxx_short_name(f->function);
    tdb_json_set_str(o, "function", name);
    tdb_json_set_str(o, "function_full", f->function);
    free(name);
    tdb_json_set_str(o, "library", f->library);
    tdb_json_set_str(o, "file", file);
    json_object_set_new(o, "line", line ? json_integer(atoi(line)) : json_null());
    /* The file as the debug info names it ("../Python/ceval.c",
     * "csrc/stub.c"): what gdb prints, shorter than FILE. */
    const char *source = m ? tdb_mi_str(m, "file") : NULL;
    if (source)
        tdb_json_set_str(o, "source", source);
    return o;
}

static json_t *python_json(const tdb_py_frame *f, int with_kind)
{
    json_t *o = json_object();
    if (with_kind)
        json_object_set_new(o, "kind", json_string("python"));
    tdb_json_set_str(o, "function", f->qualname);
    tdb_json_set_str(o, "file", f->filename);
    json_object_set_new(o, "line", f->line >= 0 ? json_integer(f->line) : json_null());
    return o;
}

json_t *tdb_stackview_native_json(const tdb_stackview *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->t.n_native; i++)
        json_array_append_new(a, native_json(v, i, 0));
    return a;
}

json_t *tdb_stackview_python_json(const tdb_stackview *v)
{
    if (!v->t.py)
        return NULL;
    json_t *a = json_array();
    for (size_t i = 0; i < v->t.py->n_frames; i++)
        json_array_append_new(a, python_json(&v->t.py->frames[i], 0));
    return a;
}

json_t *tdb_stackview_json(const tdb_stackview *v, unsigned flags)
{
    json_t *a = json_array();
    const tdb_merged_stack *m = &v->t.merged;
    if (m->status == TDB_MERGE_MISMATCH) {
        for (size_t i = 0; i < v->t.n_native; i++)
            json_array_append_new(a, native_json(v, i, 1));
        return a;
    }
    for (size_t i = 0; i < m->n; i++) {
        const tdb_frame *f = &m->frames[i];
        if (f->plumbing && !(flags & TDB_STACK_RAW))
            continue;
        if (f->kind == TDB_FRAME_PYTHON)
            json_array_append_new(a, python_json(f->py, 1));
        else
            json_array_append_new(a, native_json(v, level_of(v, f->native), 1));
    }
    return a;
}

const char *tdb_stackview_merge_name(const tdb_stackview *v)
{
    switch (v->t.merged.status) {
    case TDB_MERGE_OK: return "ok";
    case TDB_MERGE_MISMATCH: return "mismatch";
    case TDB_MERGE_NATIVE_ONLY: return "native-only";
    default: return "python-only";
    }
}

/* Native frame I, its C++ name whole when FLAGS asks (RAW, FULL_NAMES),
 * else short. */
static void render_native(tdb_buf *b, const tdb_stackview *v, size_t i, unsigned flags)
{
    const tdb_native_frame *f = &v->t.native[i];
    const json_t *m = mi_frame(v, i);
    const char *file = m ? tdb_mi_str(m, "file") : NULL, *line = m ? tdb_mi_str(m, "line") : NULL;
    char *name = flags & (TDB_STACK_RAW | TDB_STACK_FULL_NAMES) ? NULL
                                                                 : tdb_cxx_short_name(f->function);
    const char *shown = name ? name : f->function;
    tdb_buf_addf(b, "#%-2d 0x%016llx in %s ()", gdb_level(v, i), (unsigned long long)f->pc,
                 shown ? shown : "??");
    free(name);
    if (file && line)
        tdb_buf_addf(b, " at %s:%s", file, line);
    else if (f->library)
        tdb_buf_addf(b, " from %s", f->library);
    tdb_buf_addc(b, '\n');
}

static void render_python(tdb_buf *b, const tdb_py_frame *f)
{
    if (f->line >= 0)
        tdb_buf_addf(b, "    File \"%s\", line %d, in %s\n", f->filename, f->line, f->qualname);
    else
        tdb_buf_addf(b, "    File \"%s\", line ?, in %s\n", f->filename, f->qualname);
}

void tdb_stackview_render(tdb_buf *b, const tdb_stackview *v, unsigned flags)
{
    const tdb_merged_stack *m = &v->t.merged;
    if (v->t.native_note)
        tdb_buf_addf(b, "note: %s\n", v->t.native_note);
    if (v->t.gc)
        tdb_buf_adds(b, "note: " TDB_STACKVIEW_GC_NOTE "\n");
    if (m->status == TDB_MERGE_MISMATCH) {
        tdb_buf_addf(b, "note: %zu evaluator frames but %zu Python entry frames: the stacks are "
                        "shown apart rather than merged wrongly\n",
                     m->n_eval, m->n_entry);
        for (size_t i = 0; i < v->t.n_native; i++)
            render_native(b, v, i, flags);
        tdb_buf_adds(b, "Python stack (most recent call first):\n");
        for (size_t i = 0; v->t.py && i < v->t.py->n_frames; i++)
            render_python(b, &v->t.py->frames[i]);
    } else {
        for (size_t i = 0; i < m->n; i++) {
            const tdb_frame *f = &m->frames[i];
            if (f->plumbing && !(flags & TDB_STACK_RAW))
                continue;
            if (f->kind == TDB_FRAME_PYTHON)
                render_python(b, f->py);
            else
                render_native(b, v, level_of(v, f->native), flags);
        }
    }
    if (v->t.py && v->t.py->partial)
        tdb_buf_addf(b, "note: the Python stack is incomplete: %s\n", v->t.py->partial);
}

/* ---- the frames a user selects ---- */

size_t tdb_stackview_count(const tdb_stackview *v, unsigned flags)
{
    const tdb_merged_stack *m = &v->t.merged;
    if (m->status == TDB_MERGE_MISMATCH)
        return v->t.n_native;
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!m->frames[i].plumbing || (flags & TDB_STACK_RAW))
            n++;
    return n;
}

int tdb_stackview_frame_at(const tdb_stackview *v, unsigned flags, size_t i, tdb_view_frame *out)
{
    const tdb_merged_stack *m = &v->t.merged;
    memset(out, 0, sizeof(*out));
    out->level = -1;
    if (m->status == TDB_MERGE_MISMATCH) {
        if (i >= v->t.n_native)
            return -1;
        out->kind = TDB_FRAME_NATIVE;
        out->native = &v->t.native[i];
        out->level = gdb_level(v, i);
        out->mi = mi_frame(v, i);
        return 0;
    }
    size_t k = 0;
    for (size_t j = 0; j < m->n; j++) {
        const tdb_frame *f = &m->frames[j];
        if (f->plumbing && !(flags & TDB_STACK_RAW))
            continue;
        if (k++ != i)
            continue;
        out->kind = f->kind;
        if (f->kind == TDB_FRAME_PYTHON) {
            out->py = f->py;
        } else {
            out->native = f->native;
            out->mi = mi_frame(v, level_of(v, f->native));
            out->level = gdb_level(v, level_of(v, f->native));
        }
        return 0;
    }
    return -1;
}

int tdb_stackview_index_of_level(const tdb_stackview *v, unsigned flags, int level)
{
    size_t n = tdb_stackview_count(v, flags);
    tdb_view_frame f;
    for (size_t i = 0; i < n; i++)
        if (tdb_stackview_frame_at(v, flags, i, &f) == 0 && f.kind == TDB_FRAME_NATIVE &&
            f.level == level)
            return (int)i;
    return -1;
}

void tdb_stackview_render_frame(tdb_buf *b, const tdb_stackview *v, const tdb_view_frame *f)
{
    if (f->kind == TDB_FRAME_PYTHON)
        render_python(b, f->py);
    else
        render_native(b, v, level_of(v, f->native), 0);
}

void tdb_stackview_fold_range(tdb_stackview *v, uint64_t lo, uint64_t hi)
{
    int changed = 0;
    for (size_t i = 0; i < v->t.n_native; i++) {
        tdb_native_frame *f = &v->t.native[i];
        if (f->pc >= lo && f->pc < hi && !f->in_interp) {
            f->in_interp = 1;
            changed = 1;
        }
    }
    if (!changed)
        return;
    tdb_merged_stack_free(&v->t.merged);
    tdb_stack_merge(v->t.native, v->t.n_native, v->t.py ? v->t.py->frames : NULL,
                    v->t.py ? v->t.py->n_frames : 0, &v->t.merged);
}

void tdb_stackview_fold_above(tdb_stackview *v, unsigned flags, size_t index)
{
    tdb_merged_stack *m = &v->t.merged;
    if (m->status == TDB_MERGE_MISMATCH)
        return;
    size_t k = 0;
    for (size_t j = 0; j < m->n && k < index; j++) {
        if (m->frames[j].plumbing && !(flags & TDB_STACK_RAW))
            continue;
        if (m->frames[j].kind == TDB_FRAME_NATIVE)
            m->frames[j].plumbing = 1;
        k++;
    }
}
