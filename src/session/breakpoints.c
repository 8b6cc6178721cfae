/*
 * session/breakpoints.c: the breakpoints tdebug keeps (see
 * session/internal.h): gdb's, the catchpoints on C++ throws, and where
 * each bound, from gdb's =breakpoint-modified records (PLT stubs left
 * out); Python breakpoints are the hook's (session/python.c).
 */
#include "session/internal.h"

#include "native/elf.h"
#include "tdebug_pyhook.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int ends_with(const char *s, const char *tail)
{
    size_t n = s ? strlen(s) : 0, t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

bp_info *tdb_session_find_bp(tdb_session *s, int number)
{
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].number == number)
            return &s->bps[i];
    return NULL;
}

bp_info *tdb_session_find_bp_id(tdb_session *s, int id)
{
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].id == id && id > 0)
            return &s->bps[i];
    return NULL;
}

bp_info *tdb_session_add_bp(tdb_session *s, int number, bp_kind kind, const char *location,
                           const char *module)
{
    TDB_GROW(s->bps, s->n_bps, s->cap_bps);
    bp_info *b = &s->bps[s->n_bps++];
    memset(b, 0, sizeof(*b));
    b->number = number;
    b->kind = kind;
    b->enabled = 1;
    b->slot = -1;
    b->id = kind == BP_IMPORT ? 0 : ++s->next_bp_id;
    b->location = tdb_xstrdup(location);
    b->module = module ? tdb_xstrdup(module) : NULL;
    return b;
}

static void free_locs(bp_info *b)
{
    for (size_t i = 0; i < b->n_locs; i++)
        free(b->locs[i].what);
    free(b->locs);
    b->locs = NULL;
    b->n_locs = 0;
}

void tdb_session_bp_free(bp_info *b)
{
    free(b->condition);
    free(b->hit_condition);
    free(b->log_message);
    free(b->py_file);
    free(b->py_function);
    free(b->location);
    free(b->module);
    free(b->where);
    free_locs(b);
}

void tdb_session_bp_delete(tdb_session *s, bp_info *b)
{
    if (b->kind == BP_PYTHON)
        tdb_session_python_bp_changed(s, b, 1);
    if (b->number > 0 && s->gdb && tdb_gdb_alive(s->gdb))
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", b->number);
    tdb_session_bp_free(b);
    size_t i = (size_t)(b - s->bps);
    memmove(&s->bps[i], &s->bps[i + 1], (s->n_bps - i - 1) * sizeof(*s->bps));
    s->n_bps--;
}

/* A location gdb reports, as a user reads it: "func at file:line",
 * "func in libx.so", or its address.  gdb names a location of a library
 * without debug info only in AT ("<at::native::add(...)+4>"). */
static void describe_location(tdb_session *s, const json_t *loc, tdb_buf *out)
{
    const char *func = tdb_mi_str(loc, "func"), *file = tdb_mi_str(loc, "file");
    const char *line = tdb_mi_str(loc, "line"), *from = tdb_mi_str(loc, "from");
    const char *addr = tdb_mi_str(loc, "addr"), *at = tdb_mi_str(loc, "at");
    if (func) {
        tdb_buf_adds(out, func);
    } else if (at && at[0] == '<') {
        size_t n = strlen(at + 1);
        if (n && at[n] == '>')
            n--;
        tdb_buf_add(out, at + 1, n);
    } else {
        tdb_buf_adds(out, addr ? addr : "?");
    }
    if (file && line) {
        tdb_buf_addf(out, " at %s:%s", file, line);
    } else if (from) {
        tdb_buf_addf(out, " in %s", tdb_base_name(from));
    } else {
        lib_info *l = tdb_session_lib_at(s, parse_addr(addr));
        if (l)
            tdb_buf_addf(out, " in %s", tdb_base_name(l->path));
    }
}

static void add_loc(bp_info *b, unsigned long addr, const char *what)
{
    b->locs = tdb_xrealloc(b->locs, (b->n_locs + 1) * sizeof(*b->locs));
    b->locs[b->n_locs++] = (bp_loc){.addr = addr, .what = tdb_xstrdup(what)};
}

/* Update a breakpoint from a bkpt={...} tuple (MI3).  A function called
 * across libraries (at::_ops::add_Tensor::call from libtorch_python) gets
 * locations on its PLT stubs too, so every call would stop twice, first
 * in a stub; those locations are disabled while the function itself has a
 * location, unless the user asked for the stub. */
