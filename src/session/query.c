/*
 * session/query.c: the session as data (session/session.h's "Structured queries"):
 * the program's environment, breakpoints, threads, one thread's merged
 * stack and the values at a stop, for front-ends that present them in a
 * form of their own (the Debug Adapter Protocol front-end, src/dap*.c).
 *
 * Nothing here decides anything the terminal front-end does not: stacks
 * are the views the stop records (session/stack.c), frames are selected
 * with the core's own 'thread', 'up' and 'down', breakpoints are placed by
 * tdb_session_break() and tdb_session_catch_throw(), and the values the
 * core reads itself (Python locals, decoded arguments: 'py-locals',
 * 'args', 'py-print') come from tdb_session_exec() as events.  Native
 * values the core has no reader for are gdb's variable objects, made with
 * --thread/--frame so that reading them selects nothing.
 */
#include "session/internal.h"

#include "torch/tensor.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the program's environment ---- */

int tdb_session_program_setenv(tdb_session *s, const char *name, const char *value,
                               tdb_error *err)
{
    const char *why = tdb_gdb_env_problem(name, value);
    if (why) {
        tdb_error_set(err, EINVAL, "cannot pass environment variable '%s' to the program: %s",
                      name, why);
        return -1;
    }
    if (!value)
        return tdb_session_console(s, CMD_TIMEOUT_MS, err, "unset environment %s", name);
    return tdb_session_console(s, CMD_TIMEOUT_MS, err, "set environment %s=%s", name, value);
}

/* ---- breakpoints ---- */

int tdb_session_python_breakpoints(const tdb_session *s)
{
    /* Python breakpoints are the hook's (session/python.c): refused only
     * where it could not be loaded. */
    return s->hook.state != PYHOOK_FAILED;
}

int tdb_session_location_is_python(const char *location)
{
    return tdb_break_location_kind(location) != TDB_BREAK_NATIVE;
}

/* The first location of gdb's tuple BKPT with a source line: its file and
 * line into O. */
static void add_source_of(json_t *o, const json_t *bkpt)
{
    const json_t *with_line = NULL;
    if (tdb_mi_str(bkpt, "line"))
        with_line = bkpt;
    size_t i;
    json_t *loc;
    json_array_foreach(json_object_get(bkpt, "locations"), i, loc)
        if (!with_line && tdb_mi_str(loc, "line"))
            with_line = loc;
    if (!with_line)
        return;
    const char *file = tdb_mi_str(with_line, "fullname");
    if (!file)
        file = tdb_mi_str(with_line, "file");
    if (file)
        json_object_set_new(o, "file", json_string(file));
    json_object_set_new(o, "line", json_integer(atoi(tdb_mi_str(with_line, "line"))));
}

