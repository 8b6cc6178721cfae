/*
 * dap/breakpoints.c: the breakpoint requests (see dap/dap.h):
 * setBreakpoints (source lines, Python's too), setFunctionBreakpoints,
 * setInstructionBreakpoints (C/C++: an address), setExceptionBreakpoints (C++ throws, Python exceptions), each a diff against what the
 * client set before, over the core's breakpoints as data.  What the client
 * was told is remembered, so a breakpoint that binds later is a
 * 'breakpoint' event (dap/dap.c).
 */
#include "dap/internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The core's new breakpoint BP (stolen; NULL: ERR says why it is not) as
 * a DAP Breakpoint (new reference), remembered as told; *ID its id. */
static json_t *told_new(tdb_dap *d, json_t *bp, const tdb_error *err, int *id)
{
    if (!bp)
        bp = json_pack("{s:i, s:b, s:s}", "id", 0, "verified", 0, "message", err->msg);
    *id = (int)json_integer_value(json_object_get(bp, "id"));
    json_t *out = tdb_dap_breakpoint(d, bp);
    json_decref(bp);
    tdb_dap_told(d, out);
    return out;
}

/* Add LOCATION; the DAP Breakpoint (new reference), remembered as told. */
static json_t *add_bp(tdb_dap *d, const char *location, int *id)
{
    tdb_error err = {0};
    json_t *bp = tdb_session_breakpoint_check(d->s, location, &err) < 0
                     ? NULL : tdb_session_breakpoint_add(d->s, location, 0, &err);
    return told_new(d, bp, &err, id);
}

/* The client's condition, hitCondition and logMessage of WANTED on
 * breakpoint ID (absent: none); NULL, or why one was refused (new
 * string). */
static char *set_options(tdb_dap *d, int id, const json_t *wanted)
{
    tdb_error err = {0};
    const char *cond = json_string_value(json_object_get(wanted, "condition"));
    const char *hit = json_string_value(json_object_get(wanted, "hitCondition"));
    const char *log = json_string_value(json_object_get(wanted, "logMessage"));
    if (!cond && !hit && !log) {
        /* None asked: whatever the breakpoint had goes (a kind that takes
         * none, an instruction's or a watchpoint, has nothing to clear). */
        tdb_session_breakpoint_set_condition(d->s, id, NULL, &err);
        tdb_session_breakpoint_set_hit_condition(d->s, id, NULL, &err);
        tdb_session_breakpoint_set_log(d->s, id, NULL, &err);
        return NULL;
    }
    if (tdb_session_breakpoint_set_condition(d->s, id, cond, &err) < 0 ||
        tdb_session_breakpoint_set_hit_condition(d->s, id, hit, &err) < 0 ||
        tdb_session_breakpoint_set_log(d->s, id, log, &err) < 0)
        return tdb_xstrdup(err.msg);
    return NULL;
}

/* The told state of breakpoint ID, or a fresh look. */
static json_t *bp_now(tdb_dap *d, int id)
{
    json_t *bp = tdb_session_breakpoint(d->s, id);
    json_t *out = bp ? tdb_dap_breakpoint(d, bp) : json_pack("{s:b}", "verified", 0);
    json_decref(bp);
    tdb_dap_told(d, out);
    return out;
}

/* The client's breakpoint WANTED: the core's breakpoint *ID kept when not
 * 0, else one added at LOCATION by ADD (*ID its id, 0 when refused), with
 * WANTED's options set on it.  The DAP Breakpoint (new reference),
 * remembered as told, its "message" saying why an option was refused. */
static json_t *reuse_or_add(tdb_dap *d, int *id, const char *location, const json_t *wanted,
                            json_t *(*add)(tdb_dap *d, const char *location, int *id))
{
    if (!*id) {
        json_t *o = add(d, location, id);
        if (!*id)
            return o;
        json_decref(o);
    }
    char *why = set_options(d, *id, wanted);
    json_t *out = bp_now(d, *id);
    if (why)
        json_object_set_new(out, "message", json_string(why));
    free(why);
    return out;
}

static void forget_bp(tdb_dap *d, int id)
{
    char key[32];
    snprintf(key, sizeof(key), "%d", id);
    json_object_del(d->told, key);
    tdb_session_breakpoint_delete(d->s, id);
}