void tdb_session_update_bp(tdb_session *s, const json_t *bkpt)
{
    const char *num = tdb_mi_str(bkpt, "number");
    bp_info *b = num ? tdb_session_find_bp(s, atoi(num)) : NULL;
    if (!b)
        return;
    const char *addr = tdb_mi_str(bkpt, "addr");
    b->pending = addr && strcmp(addr, "<PENDING>") == 0;
    const char *times = tdb_mi_str(bkpt, "times");
    if (times && atoi(times) > b->hits)
        b->hits = atoi(times);
    if (b->by_address)
        return; /* gdb knows only an address; tdebug named it */
    if (b->kind == BP_CATCH) {
        /* No location to describe: where it is was said when it was made,
         * and once it is hit, libstdc++ is there. */
        if (b->hits && b->where && strcmp(b->where, "__cxa_throw in libstdc++") != 0) {
            free(b->where);
            b->where = tdb_xstrdup("__cxa_throw in libstdc++");
        }
        return;
    }

    json_t *locations = json_object_get(bkpt, "locations");
    tdb_buf where = TDB_BUF_INIT, one = TDB_BUF_INIT;
    if (!json_is_array(locations)) {
        if (!b->pending) {
            describe_location(s, bkpt, &where);
            if (!b->n_locs)
                add_loc(b, parse_addr(tdb_mi_str(bkpt, "addr")), tdb_buf_str(&where));
        }
    } else {
        /* Keep the hits counted per location across updates. */
        bp_loc *old = b->locs;
        size_t n_old = b->n_locs;
        b->locs = NULL;
        b->n_locs = 0;
        size_t i;
        json_t *loc;
        json_array_foreach(locations, i, loc)
        {
            if (ends_with(tdb_mi_str(loc, "at"), "@plt>") && !strstr(b->location, "@plt"))
                continue;
            tdb_buf_reset(&one);
            describe_location(s, loc, &one);
            if (where.len)
                tdb_buf_adds(&where, "; ");
            tdb_buf_adds(&where, tdb_buf_str(&one));
            unsigned long a = parse_addr(tdb_mi_str(loc, "addr"));
            add_loc(b, a, tdb_buf_str(&one));
            for (size_t k = 0; k < n_old; k++)
                if (old[k].addr == a)
                    b->locs[b->n_locs - 1].hits = old[k].hits;
        }
        for (size_t k = 0; k < n_old; k++)
            free(old[k].what);
        free(old);
    }
    if (where.len) {
        free(b->where);
        b->where = tdb_buf_detach(&where);
    }
    tdb_buf_free(&where);
    tdb_buf_free(&one);
    if (s->fe.breakpoint_changed && b->id)
        tdb_session_bp_changed(s, b, bkpt);

    if (!json_is_array(locations) || b->kind == BP_IMPORT || strstr(b->location, "@plt"))
        return;
    size_t i, real = 0;
    json_t *loc;
    json_array_foreach(locations, i, loc)
        if (!ends_with(tdb_mi_str(loc, "at"), "@plt>"))
            real++;
    if (!real)
        return;
    tdb_buf cmd = TDB_BUF_INIT;
    json_array_foreach(locations, i, loc)
    {
        const char *enabled = tdb_mi_str(loc, "enabled"), *number = tdb_mi_str(loc, "number");
        if (number && enabled && strcmp(enabled, "y") == 0 &&
            ends_with(tdb_mi_str(loc, "at"), "@plt>"))
            tdb_buf_addf(&cmd, " %s", number);
    }
    if (cmd.len)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-disable%s", tdb_buf_str(&cmd));
    tdb_buf_free(&cmd);
}

/* The mapped libraries without symbols in gdb that define function
 * LOCATION, found in their symbol tables (tdebug's own ELF reader, a few
 * milliseconds a library), so gdb reads just those.  Appends paths (the
 * session's strings) to OUT. */
static void libraries_defining(tdb_session *s, const char *location, char ***out, size_t *n)
{
    for (size_t i = 0; i < s->n_libs; i++) {
        lib_info *l = &s->libs[i];
        if (l->symbols || l->path[0] != '/')
            continue;
        tdb_elf *e = tdb_elf_open_tables(l->path, NULL);
        uint64_t *values = NULL;
        size_t count = 0;
        if (e && tdb_elf_functions_named(e, location, &values, &count, NULL) == 0 && count)
            tdb_ptrs_push(out, n, l->path);
        free(values);
        tdb_elf_free(e);
    }
}

