/* stacks/stacks.c: pause, copy, let go, then unwind and merge: one process. */
#include "stacks/stacks.h"

#include "native/core.h"
#include "process/pause.h"
#include "cpython/threadids.h"
#include "cpython/values.h"
#include "process/pidns.h"
#include "process/procfs.h"
#include "targets/ptrace_check.h"
#include "native/unwind.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_FRAMES 1024

static void set_note(char **note, char *s)
{
    if (!*note)
        *note = s;
    else
        free(s);
}

static tdb_thread_stacks *add_thread(tdb_process_stacks *s, size_t *cap, pid_t tid)
{
    TDB_GROW(s->threads, s->n, *cap);
    tdb_thread_stacks *t = &s->threads[s->n++];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    /* A core has no thread names (and its pid may be another process's
     * now). */
    t->name = tid > 0 && !s->core ? tdb_proc_comm(s->pid, tid) : NULL;
    return t;
}

/* Thread states whose thread we did not see (no native id, or a thread
 * that just exited) are shown on their own: none is left out. */
static void add_orphans(tdb_process_stacks *s, size_t *cap)
{
    for (size_t i = 0; s->snapshot && i < s->snapshot->n_threads; i++) {
        const tdb_py_thread *pt = &s->snapshot->threads[i];
        int owned = 0;
        for (size_t j = 0; j < s->n && !owned; j++)
            owned = pt->tid > 0 && s->threads[j].tid == pt->tid;
        if (owned)
            continue;
        tdb_thread_stacks *t = add_thread(s, cap, 0);
        t->py = pt;
        t->n_states = 1;
        t->python_name = pt->name;
        t->python_process = 1;
        tdb_stack_merge(NULL, 0, pt->frames, pt->n_frames, &t->merged);
        tdb_thread_stacks_marks(t);
    }
}

/* Every Python frame's locals, while the process is still stopped. */
static json_t *read_locals(tdb_py_process *py, const tdb_py_snapshot *snap)
{
    json_t *all = json_object();
    tdb_py_value_opts o = TDB_PY_VALUE_OPTS_INIT;
    for (size_t i = 0; snap && i < snap->n_threads; i++) {
        const tdb_py_thread *t = &snap->threads[i];
        for (size_t k = 0; k < t->n_frames; k++) {
            char key[32];
            json_t *v = NULL;
            tdb_error e = {0};
            snprintf(key, sizeof(key), "0x%llx", (unsigned long long)t->frames[k].addr);
            if (tdb_py_frame_locals(py, &t->frames[k], &o, &v, &e) < 0)
                v = json_pack("{s:s}", "error", e.msg);
            json_object_set_new(all, key, v);
        }
    }
    return all;
}

static json_t *frame_locals(const tdb_py_frame *f, void *ctx)
{
    char key[32];
    snprintf(key, sizeof(key), "0x%llx", (unsigned long long)f->addr);
    json_t *v = json_object_get((const json_t *)ctx, key);
    return v ? json_incref(v) : NULL;
}

static void frame_locals_text(tdb_buf *b, const tdb_py_frame *f, const char *indent, void *ctx)
{
    json_t *v = frame_locals(f, ctx);
    if (!v)
        return;
    if (json_is_object(v)) {
        tdb_buf_addf(b, "%s    (locals unreadable: %s)\n", indent,
                     json_string_value(json_object_get(v, "error")));
    } else {
        size_t i;
        json_t *l;
        json_array_foreach(v, i, l) {
            const char *val = json_string_value(json_object_get(l, "value"));
            const char *err = json_string_value(json_object_get(l, "error"));
            tdb_buf_addf(b, "%s    %s = %s", indent,
                         json_string_value(json_object_get(l, "name")), val ? val : "?");
            if (err)
                tdb_buf_addf(b, "  (%s)", err);
            tdb_buf_addc(b, '\n');
        }
    }
    json_decref(v);
}

