/*
 * session/commands.c: the commands typed at a stop (tdb_session_exec()).
 *
 * One handler a command, each filling a reply: text for a terminal and an
 * event for --json and other front-ends.  Commands about the stack and
 * threads answer with the frames tdebug names (merged Python and native,
 * CPython's plumbing folded), so 'bt N', 'frame N', 'up', 'info threads'
 * and 'thread N' agree with what a stop shows; anything tdebug does not
 * know goes to gdb as a console command.
 */
#include "session/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int gdb_console(tdb_session *s, const char *cmd, tdb_reply *r, tdb_error *err);
static int list_file(const char *file, long from, long to, long mark, tdb_buf *out);

typedef int (*cmd_fn)(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);

typedef struct command {
    const char *name;  /* "info breakpoints" */
    const char *alias; /* "i b", or NULL */
    cmd_fn fn;
    const char *help;
} command;

/* An error answer: R says it, the session goes on. */
static int fail(tdb_reply *r, const char *cmd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(tdb_reply *r, const char *cmd, const char *fmt, ...)
{
    tdb_buf b = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    r->error = 1;
    tdb_buf_addf(&r->text, "%s\n", tdb_buf_str(&b));
    json_decref(r->event);
    r->event = json_pack("{s:s, s:s, s:s}", "event", "error", "command", cmd, "message",
                         tdb_buf_str(&b));
    tdb_buf_free(&b);
    return 0;
}

static int need_stop(tdb_session *s, tdb_reply *r, const char *cmd)
{
    if (s->state == STOPPED && s->have_stop)
        return 1;
    fail(r, cmd, s->state == EXITED ? "the program is not being run" : "the program is running");
    return 0;
}

int tdb_session_reply_fail(tdb_reply *r, const char *cmd, const char *msg)
{
    return fail(r, cmd, "%s", msg);
}

int tdb_session_need_stop(tdb_session *s, tdb_reply *r, const char *cmd)
{
    return need_stop(s, r, cmd);
}

/* ---- running ---- */

static int resume_cmd(tdb_session *s, tdb_resume how, const char *name, tdb_reply *r,
                      tdb_error *err)
{
    tdb_error local = {0};
    if (tdb_session_resume(s, how, &local) < 0) {
        if (s->gdb && !tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            return -1;
        }
        if (strstr(local.msg, "Cannot find bounds of current function"))
            return fail(r, name, "%s: no line information here (no debug info for this function): "
                                 "'finish' returns to its caller (the Python line when that is "
                                 "Python), 'stepi' steps one instruction",
                        name);
        return fail(r, name, "%s", local.msg);
    }
    r->resumed = 1;
    r->event = json_pack("{s:s, s:s}", "event", "running", "command", name);
    return 0;
}

#define RESUME_CMD(fn, how, name)                                                   \
    static int fn(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)  \
    {                                                                               \
        (void)args;                                                                 \
        return resume_cmd(s, how, name, r, err);                                    \
    }
RESUME_CMD(cmd_continue, TDB_RESUME_CONTINUE, "continue")
RESUME_CMD(cmd_step, TDB_RESUME_STEP, "step")
RESUME_CMD(cmd_next, TDB_RESUME_NEXT, "next")
RESUME_CMD(cmd_finish, TDB_RESUME_FINISH, "finish")
RESUME_CMD(cmd_stepi, TDB_RESUME_STEPI, "stepi")
RESUME_CMD(cmd_nexti, TDB_RESUME_NEXTI, "nexti")

static int cmd_quit(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)s;
    (void)args;
    (void)err;
    r->quit = 1;
    return 0;
}

static int cmd_kill(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (s->attached)
        return fail(r, "kill", "tdebug never kills a process it attached to: 'detach' or 'quit' "
                               "leaves pid %d running",
                    (int)s->pid);
    return cmd_quit(s, args, r, err);
}

/* ---- the stack ---- */

static void frame_line(tdb_session *s, size_t index, tdb_buf *out)
{
    tdb_view_frame f;
    if (tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s), index, &f) == 0)
        tdb_stackview_render_frame(out, &s->stop_view, &f);
}

