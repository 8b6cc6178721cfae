/*
 * session/threads.c: the threads of a stop (see session/session.h, "frames
 * and threads"): gdb's -thread-info, read in one place; which thread the
 * stop is in; switching the stop to another thread; every thread's stack.
 */
#include "session/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One row of gdb's -thread-info. */
typedef struct thread_row {
    int id;
    pid_t lwp;
    const char *target_id, *name; /* borrowed from the answer */
    const char *func, *addr;      /* its selected frame's */
} thread_row;

/* gdb's threads (THREAD > 0: only that one): *ROWS (free() them) borrow
 * from *RES (json_decref() it), *CURRENT is gdb's current thread (0 when
 * it names none).  0, or -1 with ERR set. */
static int read_threads(tdb_session *s, int thread, json_t **res, thread_row **rows, size_t *n,
                        int *current, tdb_error *err)
{
    *rows = NULL;
    *n = 0;
    int rc = thread > 0
                 ? tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, res, err, "-thread-info %d", thread)
                 : tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, res, err, "-thread-info");
    if (rc < 0)
        return -1;
    const char *cur = tdb_mi_str(*res, "current-thread-id");
    *current = cur ? atoi(cur) : 0;
    json_t *list = json_object_get(*res, "threads");
    *rows = tdb_xcalloc(json_array_size(list) + 1, sizeof(**rows));
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t)
    {
        const char *id = tdb_mi_str(t, "id"), *target = tdb_mi_str(t, "target-id");
        if (!id)
            continue;
        const char *lwp = target ? strstr(target, "LWP ") : NULL;
        json_t *frame = json_object_get(t, "frame");
        (*rows)[(*n)++] = (thread_row){
            .id = atoi(id),
            .lwp = (pid_t)(lwp ? atol(lwp + 4)
                               : target && !strncmp(target, "process ", 8) ? atol(target + 8) : 0),
            .target_id = target,
            .name = tdb_mi_str(t, "name"),
            .func = tdb_mi_str(frame, "func"),
            .addr = tdb_mi_str(frame, "addr"),
        };
    }
    return 0;
}

json_t *tdb_session_threads(tdb_session *s, tdb_error *err)
{
    json_t *res = NULL, *list = NULL;
    thread_row *rows = NULL;
    size_t n;
    int current;
    if (tdb_session_need_stop(s, err) < 0 ||
        read_threads(s, 0, &res, &rows, &n, &current, err) < 0)
        goto cleanup;
    list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:i, s:i, s:s?, s:b}", "id", rows[i].id, "lwp",
                                              (int)rows[i].lwp, "name", rows[i].name, "current",
                                              rows[i].id == current));
cleanup:
    free(rows);
    json_decref(res);
    return list;
}

json_t *tdb_session_thread_list(tdb_session *s, tdb_error *err)
{
    json_t *res = NULL, *list = NULL;
    thread_row *rows = NULL;
    size_t n;
    int current;
    if (s->have_stop && s->stop.partial && tdb_session_stop_complete(s, err) < 0) /* its top */
        goto cleanup;
    if (read_threads(s, 0, &res, &rows, &n, &current, err) < 0)
        goto cleanup;
    tdb_session_make_stop_readers(s);
    list = json_array();
    for (size_t i = 0; i < n; i++) {
        const thread_row *t = &rows[i];
        int is_current = t->id == current;
        const char *func = t->func;
        tdb_native_frame nf = {.pc = strtoull(t->addr ? t->addr : "0", NULL, 0)};
        if (is_current && s->have_stop_view && s->stop_view.t.n_native) {
            /* gdb shows the selected frame; the thread is where its top is */
            nf.pc = s->stop_view.t.native[0].pc;
            func = s->stop_view.t.native[0].function;
        }
        nf.function = func && strcmp(func, "??") ? tdb_xstrdup(func) : NULL;
        if (!nf.function && s->sym)
            tdb_symbolizer_name(s->sym, &nf, 1);
        json_array_append_new(list, json_pack("{s:i, s:i, s:s?, s:s?, s:s?, s:b}", "id", t->id,
                                              "lwp", (int)t->lwp, "target_id", t->target_id,
                                              "name", t->name, "function", nf.function, "current",
                                              is_current));
        free(nf.function);
        free(nf.library);
    }
cleanup:
    free(rows);
    json_decref(res);
    return list;
}

int tdb_session_stop_thread(tdb_session *s)
{
    if (s->stop.thread > 0)
        return s->stop.thread;
    json_t *res = NULL;
    thread_row *rows = NULL;
    size_t n;
    int current = 0;
    if (s->gdb)
        read_threads(s, 0, &res, &rows, &n, &current, NULL);
    free(rows);
    json_decref(res);
    return current > 0 ? current : 1;
}

pid_t tdb_session_thread_lwp(tdb_session *s, int thread)
{
    json_t *res = NULL;
    thread_row *rows = NULL;
    size_t n = 0;
    int current;
    pid_t lwp = 0;
    if (read_threads(s, thread, &res, &rows, &n, &current, NULL) == 0)
        for (size_t i = 0; i < n && !lwp; i++)
            if (thread > 0 || rows[i].id == current)
                lwp = rows[i].lwp;
    free(rows);
    json_decref(res);
    return lwp;
}

int tdb_session_select_thread(tdb_session *s, int thread, tdb_error *err)
{
    if (tdb_session_stop_complete(s, err) < 0 || /* the stop's frames stay the first thread's */
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-thread-select %d", thread) < 0)
        return -1;
    tdb_stackview v;
    if (tdb_session_collect_view(s, thread, &v, err) < 0)
        return -1;
    if (s->have_stop_view)
        tdb_stackview_clear(&s->stop_view);
    s->stop_view = v;
    s->have_stop_view = 1;
    s->stop.view = &s->stop_view;
    s->stop.thread = thread;
    s->selected = 0;
    return 0;
}

static const char *gil_word(const tdb_stackview *v)
{
    if (!v->t.py)
        return NULL;
    return v->t.py->gil == TDB_GIL_HELD ? "held" : v->t.py->gil == TDB_GIL_WAITING ? "waiting" : NULL;
}

int tdb_session_each_thread(tdb_session *s, void (*fn)(void *data, const tdb_thread_stack *t),
                            void *data, tdb_error *err)
{
    json_t *res = NULL;
    thread_row *rows = NULL;
    size_t n = 0;
    int current, rc = -1;
    if (tdb_session_light_upgrade(s, err) < 0 ||
        read_threads(s, 0, &res, &rows, &n, &current, err) < 0)
        goto cleanup;
    rc = 0;
    for (size_t i = 0; i < n; i++) {
        tdb_stackview v;
        /* gdb's py-bt, the fallback, reads the selected thread. */
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-thread-select %d", rows[i].id) < 0 ||
            tdb_session_collect_view(s, rows[i].id, &v, err) < 0) {
            rc = -1;
            break;
        }
        json_t *py = tdb_session_view_python(s, &v);
        tdb_thread_stack t = {.id = rows[i].id, .target_id = rows[i].target_id,
                              .name = rows[i].name, .view = &v, .python = py,
                              .gil = gil_word(&v)};
        fn(data, &t);
        json_decref(py);
        tdb_stackview_clear(&v);
    }
    if (current > 0)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-thread-select %d", current);
cleanup:
    free(rows);
    json_decref(res);
    return rc;
}
