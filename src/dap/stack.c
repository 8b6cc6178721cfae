/*
 * dap/stack.c: the requests about a stop (see dap/dap.h): threads,
 * stackTrace (the core's merged frames), scopes, variables (values by
 * handle: session/handles.c) and evaluate (a value, or a command of the
 * command language with '-exec' in the Debug Console: commands/).
 */
#include "dap/internal.h"

#include "commands/commands.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>


void tdb_dap_threads(tdb_dap *d, int seq, const json_t *args)
{
    (void)args;
    tdb_error err = {0};
    json_t *list = json_array();
    if (!d->threads && !tdb_session_running(d->s) && tdb_session_stop(d->s))
        d->threads = tdb_session_threads(d->s, &err);
    size_t i;
    json_t *t;
    json_array_foreach(d->threads, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        int lwp = (int)json_integer_value(json_object_get(t, "lwp"));
        char *label = name ? tdb_xasprintf("%s (LWP %d)", name, lwp) : tdb_xasprintf("LWP %d", lwp);
        json_array_append_new(list, json_pack("{s:O, s:o}", "id", json_object_get(t, "id"), "name",
                                              tdb_dap_string(label, strlen(label))));
        free(label);
    }
    if (!json_array_size(list)) /* running since before the first stop */
        json_array_append_new(list, json_pack("{s:i, s:s}", "id", 1, "name", "main thread"));
    tdb_dap_ok(d, seq, "threads", json_pack("{s:o}", "threads", list));
}

/* A merged frame of the core as a DAP StackFrame. */
static json_t *stack_frame(tdb_dap *d, int thread, const json_t *f)
{
    int index = (int)json_integer_value(json_object_get(f, "index"));
    const char *kind = json_string_value(json_object_get(f, "kind"));
    const char *func = json_string_value(json_object_get(f, "function"));
    const char *file = json_string_value(json_object_get(f, "file"));
    const char *lib = json_string_value(json_object_get(f, "library"));
    const char *addr = json_string_value(json_object_get(f, "address"));
    json_t *line = json_object_get(f, "line");
    int python = kind && !strcmp(kind, "python");
    json_t *o = json_pack("{s:I, s:i, s:i}", "id", FRAME_ID(thread, index), "line",
                          json_is_integer(line) ? (int)json_integer_value(line) + d->line_base : 0,
                          "column", json_is_integer(line) ? 1 : 0);
    tdb_buf name = TDB_BUF_INIT;
    tdb_buf_adds(&name, func ? func : addr ? addr : "??");
    if (!python && !json_is_integer(line) && lib)
        tdb_buf_addf(&name, " (%s)", tdb_base_name(lib));
    json_object_set_new(o, "name", tdb_dap_string(name.s ? name.s : "", name.len));
    tdb_buf_free(&name);
    json_t *listed = NULL;
    int listed_line = 0;
    if (!python && addr && (!json_is_integer(line) || !file || *file != '/'))
        /* No file to open: the function's machine code, which the client
         * opens and focuses like one. */
        listed = tdb_dap_listing_source(d, addr, func, &listed_line);
    if (listed) {
        json_object_set_new(o, "source", listed);
        json_object_set_new(o, "line", json_integer(listed_line + d->line_base));
        json_object_set_new(o, "column", json_integer(1));
    } else if (file && *file == '/')
        json_object_set_new(o, "source",
                            json_pack("{s:o, s:o}", "name",
                                      tdb_dap_string(tdb_base_name(file), strlen(tdb_base_name(file))),
                                      "path", tdb_dap_string(file, strlen(file))));
    else if (file)
        /* "<frozen importlib._bootstrap>", "<string>": no file to open */
        json_object_set_new(o, "source", json_pack("{s:o, s:s}", "name",
                                                   tdb_dap_string(file, strlen(file)),
                                                   "presentationHint", "deemphasize"));
    if (addr)
        json_object_set_new(o, "instructionPointerReference", json_string(addr));
    if (!python && !json_is_integer(line)) {
        /* Native code without debug info: its library and address only;
         * folded by the client, except where the program stopped. */
        if (index > 0)
            json_object_set_new(o, "presentationHint", json_string("subtle"));
        if (lib)
            json_object_set_new(o, "moduleId", tdb_dap_string(lib, strlen(lib)));
    }
    return o;
}