static int cmd_bt(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!need_stop(s, r, "bt"))
        return 0;
    if (!strcmp(args, "all"))
        return tdb_session_all_threads(s, r, err);
    unsigned flags = tdb_session_stack_flags(s);
    long limit = -1;
    if (!strcmp(args, "raw") || !strcmp(args, "-raw"))
        flags |= TDB_STACK_RAW;
    else if (*args && (tdb_parse_long(args, 1, 1L << 20, &limit) < 0))
        return fail(r, "bt", "bt takes a number of frames, 'all' or 'raw', not '%s'", args);
    const tdb_stackview *v = &s->stop_view;
    size_t n = tdb_stackview_count(v, flags);
    if (limit < 0) {
        unsigned keep = s->opts.raw;
        s->opts.raw = (flags & TDB_STACK_RAW) != 0;
        tdb_session_render_view(s, v, v->t.py ? NULL : s->stop.python_frames, &r->text);
        s->opts.raw = keep;
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
    r->event = json_pack("{s:s, s:i, s:o, s:s}", "event", "backtrace", "thread", s->stop.thread,
                         "stack", stack, "merge", tdb_stackview_merge_name(v));
    return 0;
}

/* Select frame INDEX of the stop's stack: for a native frame gdb selects
 * it too, so its commands (print, info locals) see that frame. */
static int select_frame(tdb_session *s, long index, const char *cmd, tdb_reply *r,
                        tdb_error *err)
{
    unsigned flags = tdb_session_stack_flags(s);
    tdb_view_frame f;
    if (index < 0 || tdb_stackview_frame_at(&s->stop_view, flags, (size_t)index, &f) < 0)
        return fail(r, cmd, index < 0 ? "Initial frame selected; you cannot go down."
                                      : "Initial frame selected; you cannot go up.");
    if (f.kind == TDB_FRAME_NATIVE &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-stack-select-frame %d", f.level) < 0) {
        if (!tdb_gdb_alive(s->gdb))
            return -1;
        tdb_error_clear(err);
    }
    s->selected = (int)index;
    frame_line(s, (size_t)index, &r->text);
    if (f.kind == TDB_FRAME_PYTHON && f.py->line > 0)
        list_file(f.py->filename, f.py->line, f.py->line, -1, &r->text);
    if (f.kind == TDB_FRAME_NATIVE && f.mi) {
        const char *full = tdb_mi_str(f.mi, "fullname"), *line = tdb_mi_str(f.mi, "line");
        if (full && line) {
            FILE *fp = fopen(full, "re");
            char *text = NULL;
            size_t cap = 0;
            long n = 0, want = atol(line);
            ssize_t len = -1;
            while (fp && n < want && (len = getline(&text, &cap, fp)) >= 0)
                n++;
            if (fp && n == want && len >= 0)
                tdb_buf_addf(&r->text, "%ld\t%s%s", want, text,
                             len && text[len - 1] == '\n' ? "" : "\n");
            free(text);
            if (fp)
                fclose(fp);
        }
    }
    json_t *stack = tdb_stackview_json(&s->stop_view, flags);
    r->event = json_pack("{s:s, s:i, s:O}", "event", "frame", "index", (int)index, "frame",
                         json_array_get(stack, (size_t)index));
    json_decref(stack);
    return 0;
}

static int cmd_frame(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!need_stop(s, r, "frame"))
        return 0;
    if (!*args)
        return select_frame(s, s->selected, "frame", r, err);
    long level;
    if (tdb_parse_long(args, 0, 1L << 20, &level) < 0)
        return fail(r, "frame", "frame takes a frame number as 'bt' shows it, not '%s'", args);
    int index = tdb_stackview_index_of_level(&s->stop_view, tdb_session_stack_flags(s), (int)level);
    if (index < 0)
        return fail(r, "frame", "no frame %ld in the stack tdebug shows (it is CPython's plumbing, "
                                "folded; 'bt raw' shows it, 'frame' then works with --raw)",
                    level);
    return select_frame(s, index, "frame", r, err);
}

