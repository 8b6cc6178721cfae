/*
 * commands/stack.c: the commands about the stack and threads (see
 * commands/commands.h): 'bt', 'frame', 'up', 'down', 'py-bt', 'py-up',
 * 'py-down', 'py-list', 'info threads', 'thread'.  They answer with the
 * frames the core names (merged Python and native, CPython's plumbing
 * folded), so they agree with what a stop shows.
 */
#include "commands/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The stop's view (at a stop). */
static const tdb_stackview *view(tdb_session *s)
{
    return tdb_command_stop(s)->view;
}

int tdb_command_bt(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, "bt"))
        return 0;
    if (!strcmp(args, "all"))
        return tdb_command_all_threads(s, r, err);
    const tdb_stop_info *st = tdb_command_stop(s);
    unsigned flags = tdb_session_stack_flags(s);
    long limit = -1;
    if (!strcmp(args, "raw") || !strcmp(args, "-raw"))
        flags |= TDB_STACK_RAW;
    else if (!strcmp(args, "full") || !strcmp(args, "-full"))
        flags |= TDB_STACK_FULL_NAMES; /* C++ names whole */
    else if (*args && (tdb_parse_long(args, 1, 1L << 20, &limit) < 0))
        return tdb_command_fail(r, "bt", "bt takes a number of frames, 'all', 'raw' or 'full', not '%s'",
                                args);
    const tdb_stackview *v = st->view;
    size_t n = tdb_stackview_count(v, flags);
    if (limit < 0) {
        tdb_render_stack(v, flags, v->t.py ? NULL : st->python_frames, &r->text);
    } else {
        for (size_t i = 0; i < n && (long)i < limit; i++) {
            tdb_view_frame f;
            tdb_stackview_frame_at(v, flags, i, &f);
            tdb_stackview_render_frame(&r->text, v, &f);
        }
        if ((long)n > limit)
            tdb_buf_addf(&r->text, "(More stack frames follow...)\n");
    }
    json_t *stack = tdb_stackview_json(v, flags);
    if (limit >= 0)
        while ((long)json_array_size(stack) > limit)
            json_array_remove(stack, json_array_size(stack) - 1);
    r->event = json_pack("{s:s, s:i, s:o, s:s}", "event", "backtrace", "thread", st->thread,
                         "stack", stack, "merge", tdb_stackview_merge_name(v));
    return 0;
}

int tdb_command_select(tdb_session *s, long index, const char *cmd, tdb_reply *r,
                       tdb_error *err)
{
    unsigned flags = tdb_session_stack_flags(s);
    const tdb_stackview *v = view(s);
    tdb_view_frame f;
    if (index < 0 || tdb_stackview_frame_at(v, flags, (size_t)index, &f) < 0)
        return tdb_command_fail(r, cmd, index < 0 ? "Initial frame selected; you cannot go down."
                                                  : "Initial frame selected; you cannot go up.");
    tdb_error local = {0};
    if (tdb_session_select(s, 0, (int)index, &local) < 0)
        return tdb_command_failed(s, r, cmd, &local, err);
    tdb_stackview_render_frame(&r->text, v, &f);
    if (f.kind == TDB_FRAME_PYTHON && f.py->line > 0)
        tdb_list_source(f.py->filename, f.py->line, f.py->line, -1, &r->text);
    const char *full = f.kind == TDB_FRAME_NATIVE ? jstr(f.mi, "fullname") : NULL;
    const char *line = f.kind == TDB_FRAME_NATIVE ? jstr(f.mi, "line") : NULL;
    if (full && line)
        tdb_list_source(full, atol(line), atol(line), -1, &r->text);
    json_t *stack = tdb_stackview_json(v, flags);
    r->event = json_pack("{s:s, s:i, s:O}", "event", "frame", "index", (int)index, "frame",
                         json_array_get(stack, (size_t)index));
    json_decref(stack);
    return 0;
}

int tdb_command_frame(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, "frame"))
        return 0;
    if (!*args)
        return tdb_command_select(s, tdb_session_selected(s), "frame", r, err);
    long level;
    if (tdb_parse_long(args, 0, 1L << 20, &level) < 0)
        return tdb_command_fail(r, "frame", "frame takes a frame number as 'bt' shows it, not '%s'",
                                args);
    int index = tdb_stackview_index_of_level(view(s), tdb_session_stack_flags(s), (int)level);
    if (index < 0 && level == 0) {
        /* The innermost frame is CPython's plumbing (a stop inside
         * PyObject_CallOneArg): gdb's frame 0, as gdb selects and shows it;
         * 'finish' then finishes it. */
        tdb_error local = {0};
        if (tdb_session_select(s, 0, 0, &local) < 0)
            return tdb_command_failed(s, r, "frame", &local, err);
        return tdb_command_gdb(s, "frame 0", r, err);
    }
    if (index < 0)
        return tdb_command_fail(r, "frame", "no frame %ld in the stack tdebug shows (it is "
                                            "CPython's plumbing, folded; 'bt raw' shows it, "
                                            "'frame' then works with --raw)",
                                level);
    return tdb_command_select(s, index, "frame", r, err);
}

