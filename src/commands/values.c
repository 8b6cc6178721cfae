/*
 * commands/values.c: the commands that show values (see
 * commands/commands.h): 'args' (a native frame's typed arguments),
 * 'tensor EXPR', 'py-locals' and 'py-print NAME', over the core's readers
 * (session/session.h, "values").
 */
#include "commands/internal.h"

#include "torch/cxxargs.h"
#include "torch/tensor.h"

#include <stdlib.h>
#include <string.h>

int tdb_command_args(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, "args"))
        return 0;
    if (*args)
        return tdb_command_fail(r, "args", "args takes nothing: it shows the selected frame's "
                                           "arguments ('frame N' selects one)");
    const tdb_stop_info *st = tdb_command_stop(s);
    tdb_view_frame f;
    int level = tdb_stackview_frame_at(st->view, tdb_session_stack_flags(s),
                                       (size_t)tdb_session_selected(s), &f) == 0 ? f.level : -1;
    tdb_error local = {0};
    json_t *a = tdb_session_frame_args(s, 0, tdb_session_selected(s), &local);
    if (!a)
        return tdb_command_failed(s, r, "args", &local, err);
    const char *func = jstr(a, "function");
    tdb_buf_addf(&r->text, "Arguments of #%d %s%s:\n", level, func ? func : "??",
                 json_is_true(json_object_get(a, "debug_info")) ? " (gdb's, from the debug info)"
                 : json_is_true(json_object_get(a, "at_entry"))
                     ? " (from its signature and the registers at its entry)"
                     : "");
    char *lines = tdb_cxx_args_text(a, "  ");
    tdb_buf_adds(&r->text, lines);
    free(lines);
    const char *tnote = jstr(a, "tensors_note");
    if (tnote)
        tdb_buf_addf(&r->text, "  (tensors shown by address only: %s)\n", tnote);
    json_object_set_new(a, "event", json_string("args"));
    json_object_set_new(a, "frame", json_integer(level));
    r->event = a;
    return 0;
}

int tdb_command_tensor(tdb_session *s, const char *expr, tdb_reply *r, tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, "tensor"))
        return 0;
    if (!*expr)
        return tdb_command_fail(r, "tensor", "tensor needs an expression gdb can evaluate to an "
                                             "at::Tensor, a TensorImpl* or a Python tensor "
                                             "object's address, e.g. 'tensor $rdi'");
    tdb_error local = {0};
    json_t *t = tdb_session_tensor(s, expr, &local);
    if (!t)
        return tdb_command_failed(s, r, "tensor", &local, err);
    char *text = tdb_tensor_text(json_object_get(t, "value"));
    tdb_buf_addf(&r->text, "%s (%s at 0x%llx): %s\n", expr, jstr(t, "type"),
                 (unsigned long long)json_integer_value(json_object_get(t, "address")), text);
    free(text);
    r->event = json_pack("{s:s, s:s, s:O, s:O, s:O}", "event", "tensor", "name", expr, "type",
                         json_object_get(t, "type"), "value", json_object_get(t, "value"),
                         "layout", json_object_get(t, "layout"));
    json_decref(t);
    return 0;
}

/* One value as a line: "NAME = VALUE", with the error when there is one,
 * a tensor's layout after its values. */
static void value_line(tdb_buf *b, const char *prefix, const json_t *o)
{
    const char *value = jstr(o, "value"), *error = jstr(o, "error");
    const json_t *t = json_object_get(o, "tensor");
    tdb_buf_addf(b, "%s = ", prefix);
    if (t) {
        char *shape = tdb_tensor_describe(t, 0);
        tdb_buf_addf(b, "%s  (%s)\n", value ? value : "?", shape);
        free(shape);
    } else if (value && error)
        tdb_buf_addf(b, "%s  (%s)\n", value, error);
    else if (value)
        tdb_buf_addf(b, "%s\n", value);
    else
        tdb_buf_addf(b, "<%s>\n", error ? error : "unreadable");
}