static int move_frame(tdb_session *s, const char *args, int dir, const char *cmd, tdb_reply *r,
                      tdb_error *err)
{
    if (!need_stop(s, r, cmd))
        return 0;
    long n = 1;
    if (*args && tdb_parse_long(args, 1, 1L << 20, &n) < 0)
        return fail(r, cmd, "%s takes a number of frames, not '%s'", cmd, args);
    long to = s->selected + dir * n;
    long count = (long)tdb_stackview_count(&s->stop_view, tdb_session_stack_flags(s));
    if (to >= count && s->selected < count - 1)
        to = count - 1;
    else if (to < 0 && s->selected > 0)
        to = 0;
    if (to >= count)
        return fail(r, cmd, "Initial frame selected; you cannot go up.");
    if (to < 0)
        return fail(r, cmd, "Bottom (innermost) frame selected; you cannot go down.");
    return select_frame(s, to, cmd, r, err);
}

static int cmd_up(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    return move_frame(s, args, +1, "up", r, err);
}

static int cmd_down(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    return move_frame(s, args, -1, "down", r, err);
}

/* ---- Python frames (read from memory: no python3-dbg needed) ---- */

/* The index of the Python frame nearest the selection: the selected frame
 * when it is Python, else the first Python frame below it (its caller,
 * the line that called into native code); -1 when there is none. */
static int nearest_python(tdb_session *s, int from, int dir)
{
    unsigned flags = tdb_session_stack_flags(s);
    tdb_view_frame f;
    for (int i = from; i >= 0 && tdb_stackview_frame_at(&s->stop_view, flags, (size_t)i, &f) == 0;
         i += dir)
        if (f.kind == TDB_FRAME_PYTHON)
            return i;
    return -1;
}

int tdb_session_nearest_python(tdb_session *s, int from, int dir)
{
    return nearest_python(s, from, dir);
}

static int cmd_py_bt(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    (void)err;
    if (!need_stop(s, r, "py-bt"))
        return 0;
    const tdb_py_thread *t = s->stop_view.t.py;
    if (!t)
        return fail(r, "py-bt", "thread %d runs no Python code%s", s->stop.thread,
                    s->py_state < 0 ? " (tdebug cannot read this interpreter: see the warning "
                                      "above)" : "");
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
                         tdb_stackview_python_json(&s->stop_view));
    return 0;
}

static int py_move(tdb_session *s, const char *cmd, int dir, tdb_reply *r, tdb_error *err)
{
    if (!need_stop(s, r, cmd))
        return 0;
    int at = nearest_python(s, s->selected, +1);
    int to = at < 0 ? -1 : at == s->selected || dir < 0 ? nearest_python(s, s->selected + dir, dir)
                                                        : at;
    if (to < 0)
        return fail(r, cmd, dir > 0 ? "Unable to find an older Python frame"
                                    : "Unable to find a newer Python frame");
    return select_frame(s, to, cmd, r, err);
}

static int cmd_py_up(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    return py_move(s, "py-up", +1, r, err);
}

static int cmd_py_down(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    return py_move(s, "py-down", -1, r, err);
}

static int cmd_py_list(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)err;
    if (!need_stop(s, r, "py-list"))
        return 0;
    int i = nearest_python(s, s->selected, +1);
    tdb_view_frame f;
    if (i < 0 || tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s), (size_t)i, &f) < 0)
        return fail(r, "py-list", "no Python frame at or below the selected frame");
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
            return fail(r, "py-list", "py-list takes LINE or START,END, not '%s'", args);
        }
    }
    if (from < 1)
        from = 1;
    if (f.py->line < 0 && !*args)
        return fail(r, "py-list", "the line of %s in '%s' is unknown", f.py->qualname,
                    f.py->filename);
    if (list_file(f.py->filename, from, to, f.py->line, &r->text) < 0)
        return fail(r, "py-list", "cannot read '%s': %s%s", f.py->filename, strerror(errno),
                    f.py->filename[0] == '<' ? " (frozen or generated code has no file)" : "");
    r->event = json_pack("{s:s, s:s, s:i, s:i, s:i}", "event", "list", "file", f.py->filename,
                         "line", f.py->line, "from", (int)from, "to", (int)to);
    return 0;
}