static int names_function(const char *location)
{
    return *location != '*' && (!strchr(location, ':') || strstr(location, "::"));
}

int tdb_session_any_pending_function(const tdb_session *s)
{
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].kind == BP_NATIVE && s->bps[i].pending && names_function(s->bps[i].location))
            return 1;
    return 0;
}

int tdb_session_defines_pending(tdb_session *s, const char *path)
{
    tdb_elf *e = tdb_elf_open_tables(path, NULL);
    int found = 0;
    for (size_t i = 0; e && i < s->n_bps && !found; i++) {
        const bp_info *b = &s->bps[i];
        uint64_t *values = NULL;
        size_t count = 0;
        if (b->kind == BP_NATIVE && b->pending && names_function(b->location) &&
            tdb_elf_functions_named(e, b->location, &values, &count, NULL) == 0 && count)
            found = 1;
        free(values);
    }
    tdb_elf_free(e);
    return found;
}

/* Give gdb a breakpoint at LOCATION (pending if it binds nowhere yet),
 * after reading the symbols of the mapped libraries that define it when it
 * names a function: 0 with *RES gdb's answer, 1 when gdb rejects it
 * (REJECTED says why), -1 with ERR set (gdb died). */
static int insert_break(tdb_session *s, const char *location, int temporary,
                        const char *condition, json_t **res, tdb_error *rejected, tdb_error *err)
{
    char **libs = NULL;
    size_t n_libs = 0;
    tdb_buf cmd = TDB_BUF_INIT;
    int rc = -1;

    /* A function in a library that is mapped but whose symbols gdb has
     * not read: read them first, so the breakpoint binds now. */
    if (names_function(location) && s->state != NOT_STARTED && !s->opts.all_symbols) {
        libraries_defining(s, location, &libs, &n_libs);
        for (size_t i = 0; i < n_libs; i++)
            if (tdb_session_load_library_symbols(s, libs[i], err) < 0)
                goto cleanup;
    }
    tdb_buf_addf(&cmd, "-break-insert -f%s ", temporary ? " -t" : "");
    if (condition) {
        tdb_buf_adds(&cmd, "-c ");
        tdb_mi_quote(&cmd, condition);
        tdb_buf_addc(&cmd, ' ');
    }
    tdb_mi_quote(&cmd, location);
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, res, rejected, "%s", tdb_buf_str(&cmd)) < 0) {
        if (!tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, rejected->code, "%s", rejected->msg);
            goto cleanup;
        }
        rc = 1;
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(libs);
    tdb_buf_free(&cmd);
    return rc;
}

void tdb_session_bp_give_state(tdb_session *s, const bp_info *b)
{
    if (!b->enabled)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-disable %d", b->number);
    if (b->ignore)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-after %d %d", b->number,
                    b->ignore);
}

int tdb_session_bind_held(tdb_session *s, bp_info *b, tdb_error *err)
{
    json_t *res = NULL;
    tdb_error local = {0};
    int inserted = insert_break(s, b->location, b->temporary, b->condition, &res, &local, err);
    if (inserted > 0)
        say(s, "warning", "gdb rejects breakpoint '%s': %s", b->location, local.msg);
    const char *num = inserted == 0 ? tdb_mi_str(json_object_get(res, "bkpt"), "number") : NULL;
    if (num) {
        b->number = atoi(num);
        tdb_session_update_bp(s, json_object_get(res, "bkpt"));
        tdb_session_bp_give_state(s, b);
    }
    json_decref(res);
    return inserted < 0 ? -1 : 0;
}

/* ---- breakpoints as data ---- */

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

