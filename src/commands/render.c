/*
 * commands/render.c: stops, stacks, breakpoints and source lines as a
 * terminal shows them (see commands/commands.h), from the core's data.
 */
#include "commands/internal.h"

#include "native/cxxnames.h"
#include "torch/cxxargs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tdb_list_source(const char *file, long from, long to, long mark, tdb_buf *out)
{
    FILE *f = file ? fopen(file, "re") : NULL;
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

/* Line LINE of FILE as gdb lists it, without its end of line: a new
 * string, or NULL when unreadable. */
static char *source_line(const char *file, long line)
{
    tdb_buf b = TDB_BUF_INIT;
    if (line < 1 || tdb_list_source(file, line, line, -1, &b) < 0 || !b.len) {
        tdb_buf_free(&b);
        return NULL;
    }
    while (b.len && (b.s[b.len - 1] == '\n' || b.s[b.len - 1] == '\r'))
        b.s[--b.len] = '\0';
    return tdb_buf_detach(&b);
}

/* "func (a=1, b=2) at file.c:3", or "0x... in func () from lib.so", the
 * way gdb names a stop's frame, from its tuple; NAMED is tdebug's own name
 * for a function gdb could not name. */
static void describe_frame(const json_t *frame, const char *named, tdb_buf *out)
{
    const char *func = jstr(frame, "func"), *file = jstr(frame, "file");
    if ((!func || strcmp(func, "??") == 0) && named)
        func = named;
    const char *line = jstr(frame, "line"), *from = jstr(frame, "from");
    const char *addr = jstr(frame, "addr");
    if (!(file && line) && addr)
        tdb_buf_addf(out, "%s in ", addr);
    char *short_func = tdb_cxx_short_name(func); /* the whole name: 'bt full' */
    tdb_buf_adds(out, short_func ? short_func : "??");
    free(short_func);
    tdb_buf_adds(out, " (");
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(frame, "args"), i, a)
    {
        const char *name = jstr(a, "name"), *value = jstr(a, "value");
        tdb_buf_addf(out, "%s%s=%s", i ? ", " : "", name ? name : "?", value ? value : "...");
    }
    tdb_buf_adds(out, ")");
    if (file && line)
        tdb_buf_addf(out, " at %s:%s", file, line);
    else if (from)
        tdb_buf_addf(out, " from %s", from);
}

/* "C++ exception 'c10::Error' thrown (catchpoint 2): mat1 and mat2 shapes
 * cannot be multiplied ...". */
static void describe_throw(const tdb_stop_info *st, tdb_buf *b)
{
    const json_t *e = st->exception;
    const char *type = jstr(e, "type"), *msg = jstr(e, "message"), *note = jstr(e, "note");
    if (!type) {
        tdb_buf_addf(b, "C++ exception thrown (catchpoint %d); its type cannot be read: %s",
                     st->bp_number, note ? note : "?");
        return;
    }
    tdb_buf_addf(b, "C++ exception '%s' thrown (catchpoint %d)", type, st->bp_number);
    if (msg)
        tdb_buf_addf(b, ": %s", msg);
    else if (note)
        tdb_buf_addf(b, "; %s", note);
}