/* The Python frame the Python commands read: the selected one, or the
 * nearest below a selected native one (-1: none, which the core says). */
static int python_frame(tdb_session *s)
{
    return tdb_command_nearest_python(s, tdb_session_selected(s), +1);
}

int tdb_command_py_locals(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, "py-locals"))
        return 0;
    if (*args)
        return tdb_command_fail(r, "py-locals", "py-locals takes nothing: it shows the selected "
                                                "Python frame's variables");
    tdb_error local = {0};
    json_t *o = tdb_session_py_locals(s, 0, python_frame(s), &local);
    if (!o)
        return tdb_command_failed(s, r, "py-locals", &local, err);
    json_t *f = json_object_get(o, "frame"), *locals = json_object_get(o, "locals");
    int module = 0;
    size_t i;
    json_t *v;
    json_array_foreach(locals, i, v)
        module |= jstr(v, "kind") && strcmp(jstr(v, "kind"), "global") == 0;
    int line = (int)json_integer_value(json_object_get(f, "line"));
    if (module)
        tdb_buf_addf(&r->text, "Module-level code (File \"%s\", line %d): the module's variables:\n",
                     jstr(f, "file"), line);
    else
        tdb_buf_addf(&r->text, "Locals of %s (File \"%s\", line %d):\n", jstr(f, "function"),
                     jstr(f, "file"), line);
    json_array_foreach(locals, i, v)
    {
        tdb_buf name = TDB_BUF_INIT;
        tdb_buf_addf(&name, "  %s", jstr(v, "name") ? jstr(v, "name") : "?");
        value_line(&r->text, tdb_buf_str(&name), v);
        tdb_buf_free(&name);
    }
    if (!json_array_size(locals))
        tdb_buf_adds(&r->text, "  (none)\n");
    r->event = json_pack("{s:s, s:O, s:O}", "event", "py-locals", "frame", f, "locals", locals);
    json_decref(o);
    return 0;
}

int tdb_command_py_print(tdb_session *s, const char *name, tdb_reply *r, tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, "py-print"))
        return 0;
    tdb_error local = {0};
    json_t *v = tdb_session_py_value(s, 0, python_frame(s), name, &local);
    if (!v)
        return tdb_command_failed(s, r, "py-print", &local, err);
    tdb_buf prefix = TDB_BUF_INIT;
    tdb_buf_addf(&prefix, "%s '%s'", jstr(v, "scope") ? jstr(v, "scope") : "local", name);
    value_line(&r->text, tdb_buf_str(&prefix), v);
    tdb_buf_free(&prefix);
    /* The event is the value, its frame last, as before the data API. */
    json_t *frame = json_incref(json_object_get(v, "frame"));
    json_object_del(v, "frame");
    json_object_set_new(v, "event", json_string("py-print"));
    json_object_set_new(v, "frame", frame);
    r->event = v;
    return 0;
}

/* 'py-eval EXPR' and 'py-exec STATEMENTS': Python run in the selected
 * Python frame, where the core may run it (a Python breakpoint or step). */
static int py_run(tdb_session *s, const char *cmd, const char *text, int statements,
                  tdb_reply *r, tdb_error *err)
{
    if (!tdb_command_need_stop(s, r, cmd))
        return 0;
    if (!*text)
        return tdb_command_fail(r, cmd, "usage: %s %s", cmd,
                                statements ? "STATEMENTS" : "EXPRESSION");
    tdb_error local = {0};
    json_t *v = tdb_session_py_eval(s, 0, python_frame(s), text, statements, &local);
    if (!v)
        return tdb_command_failed(s, r, cmd, &local, err);
    if (!statements)
        tdb_buf_addf(&r->text, "%s\n", jstr(v, "value"));
    json_object_set_new(v, "event", json_string(cmd));
    r->event = v;
    return 0;
}

int tdb_command_py_eval(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    return py_run(s, "py-eval", args, 0, r, err);
}

int tdb_command_py_exec(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    return py_run(s, "py-exec", args, 1, r, err);
}