void tdb_dap_stack_trace(tdb_dap *d, int seq, const json_t *args)
{
    json_t *t = json_object_get(args, "threadId");
    json_int_t start = json_integer_value(json_object_get(args, "startFrame"));
    json_int_t levels = json_integer_value(json_object_get(args, "levels"));
    if (!json_is_integer(t) || json_integer_value(t) < 1 || json_integer_value(t) > 32767) {
        tdb_dap_fail(d, seq, "stackTrace", "'threadId' is a thread's id from 'threads'");
        return;
    }
    tdb_error err = {0};
    int thread = (int)json_integer_value(t);
    /* A client's first request is often the top frame alone (delayed
     * stack trace loading): after a step between Python lines that is the
     * line, and gdb's frames wait for the next request. */
    int whole = 1;
    json_t *stack = start <= 0 && levels == 1
                        ? tdb_session_thread_stack_top(d->s, thread, &whole, &err)
                        : tdb_session_thread_stack(d->s, thread, &err);
    if (!stack) {
        tdb_dap_fail(d, seq, "stackTrace", "%s", err.msg);
        return;
    }
    json_t *frames = json_array();
    size_t n = json_array_size(stack);
    for (size_t i = start > 0 ? (size_t)start : 0; i < n && i < 65535; i++) {
        if (levels > 0 && json_array_size(frames) >= (size_t)levels)
            break;
        json_array_append_new(frames, stack_frame(d, thread, json_array_get(stack, i)));
    }
    /* A total larger than the frames sent: the client asks for the rest. */
    tdb_dap_ok(d, seq, "stackTrace", json_pack("{s:o, s:i}", "stackFrames", frames, "totalFrames",
                                               (int)n + !whole));
    json_decref(stack);
}

int tdb_dap_frame_arg(tdb_dap *d, int seq, const char *cmd, const json_t *args, int *thread,
                     int *index)
{
    json_t *f = json_object_get(args, "frameId");
    if (!f || json_is_null(f)) {
        *thread = 0;
        *index = 0;
        return 0;
    }
    if (!json_is_integer(f) || json_integer_value(f) < 1 ||
        json_integer_value(f) > FRAME_ID(32767, 65535)) {
        tdb_dap_fail(d, seq, cmd, "'frameId' is a frame's id from 'stackTrace'");
        return -1;
    }
    *thread = FRAME_THREAD(json_integer_value(f));
    *index = FRAME_INDEX(json_integer_value(f));
    return 0;
}

void tdb_dap_scopes(tdb_dap *d, int seq, const json_t *args)
{
    int thread, index;
    tdb_error err = {0};
    if (tdb_dap_frame_arg(d, seq, "scopes", args, &thread, &index) < 0)
        return;
    json_t *scopes = tdb_values_scopes(d->vals, thread, index, &err);
    if (!scopes) {
        tdb_dap_fail(d, seq, "scopes", "%s", err.msg);
        return;
    }
    json_t *out = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(scopes, i, s)
    {
        const char *kind = json_string_value(json_object_get(s, "kind"));
        json_array_append_new(out, json_pack("{s:O, s:O, s:b, s:s}", "name",
                                             json_object_get(s, "name"), "variablesReference",
                                             json_object_get(s, "handle"), "expensive", 0,
                                             "presentationHint",
                                             !strcmp(kind, "arguments") ? "arguments" : "locals"));
    }
    json_decref(scopes);
    tdb_dap_ok(d, seq, "scopes", json_pack("{s:o}", "scopes", out));
}

