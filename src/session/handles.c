/*
 * session/handles.c: values at a stop named by handles, for a front-end
 * that shows them and expands their parts on demand (the DAP's
 * variablesReference): scopes of a frame, the values the core reads itself
 * (Python locals, decoded arguments: session/values.c), and native values
 * the core has no reader for, gdb's variable objects, made with
 * --thread/--frame so that reading them selects nothing.
 */
#include "session/internal.h"

#include "torch/tensor.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
    int printer;  /* REF_VAROBJ: its children are a pretty-printer's */
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
    v->refs[v->n] = (value_ref){kind, thread, index, level, name ? tdb_xstrdup(name) : NULL, json, 0};
    return (int)++v->n;
}

/* Frame INDEX of THREAD: its kind and gdb's level (-1 for Python). */
static int frame_at(tdb_session *s, int thread, int index, tdb_frame_kind *kind, int *level,
                    tdb_error *err)
{
    tdb_stackview tmp;
    int own;
    const tdb_stackview *v = tdb_session_frame_view(s, thread, index < 0 ? 0 : index, &tmp, &own,
                                                    err);
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

/* Frame INDEX of *THREAD (0: the stop's thread, written back): its kind
 * and gdb level, 0; or -1 with ERR set. */
static int stop_frame(tdb_session *s, int *thread, int index, tdb_frame_kind *kind, int *level,
                      tdb_error *err)
{
    if (*thread <= 0 && tdb_session_need_stop(s, err) == 0)
        *thread = tdb_session_stop_thread(s);
    return frame_at(s, *thread, index, kind, level, err);
}

json_t *tdb_values_scopes(tdb_values *v, int thread, int index, tdb_error *err)
{
    tdb_frame_kind kind;
    int level;
    if (stop_frame(v->s, &thread, index, &kind, &level, err) < 0)
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

/* The {name, type, value} list of a frame's values the core reads itself
 * (Python locals, decoded arguments) as items: a tensor (py-locals'
 * "tensor", an argument's "value") shows as Python prints it, its fields
 * as its parts; an argument's number as it is; anything else with its own
 * "value" text. */
static json_t *core_items(tdb_values *v, const json_t *vals)
{
    json_t *list = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(vals, i, e)
    {
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
    return list;
}

/* Did the core decode any of the arguments ARGS ({name, type, value}):
 * a value of its own (a tensor, a number), not gdb's text of it? */
static int decoded_any(const json_t *args)
{
    size_t i;
    json_t *e;
    json_array_foreach(args, i, e)
    {
        const json_t *val = json_object_get(e, "value");
        if (json_is_object(json_object_get(e, "tensor")) || (val && !json_is_string(val) && !json_is_null(val)))
            return 1;
    }
    return 0;
}

/* EXPR in frame LEVEL of THREAD as gdb prints it in one line: with gdb's
 * printers (session/values.c) a tensor's summary, without the parts that
 * follow it (" = {sizes = ...}": expanding the value shows them).  New
 * string, or NULL. */
static char *printed_line(tdb_values *v, int thread, int level, const char *expr)
{
    tdb_buf cmd = TDB_BUF_INIT;
    json_t *res = NULL;
    char *line = NULL;
    tdb_session_printers_prepare(v->s);
    tdb_buf_addf(&cmd, "-data-evaluate-expression --thread %d --frame %d ", thread, level);
    tdb_mi_quote(&cmd, expr);
    if (tdb_gdb_cmd(v->s->gdb, CMD_TIMEOUT_MS, &res, NULL, "%s", tdb_buf_str(&cmd)) == 0 &&
        tdb_mi_str(res, "value")) {
        const char *full = tdb_mi_str(res, "value"), *rest = strstr(full, " = {");
        line = rest ? tdb_xstrndup(full, (size_t)(rest - full)) : tdb_xstrdup(full);
    }
    tdb_buf_free(&cmd);
    json_decref(res);
    return line;
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
        /* A simple value whose printer has parts (a reference to a
         * std::vector<at::Tensor>: "... = {float32 ..., ...}") expands
         * too, its summary the text before them. */
        const char *printer_parts = value ? strstr(value, " = {") : NULL;
        int parts = !value || expandable_pointer(type) || printer_parts;
        int h = parts ? add_ref(v, REF_EXPR, ref->thread, ref->index, ref->level, name, NULL) : 0;
        char *line = NULL;
        if (!value && type && strstr(type, "Tensor"))
            value = line = printed_line(v, ref->thread, ref->level, name);
        else if (printer_parts)
            value = line = tdb_xstrndup(value, (size_t)(printer_parts - value));
        json_array_append_new(list, json_pack("{s:s, s:s?, s:s, s:i}", "name", name, "type", type,
                                              "value", value ? value : "{...}", "handle", h));
        free(line);
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

/* A pretty-printer's text part: tdebug's printers give a tensor's dtype,
 * device, sizes... as Python strings, which gdb makes char arrays, and a
 * variable object shows an array as "[N]".  The text of the char-array
 * variable object NAME, from its elements' values ("102 'f'": the
 * number is the byte).  New string, or NULL. */
static char *printer_text(tdb_values *v, const char *name)
{
    json_t *res = NULL, *c;
    size_t i;
    tdb_buf text = TDB_BUF_INIT;
    if (tdb_gdb_cmd(v->s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-var-list-children --all-values %s",
                    name) < 0)
        return NULL;
    json_array_foreach(json_object_get(res, "children"), i, c)
    {
        const char *value = tdb_mi_str(c, "value");
        char *end = NULL;
        long byte = value ? strtol(value, &end, 10) : 0;
        if (!value || end == value) {
            tdb_buf_free(&text);
            break;
        }
        if (byte != 0)
            tdb_buf_addc(&text, (char)(byte & 0xff));
    }
    json_decref(res);
    return text.s ? tdb_buf_detach(&text) : NULL;
}

/* Is TYPE a char array ("char [7]", "const char [3]")? */
static int char_array(const char *type)
{
    if (type && !strncmp(type, "const ", 6))
        type += 6;
    return type && !strncmp(type, "char [", 6);
}

static json_t *varobj_children(tdb_values *v, const char *name, int printer, tdb_error *err)
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
        /* A printer's value with parts (a tensor in a std::vector) is
         * "{...}", its parts counted only once listed. */
        int dynamic_parts = tdb_mi_str(c, "dynamic") && value && !strcmp(value, "{...}");
        char *text = printer && child && char_array(tdb_mi_str(c, "type"))
                         ? printer_text(v, child)
                         : NULL;
        int h = child && !text && ((numchild && atoi(numchild) > 0) || dynamic_parts)
                    ? add_ref(v, REF_VAROBJ, 0, 0, -1, child, NULL)
                    : 0;
        if (h)
            v->refs[h - 1].printer = tdb_mi_str(c, "dynamic") != NULL;
        json_array_append_new(list, json_pack("{s:s, s:s?, s:s, s:i}", "name", exp ? exp : "?",
                                              "type", tdb_mi_str(c, "type"), "value",
                                              text ? text : value ? value : h ? "{...}" : "",
                                              "handle", h));
        free(text);
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
    if (tdb_session_need_stop(v->s, err) < 0)
        return NULL;
    /* A copy: making references may move the array. */
    value_ref ref = v->refs[h - 1];
    tdb_error local = {0};
    json_t *list = NULL, *vo = NULL;
    switch (ref.kind) {
    case REF_PY_LOCALS:
        vo = tdb_session_py_locals(v->s, ref.thread, ref.index, &local);
        list = vo ? core_items(v, json_object_get(vo, "locals")) : NULL;
        json_decref(vo);
        if (!list && note)
            *note = "this frame's Python locals cannot be read (see the session's "
                    "warnings); the stack and native values work";
        return list ? list : json_array();
    case REF_ARGS:
        /* The core's decoded arguments (tensors included) when it decoded
         * any, else what gdb's debug info gives (gdb's variable objects,
         * whose printers' parts expand: a std::vector<at::Tensor>'s). */
        vo = tdb_session_frame_args(v->s, ref.thread, ref.index, &local);
        list = decoded_any(json_object_get(vo, "args")) ? core_items(v, json_object_get(vo, "args"))
                                                        : NULL;
        json_decref(vo);
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
        int printer = tdb_mi_str(vo, "dynamic") != NULL;
        json_decref(vo);
        list = varobj_children(v, name, printer, err);
        free(name);
        return list;
    }
    case REF_VAROBJ: {
        char *name = tdb_xstrdup(ref.name);
        list = varobj_children(v, name, ref.printer, err);
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
    if (stop_frame(s, &thread, index, &kind, &level, err) < 0)
        return NULL;
    if (kind == TDB_FRAME_PYTHON) {
        /* A Python name of this frame, read by the core. */
        /* A Python name of this frame, read by the core; anything else
         * (or a name it cannot read) run by the hook where it may run. */
        tdb_error by_name = {0};
        json_t *one = tdb_session_py_value(s, thread, index, expr, &by_name), *out = NULL;
        if (!one) {
            tdb_error ran = {0};
            one = tdb_session_py_eval(s, thread, index, expr, 0, &ran);
            if (!one && ran.code == EPERM)
                tdb_error_set(err, by_name.code, "%s (%s)", by_name.msg, ran.msg);
            else if (!one)
                tdb_error_set(err, ran.code, "%s", ran.msg);
        }
        json_t *value = json_object_get(one, "value"), *t = json_object_get(one, "tensor");
        if (one && !json_is_string(value))
            tdb_error_set(err, EINVAL, "the core gave no value");
        else if (one)
            out = json_pack("{s:O, s:O?, s:i}", "value", value, "type",
                            json_object_get(one, "type"), "handle",
                            json_is_object(t) ? add_ref(v, REF_JSON, 0, 0, -1, NULL, json_incref(t))
                                              : 0);
        json_decref(one);
        return out;
    }
    tdb_error local = {0};
    json_t *vo = make_varobj(v, thread, level, expr, &local);
    const char *numchild = tdb_mi_str(vo, "numchild"), *name = tdb_mi_str(vo, "name");
    const char *value = tdb_mi_str(vo, "value");
    /* A value gdb's printers show with parts: "{...}" as a variable, its
     * summary as gdb prints it (and, without a variable object, gdb's
     * reason or a value it can print after all). */
    int printed = !vo || (value && !strcmp(value, "{...}") && tdb_mi_str(vo, "dynamic"));
    char *line = printed ? printed_line(v, thread, level, expr) : NULL;
    if (!vo && !line) {
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "-data-evaluate-expression --thread %d --frame %d ", thread, level);
        tdb_mi_quote(&cmd, expr);
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "%s", tdb_buf_str(&cmd)) == 0)
            tdb_error_set(err, EINVAL, "gdb cannot evaluate '%s': %s", expr, local.msg);
        tdb_buf_free(&cmd);
        return NULL;
    }
    int parts = name && ((numchild && atoi(numchild) > 0) ||
                         (tdb_mi_str(vo, "has_more") && !strcmp(tdb_mi_str(vo, "has_more"), "1")));
    int h = parts ? add_ref(v, REF_VAROBJ, 0, 0, -1, name, NULL) : 0;
    json_t *out = json_pack("{s:s, s:s?, s:i}", "value", line ? line : value ? value : "", "type",
                            tdb_mi_str(vo, "type"), "handle", h);
    free(line);
    json_decref(vo);
    return out;
}

int tdb_values_native_scope(tdb_values *v, int h, int *thread, int *index)
{
    if (h < 1 || (size_t)h > v->n)
        return -1;
    const value_ref *r = &v->refs[h - 1];
    if (r->kind != REF_ARGS && r->kind != REF_LOCALS)
        return -1;
    *thread = r->thread;
    *index = r->index;
    return 0;
}

json_t *tdb_values_assign(tdb_values *v, int thread, int index, const char *target,
                          const char *value, tdb_error *err)
{
    tdb_session *s = v->s;
    tdb_frame_kind kind;
    int level;
    if (!*target || !*value || strpbrk(target, "\n\r") || strpbrk(value, "\n\r")) {
        tdb_error_set(err, EINVAL, "an assignment is one line: a target and a value");
        return NULL;
    }
    if (stop_frame(s, &thread, index, &kind, &level, err) < 0)
        return NULL;
    if (kind == TDB_FRAME_PYTHON) {
        /* Python's own assignment, in the frame: the hook writes a local
         * back into it. */
        char *stmt = tdb_xasprintf("%s = (%s)", target, value);
        json_t *done = tdb_session_py_eval(s, thread, index, stmt, 1, err);
        free(stmt);
        json_decref(done);
        return done ? tdb_session_py_eval(s, thread, index, target, 0, err) : NULL;
    }
    tdb_buf cmd = TDB_BUF_INIT, expr = TDB_BUF_INIT;
    json_t *res = NULL, *out = NULL;
    tdb_buf_addf(&expr, "%s = %s", target, value);
    tdb_buf_addf(&cmd, "-data-evaluate-expression --thread %d --frame %d ", thread, level);
    tdb_mi_quote(&cmd, tdb_buf_str(&expr));
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "%s", tdb_buf_str(&cmd)) == 0)
        out = json_pack("{s:s, s:n}", "value", tdb_mi_str(res, "value") ?: "", "type");
    json_decref(res);
    tdb_buf_free(&cmd);
    tdb_buf_free(&expr);
    return out;
}