/* ---- threads ---- */

static int cmd_info_threads(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    json_t *res = NULL, *list = json_array();
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "-thread-info") < 0) {
        json_decref(list);
        return -1;
    }
    const char *current = tdb_mi_str(res, "current-thread-id");
    tdb_session_make_stop_readers(s);
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(res, "threads"), i, t)
    {
        const char *id = tdb_mi_str(t, "id"), *target = tdb_mi_str(t, "target-id");
        const char *name = tdb_mi_str(t, "name");
        json_t *frame = json_object_get(t, "frame");
        int is_current = current && id && !strcmp(current, id);
        const char *addr = tdb_mi_str(frame, "addr"), *func = tdb_mi_str(frame, "func");
        tdb_native_frame nf = {.pc = strtoull(addr ? addr : "0", NULL, 0)};
        if (is_current && s->have_stop_view && s->stop_view.t.n_native) {
            /* gdb shows the selected frame; the thread is where its top is */
            nf.pc = s->stop_view.t.native[0].pc;
            func = s->stop_view.t.native[0].function;
        }
        nf.function = func && strcmp(func, "??") ? tdb_xstrdup(func) : NULL;
        if (!nf.function && s->sym)
            tdb_symbolizer_name(s->sym, &nf, 1);
        tdb_buf_addf(&r->text, "%s %-4s %s%s%s%s in %s ()\n", is_current ? "*" : " ", id ? id : "?",
                     target ? target : "?", name ? " \"" : "", name ? name : "", name ? "\"" : "",
                     nf.function ? nf.function : "??");
        json_array_append_new(list, json_pack("{s:s?, s:s?, s:s?, s:s?, s:b}", "id", id, "target_id",
                                              target, "name", name, "function", nf.function,
                                              "current", is_current));
        free(nf.function);
        free(nf.library);
    }
    json_decref(res);
    r->event = json_pack("{s:s, s:o}", "event", "threads", "threads", list);
    return 0;
}

static int cmd_thread(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!need_stop(s, r, "thread"))
        return 0;
    if (!*args || !strcmp(args, "apply all bt"))
        return *args ? tdb_session_all_threads(s, r, err) : cmd_info_threads(s, args, r, err);
    long id;
    if (tdb_parse_long(args, 1, 1L << 30, &id) < 0)
        return fail(r, "thread", "thread takes a thread number as 'info threads' shows it, not '%s'",
                    args);
    tdb_error local = {0};
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, &local, "-thread-select %ld", id) < 0) {
        if (!tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            return -1;
        }
        return fail(r, "thread", "%s", local.msg);
    }
    tdb_stackview v;
    if (tdb_session_collect_view(s, (int)id, &v, err) < 0)
        return -1;
    if (s->have_stop_view)
        tdb_stackview_clear(&s->stop_view);
    s->stop_view = v;
    s->stop.view = &s->stop_view;
    s->stop.thread = (int)id;
    s->selected = 0;
    tdb_buf_addf(&r->text, "[Switching to thread %ld]\n", id);
    return select_frame(s, 0, "thread", r, err);
}

/* ---- breakpoints ---- */

static int cmd_break(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!*args)
        return fail(r, "break", "break needs a location: FUNCTION, FILE:LINE or *ADDRESS");
    return tdb_session_break(s, args, 0, r, err);
}

static int cmd_tbreak(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!*args)
        return fail(r, "tbreak", "tbreak needs a location: FUNCTION, FILE:LINE or *ADDRESS");
    return tdb_session_break(s, args, 1, r, err);
}

static int cmd_catch(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    const char *type = "";
    if (strncmp(args, "throw", 5) == 0 && (!args[5] || isspace((unsigned char)args[5]))) {
        type = args + 5;
        while (isspace((unsigned char)*type))
            type++;
        return tdb_session_catch_throw(s, type, r, err);
    }
    tdb_buf cmd = TDB_BUF_INIT;
    tdb_buf_addf(&cmd, "catch %s", args);
    int rc = gdb_console(s, tdb_buf_str(&cmd), r, err);
    tdb_buf_free(&cmd);
    return rc;
}