/* T's native frames (from CAP, named through SYMBOLS; libraries the
 * unwinder could not name from MAPS when given), merged with its Python
 * frames from S's snapshot. */
static void fill_thread(tdb_process_stacks *s, tdb_thread_stacks *t, tdb_capture *cap,
                        size_t max_frames, tdb_symcache *symbols, const tdb_py_process *py,
                        const tdb_maps *maps)
{
    if (cap && t->tid > 0) {
        tdb_error ue = {0};
        if (tdb_capture_unwind(cap, t->tid, max_frames, symbols, &t->native, &t->n_native,
                               &t->native_note, &ue) < 0) {
            t->native_note = tdb_xstrdup(ue.msg);
        } else {
            if (maps)
                tdb_native_frames_fill_libraries(t->native, t->n_native, maps);
            tdb_native_frames_classify(t->native, t->n_native, py);
        }
    }
    t->python_process = s->snapshot != NULL;
    t->locals = s->locals;
    tdb_thread_stacks_attach(t, s->snapshot);
}

/* Say why we may not look at PID, from the errno of a refused read. */
static void refused(tdb_error *err, pid_t pid, int code, const char *what)
{
    if (code == ESRCH || code == ENOENT)
        tdb_error_set(err, ESRCH, "cannot read the stacks of pid %d: %s", (int)pid, what);
    else
        tdb_ptrace_explain_for(&tdb_purpose_stacks, pid, NULL, code, err);
}

/* Unwind and merge every thread of S (TCAP: its capacity), then add the
 * Python threads no native thread was found for; the time since T0 is
 * the unwinding's. */
static void unwind_threads(tdb_process_stacks *s, size_t *tcap, tdb_capture *cap,
                           size_t max_frames, tdb_symcache *symbols, tdb_py_process *py,
                           const tdb_maps *maps, int64_t t0)
{
    for (size_t i = 0; i < s->n; i++)
        fill_thread(s, &s->threads[i], cap, max_frames, symbols, py, maps);
    add_orphans(s, tcap);
    if (cap)
        s->stack_bytes = tdb_capture_bytes(cap);
    s->unwind_ms = (double)(tdb_now_ms() - t0);
}

/* Say in S what opening the interpreter gave: R and E are what tdb_py_open()
 * returned and set, PY the interpreter when R is 0.  0, or -1 with ERR set
 * when only Python stacks were asked for and there are none; NOT_PYTHON
 * then says what was read and why ("pid 12: it is not a Python process"). */
static int note_python(tdb_process_stacks *s, int r, const tdb_py_process *py,
                       const tdb_error *e, int want_native, const char *not_python,
                       tdb_error *err)
{
    if (r == 1)
        s->python_note = tdb_xstrdup("not a Python process (no _PyRuntime in its executable "
                                     "or a libpython): native stacks only");
    else if (r < 0)
        s->python_note = tdb_xstrdup(e->msg);
    else {
        s->python_version = tdb_xstrdup(tdb_py_version(py));
        s->python_layout = tdb_xstrdup(tdb_py_layout_source(py));
    }
    if (py || want_native)
        return 0;
    if (r == 1)
        tdb_error_set(err, ENOENT, "cannot read the Python stacks of %s (leave out --python "
                      "to see its native stacks)", not_python);
    else
        tdb_error_set(err, e->code, "%s", e->msg);
    return -1;
}

/* Read PY's threads and frames (and their locals when FLAGS ask) into S. */
static void read_python(tdb_process_stacks *s, tdb_py_process *py, unsigned flags)
{
    tdb_error e = {0};
    s->snapshot = tdb_py_read(py, &e);
    if (!s->snapshot)
        s->python_note = tdb_xstrdup(e.msg);
    else if (flags & TDB_STACK_LOCALS)
        s->locals = read_locals(py, s->snapshot);
    s->mem_reads = tdb_py_reads(py);
}