static int move_frame(tdb_session *s, const char *args, int dir, const char *cmd, tdb_reply *r,
                      tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, cmd))
        return 0;
    long n = 1;
    if (*args && tdb_parse_long(args, 1, 1L << 20, &n) < 0)
        return tdb_command_fail(r, cmd, "%s takes a number of frames, not '%s'", cmd, args);
    long selected = tdb_session_selected(s), to = selected + dir * n;
    long count = (long)tdb_stackview_count(view(s), tdb_session_stack_flags(s));
    if (to >= count && selected < count - 1)
        to = count - 1;
    else if (to < 0 && selected > 0)
        to = 0;
    if (to >= count)
        return tdb_command_fail(r, cmd, "Initial frame selected; you cannot go up.");
    if (to < 0)
        return tdb_command_fail(r, cmd, "Bottom (innermost) frame selected; you cannot go down.");
    return tdb_command_select(s, to, cmd, r, err);
}

int tdb_command_up(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    return move_frame(s, args, +1, "up", r, err);
}

int tdb_command_down(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    return move_frame(s, args, -1, "down", r, err);
}

/* ---- Python frames (read from memory: no python3-dbg needed) ---- */

int tdb_command_nearest_python(tdb_session *s, int from, int dir)
{
    unsigned flags = tdb_session_stack_flags(s);
    tdb_view_frame f;
    for (int i = from; i >= 0 && tdb_stackview_frame_at(view(s), flags, (size_t)i, &f) == 0;
         i += dir)
        if (f.kind == TDB_FRAME_PYTHON)
            return i;
    return -1;
}

int tdb_command_py_bt(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    (void)err;
    if (!tdb_command_need_stop(s, r, "py-bt"))
        return 0;
    const tdb_py_thread *t = view(s)->t.py;
    if (!t)
        return tdb_command_fail(r, "py-bt", "thread %d runs no Python code%s",
                                tdb_command_stop(s)->thread,
                                tdb_session_reads_python(s) < 0
                                    ? " (tdebug cannot read this interpreter: see the warning "
                                      "above)"
                                    : "");
    tdb_buf_adds(&r->text, "Traceback (most recent call first):\n");
    for (size_t i = 0; i < t->n_frames; i++) {
        const tdb_py_frame *f = &t->frames[i];
        if (f->line >= 0)
            tdb_buf_addf(&r->text, "  File \"%s\", line %d, in %s\n", f->filename, f->line,
                         f->qualname);
        else
            tdb_buf_addf(&r->text, "  File \"%s\", line ?, in %s\n", f->filename, f->qualname);
    }
    r->event = json_pack("{s:s, s:o}", "event", "py-bt", "python_frames",
                         tdb_stackview_python_json(view(s)));
    return 0;
}

static int py_move(tdb_session *s, const char *cmd, int dir, tdb_reply *r, tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, cmd))
        return 0;
    int selected = tdb_session_selected(s);
    int at = tdb_command_nearest_python(s, selected, +1);
    int to = at < 0 ? -1
             : at == selected || dir < 0 ? tdb_command_nearest_python(s, selected + dir, dir)
                                         : at;
    if (to < 0)
        return tdb_command_fail(r, cmd, dir > 0 ? "Unable to find an older Python frame"
                                                : "Unable to find a newer Python frame");
    return tdb_command_select(s, to, cmd, r, err);
}

int tdb_command_py_up(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    return py_move(s, "py-up", +1, r, err);
}

int tdb_command_py_down(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    return py_move(s, "py-down", -1, r, err);
}