json_t *tdb_session_bp_json(tdb_session *s, const bp_info *b, const json_t *bkpt, int ask_gdb)
{
    int python = b->kind == BP_PYTHON;
    int verified = b->kind == BP_CATCH || b->kind == BP_WATCH || (python && s->hook.state != PYHOOK_FAILED) ||
                   (!b->pending && b->n_locs > 0);
    json_t *o = json_pack("{s:i, s:s, s:s, s:b, s:b, s:b, s:b, s:i, s:s?, s:n, s:n, s:n}", "id",
                          b->id, "kind", b->kind == BP_CATCH ? "catch" : b->kind == BP_WATCH ? "watch" : python ? "python" : "native",
                          "location", b->location, "pending", b->pending, "verified", verified,
                          "enabled", b->enabled, "temporary", b->temporary, "hits",
                          b->hits - b->passed, "where", b->where, "file", "line", "message");
    json_t *res = NULL;
    if (!bkpt && ask_gdb && b->kind != BP_CATCH && b->kind != BP_WATCH && b->number > 0 && s->state != RUNNING &&
        s->gdb && tdb_gdb_alive(s->gdb) &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-break-info %d", b->number) == 0)
        bkpt = json_array_get(json_object_get(json_object_get(res, "BreakpointTable"), "body"), 0);
    if (bkpt)
        add_source_of(o, bkpt);
    json_decref(res);
    if (b->kind == BP_CATCH) {
        /* "throw" or "throw TYPE" */
        const char *type = b->location + strlen("throw");
        while (*type == ' ')
            type++;
        json_object_set_new(o, "type", json_string(type));
    }
    if (python && b->py_exc) {
        json_object_set_new(o, "exception", json_string(b->py_exc == TDB_CATCH_PY_RAISED ? "raised"
                                                        : b->py_exc == TDB_CATCH_PY_UNCAUGHT
                                                            ? "uncaught" : "user-unhandled"));
        json_object_set_new(o, "type", json_string(b->py_function ? b->py_function : ""));
    } else if (python) {
        tdb_json_set_str(o, "file", b->py_file);
        json_object_set_new(o, "line", b->py_line > 0 ? json_integer(b->py_line) : json_null());
        json_object_set_new(o, "function", b->py_function ? json_string(b->py_function)
                                                           : json_null());
        if (b->py_moved_from > 0)
            json_object_set_new(o, "moved_from", json_integer(b->py_moved_from));
    }
    if (b->condition)
        json_object_set_new(o, "condition", json_string(b->condition));
    if (b->hit_condition)
        json_object_set_new(o, "hit_condition", json_string(b->hit_condition));
    if (b->ignore)
        json_object_set_new(o, "ignore", json_integer(b->ignore));
    if (b->log_message)
        json_object_set_new(o, "log_message", json_string(b->log_message));
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

json_t *tdb_session_bp_refused(const char *location, const char *kind, const char *why)
{
    return json_pack("{s:i, s:s, s:b, s:b, s:s, s:s}", "id", 0, "location", location, "pending",
                     0, "verified", 0, "message", why, "refused", kind);
}

void tdb_session_bp_changed(tdb_session *s, const bp_info *b, const json_t *bkpt)
{
    json_t *o = tdb_session_bp_json(s, b, bkpt, 1);
    s->fe.breakpoint_changed(s->fe.data, o);
    json_decref(o);
}

json_t *tdb_session_breakpoint(tdb_session *s, int id)
{
    bp_info *b = tdb_session_find_bp_id(s, id);
    return b ? tdb_session_bp_json(s, b, NULL, 1) : NULL;
}

json_t *tdb_session_breakpoints(tdb_session *s)
{
    json_t *list = json_array();
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].id)
            json_array_append_new(list, tdb_session_bp_json(s, &s->bps[i], NULL, 0));
    return list;
}

static json_t *add_location(tdb_session *s, const char *location, int temporary,
                            tdb_error *err);

json_t *tdb_session_breakpoint_add(tdb_session *s, const char *spec, int temporary,
                                   tdb_error *err)
{
    const char *cond;
    char *location = tdb_break_split(spec, &cond);
    json_t *out = add_location(s, cond ? location : spec, temporary, err);
    int id = (int)json_integer_value(json_object_get(out, "id"));
    tdb_error local = {0};
    if (id && cond && tdb_session_breakpoint_set_condition(s, id, cond, &local) < 0) {
        /* A condition gdb rejects: no breakpoint, as 'break' does. */
        tdb_session_breakpoint_delete(s, id);
        json_decref(out);
        out = tdb_session_bp_refused(spec, "gdb", local.msg);
    } else if (id && cond) {
        json_decref(out);
        out = tdb_session_breakpoint(s, id);
    }
    free(location);
    return out;
}