/* The stop's message; WHERE: the frame it reads as, or NULL. */
static void describe_stop(const tdb_stop_info *st, const char *where, tdb_buf *b)
{
    switch (st->reason) {
    case TDB_STOP_IMPORT:
        tdb_buf_addf(b, "stopped at the import of %s: in its init function, before it runs (%s)",
                     st->module, st->library ? st->library : "?");
        return;
    case TDB_STOP_BREAKPOINT:
        tdb_buf_addf(b, "stopped at breakpoint %d (%s)", st->bp_number,
                     st->bp_location ? st->bp_location : "?");
        return;
    case TDB_STOP_PYTHON_BREAKPOINT:
        tdb_buf_addf(b, "stopped at Python breakpoint %d (%s)", st->bp_number,
                     st->bp_location ? st->bp_location : "?");
        if (st->condition_error)
            tdb_buf_addf(b, ": %s", st->condition_error);
        return;
    case TDB_STOP_THROW:
        describe_throw(st, b);
        return;
    case TDB_STOP_PYTHON_EXCEPTION: {
        const char *event = jstr(st->exception, "event"), *msg = jstr(st->exception, "message");
        tdb_buf_addf(b, "Python exception %s (catchpoint %d): %s%s%s",
                     event && !strcmp(event, "user-unhandled") ? "leaving your code"
                                                                : event ? event : "raised",
                     st->bp_number, jstr(st->exception, "type") ?: "?",
                     msg && *msg ? ": " : "", msg ? msg : "");
        const char *site = jstr(json_object_get(st->exception, "cxx_throw"), "site");
        if (site)
            tdb_buf_addf(b, " (thrown in C++ as %s in %s)",
                         jstr(json_object_get(st->exception, "cxx_throw"), "type") ?: "?", site);
        if (st->condition_error)
            tdb_buf_addf(b, " (%s)", st->condition_error);
        return;
    }
    case TDB_STOP_SIGNAL:
        tdb_buf_addf(b, "program received %s (%s)", st->signal_name ? st->signal_name : "a signal",
                     st->signal_meaning ? st->signal_meaning : "?");
        if (st->fault_address)
            tdb_buf_addf(b, " at address %s", st->fault_address);
        return;
    case TDB_STOP_INTERRUPT:
        tdb_buf_adds(b, "interrupted");
        return;
    case TDB_STOP_WATCHPOINT:
        if (st->bp_location)
            tdb_buf_addf(b, "stopped at watchpoint %d (%s)", st->bp_number, st->bp_location);
        else
            tdb_buf_addf(b, "watchpoint %d ended: the frame of what it watched returned",
                         st->bp_number);
        return;
    case TDB_STOP_LOADED:
        if (st->paused)
            tdb_buf_addf(b, "%s is loaded: the preloaded library paused pid %d right after the "
                            "dynamic loader mapped %s and its dependencies, before any of their "
                            "code ran",
                         st->module, (int)st->pid, st->library ? st->library : "?");
        else
            tdb_buf_addf(b, "%s is loaded: the dynamic loader mapped %s; %zu libraries are mapped "
                            "so far, its own dependencies not yet",
                         st->module, st->library ? st->library : "?",
                         json_array_size(st->libraries));
        return;
    case TDB_STOP_ATTACHED:
        tdb_buf_addf(b, "attached to pid %d", (int)st->pid);
        return;
    default:
        break;
    }
    if (st->compact && st->reason == TDB_STOP_FINISH)
        tdb_buf_addf(b, "finish: returned to %s", where ? where : "the caller");
    else if (st->compact && st->reason == TDB_STOP_STEP && st->native_what && where &&
             strncmp(where, "File ", 5) != 0)
        tdb_buf_addf(b, "step: into the native code of %s: %s", st->native_what, where);
    else if (st->compact)
        tdb_buf_addf(b, "%s: %s", tdb_stop_word(st), where ? where : "done");
    else
        tdb_buf_addf(b, "stopped (%s)", tdb_stop_word(st));
}

void tdb_stop_text_make(tdb_session *s, const tdb_stop_info *st, tdb_stop_text *t)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_view_frame f;
    memset(t, 0, sizeof(*t));
    if (st->python_top >= 0 &&
        tdb_stackview_frame_at(st->view, tdb_session_stack_flags(s), (size_t)st->python_top,
                               &f) == 0 &&
        f.kind == TDB_FRAME_PYTHON) {
        /* A stop whose top is Python reads as a Python line. */
        tdb_buf_addf(&b, "File \"%s\", line %d, in %s", f.py->filename, f.py->line,
                     f.py->qualname);
        t->where = tdb_buf_detach(&b);
        t->source_line = source_line(f.py->filename, f.py->line);
    } else if (st->frame) {
        const tdb_native_frame *top = st->view->t.n_native ? &st->view->t.native[0] : NULL;
        describe_frame(st->frame, top ? top->function : NULL, &b);
        t->where = tdb_buf_detach(&b);
        const char *full = jstr(st->frame, "fullname"), *line = jstr(st->frame, "line");
        if (full && line)
            t->source_line = source_line(full, atol(line));
    }
    describe_stop(st, t->where, &b);
    t->message = tdb_buf_detach(&b);
    if (st->view && tdb_stackview_in_gc(st->view))
        t->note = TDB_STACKVIEW_GC_NOTE;
}

void tdb_stop_text_clear(tdb_stop_text *t)
{
    free(t->message);
    free(t->where);
    free(t->source_line);
    memset(t, 0, sizeof(*t));
}