int tdb_command_py_list(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)err;
    if (!tdb_command_need_stop(s, r, "py-list"))
        return 0;
    int i = tdb_command_nearest_python(s, tdb_session_selected(s), +1);
    tdb_view_frame f;
    if (i < 0 || tdb_stackview_frame_at(view(s), tdb_session_stack_flags(s), (size_t)i, &f) < 0)
        return tdb_command_fail(r, "py-list", "no Python frame at or below the selected frame");
    long from = f.py->line - 5, to = f.py->line + 5;
    if (*args) {
        long a, b;
        char tail;
        int n = sscanf(args, "%ld,%ld%c", &a, &b, &tail);
        if (n == 2) {
            from = a;
            to = b;
        } else if (sscanf(args, "%ld%c", &a, &tail) == 1) {
            from = a - 5;
            to = a + 5;
        } else {
            return tdb_command_fail(r, "py-list", "py-list takes LINE or START,END, not '%s'",
                                    args);
        }
    }
    if (from < 1)
        from = 1;
    if (f.py->line < 0 && !*args)
        return tdb_command_fail(r, "py-list", "the line of %s in '%s' is unknown", f.py->qualname,
                                f.py->filename);
    if (tdb_list_source(f.py->filename, from, to, f.py->line, &r->text) < 0)
        return tdb_command_fail(r, "py-list", "cannot read '%s': %s%s", f.py->filename,
                                strerror(errno),
                                f.py->filename[0] == '<'
                                    ? " (frozen or generated code has no file)" : "");
    r->event = json_pack("{s:s, s:s, s:i, s:i, s:i}", "event", "list", "file", f.py->filename,
                         "line", f.py->line, "from", (int)from, "to", (int)to);
    return 0;
}

/* ---- threads ---- */

int tdb_command_info_threads(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    json_t *threads = tdb_session_thread_list(s, err), *list = NULL;
    if (!threads)
        return -1;
    list = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(threads, i, t)
    {
        const char *target = jstr(t, "target_id"), *name = jstr(t, "name");
        const char *func = jstr(t, "function");
        int current = json_is_true(json_object_get(t, "current"));
        char id[32];
        snprintf(id, sizeof(id), "%lld", (long long)json_integer_value(json_object_get(t, "id")));
        tdb_buf_addf(&r->text, "%s %-4s %s%s%s%s in %s ()\n", current ? "*" : " ", id,
                     target ? target : "?", name ? " \"" : "", name ? name : "", name ? "\"" : "",
                     func ? func : "??");
        json_array_append_new(list, json_pack("{s:s, s:s?, s:s?, s:s?, s:b}", "id", id,
                                              "target_id", target, "name", name, "function", func,
                                              "current", current));
    }
    json_decref(threads);
    r->event = json_pack("{s:s, s:o}", "event", "threads", "threads", list);
    return 0;
}

int tdb_command_thread(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, "thread"))
        return 0;
    if (!*args || !strcmp(args, "apply all bt"))
        return *args ? tdb_command_all_threads(s, r, err)
                     : tdb_command_info_threads(s, args, r, err);
    long id;
    if (tdb_parse_long(args, 1, 1L << 30, &id) < 0)
        return tdb_command_fail(r, "thread", "thread takes a thread number as 'info threads' "
                                             "shows it, not '%s'", args);
    tdb_error local = {0};
    if (tdb_session_select_thread(s, (int)id, &local) < 0)
        return tdb_command_failed(s, r, "thread", &local, err);
    tdb_buf_addf(&r->text, "[Switching to thread %ld]\n", id);
    return tdb_command_select(s, 0, "thread", r, err);
}

/* Every thread's stack: the "threads" event's list and the text. */
typedef struct all_threads {
    tdb_session *s;
    json_t *list;
    tdb_buf *text;
} all_threads;

static void one_thread(void *data, const tdb_thread_stack *t)
{
    all_threads *a = data;
    unsigned flags = tdb_session_stack_flags(a->s);
    json_t *o = json_pack("{s:i, s:s?, s:s?, s:o, s:O, s:o, s:s, s:s?}", "id", t->id, "target_id",
                          t->target_id, "name", t->name, "frames",
                          tdb_stackview_native_json(t->view), "python_frames",
                          t->python ? t->python : json_null(), "stack",
                          tdb_stackview_json(t->view, flags), "merge",
                          tdb_stackview_merge_name(t->view), "gil", t->gil);
    json_array_append_new(a->list, o);
    tdb_buf_addf(a->text, "\nThread %d (%s%s%s)%s:\n", t->id, t->target_id ? t->target_id : "?",
                 t->name ? ", " : "", t->name ? t->name : "",
                 !t->gil ? "" : strcmp(t->gil, "held") == 0 ? " holds the GIL"
                                                            : " waits for the GIL");
    tdb_render_stack(t->view, flags, t->python, a->text);
}

int tdb_command_all_threads(tdb_session *s, tdb_reply *r, tdb_error *err)
{
    all_threads a = {.s = s, .list = json_array(), .text = &r->text};
    if (tdb_session_each_thread(s, one_thread, &a, err) < 0) {
        json_decref(a.list);
        return -1;
    }
    r->event = json_pack("{s:s, s:i, s:o}", "event", "threads", "pid", (int)tdb_session_pid(s),
                         "threads", a.list);
    return 0;
}