static json_t *add_location(tdb_session *s, const char *location, int temporary,
                            tdb_error *err)
{
    json_t *res = NULL, *out = NULL;
    tdb_buf why = TDB_BUF_INIT;
    if (tdb_break_refusal(location, &why)) {
        tdb_buf msg = TDB_BUF_INIT;
        tdb_buf_addf(&msg, "--break %s", tdb_buf_str(&why));
        out = tdb_session_bp_refused(location, "location", tdb_buf_str(&msg));
        tdb_buf_free(&msg);
        tdb_buf_free(&why);
        return out;
    }
    if (tdb_break_location_kind(location) == TDB_BREAK_PYTHON_FILE)
        return tdb_session_python_break(s, location, temporary, err);
    tdb_error local = {0};
    int inserted = insert_break(s, location, temporary, NULL, &res, &local, err);
    if (inserted < 0)
        goto cleanup;
    if (inserted > 0) {
        out = tdb_session_bp_refused(location, "gdb", local.msg);
        goto cleanup;
    }
    json_t *bkpt = json_object_get(res, "bkpt");
    const char *num = tdb_mi_str(bkpt, "number");
    if (!num) {
        tdb_error_set(err, 0, "gdb gave no breakpoint number for '%s'", location);
        goto cleanup;
    }
    bp_info *b = tdb_session_add_bp(s, atoi(num), BP_NATIVE, location, NULL);
    b->temporary = temporary;
    tdb_session_update_bp(s, bkpt);
    if (b->pending && s->state != NOT_STARTED && tdb_session_widen_interest(s, err) < 0)
        goto cleanup;
    /* A function in a shared libpython: the load catchpoint watches it
     * from now on (tdb_session_library_event()). */
    if (b->pending && !s->libpython_watched && !s->opts.all_symbols && s->catch_load_bp > 0 &&
        names_function(location) && tdb_session_place_load_catchpoint(s, err) < 0)
        goto cleanup;
    out = tdb_session_bp_json(s, b, bkpt, 0);
cleanup:
    json_decref(res);
    return out;
}

json_t *tdb_session_watchpoint_add(tdb_session *s, int thread, int index, const char *expr,
                                   const char *access, tdb_error *err)
{
    static const struct {
        const char *access, *flag, *word;
    } kinds[] = {{"write", "", "watch"}, {"read", "-r ", "rwatch"}, {"readWrite", "-a ", "awatch"}};
    size_t k = 0;
    while (k < 3 && strcmp(kinds[k].access, access ? access : "write") != 0)
        k++;
    char *location = tdb_xasprintf("%s %s", k < 3 ? kinds[k].word : "watch", expr);
    json_t *res = NULL, *out = NULL;
    tdb_error local = {0};
    if (k == 3) {
        out = tdb_session_bp_refused(location, "location",
                                     "the access is 'write', 'read' or 'readWrite'");
        goto cleanup;
    }
    if (!*expr || strpbrk(expr, "\n\r")) {
        out = tdb_session_bp_refused(location, "location", "an expression is one line");
        goto cleanup;
    }
    if (tdb_session_select(s, thread, index, &local) < 0) {
        out = tdb_session_bp_refused(location, "location", local.msg);
        goto cleanup;
    }
    if (s->python_top >= 0 && s->selected >= s->python_top) {
        out = tdb_session_bp_refused(location, "location",
                                     "a Python frame's variable cannot be watched: a watchpoint "
                                     "is on a C/C++ lvalue");
        goto cleanup;
    }
    int software = !tdb_hw_watchpoints_fire();
    if (software && k > 0) {
        out = tdb_session_bp_refused(location, "location",
                                     "this machine's hardware watchpoints never fire (a virtual "
                                     "machine without working debug registers), and only a "
                                     "change can be watched in software: use 'write'");
        goto cleanup;
    }
    if (software && tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, &local,
                                "-gdb-set can-use-hw-watchpoints 0") < 0) {
        tdb_error_set(err, local.code, "%s", local.msg);
        goto cleanup;
    }
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, &local, "-break-watch %s%s", kinds[k].flag,
                    expr) < 0) {
        if (!tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            goto cleanup;
        }
        out = tdb_session_bp_refused(location, "gdb", local.msg);
        goto cleanup;
    }
    const json_t *w = json_object_get(res, "wpt");
    if (!w)
        w = json_object_get(res, "hw-rwpt");
    if (!w)
        w = json_object_get(res, "hw-awpt");
    const char *num = tdb_mi_str(w, "number");
    if (!num) {
        tdb_error_set(err, 0, "gdb gave no watchpoint number for '%s'", location);
        goto cleanup;
    }
    bp_info *b = tdb_session_add_bp(s, atoi(num), BP_WATCH, location, NULL);
    out = tdb_session_bp_json(s, b, NULL, 0);
    if (software)
        json_object_set_new(out, "message",
                            json_string("a software watchpoint: this machine's hardware "
                                        "watchpoints never fire, so gdb runs the program one "
                                        "instruction at a time while it is set (slow)"));