static int cmd_info_breakpoints(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    (void)err;
    json_t *list = json_array();
    int any = 0;
    for (size_t i = 0; i < s->n_bps; i++) {
        const bp_info *b = &s->bps[i];
        if (!b->id)
            continue;
        if (!any)
            tdb_buf_adds(&r->text, "Num  Type        Enb  Hits  Where\n");
        any = 1;
        tdb_buf where = TDB_BUF_INIT;
        tdb_session_bp_describe(s, b, &where);
        const char *type = b->kind == BP_CATCH ? "catchpoint"
                           : b->kind == BP_PYTHON ? (b->temporary ? "tpython" : "python")
                           : b->temporary ? "tbreakpoint" : "breakpoint";
        long hits = b->hits - b->passed;
        tdb_buf_addf(&r->text, "%-4d %-11s %-4s %-5ld %s\n", b->id, type, b->enabled ? "y" : "n",
                     hits, tdb_buf_str(&where));
        json_array_append_new(list, json_pack("{s:i, s:s, s:s, s:b, s:b, s:i, s:b, s:s?}", "number",
                                              b->id, "type", b->kind == BP_CATCH ? "catch"
                                                             : b->kind == BP_PYTHON ? "python" : "native",
                                              "location", b->location,
                                              "enabled", b->enabled, "temporary", b->temporary,
                                              "hits", (int)hits, "pending", b->pending, "where",
                                              b->where));
        tdb_buf_free(&where);
    }
    if (!any)
        tdb_buf_adds(&r->text, "No breakpoints.\n");
    r->event = json_pack("{s:s, s:o}", "event", "breakpoints", "breakpoints", list);
    return 0;
}

/* The breakpoints ARGS names ("1 3", empty: all) for delete/enable/disable. */
static int each_bp(tdb_session *s, const char *args, const char *cmd, tdb_reply *r,
                   int (*fn)(tdb_session *, bp_info *, tdb_reply *))
{
    if (!*args) {
        for (size_t i = s->n_bps; i-- > 0;)
            if (s->bps[i].id)
                fn(s, &s->bps[i], r);
        return 0;
    }
    char *copy = tdb_xstrdup(args), *save = NULL;
    for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        long id;
        bp_info *b = tdb_parse_long(w, 1, 1L << 30, &id) == 0 ? tdb_session_find_bp_id(s, (int)id)
                                                               : NULL;
        if (!b) {
            fail(r, cmd, "no breakpoint number %s ('info breakpoints' lists them)", w);
            continue;
        }
        fn(s, b, r);
    }
    free(copy);
    return 0;
}

static int do_delete(tdb_session *s, bp_info *b, tdb_reply *r)
{
    tdb_buf_addf(&r->text, "Deleted breakpoint %d\n", b->id);
    tdb_session_bp_delete(s, b);
    return 0;
}

static int set_enabled(tdb_session *s, bp_info *b, tdb_reply *r, int on)
{
    if (b->number > 0)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-%s %d", on ? "enable" : "disable",
                    b->number);
    b->enabled = on;
    if (b->kind == BP_PYTHON)
        tdb_session_python_bp_changed(s, b, 0);
    tdb_buf_addf(&r->text, "Breakpoint %d %s\n", b->id, on ? "enabled" : "disabled");
    return 0;
}

static int do_enable(tdb_session *s, bp_info *b, tdb_reply *r)
{
    return set_enabled(s, b, r, 1);
}

static int do_disable(tdb_session *s, bp_info *b, tdb_reply *r)
{
    return set_enabled(s, b, r, 0);
}

#define BP_CMD(fn, name, action)                                                   \
    static int fn(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err) \
    {                                                                              \
        (void)err;                                                                 \
        each_bp(s, args, name, r, action);                                         \
        if (!r->event)                                                             \
            r->event = json_pack("{s:s, s:s}", "event", "done", "command", name);  \
        return 0;                                                                  \
    }