int tdb_stacks_take(pid_t pid, const tdb_stacks_options *o, tdb_process_stacks **out,
                    tdb_error *err)
{
    unsigned flags = o->flags;
    int want_native = !(flags & TDB_STACK_PYTHON_ONLY);
    int want_python = !(flags & TDB_STACK_NATIVE_ONLY);
    size_t stack_max = o->stack_max ? o->stack_max : TDB_STACK_COPY_MAX;
    size_t max_frames = o->max_frames ? o->max_frames : DEFAULT_MAX_FRAMES;
    tdb_process_stacks *s = NULL;
    tdb_maps maps = {NULL, 0, NULL};
    tdb_py_process *py = NULL;
    tdb_pause *pause = NULL;
    tdb_capture *cap = NULL;
    tdb_error e = {0};
    int rc = -1;

    char state = tdb_proc_state(pid, 0);
    if (state == 0) {
        tdb_error_set(err, ESRCH, "cannot read the stacks of pid %d: no such process", (int)pid);
        return -1;
    }
    pid_t *tasks = NULL;
    size_t ntasks = 0;
    if (tdb_proc_tasks(pid, &tasks, &ntasks, NULL) == 0)
        free(tasks);
    /* A zombie leader with live threads (its main thread called
     * pthread_exit) still runs, but its memory is no longer reachable
     * through its pid: say so rather than "exited". */
    if ((state == 'Z' || state == 'X') && ntasks > 1) {
        tdb_error_set(err, ENOTSUP,
                      "cannot read the stacks of pid %d: its main thread has exited while %zu "
                      "other thread%s run%s, and tdebug cannot read such a process (give one "
                      "of its threads to gdb instead: 'gdb -p TID')",
                      (int)pid, ntasks - 1, ntasks == 2 ? "" : "s", ntasks == 2 ? "s" : "");
        return -1;
    }
    if (state == 'Z' || state == 'X') {
        tdb_error_set(err, ESRCH,
                      "cannot read the stacks of pid %d: it has exited (a zombie its parent "
                      "has not reaped)", (int)pid);
        return -1;
    }
    if (tdb_maps_read(pid, &maps, &e) < 0) {
        refused(err, pid, e.code, "it exited");
        return -1;
    }

    s = tdb_xcalloc(1, sizeof(*s));
    s->pid = pid;
    pid_t inner = tdb_pidns_inner_pid(NULL, pid);
    s->ns_pid = inner != pid ? inner : 0;
    s->cmdline = tdb_proc_cmdline(pid, 1 << 20);
    if (want_python) {
        tdb_error_clear(&e);
        int r = tdb_py_open(pid, &maps, &py, &e);
        if (r < 0 && (e.code == ESRCH || e.code == EPERM || e.code == EACCES)) {
            refused(err, pid, e.code, "it exited");
            goto cleanup;
        }
        char *what = tdb_xasprintf("pid %d: it is not a Python process", (int)pid);
        int ok = note_python(s, r, py, &e, want_native, what, err);
        free(what);
        if (ok < 0)
            goto cleanup;
    }

    /* --- the pause: only copies happen in here ---------------------------- */
    tdb_error_clear(&e);
    if (tdb_pause_start(pid, &pause, &e) < 0) {
        if (e.code != EBUSY) {
            if (e.code == ESRCH || e.code == EPERM)
                refused(err, pid, e.code, "it exited during the snapshot");
            else
                tdb_error_set(err, e.code, "%s", e.msg);
            goto cleanup;
        }
        /* Traced by someone else: read the Python state as it is. */
        tdb_trace_purpose why = tdb_purpose_stacks;
        why.verb = NULL; /* the reason alone */
        tdb_error_clear(&e);
        tdb_ptrace_explain_for(&why, pid, NULL, EBUSY, &e);
        s->native_note = tdb_xasprintf("native stacks unavailable: %s", e.msg);
    } else {
        s->paused = 1;
        for (size_t i = 0; i < pause->n; i++)
            s->job_stopped |= pause->threads[i].job_stopped;
        if (want_native)
            cap = tdb_capture_take(pause, &maps, stack_max, &e);
    }
    if (py)
        read_python(s, py, flags);
    if (pause) {
        tdb_pause_end(pause);
        s->pause_ms = tdb_pause_ms(pause);
    }
    /* ------------------------------------------------------------------------ */

    if (want_native && s->paused && !cap)
        set_note(&s->native_note, tdb_xasprintf("native stacks unavailable: %s", e.msg));
    if (!s->snapshot && s->python_note && strstr(s->python_note, "no such process")) {
        tdb_error_set(err, ESRCH, "cannot read the stacks of pid %d: it exited during the "
                      "snapshot", (int)pid);
        goto cleanup;
    }

    int64_t t0 = tdb_now_ms();
    size_t tcap = 0;
    if (pause) {
        for (size_t i = 0; i < pause->n; i++)
            if (!pause->threads[i].gone)
                add_thread(s, &tcap, pause->threads[i].tid);
    } else {
        pid_t *tids = NULL;
        size_t ntids = 0;
        if (tdb_proc_tasks(pid, &tids, &ntids, NULL) == 0)
            for (size_t i = 0; i < ntids; i++)
                add_thread(s, &tcap, tids[i]);
        free(tids);
    }
    unwind_threads(s, &tcap, cap, max_frames, o->symbols, py, NULL, t0);
    *out = s;
    s = NULL;
    rc = 0;

cleanup:
    tdb_capture_free(cap);
    tdb_pause_free(pause);
    tdb_py_close(py);
    tdb_maps_free(&maps);
    tdb_process_stacks_free(s);
    return rc;
}

