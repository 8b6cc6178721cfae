/*
 * commands/breakpoints.c: the commands about breakpoints (see
 * commands/commands.h): 'break', 'tbreak', 'catch throw', 'info
 * breakpoints', 'delete', 'enable', 'disable', over the core's breakpoints
 * as data (session/session.h, "breakpoints").
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

int tdb_command_catch(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
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