BP_CMD(cmd_delete, "delete", do_delete)
BP_CMD(cmd_enable, "enable", do_enable)
BP_CMD(cmd_disable, "disable", do_disable)

/* ---- symbols, source ---- */

static int cmd_symbols(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)err;
    if (!*args)
        return fail(r, "symbols", "symbols needs a basic regex of library paths, e.g. 'mylib\\|c10'");
    tdb_error local = {0};
    if (tdb_session_load_symbols(s, args, &local) < 0)
        return fail(r, "symbols", "tdebug: cannot read symbols for '%s': %s", args, local.msg);
    r->event = json_pack("{s:s, s:s}", "event", "symbols", "regex", args);
    return 0;
}

/* Lines FROM..TO of FILE, gdb's way ("42\ttext"), marking line MARK. */
static int list_file(const char *file, long from, long to, long mark, tdb_buf *out)
{
    FILE *f = fopen(file, "re");
    if (!f)
        return -1;
    char *text = NULL;
    size_t cap = 0;
    ssize_t len;
    for (long n = 1; (len = getline(&text, &cap, f)) >= 0 && n <= to; n++) {
        if (n < from)
            continue;
        tdb_buf_addf(out, "%s%ld\t%s", n == mark ? ">" : "", n, text);
        if (!len || text[len - 1] != '\n')
            tdb_buf_addc(out, '\n');
    }
    free(text);
    fclose(f);
    return 0;
}

static int cmd_list(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (*args || !s->have_stop) {
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "list%s%s", *args ? " " : "", args);
        int rc = gdb_console(s, tdb_buf_str(&cmd), r, err);
        tdb_buf_free(&cmd);
        return rc;
    }
    tdb_view_frame f;
    if (tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s), (size_t)s->selected, &f) < 0)
        return fail(r, "list", "no frame selected");
    if (f.kind == TDB_FRAME_PYTHON) {
        if (f.py->line < 0 || list_file(f.py->filename, f.py->line - 5, f.py->line + 5,
                                        f.py->line, &r->text) < 0)
            return fail(r, "list", "cannot list '%s': %s", f.py->filename,
                        f.py->line < 0 ? "its line is unknown" : strerror(errno));
        r->event = json_pack("{s:s, s:s, s:i}", "event", "list", "file", f.py->filename, "line",
                             f.py->line);
        return 0;
    }
    const char *full = f.mi ? tdb_mi_str(f.mi, "fullname") : NULL;
    const char *line = f.mi ? tdb_mi_str(f.mi, "line") : NULL;
    if (!full || !line)
        return fail(r, "list", "no source for frame %d: %s has no line information (no debug info)",
                    f.level, f.native->function ? f.native->function : "it");
    tdb_buf cmd = TDB_BUF_INIT;
    tdb_buf_addf(&cmd, "list %s:%s", full, line);
    int rc = gdb_console(s, tdb_buf_str(&cmd), r, err);
    tdb_buf_free(&cmd);
    return rc;
}

/* ---- everything else is gdb's ---- */

static int gdb_console(tdb_session *s, const char *cmd, tdb_reply *r, tdb_error *err)
{
    tdb_error local = {0};
    tdb_buf mi = TDB_BUF_INIT;
    tdb_buf_adds(&mi, "-interpreter-exec console ");
    tdb_mi_quote(&mi, cmd);
    tdb_mi_response *resp = tdb_gdb_send(s->gdb, SYMBOLS_TIMEOUT_MS, &local, tdb_buf_str(&mi));
    tdb_buf_free(&mi);
    if (!resp) {
        tdb_error_set(err, local.code, "%s", local.msg);
        return -1;
    }
    tdb_buf_add(&r->text, tdb_buf_str(&resp->console), resp->console.len);
    if (strcmp(resp->result->klass, "error") == 0) {
        const char *msg = tdb_mi_str(resp->result->results, "msg");
        r->error = 1;
        tdb_buf_addf(&r->text, "%s\n", msg ? msg : "error");
        r->event = json_pack("{s:s, s:s, s:s, s:s}", "event", "error", "command", cmd, "message",
                             msg ? msg : "error", "output", tdb_buf_str(&resp->console));
    } else if (strcmp(resp->result->klass, "running") == 0) {
        tdb_session_note_running(s);
        r->resumed = 1;
        r->event = json_pack("{s:s, s:s}", "event", "running", "command", cmd);
    } else {
        r->event = json_pack("{s:s, s:s, s:s}", "event", "output", "command", cmd, "output",
                             tdb_buf_str(&resp->console));
    }
    tdb_mi_response_free(resp);
    return 0;
}