void tdb_dap_set_breakpoints(tdb_dap *d, int seq, const json_t *args)
{
    const char *path = json_string_value(json_object_get(json_object_get(args, "source"), "path"));
    json_t *wanted = json_object_get(args, "breakpoints");
    if (!path || !*path || strpbrk(path, "\n\r") ||
        strlen(path) != json_string_length(json_object_get(json_object_get(args, "source"), "path"))) {
        tdb_dap_fail(d, seq, "setBreakpoints", "a breakpoint needs 'source.path' (a file's path)");
        return;
    }
    if (wanted && !json_is_array(wanted)) {
        tdb_dap_fail(d, seq, "setBreakpoints", "'breakpoints' is an array of {line}");
        return;
    }
    int held;
    if (tdb_dap_hold(d, &held) < 0) {
        tdb_dap_fail(d, seq, "setBreakpoints", "the program ended");
        return;
    }
    json_t *had = json_object_get(d->src_bps, path), *now = json_array(), *out = json_array();
    size_t i;
    json_t *b;
    json_array_foreach(wanted, i, b)
    {
        json_t *line = json_object_get(b, "line");
        if (!json_is_integer(line) || json_integer_value(line) - d->line_base < 1 ||
            json_integer_value(line) > INT_MAX) {
            json_array_append_new(out, json_pack("{s:b, s:s}", "verified", 0, "message",
                                                 "not a line number"));
            continue;
        }
        int n = (int)(json_integer_value(line) - d->line_base), id = 0;
        /* A line already set keeps its breakpoint. */
        size_t k;
        json_t *old;
        json_array_foreach(had, k, old)
            if (json_integer_value(json_object_get(old, "line")) == n) {
                id = (int)json_integer_value(json_object_get(old, "id"));
                json_array_remove(had, k);
                break;
            }
        char *loc = id ? NULL : tdb_xasprintf("%s:%d", path, n);
        json_array_append_new(out, reuse_or_add(d, &id, loc, b, add_bp));
        free(loc);
        if (id)
            json_array_append_new(now, json_pack("{s:i, s:i}", "line", n, "id", id));
    }
    json_array_foreach(had, i, b)
        forget_bp(d, (int)json_integer_value(json_object_get(b, "id")));
    json_object_set_new(d->src_bps, path, now);
    tdb_dap_ok(d, seq, "setBreakpoints", json_pack("{s:o}", "breakpoints", out));
    tdb_dap_release(d, held);
}

/* setFunctionBreakpoints, setInstructionBreakpoints, setDataBreakpoints:
 * the request's breakpoints replace what *MAP ({location: id}) held;
 * LOCATION_OF(b) is the location of one (a new string), or NULL with *WHY
 * set when it has none; ADD(d, location, &id) makes a new one. */
static void set_located(tdb_dap *d, int seq, const char *cmd, const json_t *args, json_t **map,
                        char *(*location_of)(const json_t *b, const char **why),
                        json_t *(*add)(tdb_dap *d, const char *location, int *id))
{
    json_t *wanted = json_object_get(args, "breakpoints");
    if (!json_is_array(wanted)) {
        tdb_dap_fail(d, seq, cmd, "'breakpoints' is an array");
        return;
    }
    int held;
    if (tdb_dap_hold(d, &held) < 0) {
        tdb_dap_fail(d, seq, cmd, "the program ended");
        return;
    }
    json_t *keep = json_object(), *out = json_array();
    size_t i;
    json_t *b;
    json_array_foreach(wanted, i, b)
    {
        const char *why = NULL;
        char *name = location_of(b, &why);
        if (!name) {
            json_array_append_new(out, json_pack("{s:b, s:s}", "verified", 0, "message", why));
            continue;
        }
        json_t *old = json_object_get(*map, name);
        int id = (int)json_integer_value(old);
        if (id)
            json_object_del(*map, name);
        json_array_append_new(out, reuse_or_add(d, &id, name, b, add));
        if (id)
            json_object_set_new(keep, name, json_integer(id));
        free(name);
    }
    const char *key;
    json_t *id;
    json_object_foreach(*map, key, id)
        forget_bp(d, (int)json_integer_value(id));
    json_decref(*map);
    *map = keep;
    tdb_dap_ok(d, seq, cmd, json_pack("{s:o}", "breakpoints", out));
    tdb_dap_release(d, held);
}