/* BKPT: gdb's tuple for B, or NULL to ask gdb (when it takes commands). */
static json_t *bp_json(tdb_session *s, const bp_info *b, const json_t *bkpt)
{
    int python = b->kind == BP_PYTHON;
    int verified = b->kind == BP_CATCH || (python && s->hook.state != PYHOOK_FAILED) ||
                   (!b->pending && b->n_locs > 0);
    json_t *o = json_pack("{s:i, s:s, s:s, s:b, s:b, s:i, s:s?, s:n, s:n, s:n}", "id", b->id,
                          "kind", b->kind == BP_CATCH ? "catch" : python ? "python" : "native",
                          "location", b->location, "pending", b->pending, "verified", verified,
                          "hits", b->hits, "where", b->where, "file", "line", "message");
    json_t *res = NULL;
    if (!bkpt && b->kind != BP_CATCH && b->number > 0 && s->state != RUNNING && s->gdb &&
        tdb_gdb_alive(s->gdb) &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-break-info %d", b->number) == 0)
        bkpt = json_array_get(json_object_get(json_object_get(res, "BreakpointTable"), "body"), 0);
    if (bkpt)
        add_source_of(o, bkpt);
    json_decref(res);
    if (python) {
        tdb_json_set_str(o, "file", b->py_file);
        json_object_set_new(o, "line", b->py_line > 0 ? json_integer(b->py_line) : json_null());
        if (b->py_function)
            json_object_set_new(o, "function", json_string(b->py_function));
    }
    if (python && !verified)
        json_object_set_new(o, "message",
                            json_string(s->hook.failed ? s->hook.failed
                                                       : "Python breakpoints cannot work here"));
    else if (python)
        ; /* it stops when that code runs (a module imported later too) */
    else if (b->pending)
        json_object_set_new(o, "message",
                            json_string("pending: it binds when a library defining it loads "
                                        "(tdebug reads the symbols of torch, c10 and the "
                                        "libraries under the working directory; name others "
                                        "with 'symbols')"));
    else if (!verified)
        json_object_set_new(o, "message", json_string("gdb found no place for it"));
    return o;
}

void tdb_session_bp_changed(tdb_session *s, const bp_info *b, const json_t *bkpt)
{
    json_t *o = bp_json(s, b, bkpt);
    s->fe.breakpoint_changed(s->fe.data, o);
    json_decref(o);
}

json_t *tdb_session_breakpoint(tdb_session *s, int id)
{
    bp_info *b = tdb_session_find_bp_id(s, id);
    return b ? bp_json(s, b, NULL) : NULL;
}

static json_t *refused(const char *location, const char *why)
{
    return json_pack("{s:i, s:s, s:b, s:b, s:s}", "id", 0, "location", location, "pending", 0,
                     "verified", 0, "message", why);
}

/* The breakpoint a reply of tdb_session_break()/catch_throw() names. */
static json_t *bp_of_reply(tdb_session *s, const char *location, const tdb_reply *r)
{
    if (r->error) {
        const char *msg = json_string_value(json_object_get(r->event, "message"));
        return refused(location, msg ? msg : tdb_buf_str(&r->text));
    }
    json_t *n = json_object_get(r->event, "number");
    json_t *o = json_is_integer(n) ? tdb_session_breakpoint(s, (int)json_integer_value(n)) : NULL;
    return o ? o : refused(location, "tdebug lost track of the breakpoint gdb made");
}

json_t *tdb_session_breakpoint_add(tdb_session *s, const char *location, int temporary,
                                   tdb_error *err)
{
    if (!*location || strpbrk(location, "\n\r"))
        return refused(location, "a breakpoint location is one line: FUNCTION, FILE:LINE or "
                                 "*ADDRESS");
    if (tdb_session_location_is_python(location) && !tdb_session_python_breakpoints(s))
        return refused(location, s->hook.failed ? s->hook.failed
                                                : "Python breakpoints cannot work in this process");
    tdb_reply r = {0};
    json_t *o = NULL;
    if (tdb_session_break(s, location, temporary, &r, err) == 0)
        o = bp_of_reply(s, location, &r);
    tdb_reply_clear(&r);
    return o;
}

json_t *tdb_session_catchpoint_add(tdb_session *s, const char *type, tdb_error *err)
{
    tdb_reply r = {0};
    json_t *o = NULL;
    if (type && strpbrk(type, "\n\r"))
        return refused(type, "an exception type is one line");
    if (tdb_session_catch_throw(s, type ? type : "", &r, err) == 0)
        o = bp_of_reply(s, type ? type : "throw", &r);
    tdb_reply_clear(&r);
    return o;
}

int tdb_session_breakpoint_delete(tdb_session *s, int id)
{
    bp_info *b = tdb_session_find_bp_id(s, id);
    if (!b)
        return -1;
    tdb_session_bp_delete(s, b);
    return 0;
}

/* ---- threads and stacks ---- */

static int need_stop(const tdb_session *s, tdb_error *err)
{
    if (s->state == STOPPED && s->have_stop)
        return 0;
    tdb_error_set(err, EAGAIN, "%s", s->state == RUNNING ? "the program is running"
                                     : s->state == EXITED ? "the program is not being run"
                                                          : "the program has not started");
    return -1;
}

json_t *tdb_session_threads(tdb_session *s, tdb_error *err)
{
    json_t *res = NULL;
    if (need_stop(s, err) < 0 ||
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "-thread-info") < 0)
        return NULL;
    const char *current = tdb_mi_str(res, "current-thread-id");
    json_t *list = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(res, "threads"), i, t)
    {
        const char *id = tdb_mi_str(t, "id"), *target = tdb_mi_str(t, "target-id");
        const char *lwp = target ? strstr(target, "LWP ") : NULL;
        if (!id)
            continue;
        long n = lwp ? atol(lwp + 4)
                     : target && !strncmp(target, "process ", 8) ? atol(target + 8) : 0;
        json_array_append_new(list, json_pack("{s:i, s:i, s:s?, s:b}", "id", atoi(id), "lwp",
                                              (int)n, "name", tdb_mi_str(t, "name"), "current",
                                              current && !strcmp(current, id)));
    }
    json_decref(res);
    return list;
}

