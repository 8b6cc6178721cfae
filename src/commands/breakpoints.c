/*
 * commands/breakpoints.c: the commands about breakpoints (see
 * commands/commands.h): 'break' (with 'if COND'), 'tbreak', 'catch
 * throw', 'info breakpoints', 'delete', 'enable', 'disable', 'condition',
 * 'ignore', 'log', 'dprintf', over the core's breakpoints as data
 * (session/session.h, "breakpoints").
 */
#include "commands/internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* A refused breakpoint BP (its "refused" kind) as command CMD's error: the
 * terminal's text, the event's message. */
static void refused(const json_t *bp, const char *cmd, const char *location, tdb_reply *r)
{
    const char *kind = jstr(bp, "refused"), *msg = jstr(bp, "message");
    r->error = 1;
    if (!kind || !strcmp(kind, "location"))
        tdb_buf_addf(&r->text, "tdebug: %s\n", msg);
    else if (!strcmp(kind, "gdb") && !strcmp(cmd, "catch throw"))
        tdb_buf_addf(&r->text, "tdebug: cannot catch C++ throws: %s\n", msg);
    else if (!strcmp(kind, "gdb"))
        tdb_buf_addf(&r->text, "tdebug: gdb rejects breakpoint '%s': %s\n", location, msg);
    else if (!strcmp(kind, "no code"))
        tdb_buf_addf(&r->text, "tdebug: %s: no breakpoint\n", msg);
    else /* "python location" */
        tdb_buf_addf(&r->text, "tdebug: '%s' is not a Python location: after FILE.py: give a "
                               "LINE or a FUNCTION name (train.py:42, train.py:Model.forward)\n",
                     location);
    r->event = json_pack("{s:s, s:s, s:s}", "event", "error", "command", cmd, "message", msg);
}

static int add(tdb_session *s, const char *location, int temporary, tdb_reply *r,
               tdb_error *err)
{
    json_t *bp = tdb_session_breakpoint_add(s, location, temporary, err);
    if (!bp)
        return -1;
    int id = (int)json_integer_value(json_object_get(bp, "id"));
    const char *kind = jstr(bp, "kind"), *prefix = temporary ? "Temporary breakpoint" : "Breakpoint";
    json_t *line = json_object_get(bp, "line"), *moved = json_object_get(bp, "moved_from");
    if (!id) {
        refused(bp, "break", location, r);
    } else if (kind && !strcmp(kind, "python")) {
        tdb_buf note = TDB_BUF_INIT;
        if (json_is_integer(moved))
            tdb_buf_addf(&note, " (line %lld holds no code: moved to %lld)",
                         (long long)json_integer_value(moved), (long long)json_integer_value(line));
        if (jstr(bp, "condition"))
            tdb_buf_addf(&note, " if %s", jstr(bp, "condition"));
        if (json_integer_value(line) > 0)
            tdb_buf_addf(&r->text, "%s %d: %s:%lld%s%s\n", prefix, id, jstr(bp, "file"),
                         (long long)json_integer_value(line), tdb_buf_str(&note),
                         json_is_true(json_object_get(bp, "verified"))
                             ? "" : " (cannot stop: see the warning)");
        else
            tdb_buf_addf(&r->text, "%s %d: %s in %s%s\n", prefix, id, jstr(bp, "file"),
                         jstr(bp, "function"), tdb_buf_str(&note));
        tdb_buf_free(&note);
        r->event = json_pack("{s:s, s:i, s:s, s:s, s:s, s:O, s:i, s:b}", "event", "breakpoint",
                             "number", id, "type", "python", "location", location, "file",
                             jstr(bp, "file"), "function", json_object_get(bp, "function"), "line",
                             (int)json_integer_value(line), "pending", 1);
    } else {
        tdb_buf where = TDB_BUF_INIT;
        tdb_render_breakpoint(bp, &where);
        tdb_buf_addf(&r->text, "%s %d: %s\n", prefix, id, tdb_buf_str(&where));
        r->event = json_pack("{s:s, s:i, s:s, s:O, s:O}", "event", "breakpoint", "number", id,
                             "location", location, "pending", json_object_get(bp, "pending"),
                             "where", json_object_get(bp, "where"));
        tdb_buf_free(&where);
    }
    json_decref(bp);
    return 0;
}

int tdb_command_break(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!*args)
        return tdb_command_fail(r, "break", "break needs a location: FUNCTION, FILE:LINE or "
                                            "*ADDRESS");
    return add(s, args, 0, r, err);
}

int tdb_command_tbreak(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!*args)
        return tdb_command_fail(r, "tbreak", "tbreak needs a location: FUNCTION, FILE:LINE or "
                                             "*ADDRESS");
    return add(s, args, 1, r, err);
}