void tdb_render_stack(const tdb_stackview *v, unsigned flags, const json_t *gdb_py, tdb_buf *out)
{
    tdb_stackview_render(out, v, flags);
    if (v->t.py || !gdb_py || !json_array_size(gdb_py))
        return;
    /* gdb's py-bt, for an interpreter tdebug does not read itself. */
    size_t i;
    json_t *f;
    tdb_buf_adds(out, "Python stack (gdb's py-bt, most recent call first):\n");
    json_array_foreach(gdb_py, i, f)
    {
        json_t *line = json_object_get(f, "line");
        if (jstr(f, "text"))
            tdb_buf_addf(out, "    %s\n", jstr(f, "text"));
        else if (json_is_integer(line))
            tdb_buf_addf(out, "    File \"%s\", line %lld, in %s\n", jstr(f, "file"),
                         (long long)json_integer_value(line), jstr(f, "function"));
        else
            tdb_buf_addf(out, "    File \"%s\", line ?, in %s\n", jstr(f, "file"),
                         jstr(f, "function"));
    }
}

void tdb_render_stop(tdb_session *s, const tdb_stop_info *st, tdb_buf *out)
{
    tdb_stop_text t;
    tdb_stop_text_make(s, st, &t);
    tdb_buf_addf(out, "tdebug: %s\n", t.message);
    if (t.where && !st->compact && t.source_line)
        tdb_buf_addf(out, "%s\n", t.where);
    if (t.source_line)
        tdb_buf_addf(out, "%s\n", t.source_line);
    if (st->return_value)
        tdb_buf_addf(out, "Value returned: %s\n", st->return_value);
    if (st->args) {
        /* A breakpoint's function, as the 'args' command shows it. */
        char *lines = tdb_cxx_args_text(st->args, "  ");
        tdb_buf_addf(out, "Arguments:\n%s", lines);
        free(lines);
    }
    if (!st->compact)
        tdb_render_stack(st->view, tdb_session_stack_flags(s),
                         st->view->t.py ? NULL : st->python_frames, out);
    tdb_stop_text_clear(&t);
}

void tdb_render_breakpoint(const json_t *bp, tdb_buf *out)
{
    const char *kind = jstr(bp, "kind"), *location = jstr(bp, "location");
    const char *where = jstr(bp, "where"), *file = jstr(bp, "file");
    json_t *line = json_object_get(bp, "line");
    size_t n = location ? strlen(location) : 0;
    if (!location)
        location = "?";
    if (kind && !strcmp(kind, "python") && jstr(bp, "exception"))
        tdb_buf_addf(out, "Python exception %s: %s", jstr(bp, "exception"),
                     jstr(bp, "type") && *jstr(bp, "type") ? jstr(bp, "type") : "any class");
    else if (kind && !strcmp(kind, "python") && json_integer_value(line) > 0)
        tdb_buf_addf(out, "%s:%lld", file ? file : "?", (long long)json_integer_value(line));
    else if (kind && !strcmp(kind, "python"))
        tdb_buf_addf(out, "%s in %s", jstr(bp, "function") ? jstr(bp, "function") : "?",
                     file && *file ? file : "any file");
    else if (json_is_true(json_object_get(bp, "pending")))
        tdb_buf_addf(out, "%s (pending: it binds when a library defining it loads)", location);
    else if (where && strncmp(where, location, n) == 0 && strchr(" (", where[n]))
        tdb_buf_adds(out, where); /* "f at x.c:3" says all of "f" */
    else if (where)
        tdb_buf_addf(out, "%s: %s", location, where);
    else
        tdb_buf_adds(out, location);
    /* What decides whether a hit stops, in gdb's words. */
    if (jstr(bp, "condition"))
        tdb_buf_addf(out, " if %s", jstr(bp, "condition"));
    if (json_integer_value(json_object_get(bp, "ignore")) > 0)
        tdb_buf_addf(out, " (ignore next %lld hits)",
                     (long long)json_integer_value(json_object_get(bp, "ignore")));
    if (jstr(bp, "hit_condition"))
        tdb_buf_addf(out, " (hit count %s)", jstr(bp, "hit_condition"));
    if (jstr(bp, "log_message"))
        tdb_buf_addf(out, " log \"%s\"", jstr(bp, "log_message"));
}