static char *function_location(const json_t *b, const char **why)
{
    const char *name = json_string_value(json_object_get(b, "name"));
    if (!name || strlen(name) != json_string_length(json_object_get(b, "name"))) {
        *why = "a function breakpoint needs a 'name'";
        return NULL;
    }
    return tdb_xasprintf("%s", name);
}

void tdb_dap_set_function_breakpoints(tdb_dap *d, int seq, const json_t *args)
{
    set_located(d, seq, "setFunctionBreakpoints", args, &d->fn_bps, function_location, add_bp);
}

/* An instruction: instructionReference (an address from 'disassemble' or
 * a frame) plus offset, as gdb's "*ADDRESS". */
static char *instruction_location(const json_t *b, const char **why)
{
    const char *ref = json_string_value(json_object_get(b, "instructionReference"));
    json_t *off = json_object_get(b, "offset");
    char *end = NULL;
    unsigned long long a = ref ? strtoull(ref, &end, 0) : 0;
    if (!ref || end == ref || *end) {
        *why = "an instruction breakpoint needs an 'instructionReference' (an address)";
        return NULL;
    }
    return tdb_xasprintf("*0x%llx", a + (unsigned long long)(json_is_integer(off)
                                                                 ? json_integer_value(off) : 0));
}

void tdb_dap_set_instruction_breakpoints(tdb_dap *d, int seq, const json_t *args)
{
    set_located(d, seq, "setInstructionBreakpoints", args, &d->ins_bps, instruction_location,
                add_bp);
}

/* ---- data breakpoints: gdb's watchpoints on C/C++ lvalues ---- */

void tdb_dap_data_breakpoint_info(tdb_dap *d, int seq, const json_t *args)
{
    const char *name = json_string_value(json_object_get(args, "name"));
    json_t *ref = json_object_get(args, "variablesReference");
    int thread = 0, index = 0;
    if (!name || !*name || strlen(name) != json_string_length(json_object_get(args, "name")) ||
        strpbrk(name, "\n\r")) {
        tdb_dap_fail(d, seq, "dataBreakpointInfo", "'name' is a variable's name or an expression");
        return;
    }
    if (json_is_integer(ref) && json_integer_value(ref) > 0) {
        /* A variable of a scope: a C/C++ frame's argument or local. */
        if (json_integer_value(ref) > INT_MAX ||
            tdb_values_native_scope(d->vals, (int)json_integer_value(ref), &thread, &index) < 0) {
            tdb_dap_ok(d, seq, "dataBreakpointInfo",
                       json_pack("{s:n, s:s}", "dataId", "description",
                                 "only a C/C++ frame's arguments and locals can be watched "
                                 "(a watchpoint is on a C/C++ lvalue)"));
            return;
        }
    } else if (tdb_dap_frame_arg(d, seq, "dataBreakpointInfo", args, &thread, &index) < 0) {
        return;
    }
    char *id = tdb_xasprintf("%d %d %s", thread, index, name);
    json_t *body = json_pack("{s:o, s:o, s:[sss], s:b}", "dataId", tdb_dap_string(id, strlen(id)),
                             "description", tdb_dap_string(name, strlen(name)), "accessTypes",
                             "write", "read", "readWrite", "canPersist", 0);
    free(id);
    tdb_dap_ok(d, seq, "dataBreakpointInfo", body);
}

/* A data breakpoint's location: "ACCESS THREAD INDEX EXPR". */
static char *data_location(const json_t *b, const char **why)
{
    const char *id = json_string_value(json_object_get(b, "dataId"));
    const char *access = json_string_value(json_object_get(b, "accessType"));
    int thread, index, at = 0;
    if (!id || sscanf(id, "%d %d %n", &thread, &index, &at) < 2 || !at || !id[at]) {
        *why = "a data breakpoint needs a 'dataId' from 'dataBreakpointInfo'";
        return NULL;
    }
    return tdb_xasprintf("%s %s", access ? access : "write", id);
}