/* 'catch python-raise [TYPE]', python-uncaught, python-user-unhandled. */
static int catch_python(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    static const struct {
        const char *word;
        int when;
    } events[] = {{"python-raise", TDB_CATCH_PY_RAISED},
                  {"python-uncaught", TDB_CATCH_PY_UNCAUGHT},
                  {"python-user-unhandled", TDB_CATCH_PY_USER}};
    size_t n = strcspn(args, " \t");
    int when = 0;
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        if (strlen(events[i].word) == n && !strncmp(args, events[i].word, n))
            when = events[i].when;
    if (!when)
        return tdb_command_fail(r, "catch", "catch python-raise [TYPE], python-uncaught [TYPE] "
                                            "or python-user-unhandled [TYPE]");
    const char *type = args + n;
    while (isspace((unsigned char)*type))
        type++;
    json_t *bp = tdb_session_python_catch(s, when, type, err);
    if (!bp)
        return -1;
    int id = (int)json_integer_value(json_object_get(bp, "id"));
    if (!id) {
        refused(bp, "catch", type, r);
    } else {
        tdb_buf where = TDB_BUF_INIT;
        tdb_render_breakpoint(bp, &where);
        tdb_buf_addf(&r->text, "Catchpoint %d (%s%s)%s\n", id, tdb_buf_str(&where),
                     *type ? " and classes derived from it" : "",
                     json_is_true(json_object_get(bp, "verified")) ? ""
                                                                   : " (cannot stop: see the warning)");
        tdb_buf_free(&where);
        r->event = json_pack("{s:s, s:i, s:s, s:s, s:s}", "event", "breakpoint", "number", id,
                             "location", jstr(bp, "location"), "type", type, "kind", "python");
    }
    json_decref(bp);
    return 0;
}

int tdb_command_catch(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (!strncmp(args, "python-", 7))
        return catch_python(s, args, r, err);
    if (strncmp(args, "throw", 5) != 0 || (args[5] && !isspace((unsigned char)args[5]))) {
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "catch %s", args);
        int rc = tdb_command_gdb(s, tdb_buf_str(&cmd), r, err);
        tdb_buf_free(&cmd);
        return rc;
    }
    const char *type = args + 5;
    while (isspace((unsigned char)*type))
        type++;
    json_t *bp = tdb_session_catchpoint_add(s, type, err);
    if (!bp)
        return -1;
    int id = (int)json_integer_value(json_object_get(bp, "id"));
    if (!id) {
        refused(bp, "catch throw", type, r);
    } else {
        tdb_buf_addf(&r->text, "Catchpoint %d (throw%s%s%s)\n", id, *type ? " " : "", type,
                     *type ? " and classes derived from it" : "");
        r->event = json_pack("{s:s, s:i, s:s, s:s}", "event", "breakpoint", "number", id,
                             "location", jstr(bp, "location"), "type", type);
    }
    json_decref(bp);
    return 0;
}

int tdb_command_info_breakpoints(tdb_session *s, const char *args, tdb_reply *r,
                                 tdb_error *err)
{
    (void)args;
    (void)err;
    json_t *bps = tdb_session_breakpoints(s), *list = json_array();
    size_t i;
    json_t *bp;
    json_array_foreach(bps, i, bp)
    {
        if (!i)
            tdb_buf_adds(&r->text, "Num  Type        Enb  Hits  Where\n");
        const char *kind = jstr(bp, "kind");
        int temporary = json_is_true(json_object_get(bp, "temporary"));
        int enabled = json_is_true(json_object_get(bp, "enabled"));
        const char *type = !strcmp(kind, "catch") ? "catchpoint"
                           : !strcmp(kind, "python") && jstr(bp, "exception") ? "pycatch"
                           : !strcmp(kind, "python") ? (temporary ? "tpython" : "python")
                           : temporary ? "tbreakpoint" : "breakpoint";
        int id = (int)json_integer_value(json_object_get(bp, "id"));
        long hits = (long)json_integer_value(json_object_get(bp, "hits"));
        tdb_buf where = TDB_BUF_INIT;
        tdb_render_breakpoint(bp, &where);
        tdb_buf_addf(&r->text, "%-4d %-11s %-4s %-5ld %s\n", id, type, enabled ? "y" : "n", hits,
                     tdb_buf_str(&where));
        tdb_buf_free(&where);
        json_array_append_new(list, json_pack("{s:i, s:s, s:O, s:b, s:b, s:i, s:O, s:O}",
                                              "number", id, "type", kind, "location",
                                              json_object_get(bp, "location"), "enabled", enabled,
                                              "temporary", temporary, "hits", (int)hits,
                                              "pending", json_object_get(bp, "pending"), "where",
                                              json_object_get(bp, "where")));
    }
    if (!json_array_size(bps))
        tdb_buf_adds(&r->text, "No breakpoints.\n");
    json_decref(bps);
    r->event = json_pack("{s:s, s:o}", "event", "breakpoints", "breakpoints", list);
    return 0;
}