/* A core of a process in a container written from outside it (gcore on
 * the host) numbers threads as the host does, CPython as the container
 * does: match them by thread pointer (cpython/threadids.h). */
static void match_core_threads(tdb_process_stacks *s, tdb_core *core)
{
    size_t n = tdb_core_n_threads(core);
    pid_t *tids = tdb_xcalloc(n ? n : 1, sizeof(*tids));
    uint64_t *ptrs = tdb_xcalloc(n ? n : 1, sizeof(*ptrs));
    for (size_t i = 0; i < n; i++) {
        tids[i] = tdb_core_thread_at(core, i)->tid;
        ptrs[i] = tdb_core_thread_at(core, i)->fs_base;
    }
    size_t nextra = 0;
    while (s->extra_notes && s->extra_notes[nextra])
        nextra++;
    if (tdb_py_snapshot_match_threads(s->snapshot, tids, ptrs, n))
        tdb_ptrs_push(&s->extra_notes, &nextra,
                      tdb_xstrdup("the Python threads' ids are another PID namespace's (a "
                                  "container's): each was matched to its thread by its "
                                  "thread pointer"));
    free(tids);
    free(ptrs);
}

int tdb_stacks_take_core(tdb_core *core, const tdb_stacks_options *o, tdb_process_stacks **out,
                         tdb_error *err)
{
    unsigned flags = o->flags;
    int want_native = !(flags & TDB_STACK_PYTHON_ONLY);
    int want_python = !(flags & TDB_STACK_NATIVE_ONLY);
    size_t max_frames = o->max_frames ? o->max_frames : DEFAULT_MAX_FRAMES;
    tdb_py_process *py = NULL;
    tdb_capture *cap = NULL;
    tdb_error e = {0};
    tdb_process_stacks *s = tdb_xcalloc(1, sizeof(*s));
    int rc = -1;

    s->pid = tdb_core_pid(core);
    s->core = tdb_xstrdup(tdb_core_path(core));
    s->signal = tdb_core_signal(core);
    s->cmdline = tdb_core_cmdline(core) ? tdb_xstrdup(tdb_core_cmdline(core)) : NULL;
    size_t nextra = 0;
    for (char *const *pr = tdb_core_problems(core); pr && *pr; pr++)
        tdb_ptrs_push(&s->extra_notes, &nextra, tdb_xstrdup(*pr));
    if (want_python) {
        int r = tdb_py_open_core(core, &py, &e);
        char *exe = r == 1 && tdb_core_exe(core) ? tdb_core_file(core, tdb_core_exe(core), NULL)
                                                 : NULL;
        if (r == 1 && tdb_core_exe(core) && !exe) {
            /* Its executable cannot be read: whether it ran Python is
             * unknown, not "no" (the note on the file says why). */
            tdb_error_set(&e, ESTALE, "the Python stacks cannot be read without the "
                          "executable the process ran ('%s'): see the note on it; --exe PATH "
                          "gives it", tdb_core_exe(core));
            r = -1;
        }
        free(exe);
        char *what = tdb_xasprintf("the core '%s': its process did not run Python",
                                   tdb_core_path(core));
        int ok = note_python(s, r, py, &e, want_native, what, err);
        free(what);
        if (ok < 0)
            goto cleanup;
        if (py)
            read_python(s, py, flags);
    }
    if (s->snapshot)
        match_core_threads(s, core);
    tdb_error_clear(&e);
    if (want_native && !(cap = tdb_capture_from_core(core, &e)))
        s->native_note = tdb_xasprintf("native stacks unavailable: %s", e.msg);
    int64_t t0 = tdb_now_ms();
    size_t tcap = 0;
    for (size_t i = 0; i < tdb_core_n_threads(core); i++)
        add_thread(s, &tcap, tdb_core_thread_at(core, i)->tid);
    unwind_threads(s, &tcap, cap, max_frames, o->symbols, py, tdb_core_maps(core), t0);
    *out = s;
    s = NULL;
    rc = 0;
cleanup:
    tdb_capture_free(cap);
    tdb_py_close(py);
    tdb_process_stacks_free(s);
    return rc;
}