int tdb_session_stop_thread(tdb_session *s)
{
    if (s->stop.thread > 0)
        return s->stop.thread;
    json_t *res = NULL;
    int id = 1;
    if (s->gdb && tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-thread-info") == 0 &&
        tdb_mi_str(res, "current-thread-id"))
        id = atoi(tdb_mi_str(res, "current-thread-id"));
    json_decref(res);
    return id;
}

/* THREAD's view: the stop's (*OWN 0) or one read now into TMP (*OWN 1). */
static const tdb_stackview *view_of(tdb_session *s, int thread, tdb_stackview *tmp, int *own,
                                    tdb_error *err)
{
    *own = 0;
    if (need_stop(s, err) < 0)
        return NULL;
    if (thread <= 0 || thread == tdb_session_stop_thread(s))
        return &s->stop_view;
    if (tdb_session_collect_view(s, thread, tmp, err) < 0)
        return NULL;
    *own = 1;
    return tmp;
}

json_t *tdb_session_thread_stack(tdb_session *s, int thread, tdb_error *err)
{
    tdb_stackview tmp;
    int own;
    const tdb_stackview *v = view_of(s, thread, &tmp, &own, err);
    if (!v)
        return NULL;
    json_t *stack = tdb_stackview_json(v, tdb_session_stack_flags(s));
    size_t i;
    json_t *f;
    json_array_foreach(stack, i, f)
        json_object_set_new(f, "index", json_integer((json_int_t)i));
    if (own)
        tdb_stackview_clear(&tmp);
    return stack;
}

/* Run a core command whose failure is the caller's error. */
static int exec_ok(tdb_session *s, const char *cmd, tdb_error *err)
{
    tdb_reply r;
    int rc = tdb_session_exec(s, cmd, &r, err);
    if (rc == 0 && r.error) {
        const char *msg = json_string_value(json_object_get(r.event, "message"));
        tdb_error_set(err, EINVAL, "%s", msg ? msg : tdb_buf_str(&r.text));
        rc = -1;
    }
    tdb_reply_clear(&r);
    return rc;
}

int tdb_session_select(tdb_session *s, int thread, int index, tdb_error *err)
{
    char cmd[64];
    if (need_stop(s, err) < 0)
        return -1;
    if (thread > 0 && thread != tdb_session_stop_thread(s)) {
        snprintf(cmd, sizeof(cmd), "thread %d", thread);
        if (exec_ok(s, cmd, err) < 0)
            return -1;
    }
    int delta = index - s->selected;
    if (!delta)
        return 0;
    snprintf(cmd, sizeof(cmd), "%s %d", delta > 0 ? "up" : "down", delta > 0 ? delta : -delta);
    return exec_ok(s, cmd, err);
}

/* ---- values ---- */

typedef enum ref_kind {
    REF_ARGS,      /* a native frame's arguments */
    REF_LOCALS,    /* a native frame's locals */
    REF_PY_LOCALS, /* a Python frame's locals */
    REF_EXPR,      /* a native expression, expanded through a variable object */
    REF_VAROBJ,    /* a gdb variable object's children */
    REF_JSON       /* the parts of a value the core decoded (a tensor's) */
} ref_kind;