/* The breakpoints ARGS names ("1 3", empty: all, the last first) for
 * delete/enable/disable: FN(S, ID, R) on each, -1 when there is no ID. */
static void each_bp(tdb_session *s, const char *args, const char *cmd, tdb_reply *r,
                    int (*fn)(tdb_session *, int, tdb_reply *))
{
    if (!*args) {
        json_t *bps = tdb_session_breakpoints(s);
        for (size_t i = json_array_size(bps); i-- > 0;)
            fn(s, (int)json_integer_value(json_object_get(json_array_get(bps, i), "id")), r);
        json_decref(bps);
        return;
    }
    char *copy = tdb_xstrdup(args), *save = NULL;
    for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        long id;
        if (tdb_parse_long(w, 1, 1L << 30, &id) < 0 || fn(s, (int)id, r) < 0)
            tdb_command_fail(r, cmd, "no breakpoint number %s ('info breakpoints' lists them)", w);
    }
    free(copy);
}

static int do_delete(tdb_session *s, int id, tdb_reply *r)
{
    if (tdb_session_breakpoint_delete(s, id) < 0)
        return -1;
    tdb_buf_addf(&r->text, "Deleted breakpoint %d\n", id);
    return 0;
}

static int do_enable(tdb_session *s, int id, tdb_reply *r)
{
    if (tdb_session_breakpoint_enable(s, id, 1) < 0)
        return -1;
    tdb_buf_addf(&r->text, "Breakpoint %d enabled\n", id);
    return 0;
}

static int do_disable(tdb_session *s, int id, tdb_reply *r)
{
    if (tdb_session_breakpoint_enable(s, id, 0) < 0)
        return -1;
    tdb_buf_addf(&r->text, "Breakpoint %d disabled\n", id);
    return 0;
}

#define BP_CMD(fn, name, action)                                                   \
    int fn(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)         \
    {                                                                              \
        (void)err;                                                                 \
        each_bp(s, args, name, r, action);                                         \
        if (!r->event)                                                             \
            r->event = json_pack("{s:s, s:s}", "event", "done", "command", name);  \
        return 0;                                                                  \
    }
BP_CMD(tdb_command_delete, "delete", do_delete)
BP_CMD(tdb_command_enable, "enable", do_enable)
BP_CMD(tdb_command_disable, "disable", do_disable)

/* ---- what decides whether a hit stops ---- */

/* The breakpoint number at the start of ARGS (*REST: what follows, its
 * blanks skipped), or 0 after saying what CMD needs. */
static int bp_number(const char *args, const char *cmd, const char *usage, const char **rest,
                     tdb_reply *r)
{
    char *end = NULL;
    long id = strtol(args, &end, 10);
    if (end == args || id < 1 || id > (1L << 30) || (*end && !isspace((unsigned char)*end))) {
        tdb_command_fail(r, cmd, "usage: %s", usage);
        return 0;
    }
    while (isspace((unsigned char)*end))
        end++;
    *rest = end;
    return (int)id;
}

static int done(tdb_reply *r, const char *cmd, int id, tdb_error *local)
{
    if (local->set)
        return tdb_command_fail(r, cmd, "%s", local->msg);
    r->event = json_pack("{s:s, s:s, s:i}", "event", "done", "command", cmd, "number", id);
    return 0;
}

int tdb_command_condition(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)err;
    const char *cond;
    tdb_error local = {0};
    int id = bp_number(args, "condition", "condition N [EXPRESSION] (none: no condition)", &cond,
                       r);
    if (!id)
        return 0;
    if (tdb_session_breakpoint_set_condition(s, id, cond, &local) == 0)
        tdb_buf_addf(&r->text, *cond ? "Breakpoint %d stops only if %s\n"
                                     : "Breakpoint %d now unconditional\n", id, cond);
    return done(r, "condition", id, &local);
}

int tdb_command_ignore(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)err;
    const char *rest;
    long count;
    tdb_error local = {0};
    int id = bp_number(args, "ignore", "ignore N COUNT", &rest, r);
    if (!id)
        return 0;
    if (tdb_parse_long(rest, 0, 1L << 30, &count) < 0)
        return tdb_command_fail(r, "ignore", "usage: ignore N COUNT (COUNT: hits to let go)");
    if (tdb_session_breakpoint_set_ignore(s, id, (int)count, &local) == 0)
        tdb_buf_addf(&r->text, "Will ignore next %ld crossings of breakpoint %d.\n", count, id);
    return done(r, "ignore", id, &local);
}