void tdb_process_stacks_free(tdb_process_stacks *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        tdb_thread_stacks_clear(&s->threads[i]);
    free(s->threads);
    free(s->cmdline);
    free(s->python_version);
    free(s->python_layout);
    free(s->python_note);
    free(s->native_note);
    tdb_strv_free(s->extra_notes);
    free(s->core);
    json_decref(s->locals);
    tdb_py_snapshot_free(s->snapshot);
    free(s);
}

static const char *gil_name(tdb_gil_state gil)
{
    return gil == TDB_GIL_HELD ? "held" : gil == TDB_GIL_WAITING ? "waiting" : NULL;
}

static int name_is(const char *fn, const char *const *names)
{
    for (; fn && *names; names++)
        if (strcmp(fn, *names) == 0)
            return 1;
    return 0;
}

void tdb_thread_stacks_attach(tdb_thread_stacks *t, const tdb_py_snapshot *snap)
{
    const tdb_py_thread *states[64];
    size_t n = 0;
    for (size_t i = 0; snap && i < snap->n_threads && n < 64; i++)
        if (t->tid > 0 && snap->threads[i].tid == t->tid)
            states[n++] = &snap->threads[i];
    /* Newest interpreter first (insertion sort: a handful at most). */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && states[j]->interp_id > states[j - 1]->interp_id; j--) {
            const tdb_py_thread *x = states[j];
            states[j] = states[j - 1];
            states[j - 1] = x;
        }
    t->py = n ? states[0] : NULL;
    t->n_states = n;
    /* The name the oldest interpreter (the one that started the thread)
     * gives it: a subinterpreter calls whatever thread runs it its main
     * thread. */
    t->python_name = NULL;
    for (size_t i = n; i > 0 && !t->python_name; i--)
        t->python_name = states[i - 1]->name;
    const tdb_py_frame *frames = t->py ? t->py->frames : NULL;
    size_t n_frames = t->py ? t->py->n_frames : 0;
    if (n > 1) {
        size_t total = 0;
        for (size_t i = 0; i < n; i++)
            total += states[i]->n_frames;
        t->py_frames = tdb_xcalloc(total ? total : 1, sizeof(*t->py_frames));
        for (size_t i = 0; i < n; i++) {
            if (states[i]->n_frames)
                memcpy(t->py_frames + t->n_py_frames, states[i]->frames,
                       states[i]->n_frames * sizeof(*t->py_frames));
            t->n_py_frames += states[i]->n_frames;
        }
        frames = t->py_frames;
        n_frames = t->n_py_frames;
    }
    tdb_stack_merge(t->native, t->n_native, frames, n_frames, &t->merged);
    tdb_thread_stacks_marks(t);
}