/* A value of the core as a DAP Variable (or, with RESULT, an evaluate body). */
static json_t *variable(const json_t *v, const char *name_key)
{
    const char *value = json_string_value(json_object_get(v, "value"));
    const char *type = json_string_value(json_object_get(v, "type"));
    json_t *o = json_pack("{s:o, s:I}", name_key, tdb_dap_string(value ? value : "",
                                                                 value ? strlen(value) : 0),
                          "variablesReference", json_integer_value(json_object_get(v, "handle")));
    if (type)
        json_object_set_new(o, "type", tdb_dap_string(type, strlen(type)));
    return o;
}

void tdb_dap_variables(tdb_dap *d, int seq, const json_t *args)
{
    json_t *ref = json_object_get(args, "variablesReference");
    tdb_error err = {0};
    const char *note = NULL;
    if (!json_is_integer(ref) || json_integer_value(ref) < 1 || json_integer_value(ref) > INT_MAX) {
        tdb_dap_fail(d, seq, "variables", "'variablesReference' is one from 'scopes' or "
                                          "'variables'");
        return;
    }
    json_t *list = tdb_values_list(d->vals, (int)json_integer_value(ref), &note, &err);
    if (!list) {
        tdb_dap_fail(d, seq, "variables", "%s", err.msg);
        return;
    }
    if (note && !d->py_locals_said) {
        d->py_locals_said = 1;
        tdb_dap_output(d, "console", "tdebug: %s\n", note);
    }
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        json_t *o = variable(v, "value");
        json_object_set_new(o, "name", tdb_dap_string(name ? name : "?", name ? strlen(name) : 1));
        json_array_append_new(out, o);
    }
    json_decref(list);
    tdb_dap_ok(d, seq, "variables", json_pack("{s:o}", "variables", out));
}

/* The debug console's "-exec COMMAND": a tdebug command at the stop (bt,
 * info breakpoints, any gdb command), as at the (tdebug) prompt. */
static void repl_command(tdb_dap *d, int seq, const char *cmd)
{
    tdb_reply r;
    tdb_error err = {0};
    tdb_values_reset(d->vals);
    if (tdb_command_exec(d->s, cmd, &r, &err) < 0) {
        tdb_reply_clear(&r);
        tdb_dap_fail(d, seq, "evaluate", "%s", err.msg);
        return;
    }
    size_t n = r.text.len;
    while (n && r.text.s[n - 1] == '\n')
        n--;
    if (r.error)
        tdb_dap_fail(d, seq, "evaluate", "%.*s", (int)n, tdb_buf_str(&r.text));
    else
        tdb_dap_ok(d, seq, "evaluate", json_pack("{s:o, s:i}", "result",
                                                 tdb_dap_string(tdb_buf_str(&r.text), n),
                                                 "variablesReference", 0));
    int resumed = r.resumed, quit = r.quit;
    tdb_reply_clear(&r);
    if (quit)
        tdb_dap_end_session(d);
    else if (resumed)
        tdb_dap_send(d, tdb_dap_event("continued", json_pack("{s:i, s:b}", "threadId",
                                                            tdb_session_stop_thread(d->s),
                                                            "allThreadsContinued", 1)));
}

void tdb_dap_evaluate(tdb_dap *d, int seq, const json_t *args)
{
    const char *expr = json_string_value(json_object_get(args, "expression"));
    const char *context = json_string_value(json_object_get(args, "context"));
    int thread, index;
    if (!expr || strlen(expr) != json_string_length(json_object_get(args, "expression"))) {
        tdb_dap_fail(d, seq, "evaluate", "'expression' is a string");
        return;
    }
    if (tdb_dap_frame_arg(d, seq, "evaluate", args, &thread, &index) < 0)
        return;
    if (tdb_session_running(d->s) || !tdb_session_stop(d->s)) {
        tdb_dap_fail(d, seq, "evaluate", "the program is running: pause it first");
        return;
    }
    if (context && !strcmp(context, "repl") && !strncmp(expr, "-exec ", 6)) {
        repl_command(d, seq, expr + 6);
        return;
    }
    tdb_error err = {0};
    json_t *v = tdb_values_evaluate(d->vals, thread, index, expr, &err);
    if (!v) {
        tdb_dap_fail(d, seq, "evaluate", "%s", err.msg);
        return;
    }
    tdb_dap_ok(d, seq, "evaluate", variable(v, "result"));
    json_decref(v);
}