cleanup:
    free(location);
    json_decref(res);
    return out;
}

/* 'catch throw [TYPE]': stop where C++ throws (TYPE: a class name; the
 * exception must be of it or of a class derived from it, which
 * session/values.c tells from the exception's type information at each
 * throw: gdb's own regex matches the thrown type's name only, so
 * c10::Error would miss c10::IndexError).  gdb's catchpoint needs
 * libstdc++'s symbols, which tdebug reads itself, now when it is mapped,
 * else when it loads. */
json_t *tdb_session_catchpoint_add(tdb_session *s, const char *type, tdb_error *err)
{
    static const char stdcxx[] = STDCXX_RE;
    json_t *res = NULL, *out = NULL;
    int mapped = 0;
    tdb_buf why = TDB_BUF_INIT;
    if (!type)
        type = "";
    if (strpbrk(type, "\n\r"))
        return tdb_session_bp_refused(type, "location", "an exception type is one line");
    if (*type && tdb_catch_type_refusal(type, &why)) {
        out = tdb_session_bp_refused(type, "location", tdb_buf_str(&why));
        tdb_buf_free(&why);
        return out;
    }
    for (size_t i = 0; i < s->n_libs; i++)
        mapped |= strstr(s->libs[i].path, "/libstdc++.so") != NULL;
    if (mapped && !s->opts.all_symbols && tdb_session_load_symbols(s, stdcxx, err) < 0)
        return NULL;
    if (!mapped && !s->opts.all_symbols && !s->stdcxx_interest) {
        /* Read libstdc++'s symbols when it loads. */
        tdb_buf re = TDB_BUF_INIT;
        tdb_buf_addf(&re, "%s%s%s", s->interest ? s->interest : "", s->interest ? "\\|" : "",
                     stdcxx);
        if (tdb_session_set_interest(s, tdb_buf_detach(&re), err) < 0 ||
            tdb_session_place_load_catchpoint(s, err) < 0)
            return NULL;
        s->stdcxx_interest = 1;
    }
    tdb_error local = {0};
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, &local, "-catch-throw") < 0) {
        json_decref(res);
        if (!tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            return NULL;
        }
        return tdb_session_bp_refused(*type ? type : "throw", "gdb", local.msg);
    }
    const char *num = tdb_mi_str(json_object_get(res, "bkpt"), "number");
    tdb_buf what = TDB_BUF_INIT;
    tdb_buf_addf(&what, "throw%s%s", *type ? " " : "", type);
    bp_info *b = tdb_session_add_bp(s, num ? atoi(num) : 0, BP_CATCH, tdb_buf_str(&what), NULL);
    tdb_buf_free(&what);
    b->where = tdb_xstrdup(mapped ? "__cxa_throw in libstdc++" : "libstdc++, when it loads");
    json_decref(res);
    return tdb_session_bp_json(s, b, NULL, 0);
}

int tdb_session_breakpoint_check(tdb_session *s, const char *location, tdb_error *err)
{
    if (!*location || strpbrk(location, "\n\r")) {
        tdb_error_set(err, EINVAL, "a breakpoint location is one line: FUNCTION, FILE:LINE or "
                                   "*ADDRESS");
        return -1;
    }
    const char *why = NULL;
    if (tdb_session_location_is_python(location) && !tdb_session_python_breakpoints(s, &why)) {
        tdb_error_set(err, EINVAL, "%s", why);
        return -1;
    }
    return 0;
}

int tdb_session_python_breakpoints(const tdb_session *s, const char **why)
{
    /* Python breakpoints are the hook's (session/python.c): refused only
     * where it could not be loaded. */
    if (why)
        *why = s->hook.failed ? s->hook.failed : "Python breakpoints cannot work in this process";
    return s->hook.state != PYHOOK_FAILED;
}