void tdb_thread_stacks_marks(tdb_thread_stacks *t)
{
    /* CPython's collector, its signal check that runs Python handlers,
     * and where a thread blocks for the GIL, across 3.8-3.13. */
    static const char *const gc_fns[] = {
        "gc_collect_main", "collect", "collect_with_callback", "collect_generations",
        "gc_collect_with_callback", "gc_collect_region", "gc_collect_full", "gc_collect_young",
        "gc_collect_increment", "gc_collect", "gc_collect_impl", "invoke_gc_callback",
        "_PyGC_Collect", "PyGC_Collect", "_PyGC_CollectNoFail", "_Py_RunGC", NULL};
    static const char *const sig_fns[] = {"__restore_rt", "_PyErr_CheckSignalsTstate",
                                          "_PyErr_CheckSignals", "PyErr_CheckSignals",
                                          "handle_signals", NULL};
    static const char *const gil_fns[] = {"take_gil", NULL};
    t->gil = t->py ? t->py->gil : TDB_GIL_NONE;
    t->gc = t->py && t->py->gc;
    t->in_signal = 0;
    for (size_t i = 0; i < t->n_native; i++) {
        const char *fn = t->native[i].function;
        t->gc |= name_is(fn, gc_fns) && t->python_process;
        t->in_signal |= name_is(fn, sig_fns);
        if (name_is(fn, gil_fns) && t->gil == TDB_GIL_NONE && i < 8)
            t->gil = TDB_GIL_WAITING;
    }
}

static const char *merge_name(tdb_merge_status st)
{
    switch (st) {
    case TDB_MERGE_OK: return "ok";
    case TDB_MERGE_MISMATCH: return "mismatch";
    case TDB_MERGE_NATIVE_ONLY: return "native-only";
    case TDB_MERGE_PYTHON_ONLY: return "python-only";
    }
    return "?";
}

static void add_note(json_t *a, const char *text)
{
    json_array_append_new(a, tdb_json_bytes(text, strlen(text), 0, NULL));
}

static json_t *notes_json(const tdb_process_stacks *s, unsigned flags)
{
    json_t *a = json_array();
    if (s->python_note)
        add_note(a, s->python_note);
    if (s->native_note && !(flags & TDB_STACK_PYTHON_ONLY))
        add_note(a, s->native_note);
    if (s->snapshot && s->snapshot->partial) {
        char *m = tdb_xasprintf("Python threads may be missing: %s", s->snapshot->partial);
        add_note(a, m);
        free(m);
    }
    for (size_t i = 0; s->extra_notes && s->extra_notes[i]; i++)
        add_note(a, s->extra_notes[i]);
    return a;
}