/* The body of a setVariable/setExpression response, from V (stolen). */
static void set_done(tdb_dap *d, int seq, const char *cmd, json_t *v, const tdb_error *err)
{
    if (!v) {
        tdb_dap_fail(d, seq, cmd, "%s", err->msg);
        return;
    }
    json_t *body = json_pack("{s:O}", "value", json_object_get(v, "value"));
    if (json_is_string(json_object_get(v, "type")))
        json_object_set(body, "type", json_object_get(v, "type"));
    json_decref(v);
    tdb_dap_ok(d, seq, cmd, body);
}

void tdb_dap_set_variable(tdb_dap *d, int seq, const json_t *args)
{
    const char *name = json_string_value(json_object_get(args, "name"));
    const char *value = json_string_value(json_object_get(args, "value"));
    json_t *ref = json_object_get(args, "variablesReference");
    if (!name || !value || !json_is_integer(ref) || json_integer_value(ref) > INT_MAX) {
        tdb_dap_fail(d, seq, "setVariable", "setVariable takes 'variablesReference', 'name' and "
                                            "'value'");
        return;
    }
    tdb_error err = {0};
    set_done(d, seq, "setVariable",
             tdb_values_set(d->vals, (int)json_integer_value(ref), name, value, &err), &err);
}

void tdb_dap_set_expression(tdb_dap *d, int seq, const json_t *args)
{
    const char *expr = json_string_value(json_object_get(args, "expression"));
    const char *value = json_string_value(json_object_get(args, "value"));
    int thread, index;
    if (!expr || !value) {
        tdb_dap_fail(d, seq, "setExpression", "setExpression takes 'expression' and 'value'");
        return;
    }
    if (tdb_dap_frame_arg(d, seq, "setExpression", args, &thread, &index) < 0)
        return;
    tdb_error err = {0};
    set_done(d, seq, "setExpression",
             tdb_values_assign(d->vals, thread, index, expr, value, &err), &err);
}

void tdb_dap_completions(tdb_dap *d, int seq, const json_t *args)
{
    const char *text = json_string_value(json_object_get(args, "text"));
    json_t *col = json_object_get(args, "column");
    int thread, index;
    if (!text || !json_is_integer(col) || strlen(text) != json_string_length(
                                               json_object_get(args, "text"))) {
        tdb_dap_fail(d, seq, "completions", "completions takes 'text' and 'column'");
        return;
    }
    if (tdb_dap_frame_arg(d, seq, "completions", args, &thread, &index) < 0)
        return;
    /* The text before the cursor (UTF-16 columns: ASCII assumed). */
    long c = (long)json_integer_value(col) - d->column_base;
    size_t upto = c < 0 ? 0 : (size_t)c > strlen(text) ? strlen(text) : (size_t)c;
    char *head = tdb_xstrndup(text, upto);
    size_t start = 0;
    tdb_error err = {0};
    json_t *words = tdb_values_complete(d->vals, thread, index, head, &start, &err);
    if (!words) {
        free(head);
        tdb_dap_fail(d, seq, "completions", "%s", err.msg);
        return;
    }
    json_t *targets = json_array(), *w;
    size_t i;
    json_array_foreach(words, i, w)
        json_array_append_new(targets,
                              json_pack("{s:O, s:i, s:i}", "label", w, "start",
                                        (int)start + d->column_base, "length",
                                        (int)(upto - start)));
    json_decref(words);
    free(head);
    tdb_dap_ok(d, seq, "completions", json_pack("{s:o}", "targets", targets));
}

/* The Python exception of a catchpoint's stop: its class, str() and the
 * traceback as Python prints it.  For an error torch threw in C++ (a
 * c10::Error become a RuntimeError), the C++ side is the innerException,
 * and the traceback ends with where it was thrown: VS Code's exception
 * widget shows the description and stackTrace only. */