typedef struct value_ref {
    ref_kind kind;
    int thread, index, level;
    char *name;   /* REF_EXPR: the expression; REF_VAROBJ: the object */
    json_t *json; /* REF_JSON */
} value_ref;

struct tdb_values {
    tdb_session *s;
    value_ref *refs;
    size_t n, cap;
    char **roots; /* variable objects made, deleted at reset */
    size_t n_roots;
};

tdb_values *tdb_values_new(tdb_session *s)
{
    tdb_values *v = tdb_xcalloc(1, sizeof(*v));
    v->s = s;
    return v;
}

void tdb_values_reset(tdb_values *v)
{
    if (!v)
        return;
    tdb_session *s = v->s;
    for (size_t i = 0; i < v->n_roots; i++)
        if (s->gdb && tdb_gdb_alive(s->gdb) && s->state == STOPPED)
            tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-var-delete %s", v->roots[i]);
    tdb_strv_free(v->roots);
    v->roots = NULL;
    v->n_roots = 0;
    for (size_t i = 0; i < v->n; i++) {
        free(v->refs[i].name);
        json_decref(v->refs[i].json);
    }
    v->n = 0;
}

void tdb_values_free(tdb_values *v)
{
    if (!v)
        return;
    tdb_values_reset(v);
    free(v->refs);
    free(v);
}

static int add_ref(tdb_values *v, ref_kind kind, int thread, int index, int level,
                   const char *name, json_t *json)
{
    TDB_GROW(v->refs, v->n, v->cap);
    v->refs[v->n] = (value_ref){kind, thread, index, level, name ? tdb_xstrdup(name) : NULL, json};
    return (int)++v->n;
}

/* Frame INDEX of THREAD: its kind and gdb's level (-1 for Python). */
static int frame_at(tdb_session *s, int thread, int index, tdb_frame_kind *kind, int *level,
                    tdb_error *err)
{
    tdb_stackview tmp;
    int own;
    const tdb_stackview *v = view_of(s, thread, &tmp, &own, err);
    if (!v)
        return -1;
    tdb_view_frame f;
    int rc = tdb_stackview_frame_at(v, tdb_session_stack_flags(s), (size_t)(index < 0 ? 0 : index),
                                    &f);
    if (rc == 0) {
        *kind = f.kind;
        *level = f.level;
    } else {
        tdb_error_set(err, ERANGE, "thread %d has no frame %d", thread, index);
    }
    if (own)
        tdb_stackview_clear(&tmp);
    return rc;
}

json_t *tdb_values_scopes(tdb_values *v, int thread, int index, tdb_error *err)
{
    tdb_frame_kind kind;
    int level;
    if (thread <= 0 && need_stop(v->s, err) == 0)
        thread = tdb_session_stop_thread(v->s);
    if (frame_at(v->s, thread, index, &kind, &level, err) < 0)
        return NULL;
    if (kind == TDB_FRAME_PYTHON)
        return json_pack("[{s:s, s:s, s:i}]", "name", "Locals", "kind", "python-locals", "handle",
                         add_ref(v, REF_PY_LOCALS, thread, index, -1, NULL, NULL));
    int args = add_ref(v, REF_ARGS, thread, index, level, NULL, NULL);
    int locals = add_ref(v, REF_LOCALS, thread, index, level, NULL, NULL);
    return json_pack("[{s:s, s:s, s:i}, {s:s, s:s, s:i}]", "name", "Arguments", "kind",
                     "arguments", "handle", args, "name", "Locals", "kind", "locals", "handle",
                     locals);
}

/* A pointer worth expanding: to something with parts, not a string. */
static int expandable_pointer(const char *type)
{
    size_t n = type ? strlen(type) : 0;
    return n && type[n - 1] == '*' && !strstr(type, "char") && strncmp(type, "void", 4) != 0;
}

/* A value the core decoded, as shown in a list: a scalar as it is, parts
 * behind a handle. */