json_t *tdb_thread_stacks_json(const tdb_thread_stacks *t, unsigned flags)
{
    const char *gil = gil_name(t->gil);
    json_t *o = json_object();
    json_object_set_new(o, "tid", json_integer(t->tid));
    tdb_json_set_str(o, "name", t->name);
    json_object_set_new(o, "python", json_boolean(t->py != NULL));
    if (t->py) {
        json_object_set_new(o, "thread_id", json_integer((json_int_t)t->py->thread_id));
        json_object_set_new(o, "interpreter", json_integer((json_int_t)t->py->interp_id));
        if (t->n_states > 1)
            json_object_set_new(o, "python_states", json_integer((json_int_t)t->n_states));
        tdb_json_set_str(o, "python_name", t->python_name);
    }
    json_object_set_new(o, "gil", gil ? json_string(gil) : json_null());
    json_object_set_new(o, "gc", json_boolean(t->gc));
    json_object_set_new(o, "in_signal", json_boolean(t->in_signal));
    json_object_set_new(o, "merge", json_string(merge_name(t->merged.status)));
    tdb_py_frame_extra extra = {frame_locals, frame_locals_text, (void *)t->locals};
    if (t->merged.status == TDB_MERGE_MISMATCH && !(flags & (TDB_STACK_PYTHON_ONLY |
                                                             TDB_STACK_NATIVE_ONLY))) {
        /* The locals too, as the text shows them under the Python stack. */
        json_object_set_new(o, "python_frames", tdb_py_frames_json(t->merged.py, t->merged.n_py,
                                                                   t->locals ? &extra : NULL));
        json_object_set_new(o, "native_frames",
                            tdb_native_frames_json(t->merged.native, t->merged.n_native));
        json_object_set_new(o, "mismatch",
                            json_sprintf("%zu native evaluator frames, %zu Python entry frames",
                                         t->merged.n_eval, t->merged.n_entry));
    } else {
        json_object_set_new(o, "frames",
                            tdb_stack_json_ex(&t->merged, flags, t->locals ? &extra : NULL));
    }
    if (t->py && t->py->partial)
        tdb_json_set_str(o, "python_partial", t->py->partial);
    if (t->native_note && !(flags & TDB_STACK_PYTHON_ONLY))
        tdb_json_set_str(o, "native_note", t->native_note);
    return o;
}

void tdb_thread_stacks_render(tdb_buf *b, const tdb_thread_stacks *t, unsigned flags)
{
    if (t->tid > 0)
        tdb_buf_addf(b, "Thread %d", (int)t->tid);
    else
        tdb_buf_addf(b, "Python thread 0x%lx", t->py ? t->py->thread_id : 0UL);
    if (t->name)
        tdb_buf_addf(b, " \"%s\"", t->name);
    if (t->python_name)
        tdb_buf_addf(b, ", threading \"%s\"", t->python_name);
    if (t->py && t->py->interp_id)
        tdb_buf_addf(b, ", interpreter %lld", (long long)t->py->interp_id);
    const char *marks[4];
    size_t nm = 0;
    if (t->gil == TDB_GIL_HELD)
        marks[nm++] = "holds the GIL";
    else if (t->gil == TDB_GIL_WAITING)
        marks[nm++] = "waiting for the GIL";
    if (t->gc)
        marks[nm++] = "collecting garbage";
    if (t->in_signal)
        marks[nm++] = "in a signal handler";
    if (!t->py && t->python_process)
        marks[nm++] = "no Python";
    for (size_t i = 0; i < nm; i++)
        tdb_buf_addf(b, "%s%s", i ? ", " : " (", marks[i]);
    tdb_buf_adds(b, nm ? "):\n" : ":\n");
    tdb_py_frame_extra extra = {frame_locals, frame_locals_text, (void *)t->locals};
    tdb_stack_render_ex(b, &t->merged, flags, "  ", t->locals ? &extra : NULL);
    if (t->py && t->py->partial)
        tdb_buf_addf(b, "  (Python stack incomplete: %s)\n", t->py->partial);
    if (t->native_note && !(flags & TDB_STACK_PYTHON_ONLY))
        tdb_buf_addf(b, "  (native stack %s: %s)\n", t->native ? "incomplete" : "unavailable",
                     t->native_note);
}