static void python_exception_info(tdb_dap *d, int seq, const json_t *exc)
{
    const char *type = json_string_value(json_object_get(exc, "type"));
    const char *msg = json_string_value(json_object_get(exc, "message"));
    const char *tb = json_string_value(json_object_get(exc, "traceback"));
    const char *event = json_string_value(json_object_get(exc, "event"));
    const char *short_name = type ? strrchr(type, '.') : NULL;
    const json_t *cxx = json_object_get(exc, "cxx_throw");
    const char *ctype = json_string_value(json_object_get(cxx, "type"));
    tdb_buf where = TDB_BUF_INIT, trace = TDB_BUF_INIT;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(cxx, "frames"), i, f)
        tdb_buf_addf(&where, "#%zu  %s\n", i, json_string_value(f));
    tdb_buf_addf(&trace, "%s", tb ? tb : "");
    if (cxx)
        tdb_buf_addf(&trace, "%sthrown in C++ as %s, at:\n%s",
                     trace.len && tdb_buf_str(&trace)[trace.len - 1] != '\n' ? "\n\n" : "\n",
                     ctype ? ctype : "?", tdb_buf_str(&where));
    json_t *details = json_pack("{s:s, s:s, s:s?, s:o}", "typeName",
                                short_name ? short_name + 1 : type ? type : "?", "fullTypeName",
                                type ? type : "?", "message", msg, "stackTrace",
                                tdb_dap_string(tdb_buf_str(&trace), trace.len));
    if (cxx)
        json_object_set_new(details, "innerException",
                            json_pack("[{s:s, s:s, s:s?, s:o}]", "typeName", ctype ? ctype : "?",
                                      "fullTypeName", ctype ? ctype : "?", "message",
                                      json_string_value(json_object_get(cxx, "message")),
                                      "stackTrace",
                                      tdb_dap_string(tdb_buf_str(&where), where.len)));
    tdb_buf_free(&where);
    tdb_buf_free(&trace);
    tdb_dap_ok(d, seq, "exceptionInfo",
               json_pack("{s:s, s:s, s:s, s:o}", "exceptionId", type ? type : "?", "description",
                         msg ? msg : "", "breakMode",
                         event && !strcmp(event, "uncaught")         ? "unhandled"
                         : event && !strcmp(event, "user-unhandled") ? "userUnhandled"
                                                                     : "always",
                         "details", details));
}

/* The exception of a throw stop (its type, its message and the stack
 * from the throw site) or of a Python exception's. */
void tdb_dap_exception_info(tdb_dap *d, int seq, const json_t *args)
{
    (void)args;
    const tdb_stop_info *st = tdb_session_stop(d->s);
    const json_t *exc = st ? st->exception : NULL;
    if (exc && st->reason == TDB_STOP_PYTHON_EXCEPTION) {
        python_exception_info(d, seq, exc);
        return;
    }
    if (!exc || st->reason != TDB_STOP_THROW) {
        tdb_dap_fail(d, seq, "exceptionInfo", "this stop is not at an exception (a C++ throw "
                                              "or a Python exception a filter caught)");
        return;
    }
    const char *type = json_string_value(json_object_get(exc, "type"));
    const char *msg = json_string_value(json_object_get(exc, "message"));
    const char *note = json_string_value(json_object_get(exc, "note"));
    tdb_buf stack = TDB_BUF_INIT;
    if (st->view)
        tdb_stackview_render(&stack, st->view, tdb_session_stack_flags(d->s));
    json_t *details = json_pack("{s:s, s:s, s:o}", "typeName", type ? type : "?",
                                "fullTypeName", type ? type : "?", "stackTrace",
                                tdb_dap_string(tdb_buf_str(&stack), stack.len));
    if (msg)
        json_object_set_new(details, "message", json_string(msg));
    tdb_buf_free(&stack);
    tdb_dap_ok(d, seq, "exceptionInfo",
               json_pack("{s:s, s:s, s:s, s:o}", "exceptionId", type ? type : "?", "description",
                         msg ? msg : note ? note : "", "breakMode", "always", "details",
                         details));
}