static int cmd_help(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);

static const command commands[] = {
    {"continue", "c", cmd_continue, "let the program run to the next stop"},
    {"step", "s", cmd_step, "one line, into calls: from Python into the C/C++ it runs"},
    {"next", "n", cmd_next, "one line, over calls (a Python line at a Python stop)"},
    {"finish", "fin", cmd_finish, "until the selected frame returns (to the Python line)"},
    {"stepi", "si", cmd_stepi, "one machine instruction, into calls"},
    {"nexti", "ni", cmd_nexti, "one machine instruction, over calls"},
    {"backtrace", "bt", cmd_bt, "[N|all|raw]: this thread's stack, native and Python merged"},
    {"where", NULL, cmd_bt, "the same as bt"},
    {"frame", "f", cmd_frame, "[N]: select frame N as bt numbers it"},
    {"up", NULL, cmd_up, "[N]: select the caller's frame (Python frames included)"},
    {"down", NULL, cmd_down, "[N]: select the callee's frame"},
    {"info threads", "i threads", cmd_info_threads, "the threads, named as tdebug names frames"},
    {"thread", NULL, cmd_thread, "N: switch to thread N and show its frame"},
    {"break", "b", cmd_break, "LOC: a breakpoint (FUNCTION, FILE:LINE, *ADDR, FILE.py:LINE|FUNC)"},
    {"tbreak", NULL, cmd_tbreak, "LOCATION: a breakpoint that stops once"},
    {"catch", NULL, cmd_catch, "throw [TYPE]: stop where C++ throws (a TYPE or a subclass)"},
    {"info breakpoints", "i b", cmd_info_breakpoints, "the breakpoints, with hit counts"},
    {"delete", "d", cmd_delete, "[N...]: delete breakpoints (all without N)"},
    {"disable", NULL, cmd_disable, "[N...]: disable breakpoints"},
    {"enable", NULL, cmd_enable, "[N...]: enable breakpoints"},
    {"list", "l", cmd_list, "the source around the selected frame (then gdb's list)"},
    {"py-bt", NULL, cmd_py_bt, "this thread's Python stack, read from memory (no python3-dbg)"},
    {"py-up", NULL, cmd_py_up, "select the next older Python frame"},
    {"py-down", NULL, cmd_py_down, "select the next newer Python frame"},
    {"py-list", NULL, cmd_py_list, "[LINE|START,END]: the source around the selected Python frame"},
    {"py-locals", NULL, tdb_session_cmd_py_locals, "the selected Python frame's variables"},
    {"py-print", NULL, tdb_session_cmd_py_print, "NAME: one Python variable (local, global or builtin)"},
    {"args", NULL, tdb_session_cmd_args, "the selected native frame's typed arguments"},
    {"tensor", NULL, tdb_session_cmd_tensor, "EXPR: an at::Tensor, TensorImpl* or Python tensor"},
    {"symbols", NULL, cmd_symbols, "REGEX: read the symbols of matching libraries (basic regex)"},
    {"kill", NULL, cmd_kill, "end a program tdebug started (refused after an attach)"},
    {"detach", NULL, cmd_quit, "leave an attached process running and end"},
    {"quit", "q", cmd_quit, "end: kill a program tdebug started, detach from one it attached to"},
    {"help", "h", cmd_help, "this list"},
};