static json_t *json_item(tdb_values *v, const char *name, json_t *value)
{
    json_t *o = json_pack("{s:s, s:n}", "name", name, "type");
    if (json_is_object(value) || json_is_array(value)) {
        json_t *shown = json_object_get(value, "value");
        json_object_set_new(o, "value", json_string(json_is_string(shown) ? json_string_value(shown)
                                                    : json_is_array(value) ? "[...]" : "{...}"));
        json_object_set_new(o, "handle",
                            json_integer(add_ref(v, REF_JSON, 0, 0, -1, NULL, json_incref(value))));
        return o;
    }
    char *text = json_is_string(value) ? tdb_xstrdup(json_string_value(value))
                                       : json_dumps(value, JSON_ENCODE_ANY);
    json_object_set_new(o, "value", json_string(text ? text : "?"));
    json_object_set_new(o, "handle", json_integer(0));
    free(text);
    return o;
}

/* The parts of a decoded value: an object's members (its own "value"
 * shown already), an array's elements. */
static json_t *json_parts(tdb_values *v, json_t *j)
{
    json_t *list = json_array();
    if (json_is_array(j)) {
        size_t i;
        json_t *e;
        json_array_foreach(j, i, e)
        {
            char name[32];
            snprintf(name, sizeof(name), "[%zu]", i);
            json_array_append_new(list, json_item(v, name, e));
        }
        return list;
    }
    const char *key;
    json_t *e;
    json_object_foreach(j, key, e)
        if (strcmp(key, "value") != 0 && strcmp(key, "name") != 0)
            json_array_append_new(list, json_item(v, key, e));
    return list;
}

/* The {name, type, value} list of a core event ('py-locals', 'args'): its
 * first array of objects with a "name". */
static json_t *event_values(const json_t *event)
{
    const char *key;
    json_t *a;
    json_object_foreach((json_t *)event, key, a)
        if (json_is_array(a) && json_array_size(a) &&
            json_is_string(json_object_get(json_array_get(a, 0), "name")))
            return a;
    return NULL;
}

/* Values from a core command run in frame INDEX of THREAD.  NULL (ERR
 * clear) when the core has no such reader. */
static json_t *core_values(tdb_values *v, int thread, int index, const char *cmd, tdb_error *err)
{
    tdb_session *s = v->s;
    int keep_thread = tdb_session_stop_thread(s), keep = s->selected;
    if (tdb_session_select(s, thread, index, err) < 0)
        return NULL;
    tdb_reply r;
    json_t *list = NULL;
    if (tdb_session_exec(s, cmd, &r, err) == 0 && !r.error && r.event && event_values(r.event)) {
        json_t *vals = event_values(r.event);
        list = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(vals, i, e)
        {
            /* A tensor (py-locals' "tensor", an argument's "value") shows
             * as Python prints it, its fields as its parts; an argument's
             * number as it is; anything else with its own "value" text. */
            const char *name = json_string_value(json_object_get(e, "name"));
            json_t *val = json_object_get(e, "value"), *t = json_object_get(e, "tensor");
            if (!json_is_object(t) && json_is_object(val))
                t = val;
            json_t *item = json_is_object(t) ? json_item(v, name, t)
                           : json_is_string(val) || !val || json_is_null(val) ? json_item(v, name, e)
                                                                             : json_item(v, name, val);
            if (json_is_object(t) && (json_object_get(t, "sizes") || json_object_get(t, "defined"))) {
                char *repr = tdb_tensor_repr(t);
                json_object_set_new(item, "value", json_string(repr));
                free(repr);
            }
            json_t *type = json_object_get(e, "type");
            if (json_is_string(type))
                json_object_set(item, "type", type);
            json_array_append_new(list, item);
        }
    }
    tdb_reply_clear(&r);
    tdb_error local = {0};
    tdb_session_select(s, keep_thread, keep, &local);
    return list;
}