int tdb_session_location_is_python(const char *location)
{
    return tdb_break_location_kind(location) != TDB_BREAK_NATIVE;
}

int tdb_session_breakpoint_delete(tdb_session *s, int id)
{
    bp_info *b = tdb_session_find_bp_id(s, id);
    if (!b)
        return -1;
    tdb_session_bp_delete(s, b);
    return 0;
}

int tdb_session_breakpoint_enable(tdb_session *s, int id, int on)
{
    bp_info *b = tdb_session_find_bp_id(s, id);
    if (!b)
        return -1;
    if (b->number > 0)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-%s %d", on ? "enable" : "disable",
                    b->number);
    b->enabled = on;
    if (b->kind == BP_PYTHON)
        tdb_session_python_bp_changed(s, b, 0);
    return 0;
}

int tdb_session_breakpoint_gdb_number(tdb_session *s, int id)
{
    bp_info *b = tdb_session_find_bp_id(s, id);
    if (!b)
        return -1;
    return b->kind == BP_PYTHON ? 0 : b->number;
}

/* ---- what decides whether a hit stops ---- */

/* B can take a condition, hit condition or log message: 0, or -1 with
 * ERR saying why not. */
static bp_info *configurable(tdb_session *s, int id, tdb_error *err)
{
    bp_info *b = tdb_session_find_bp_id(s, id);
    if (!b || (b->kind != BP_NATIVE && b->kind != BP_PYTHON)) {
        tdb_error_set(err, ENOENT, b ? "breakpoint %d is a catchpoint: it takes no condition"
                                     : "no breakpoint %d ('info breakpoints' lists them)", id);
        return NULL;
    }
    return b;
}

static void set_str(char **field, const char *v)
{
    free(*field);
    *field = v && *v ? tdb_xstrdup(v) : NULL;
}

int tdb_session_breakpoint_set_condition(tdb_session *s, int id, const char *condition,
                                         tdb_error *err)
{
    bp_info *b = configurable(s, id, err);
    if (!b)
        return -1;
    if (condition && strpbrk(condition, "\n\r")) {
        tdb_error_set(err, EINVAL, "a condition is one line");
        return -1;
    }
    if (b->kind == BP_NATIVE && b->number > 0 && b->pending) {
        /* gdb 13 disables a pending breakpoint given a condition by
         * 'condition' when it binds; one inserted with it binds enabled.
         * So it is made again, under a new gdb number. */
        json_t *res = NULL;
        tdb_error local = {0};
        int inserted = insert_break(s, b->location, b->temporary,
                                    condition && *condition ? condition : NULL, &res, &local, err);
        const char *num = inserted == 0 ? tdb_mi_str(json_object_get(res, "bkpt"), "number") : NULL;
        if (inserted > 0)
            tdb_error_set(err, EINVAL, "%s", local.msg);
        if (num) {
            tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", b->number);
            b->number = atoi(num);
            tdb_session_update_bp(s, json_object_get(res, "bkpt"));
            tdb_session_bp_give_state(s, b);
        }
        json_decref(res);
        if (!num)
            return -1;
    } else if (b->kind == BP_NATIVE && b->number > 0) {
        /* gdb evaluates a native breakpoint's condition itself. */
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "-break-condition %d", b->number);
        if (condition && *condition) {
            tdb_buf_addc(&cmd, ' ');
            tdb_buf_adds(&cmd, condition);
        }
        int rc = tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "%s", tdb_buf_str(&cmd));
        tdb_buf_free(&cmd);
        if (rc < 0)
            return -1;
    }
    set_str(&b->condition, condition);
    if (b->kind == BP_PYTHON)
        tdb_session_python_bp_changed(s, b, 0);
    return 0;
}

