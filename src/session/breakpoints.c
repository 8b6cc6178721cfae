/*
 * session/breakpoints.c: the breakpoints tdebug keeps (see
 * session/internal.h): gdb's, the catchpoints on C++ throws, and where
 * each bound, from gdb's =breakpoint-modified records (PLT stubs left
 * out); Python breakpoints are the hook's (session/python.c).
 */
#include "session/internal.h"

#include "native/elf.h"

#include <ctype.h>
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

static lib_info *lib_at(tdb_session *s, unsigned long addr)
{
    for (size_t i = 0; i < s->n_libs; i++)
        if (addr >= s->libs[i].lo && addr < s->libs[i].hi)
            return &s->libs[i];
    return NULL;
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
        lib_info *l = lib_at(s, parse_addr(addr));
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

/* Give gdb a breakpoint at LOCATION (pending if it binds nowhere yet),
 * after reading the symbols of the mapped libraries that define it when it
 * names a function: 0 with *RES gdb's answer, 1 when gdb rejects it
 * (REJECTED says why), -1 with ERR set (gdb died). */
static int insert_break(tdb_session *s, const char *location, int temporary, json_t **res,
                        tdb_error *rejected, tdb_error *err)
{
    char **libs = NULL;
    size_t n_libs = 0;
    tdb_buf cmd = TDB_BUF_INIT;
    int rc = -1;

    /* A function in a library that is mapped but whose symbols gdb has
     * not read: read them first, so the breakpoint binds now. */
    int is_function = !strchr(location, ':') || strstr(location, "::");
    if (is_function && *location != '*' && s->state != NOT_STARTED && !s->opts.all_symbols) {
        libraries_defining(s, location, &libs, &n_libs);
        for (size_t i = 0; i < n_libs; i++)
            if (tdb_session_load_library_symbols(s, libs[i], err) < 0)
                goto cleanup;
    }
    tdb_buf_addf(&cmd, "-break-insert -f%s ", temporary ? " -t" : "");
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

int tdb_session_break(tdb_session *s, const char *location, int temporary, tdb_reply *r,
                      tdb_error *err)
{
    json_t *res = NULL;
    int rc = -1;

    tdb_buf why = TDB_BUF_INIT;
    if (tdb_break_refusal(location, &why)) {
        r->error = 1;
        tdb_buf_addf(&r->text, "tdebug: --break %s\n", tdb_buf_str(&why));
        r->event = json_pack("{s:s, s:s, s:s+}", "event", "error", "command", "break", "message",
                             "--break ", tdb_buf_str(&why));
        tdb_buf_free(&why);
        return 0;
    }
    if (tdb_break_location_kind(location) == TDB_BREAK_PYTHON_FILE)
        return tdb_session_python_break(s, location, temporary, r, err);
    tdb_error local = {0};
    int inserted = insert_break(s, location, temporary, &res, &local, err);
    if (inserted < 0)
        goto cleanup;
    if (inserted > 0) {
        r->error = 1;
        tdb_buf_addf(&r->text, "tdebug: gdb rejects breakpoint '%s': %s\n", location, local.msg);
        r->event = json_pack("{s:s, s:s, s:s}", "event", "error", "command", "break", "message",
                             local.msg);
        rc = 0;
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
    tdb_buf where = TDB_BUF_INIT;
    tdb_session_bp_describe(s, b, &where);
    tdb_buf_addf(&r->text, "%s %d: %s\n", temporary ? "Temporary breakpoint" : "Breakpoint", b->id,
                 tdb_buf_str(&where));
    r->event = json_pack("{s:s, s:i, s:s, s:b, s:s?}", "event", "breakpoint", "number", b->id,
                         "location", b->location, "pending", b->pending, "where", b->where);
    tdb_buf_free(&where);
    rc = 0;
cleanup:
    json_decref(res);
    return rc;
}

int tdb_session_bind_held(tdb_session *s, bp_info *b, tdb_error *err)
{
    json_t *res = NULL;
    tdb_error local = {0};
    int inserted = insert_break(s, b->location, b->temporary, &res, &local, err);
    if (inserted > 0)
        say(s, "warning", "gdb rejects breakpoint '%s': %s", b->location, local.msg);
    const char *num = inserted == 0 ? tdb_mi_str(json_object_get(res, "bkpt"), "number") : NULL;
    if (num) {
        b->number = atoi(num);
        tdb_session_update_bp(s, json_object_get(res, "bkpt"));
    }
    json_decref(res);
    return inserted < 0 ? -1 : 0;
}

/* libstdc++'s file, whose symbols catch throw needs. */
#define STDCXX_RE "/libstdc++\\.so[^/]*$"

/* 'catch throw [TYPE]': stop where C++ throws (TYPE: a class name; the
 * exception must be of it or of a class derived from it, which
 * session/values.c tells from the exception's type information at each
 * throw: gdb's own regex matches the thrown type's name only, so
 * c10::Error would miss c10::IndexError).  gdb's catchpoint needs
 * libstdc++'s symbols, which tdebug reads itself, now when it is mapped,
 * else when it loads. */
int tdb_session_catch_throw(tdb_session *s, const char *type, tdb_reply *r, tdb_error *err)
{
    static const char stdcxx[] = STDCXX_RE;
    json_t *res = NULL;
    int mapped = 0;
    tdb_buf why = TDB_BUF_INIT;
    if (type && *type && tdb_catch_type_refusal(type, &why)) {
        r->error = 1;
        tdb_buf_addf(&r->text, "tdebug: %s\n", tdb_buf_str(&why));
        r->event = json_pack("{s:s, s:s, s:s}", "event", "error", "command", "catch throw",
                             "message", tdb_buf_str(&why));
        tdb_buf_free(&why);
        return 0;
    }
    for (size_t i = 0; i < s->n_libs; i++)
        mapped |= strstr(s->libs[i].path, "/libstdc++.so") != NULL;
    if (mapped && !s->opts.all_symbols && tdb_session_load_symbols(s, stdcxx, err) < 0)
        return -1;
    if (!mapped && !s->opts.all_symbols && !s->stdcxx_interest) {
        /* Read libstdc++'s symbols when it loads. */
        tdb_buf re = TDB_BUF_INIT;
        tdb_buf_addf(&re, "%s%s%s", s->interest ? s->interest : "", s->interest ? "\\|" : "",
                     stdcxx);
        if (tdb_session_set_interest(s, tdb_buf_detach(&re), err) < 0 || tdb_session_place_load_catchpoint(s, err) < 0)
            return -1;
        s->stdcxx_interest = 1;
    }
    tdb_error local = {0};
    int rc = tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, &local, "-catch-throw");
    if (rc < 0) {
        json_decref(res);
        if (!tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            return -1;
        }
        r->error = 1;
        tdb_buf_addf(&r->text, "tdebug: cannot catch C++ throws: %s\n", local.msg);
        r->event = json_pack("{s:s, s:s, s:s}", "event", "error", "command", "catch throw",
                             "message", local.msg);
        return 0;
    }
    const char *num = tdb_mi_str(json_object_get(res, "bkpt"), "number");
    tdb_buf what = TDB_BUF_INIT;
    tdb_buf_addf(&what, "throw%s%s", type && *type ? " " : "", type && *type ? type : "");
    bp_info *b = tdb_session_add_bp(s, num ? atoi(num) : 0, BP_CATCH, tdb_buf_str(&what), NULL);
    tdb_buf_free(&what);
    b->where = tdb_xstrdup(mapped ? "__cxa_throw in libstdc++" : "libstdc++, when it loads");
    tdb_buf_addf(&r->text, "Catchpoint %d (throw%s%s%s)\n", b->id, type && *type ? " " : "",
                 type && *type ? type : "", type && *type ? " and classes derived from it" : "");
    r->event = json_pack("{s:s, s:i, s:s, s:s?}", "event", "breakpoint", "number", b->id,
                         "location", b->location, "type", type);
    json_decref(res);
    return 0;
}

void tdb_session_bp_describe(tdb_session *s, const bp_info *b, tdb_buf *out)
{
    (void)s;
    size_t n = strlen(b->location);
    if (b->kind == BP_PYTHON && b->py_line > 0)
        tdb_buf_addf(out, "%s:%d", b->py_file, b->py_line);
    else if (b->kind == BP_PYTHON)
        tdb_buf_addf(out, "%s in %s", b->py_function, *b->py_file ? b->py_file : "any file");
    else if (b->pending)
        tdb_buf_addf(out, "%s (pending: it binds when a library defining it loads)", b->location);
    else if (b->where && strncmp(b->where, b->location, n) == 0 && strchr(" (", b->where[n]))
        tdb_buf_adds(out, b->where); /* "f at x.c:3" says all of "f" */
    else if (b->where)
        tdb_buf_addf(out, "%s: %s", b->location, b->where);
    else
        tdb_buf_adds(out, b->location);
}