/* 'log LOCATION MESSAGE': a log point, MESSAGE's {expression} parts
 * evaluated at each hit; 'dprintf LOCATION,"FORMAT",ARGS...' is gdb's own
 * for native code, and for a Python location the same log point with
 * FORMAT's %-conversions taking ARGS in turn. */
static int log_point(tdb_session *s, const char *cmd, char *location, const char *message,
                     tdb_reply *r, tdb_error *err)
{
    tdb_reply added = {0};
    if (add(s, location, 0, &added, err) < 0)
        return -1;
    int id = (int)json_integer_value(json_object_get(added.event, "number"));
    tdb_error local = {0};
    if (added.error || !id) {
        tdb_buf_add(&r->text, added.text.s ? added.text.s : "", added.text.len);
        r->error = 1;
        r->event = json_incref(added.event);
    } else if (tdb_session_breakpoint_set_log(s, id, message, &local) < 0) {
        tdb_session_breakpoint_delete(s, id);
        tdb_command_fail(r, cmd, "%s", local.msg);
    } else {
        tdb_buf_addf(&r->text, "Log point %d: %s: \"%s\"\n", id, location, message);
        r->event = json_pack("{s:s, s:i, s:s, s:s}", "event", "breakpoint", "number", id,
                             "location", location, "log_message", message);
    }
    tdb_reply_clear(&added);
    return 0;
}

int tdb_command_log(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    const char *sp = args + strcspn(args, " \t");
    const char *msg = sp;
    while (isspace((unsigned char)*msg))
        msg++;
    if (!*args || !*msg)
        return tdb_command_fail(r, "log", "usage: log LOCATION MESSAGE (MESSAGE's {expression} "
                                          "parts are evaluated at each hit)");
    char *location = tdb_xstrndup(args, (size_t)(sp - args));
    int rc = log_point(s, "log", location, msg, r, err);
    free(location);
    return rc;
}

int tdb_command_dprintf(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    const char *comma = strchr(args, ',');
    char *location = comma ? tdb_xstrndup(args, (size_t)(comma - args)) : NULL;
    if (location)
        location[strcspn(location, " \t")] = 0;
    if (!location || tdb_break_location_kind(location) != TDB_BREAK_PYTHON_FILE) {
        /* gdb's dprintf, as it is, for native code. */
        free(location);
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "dprintf %s", args);
        int rc = tdb_command_gdb(s, tdb_buf_str(&cmd), r, err);
        tdb_buf_free(&cmd);
        return rc;
    }
    /* "FORMAT", ARG, ...: each %-conversion becomes {ARG}. */
    const char *p = comma + 1;
    while (isspace((unsigned char)*p))
        p++;
    tdb_buf fmt = TDB_BUF_INIT, msg = TDB_BUF_INIT;
    int rc = 0;
    if (*p != '"') {
        rc = tdb_command_fail(r, "dprintf", "usage: dprintf LOCATION,\"FORMAT\",ARG...");
        goto cleanup;
    }
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1])
            p++;
        tdb_buf_addc(&fmt, *p == 'n' && p[-1] == '\\' ? '\n' : *p);
    }
    const char *args_at = *p ? p + 1 : p;
    const char *f = tdb_buf_str(&fmt);
    for (; *f; f++) {
        if (*f == '{' || *f == '}') {
            tdb_buf_addf(&msg, "%c%c", *f, *f);
        } else if (*f == '%' && f[1] == '%') {
            tdb_buf_addc(&msg, '%');
            f++;
        } else if (*f == '%') {
            while (f[1] && !isalpha((unsigned char)f[1]))
                f++; /* flags, width: Python's str() decides */
            if (f[1])
                f++;
            while (isspace((unsigned char)*args_at) || *args_at == ',')
                args_at++;
            size_t n = strcspn(args_at, ","); /* an argument with a comma inside needs log */
            tdb_buf_addc(&msg, '{');
            tdb_buf_add(&msg, args_at, n);
            tdb_buf_addc(&msg, '}');
            args_at += n;
        } else if (*f != '\n' || f[1]) {
            tdb_buf_addc(&msg, *f); /* the final newline: a log line is a line */
        }
    }
    rc = log_point(s, "dprintf", location, tdb_buf_str(&msg), r, err);
cleanup:
    tdb_buf_free(&fmt);
    tdb_buf_free(&msg);
    free(location);
    return rc;
}