/* gdb's variables of a native frame, arguments or locals. */
static json_t *gdb_frame_values(tdb_values *v, const value_ref *ref, int args, tdb_error *err)
{
    json_t *res = NULL;
    if (tdb_gdb_cmd(v->s->gdb, CMD_TIMEOUT_MS, &res, err,
                    "-stack-list-variables --thread %d --frame %d --simple-values", ref->thread,
                    ref->level) < 0)
        return NULL;
    json_t *list = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(res, "variables"), i, e)
    {
        const char *name = tdb_mi_str(e, "name"), *type = tdb_mi_str(e, "type");
        const char *value = tdb_mi_str(e, "value");
        if (!name || (tdb_mi_str(e, "arg") != NULL) != args)
            continue;
        int parts = !value || expandable_pointer(type);
        int h = parts ? add_ref(v, REF_EXPR, ref->thread, ref->index, ref->level, name, NULL) : 0;
        json_array_append_new(list, json_pack("{s:s, s:s?, s:s, s:i}", "name", name, "type", type,
                                              "value", value ? value : "{...}", "handle", h));
    }
    json_decref(res);
    return list;
}

/* Make a variable object for EXPR in a native frame: its name, value,
 * type and whether it has parts.  New reference, or NULL with ERR. */
static json_t *make_varobj(tdb_values *v, int thread, int level, const char *expr, tdb_error *err)
{
    tdb_buf cmd = TDB_BUF_INIT;
    json_t *res = NULL;
    tdb_buf_addf(&cmd, "-var-create --thread %d --frame %d - * ", thread, level);
    tdb_mi_quote(&cmd, expr);
    int rc = tdb_gdb_cmd(v->s->gdb, CMD_TIMEOUT_MS, &res, err, "%s", tdb_buf_str(&cmd));
    tdb_buf_free(&cmd);
    if (rc < 0)
        return NULL;
    const char *name = tdb_mi_str(res, "name");
    if (name)
        tdb_ptrs_push(&v->roots, &v->n_roots, tdb_xstrdup(name));
    return res;
}

static json_t *varobj_children(tdb_values *v, const char *name, tdb_error *err)
{
    json_t *res = NULL;
    if (tdb_gdb_cmd(v->s->gdb, CMD_TIMEOUT_MS, &res, err, "-var-list-children --all-values %s",
                    name) < 0)
        return NULL;
    json_t *list = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(res, "children"), i, c)
    {
        const char *child = tdb_mi_str(c, "name"), *exp = tdb_mi_str(c, "exp");
        const char *numchild = tdb_mi_str(c, "numchild"), *value = tdb_mi_str(c, "value");
        int h = child && numchild && atoi(numchild) > 0
                    ? add_ref(v, REF_VAROBJ, 0, 0, -1, child, NULL)
                    : 0;
        json_array_append_new(list, json_pack("{s:s, s:s?, s:s, s:i}", "name", exp ? exp : "?",
                                              "type", tdb_mi_str(c, "type"), "value",
                                              value ? value : h ? "{...}" : "", "handle", h));
    }
    json_decref(res);
    return list;
}

json_t *tdb_values_list(tdb_values *v, int h, const char **note, tdb_error *err)
{
    if (note)
        *note = NULL;
    if (h < 1 || (size_t)h > v->n) {
        tdb_error_set(err, ENOENT, "no value %d at this stop (values are forgotten when the program "
                                   "runs)",
                      h);
        return NULL;
    }
    if (need_stop(v->s, err) < 0)
        return NULL;
    /* A copy: making references may move the array. */
    value_ref ref = v->refs[h - 1];
    tdb_error local = {0};
    json_t *list = NULL, *vo = NULL;
    switch (ref.kind) {
    case REF_PY_LOCALS:
        list = core_values(v, ref.thread, ref.index, "py-locals", &local);
        if (!list && note)
            *note = "this frame's Python locals cannot be read (see the session's "
                    "warnings); the stack and native values work";
        return list ? list : json_array();
    case REF_ARGS:
        /* The core's decoded arguments (tensors included) when it has them,
         * else what gdb's debug info gives. */
        list = core_values(v, ref.thread, ref.index, "args", &local);
        return list ? list : gdb_frame_values(v, &ref, 1, err);
    case REF_LOCALS:
        return gdb_frame_values(v, &ref, 0, err);
    case REF_EXPR: {
        char *expr = tdb_xstrdup(ref.name);
        vo = make_varobj(v, ref.thread, ref.level, expr, err);
        free(expr);
        if (!vo)
            return NULL;
        char *name = tdb_xstrdup(tdb_mi_str(vo, "name"));
        json_decref(vo);
        list = varobj_children(v, name, err);
        free(name);
        return list;
    }
    case REF_VAROBJ: {
        char *name = tdb_xstrdup(ref.name);
        list = varobj_children(v, name, err);
        free(name);
        return list;
    }
    case REF_JSON:
        return json_parts(v, ref.json);
    }
    return NULL;
}