static int cmd_help(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)s;
    (void)args;
    (void)err;
    tdb_buf_adds(&r->text, "tdebug commands (anything else goes to gdb as a console command;\n"
                           "Enter repeats step, next and finish):\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        tdb_buf name = TDB_BUF_INIT;
        tdb_buf_adds(&name, commands[i].name);
        if (commands[i].alias)
            tdb_buf_addf(&name, ", %s", commands[i].alias);
        tdb_buf_addf(&r->text, "  %-22s %s\n", tdb_buf_str(&name), commands[i].help);
        tdb_buf_free(&name);
    }
    r->event = json_pack("{s:s}", "event", "help");
    return 0;
}

/* Does LINE start with command word(s) NAME, followed by the end or a
 * space?  *ARGS then points after it, spaces skipped. */
static int matches(const char *line, const char *name, const char **args)
{
    size_t n = strlen(name);
    if (strncmp(line, name, n) != 0 || (line[n] && !isspace((unsigned char)line[n])))
        return 0;
    const char *a = line + n;
    while (isspace((unsigned char)*a))
        a++;
    *args = a;
    return 1;
}

int tdb_session_exec(tdb_session *s, const char *line, tdb_reply *r, tdb_error *err)
{
    memset(r, 0, sizeof(*r));
    if (tdb_session_light_upgrade(s, err) < 0) /* commands see gdb's whole view */
        return -1;
    while (isspace((unsigned char)*line))
        line++;
    char *cmd = tdb_xstrdup(line);
    size_t len = strlen(cmd);
    while (len && isspace((unsigned char)cmd[len - 1]))
        cmd[--len] = '\0';
    int rc = 0;
    const command *found = NULL;
    const char *args = "";
    /* Longest name first: "info breakpoints" before a gdb "info". */
    size_t best = 0;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        const char *a;
        const char *names[2] = {commands[i].name, commands[i].alias};
        for (int k = 0; k < 2; k++)
            if (names[k] && strlen(names[k]) > best && matches(cmd, names[k], &a)) {
                found = &commands[i];
                args = a;
                best = strlen(names[k]);
            }
    }
    /* gdb's own spellings of a few. */
    const char *a;
    if (!found && (matches(cmd, "info break", &a) || matches(cmd, "info b", &a) ||
                   matches(cmd, "i break", &a))) {
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
            if (commands[i].fn == cmd_info_breakpoints)
                found = &commands[i];
        args = a;
    } else if (!found && (matches(cmd, "thread apply all bt", &a) ||
                          matches(cmd, "thread apply all backtrace", &a))) {
        rc = need_stop(s, r, "bt") ? tdb_session_all_threads(s, r, err) : 0;
        free(cmd);
        return rc;
    }
    if (!*cmd)
        rc = 0;
    else if (found)
        rc = found->fn(s, args, r, err);
    else
        rc = gdb_console(s, cmd, r, err);
    free(cmd);
    return rc;
}

char **tdb_session_complete(tdb_session *s, const char *prefix)
{
    char **out = NULL;
    size_t n = 0, len = strlen(prefix);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strncmp(commands[i].name, prefix, len) == 0 && !strchr(commands[i].name, ' '))
            tdb_ptrs_push(&out, &n, tdb_xstrdup(commands[i].name));
    if (len >= 2 && s->state == STOPPED && s->gdb) {
        /* gdb's own completer knows the symbols it has read. */
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_adds(&cmd, "-complete ");
        tdb_buf req = TDB_BUF_INIT;
        tdb_buf_addf(&req, "break %s", prefix);
        tdb_mi_quote(&cmd, tdb_buf_str(&req));
        json_t *res = NULL;
        if (tdb_gdb_cmd(s->gdb, 5000, &res, NULL, "%s", tdb_buf_str(&cmd)) == 0) {
            size_t i;
            json_t *m;
            json_array_foreach(json_object_get(res, "matches"), i, m)
            {
                const char *v = json_string_value(m);
                if (v && strncmp(v, "break ", 6) == 0 && n < 500)
                    tdb_ptrs_push(&out, &n, tdb_xstrdup(v + 6));
            }
        }
        json_decref(res);
        tdb_buf_free(&cmd);
        tdb_buf_free(&req);
    }
    tdb_ptrs_push(&out, &n, NULL);
    return out;
}