json_t *tdb_values_set(tdb_values *v, int h, const char *name, const char *value, tdb_error *err)
{
    if (h < 1 || (size_t)h > v->n || (v->refs[h - 1].kind != REF_PY_LOCALS &&
                                      v->refs[h - 1].kind != REF_LOCALS &&
                                      v->refs[h - 1].kind != REF_ARGS)) {
        tdb_error_set(err, EINVAL, "only a frame's own variables (its Locals or Arguments scope) "
                                   "can be set; for a part of a value, set it as an expression");
        return NULL;
    }
    value_ref ref = v->refs[h - 1];
    return tdb_values_assign(v, ref.thread, ref.index, name, value, err);
}

/* Is C a character of a Python identifier (or C's)? */
static int ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (unsigned char)c >= 0x80;
}

/* Python names for PREFIX after BASE ("" : the frame's names) by the
 * hook; a JSON array of strings, or NULL. */
static json_t *py_complete_run(tdb_session *s, int thread, int index, const char *base,
                               const char *prefix, tdb_error *err)
{
    tdb_buf e = TDB_BUF_INIT;
    tdb_buf_adds(&e, "' '.join(sorted(set(filter(lambda n: n.startswith(");
    tdb_buf_addf(&e, "'%s'), ", prefix); /* identifier characters only */
    if (*base)
        tdb_buf_addf(&e, "dir(%s)", base);
    else
        tdb_buf_adds(&e, "[*locals(), *globals(), *dir(__import__('builtins'))]");
    tdb_buf_adds(&e, "))))");
    json_t *r = tdb_session_py_eval(s, thread, index, tdb_buf_str(&e), 0, err), *out = NULL;
    tdb_buf_free(&e);
    const char *repr = json_string_value(json_object_get(r, "value"));
    if (repr && strlen(repr) >= 2) {
        /* 'a b c': names hold no quote, blank or backslash */
        char *names = tdb_xstrndup(repr + 1, strlen(repr) - 2), *save = NULL;
        out = json_array();
        for (char *w = strtok_r(names, " ", &save); w; w = strtok_r(NULL, " ", &save))
            json_array_append_new(out, json_string(w));
        free(names);
    }
    json_decref(r);
    return out;
}