json_t *tdb_values_evaluate(tdb_values *v, int thread, int index, const char *expr,
                            tdb_error *err)
{
    tdb_session *s = v->s;
    tdb_frame_kind kind;
    int level;
    if (!*expr || strpbrk(expr, "\n\r")) {
        tdb_error_set(err, EINVAL, "an expression is one line");
        return NULL;
    }
    if (thread <= 0 && need_stop(s, err) == 0)
        thread = tdb_session_stop_thread(s);
    if (frame_at(s, thread, index, &kind, &level, err) < 0)
        return NULL;
    if (kind == TDB_FRAME_PYTHON) {
        /* A Python name of this frame, read by the core ('py-print'). */
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "py-print %s", expr);
        int keep_thread = tdb_session_stop_thread(s), keep = s->selected;
        json_t *out = NULL;
        if (tdb_session_select(s, thread, index, err) == 0) {
            tdb_reply r;
            if (tdb_session_exec(s, tdb_buf_str(&cmd), &r, err) == 0) {
                const json_t *vals = r.event ? event_values(r.event) : NULL;
                json_t *one = vals ? json_array_get(vals, 0) : r.event;
                json_t *value = json_object_get(one, "value");
                if (r.error || !json_is_string(value))
                    tdb_error_set(err, EINVAL, "%s",
                                  r.error ? tdb_buf_str(&r.text) : "the core gave no value");
                else
                    out = json_pack("{s:O, s:O?, s:i}", "value", value, "type",
                                    json_object_get(one, "type"), "handle",
                                    json_is_object(json_object_get(one, "tensor"))
                                        ? add_ref(v, REF_JSON, 0, 0, -1, NULL,
                                                  json_incref(json_object_get(one, "tensor")))
                                        : 0);
            }
            tdb_reply_clear(&r);
        }
        tdb_error local = {0};
        tdb_session_select(s, keep_thread, keep, &local);
        tdb_buf_free(&cmd);
        return out;
    }
    tdb_error local = {0};
    json_t *vo = make_varobj(v, thread, level, expr, &local);
    if (!vo) {
        /* gdb says only "unable to create variable object": ask it again
         * plainly for its reason (or a value it can print after all). */
        tdb_buf cmd = TDB_BUF_INIT;
        json_t *res = NULL;
        tdb_buf_addf(&cmd, "-data-evaluate-expression --thread %d --frame %d ", thread, level);
        tdb_mi_quote(&cmd, expr);
        int rc = tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "%s", tdb_buf_str(&cmd));
        tdb_buf_free(&cmd);
        json_t *out = rc == 0 ? json_pack("{s:s, s:n, s:i}", "value",
                                          tdb_mi_str(res, "value") ? tdb_mi_str(res, "value") : "",
                                          "type", "handle", 0)
                              : NULL;
        json_decref(res);
        return out;
    }
    const char *numchild = tdb_mi_str(vo, "numchild"), *name = tdb_mi_str(vo, "name");
    int h = name && numchild && atoi(numchild) > 0 ? add_ref(v, REF_VAROBJ, 0, 0, -1, name, NULL)
                                                   : 0;
    json_t *out = json_pack("{s:s, s:s?, s:i}", "value",
                            tdb_mi_str(vo, "value") ? tdb_mi_str(vo, "value") : "", "type",
                            tdb_mi_str(vo, "type"), "handle", h);
    json_decref(vo);
    return out;
}
