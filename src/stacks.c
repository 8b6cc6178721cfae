/* stacks.c: pause, copy, let go, then unwind and merge: one process. */
#include "stacks.h"

#include "pause.h"
#include "procfs.h"
#include "ptrace_check.h"
#include "unwind.h"

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
    t->name = tid > 0 ? tdb_proc_comm(s->pid, tid) : NULL;
    return t;
}

/* Say why we may not look at PID, from the errno of a refused read. */
static void refused(tdb_error *err, pid_t pid, int code, const char *what)
{
    if (code == ESRCH || code == ENOENT)
        tdb_error_set(err, ESRCH, "cannot read the stacks of pid %d: %s", (int)pid, what);
    else
        tdb_ptrace_explain_for(&tdb_purpose_stacks, pid, NULL, code, err);
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
    s->cmdline = tdb_proc_cmdline(pid, 200);
    if (want_python) {
        tdb_error_clear(&e);
        int r = tdb_py_open(pid, &maps, &py, &e);
        if (r == 1) {
            s->python_note = tdb_xstrdup("not a Python process (no _PyRuntime in its executable "
                                         "or a libpython): native stacks only");
        } else if (r < 0 && (e.code == ESRCH || e.code == EPERM || e.code == EACCES)) {
            refused(err, pid, e.code, "it exited");
            goto cleanup;
        } else if (r < 0) {
            s->python_note = tdb_xstrdup(e.msg);
        } else {
            s->python_version = tdb_xstrdup(tdb_py_version(py));
        }
        if (!py && !want_native) {
            if (r == 1)
                tdb_error_set(err, ENOENT,
                              "cannot read the Python stacks of pid %d: it is not a Python "
                              "process (leave out --python to see its native stacks)",
                              (int)pid);
            else
                tdb_error_set(err, e.code, "%s", e.msg);
            goto cleanup;
        }
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
    if (py) {
        tdb_error_clear(&e);
        s->snapshot = tdb_py_read(py, &e);
        if (!s->snapshot)
            s->python_note = tdb_xstrdup(e.msg);
        s->mem_reads = tdb_py_reads(py);
    }
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
    /* Thread states whose thread we did not see (no native id, or a
     * thread that just exited) are shown on their own. */
    for (size_t i = 0; s->snapshot && i < s->snapshot->n_threads; i++) {
        const tdb_py_thread *pt = &s->snapshot->threads[i];
        tdb_thread_stacks *t = NULL;
        for (size_t j = 0; j < s->n && !t; j++)
            if (s->threads[j].tid == pt->tid && pt->tid > 0 && !s->threads[j].py)
                t = &s->threads[j];
        if (!t)
            t = add_thread(s, &tcap, 0);
        t->py = pt;
    }
    for (size_t i = 0; i < s->n; i++) {
        tdb_thread_stacks *t = &s->threads[i];
        if (cap && t->tid > 0) {
            tdb_error ue = {0};
            if (tdb_capture_unwind(cap, t->tid, max_frames, o->symbols, &t->native,
                                   &t->n_native, &t->native_note, &ue) < 0)
                t->native_note = tdb_xstrdup(ue.msg);
            else
                tdb_native_frames_classify(t->native, t->n_native, py);
        }
        t->python_process = s->snapshot != NULL;
        tdb_stack_merge(t->native, t->n_native, t->py ? t->py->frames : NULL,
                        t->py ? t->py->n_frames : 0, &t->merged);
    }
    if (cap)
        s->stack_bytes = tdb_capture_bytes(cap);
    s->unwind_ms = (double)(tdb_now_ms() - t0);
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

void tdb_process_stacks_free(tdb_process_stacks *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        tdb_thread_stacks_clear(&s->threads[i]);
    free(s->threads);
    free(s->cmdline);
    free(s->python_version);
    free(s->python_note);
    free(s->native_note);
    tdb_py_snapshot_free(s->snapshot);
    free(s);
}

static const char *gil_name(const tdb_py_thread *py)
{
    if (!py)
        return NULL;
    return py->gil == TDB_GIL_HELD ? "held" : py->gil == TDB_GIL_WAITING ? "waiting" : NULL;
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

static json_t *notes_json(const tdb_process_stacks *s, unsigned flags)
{
    json_t *a = json_array();
    if (s->python_note)
        json_array_append_new(a, json_string(s->python_note));
    if (s->native_note && !(flags & TDB_STACK_PYTHON_ONLY))
        json_array_append_new(a, json_string(s->native_note));
    if (s->snapshot && s->snapshot->partial)
        json_array_append_new(a, json_sprintf("Python threads may be missing: %s",
                                              s->snapshot->partial));
    return a;
}

json_t *tdb_thread_stacks_json(const tdb_thread_stacks *t, unsigned flags)
{
    const char *gil = gil_name(t->py);
    json_t *o = json_pack("{s:i, s:o, s:b}", "tid", (int)t->tid, "name",
                          t->name ? json_string(t->name) : json_null(), "python", t->py != NULL);
    if (t->py) {
        json_object_set_new(o, "thread_id", json_integer((json_int_t)t->py->thread_id));
        json_object_set_new(o, "gil", gil ? json_string(gil) : json_null());
    }
    json_object_set_new(o, "merge", json_string(merge_name(t->merged.status)));
    if (t->merged.status == TDB_MERGE_MISMATCH && !(flags & (TDB_STACK_PYTHON_ONLY |
                                                             TDB_STACK_NATIVE_ONLY))) {
        json_object_set_new(o, "python_frames", tdb_py_frames_json(t->merged.py, t->merged.n_py));
        json_object_set_new(o, "native_frames",
                            tdb_native_frames_json(t->merged.native, t->merged.n_native));
        json_object_set_new(o, "mismatch",
                            json_sprintf("%zu native evaluator frames, %zu Python entry frames",
                                         t->merged.n_eval, t->merged.n_entry));
    } else {
        json_object_set_new(o, "frames", tdb_stack_json(&t->merged, flags));
    }
    if (t->py && t->py->partial)
        json_object_set_new(o, "python_partial", json_string(t->py->partial));
    if (t->native_note && !(flags & TDB_STACK_PYTHON_ONLY))
        json_object_set_new(o, "native_note", json_string(t->native_note));
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
    const char *gil = gil_name(t->py);
    if (gil)
        tdb_buf_addf(b, " (%s the GIL)", strcmp(gil, "held") == 0 ? "holds" : "waiting for");
    if (!t->py && t->python_process)
        tdb_buf_adds(b, " (no Python)");
    tdb_buf_adds(b, ":\n");
    tdb_stack_render(b, &t->merged, flags, "  ");
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
    t->py = tdb_py_find_thread(snap, tid);
    if (tdb_native_frames_from_mi(mi_stack, &t->native, &t->n_native) < 0) {
        t->native_note = tdb_xstrdup("gdb's frames could not be read");
        t->native = NULL;
        t->n_native = 0;
    } else {
        if (maps)
            tdb_native_frames_fill_libraries(t->native, t->n_native, maps);
        tdb_native_frames_classify(t->native, t->n_native, py);
    }
    tdb_stack_merge(t->native, t->n_native, t->py ? t->py->frames : NULL,
                    t->py ? t->py->n_frames : 0, &t->merged);
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
    json_t *o = json_pack("{s:i, s:o, s:o, s:o, s:b, s:b}", "pid", (int)s->pid, "command",
                          s->cmdline ? json_string(s->cmdline) : json_null(), "python",
                          s->python_version ? json_string(s->python_version) : json_null(),
                          "notes", notes_json(s, flags), "paused", s->paused, "job_stopped",
                          s->job_stopped);
    if (s->paused)
        json_object_set_new(o, "pause_ms", json_real(s->pause_ms));
    json_object_set_new(o, "threads", threads);
    return o;
}

void tdb_process_stacks_render(tdb_buf *b, const tdb_process_stacks *s, unsigned flags)
{
    tdb_buf_addf(b, "Process %d", (int)s->pid);
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