json_t *tdb_values_complete(tdb_values *v, int thread, int index, const char *text,
                            size_t *out_start, tdb_error *err)
{
    tdb_session *s = v->s;
    tdb_frame_kind kind;
    int level;
    size_t n = strlen(text), start = n;
    while (start > 0 && ident_char(text[start - 1]))
        start--;
    const char *prefix = text + start;
    if (strpbrk(text, "\n\r") || stop_frame(s, &thread, index, &kind, &level, err) < 0)
        return NULL;
    json_t *out = NULL;
    if (kind == TDB_FRAME_PYTHON) {
        /* After a dot: the attributes of what comes before (a dotted name). */
        size_t b = start;
        if (b > 0 && text[b - 1] == '.')
            while (b > 0 && (ident_char(text[b - 1]) || text[b - 1] == '.'))
                b--;
        char *base = start > 0 && text[start - 1] == '.' ? tdb_xstrndup(text + b, start - 1 - b)
                                                         : tdb_xstrdup("");
        tdb_error ran = {0};
        out = py_complete_run(s, thread, index, base, prefix, &ran);
        if (!out && !*base) {
            /* No code may run here: the frame's names, read from memory. */
            json_t *loc = tdb_session_py_locals(s, thread, index, err);
            size_t i;
            json_t *one;
            out = loc ? json_array() : NULL;
            json_array_foreach(json_object_get(loc, "locals"), i, one)
            {
                const char *name = json_string_value(json_object_get(one, "name"));
                if (name && strncmp(name, prefix, strlen(prefix)) == 0)
                    json_array_append_new(out, json_string(name));
            }
            json_decref(loc);
        } else if (!out) {
            tdb_error_set(err, ran.code, "%s", ran.msg);
        }
        free(base);
    } else {
        /* gdb's own completion of an expression. */
        tdb_buf cmd = TDB_BUF_INIT, what = TDB_BUF_INIT;
        json_t *res = NULL;
        tdb_buf_addf(&what, "print %s", text);
        tdb_buf_adds(&cmd, "-complete ");
        tdb_mi_quote(&cmd, tdb_buf_str(&what));
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "%s", tdb_buf_str(&cmd)) == 0) {
            size_t i;
            json_t *m;
            out = json_array();
            json_array_foreach(json_object_get(res, "matches"), i, m)
            {
                const char *word = json_string_value(m);
                if (word && strlen(word) >= what.len - strlen(prefix))
                    json_array_append_new(out, json_string(word + what.len - strlen(prefix)));
            }
        }
        json_decref(res);
        tdb_buf_free(&cmd);
        tdb_buf_free(&what);
    }
    if (out)
        *out_start = start;
    return out;
}