int tdb_session_parse_hit_condition(const char *text, int *op, int *value, tdb_error *err)
{
    static const struct {
        const char *prefix;
        int op;
    } ops[] = {{">=", TDB_PYHOOK_HIT_GE}, {"<=", TDB_PYHOOK_HIT_LE}, {"==", TDB_PYHOOK_HIT_EQ},
               {">", TDB_PYHOOK_HIT_GT},  {"<", TDB_PYHOOK_HIT_LT},  {"%", TDB_PYHOOK_HIT_MOD},
               {"", TDB_PYHOOK_HIT_EQ}};
    const char *p = text ? text : "";
    while (*p == ' ')
        p++;
    if (!*p) {
        *op = TDB_PYHOOK_HIT_ANY;
        *value = 0;
        return 0;
    }
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strncmp(p, ops[i].prefix, strlen(ops[i].prefix)) == 0) {
            long v;
            const char *num = p + strlen(ops[i].prefix);
            while (*num == ' ')
                num++;
            if (tdb_parse_long(num, 0, INT32_MAX, &v) < 0 ||
                (ops[i].op == TDB_PYHOOK_HIT_MOD && v == 0))
                break;
            *op = ops[i].op;
            *value = (int)v;
            return 0;
        }
    tdb_error_set(err, EINVAL, "'%s' is not a hit condition: N (the Nth hit), >=N, >N, <=N, <N "
                  "or %%N (every Nth)", text);
    return -1;
}

int tdb_session_breakpoint_set_hit_condition(tdb_session *s, int id, const char *hit,
                                             tdb_error *err)
{
    bp_info *b = configurable(s, id, err);
    int op, value;
    if (!b || tdb_session_parse_hit_condition(hit, &op, &value, err) < 0)
        return -1;
    b->hit_op = op;
    b->hit_value = value;
    set_str(&b->hit_condition, op ? hit : NULL);
    b->cond_hits = 0;
    if (b->kind == BP_PYTHON)
        tdb_session_python_bp_changed(s, b, 0);
    return 0;
}

int tdb_session_breakpoint_set_ignore(tdb_session *s, int id, int count, tdb_error *err)
{
    bp_info *b = configurable(s, id, err);
    if (!b)
        return -1;
    if (count < 0)
        count = 0;
    if (b->kind == BP_NATIVE && b->number > 0 &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-break-after %d %d", b->number, count) < 0)
        return -1;
    b->ignore = count;
    b->ignore_new = 1;
    if (b->kind == BP_PYTHON)
        tdb_session_python_bp_changed(s, b, 0);
    return 0;
}

int tdb_session_breakpoint_set_log(tdb_session *s, int id, const char *message, tdb_error *err)
{
    bp_info *b = configurable(s, id, err);
    if (!b)
        return -1;
    if (message && strlen(message) >= TDB_PYHOOK_EXPR_MAX) {
        tdb_error_set(err, E2BIG, "a log message is at most %d bytes", TDB_PYHOOK_EXPR_MAX - 1);
        return -1;
    }
    set_str(&b->log_message, message);
    if (b->kind == BP_PYTHON)
        tdb_session_python_bp_changed(s, b, 0);
    return 0;
}

/* A native breakpoint B was hit and gdb's condition held: does the hit
 * stop (1), or go on (0: a hit condition not met, or a log point, whose
 * line was emitted)? */
int tdb_session_native_hit_stops(tdb_session *s, bp_info *b)
{
    if (!b->hit_op && !b->log_message)
        return 1;
    b->cond_hits++;
    if (!tdb_pyhook_hit_passes(b->hit_op, (uint64_t)b->cond_hits, b->hit_value))
        return 0;
    if (!b->log_message)
        return 1;
    /* {expression} parts as gdb evaluates them in the stopped frame. */
    tdb_buf line = TDB_BUF_INIT;
    for (const char *p = b->log_message; *p;) {
        const char *end = *p == '{' && p[1] != '{' ? strchr(p, '}') : NULL;
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            tdb_buf_addc(&line, *p);
            p += 2;
        } else if (!end) {
            tdb_buf_addc(&line, *p++);
        } else {
            char *expr = tdb_xstrndup(p + 1, (size_t)(end - p - 1));
            tdb_buf q = TDB_BUF_INIT;
            json_t *res = NULL;
            tdb_error e = {0};
            tdb_mi_quote(&q, expr);
            if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, &e, "-data-evaluate-expression %s",
                            tdb_buf_str(&q)) == 0)
                tdb_buf_adds(&line, tdb_mi_str(res, "value") ?: "");
            else
                tdb_buf_addf(&line, "<%s>", e.msg);
            json_decref(res);
            tdb_buf_free(&q);
            free(expr);
            p = end + 1;
        }
    }
    tdb_session_emit(s, "log", json_pack("{s:i}", "breakpoint", b->id), "%s", tdb_buf_str(&line));
    tdb_buf_free(&line);
    return 0;
}