static json_t *add_watch(tdb_dap *d, const char *location, int *id)
{
    char access[16] = "";
    int thread = 0, index = 0, at = 0;
    sscanf(location, "%15s %d %d %n", access, &thread, &index, &at);
    tdb_error err = {0};
    json_t *bp = tdb_session_watchpoint_add(d->s, thread, index, location + at, access, &err);
    return told_new(d, bp, &err, id);
}

void tdb_dap_set_data_breakpoints(tdb_dap *d, int seq, const json_t *args)
{
    set_located(d, seq, "setDataBreakpoints", args, &d->data_bps, data_location, add_watch);
}

/* The exception filters (tdb_dap_initialize() offers them): catch throw
 * of every C++ exception or of c10's (and the classes derived from it);
 * Python's exceptions raised, uncaught, or leaving the user's code. */
static const struct exc_filter {
    const char *name;
    const char *cxx_type; /* C++: the class, "" every throw */
    int py_when;          /* Python: TDB_CATCH_PY_* */
} exc_filters[] = {
    {"cpp_throw", "", 0},
    {"c10_error", "c10::Error", 0},
    {"raised", NULL, TDB_CATCH_PY_RAISED},
    {"uncaught", NULL, TDB_CATCH_PY_UNCAUGHT},
    {"userUnhandled", NULL, TDB_CATCH_PY_USER},
};

static const struct exc_filter *filter_named(const char *name)
{
    for (size_t i = 0; i < sizeof exc_filters / sizeof exc_filters[0]; i++)
        if (!strcmp(name, exc_filters[i].name))
            return &exc_filters[i];
    return NULL;
}

void tdb_dap_set_exception_breakpoints(tdb_dap *d, int seq, const json_t *args)
{
    json_t *filters = json_object_get(args, "filters");
    if (!json_is_array(filters)) {
        tdb_dap_fail(d, seq, "setExceptionBreakpoints", "'filters' is an array of filter names");
        return;
    }
    int held;
    if (tdb_dap_hold(d, &held) < 0) {
        tdb_dap_fail(d, seq, "setExceptionBreakpoints", "the program ended");
        return;
    }
    json_t *keep = json_object(), *out = json_array();
    json_t *launch_catch = json_object_get(d->exc_bps, "catchThrow");
    if (launch_catch)
        json_object_set(keep, "catchThrow", launch_catch);
    size_t i;
    json_t *f;
    json_array_foreach(filters, i, f)
    {
        const char *name = json_string_value(f);
        const struct exc_filter *filter = name ? filter_named(name) : NULL;
        if (!filter) {
            json_array_append_new(out, json_pack("{s:b, s:s}", "verified", 0, "message",
                                                 "tdebug has no such exception filter"));
            continue;
        }
        json_t *old = json_object_get(d->exc_bps, name);
        if (old) {
            json_object_set(keep, name, old);
            json_array_append_new(out, bp_now(d, (int)json_integer_value(old)));
            json_object_del(d->exc_bps, name);
            continue;
        }
        tdb_error err = {0};
        json_t *bp = filter->py_when ? tdb_session_python_catch(d->s, filter->py_when, NULL, &err)
                                     : tdb_session_catchpoint_add(d->s, filter->cxx_type, &err);
        if (!bp)
            bp = json_pack("{s:i, s:b, s:s}", "id", 0, "verified", 0, "message", err.msg);
        json_t *dap = tdb_dap_breakpoint(d, bp);
        tdb_dap_told(d, dap);
        json_array_append_new(out, dap);
        if (json_integer_value(json_object_get(bp, "id")))
            json_object_set(keep, name, json_object_get(bp, "id"));
        json_decref(bp);
    }
    const char *key;
    json_t *id;
    json_object_foreach(d->exc_bps, key, id)
        if (strcmp(key, "catchThrow") != 0)
            forget_bp(d, (int)json_integer_value(id));
    json_decref(d->exc_bps);
    d->exc_bps = keep;
    tdb_dap_ok(d, seq, "setExceptionBreakpoints", json_pack("{s:o}", "breakpoints", out));
    tdb_dap_release(d, held);
}