void tdb_thread_stacks_clear(tdb_thread_stacks *t)
{
    if (!t)
        return;
    free(t->name);
    tdb_native_frames_free(t->native, t->n_native);
    free(t->py_frames);
    free(t->native_note);
    tdb_merged_stack_free(&t->merged);
    memset(t, 0, sizeof(*t));
}

int tdb_thread_stacks_from_mi(tdb_thread_stacks *t, pid_t pid, pid_t tid, const json_t *mi_stack,
                              const tdb_maps *maps, const tdb_py_process *py,
                              const tdb_py_snapshot *snap)
{
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    t->name = tdb_proc_comm(pid, tid);
    t->python_process = snap != NULL;
    if (tdb_native_frames_from_mi(mi_stack, &t->native, &t->n_native) < 0) {
        t->native_note = tdb_xstrdup("gdb's frames could not be read");
        t->native = NULL;
        t->n_native = 0;
    } else {
        if (maps)
            tdb_native_frames_fill_libraries(t->native, t->n_native, maps);
        tdb_native_frames_classify(t->native, t->n_native, py);
    }
    tdb_thread_stacks_attach(t, snap);
    return t->native ? 0 : -1;
}

/* Threads to show: with --python, those with a Python thread state. */
static int shown(const tdb_thread_stacks *t, unsigned flags)
{
    return !(flags & TDB_STACK_PYTHON_ONLY) || t->py;
}

json_t *tdb_process_stacks_json(const tdb_process_stacks *s, unsigned flags)
{
    json_t *threads = json_array();
    for (size_t i = 0; i < s->n; i++)
        if (shown(&s->threads[i], flags))
            json_array_append_new(threads, tdb_thread_stacks_json(&s->threads[i], flags));
    json_t *o = json_object();
    json_object_set_new(o, "pid", json_integer(s->pid));
    if (s->ns_pid)
        json_object_set_new(o, "ns_pid", json_integer(s->ns_pid));
    if (s->core) {
        tdb_json_set_str(o, "core", s->core);
        json_object_set_new(o, "signal", json_integer(s->signal));
    }
    tdb_json_set_str(o, "command", s->cmdline);
    json_object_set_new(o, "python", s->python_version ? json_string(s->python_version)
                                                       : json_null());
    json_object_set_new(o, "notes", notes_json(s, flags));
    json_object_set_new(o, "paused", json_boolean(s->paused));
    json_object_set_new(o, "job_stopped", json_boolean(s->job_stopped));
    if (s->paused)
        json_object_set_new(o, "pause_ms", json_real(s->pause_ms));
    json_object_set_new(o, "threads", threads);
    return o;
}

void tdb_process_stacks_render(tdb_buf *b, const tdb_process_stacks *s, unsigned flags)
{
    if (s->core)
        tdb_buf_addf(b, "Core %s of process %d", s->core, (int)s->pid);
    else
        tdb_buf_addf(b, "Process %d", (int)s->pid);
    if (s->ns_pid)
        tdb_buf_addf(b, " (pid %d in its PID namespace)", (int)s->ns_pid);
    if (s->core && s->signal)
        tdb_buf_addf(b, " (killed by signal %d, %s)", s->signal, strsignal(s->signal));
    if (s->python_version)
        tdb_buf_addf(b, " (Python %s)", s->python_version);
    tdb_buf_addf(b, ": %s\n", s->cmdline ? s->cmdline : "?");
    json_t *notes = notes_json(s, flags);
    size_t i;
    json_t *v;
    json_array_foreach(notes, i, v)
        tdb_buf_addf(b, "note: %s\n", json_string_value(v));
    json_decref(notes);
    if (s->job_stopped)
        tdb_buf_adds(b, "note: the process is stopped (job control) and was left stopped\n");
    for (i = 0; i < s->n; i++) {
        if (!shown(&s->threads[i], flags))
            continue;
        tdb_buf_addc(b, '\n');
        tdb_thread_stacks_render(b, &s->threads[i], flags);
    }
}
