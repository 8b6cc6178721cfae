/*
 * session/session.c: the session core (see session/session.h): gdb, symbols, libraries,
 * breakpoints, events and stops, launching, attaching, resuming, ending.
 *
 * The flow of 'tdebug run --stop-at-import torch._C':
 *   gdb starts with 'auto-solib-add off' (FIELD-NOTES: gdb's default reads
 *   ~300 libraries' symbols and takes 4.45 s to reach PyInit__C, against
 *   2.0 s this way), a load catchpoint on torch/_C's file, and runs the
 *   program through tdebug-exec (stdio, process group, death signal).
 *   When _C is mapped the catchpoint stops in ld.so; _C's own DT_NEEDED
 *   libraries are not mapped yet, but _C is: tdebug reads _C's symbols only
 *   and puts a temporary breakpoint on PyInit__C, keeping only the location
 *   inside _C, then continues.  The breakpoint fires before the module's
 *   init runs.  At every stop shown to the user, libc and ld.so symbols are
 *   loaded first (without their CFI backtraces are garbage), then any
 *   library on the stack whose symbols are not loaded, until the stack is
 *   stable.
 */
#include "session/internal.h"

#include "native/elf.h"
#include "process/preload.h"
#include "base/signals.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- small helpers ---- */

/* Escape S for a POSIX basic regex. */
static void bre_escape(tdb_buf *b, const char *s)
{
    for (; *s; s++) {
        if (strchr(".[]*^$\\", *s))
            tdb_buf_addc(b, '\\');
        tdb_buf_addc(b, *s);
    }
}

char *tdb_module_file_regex(const char *name)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_addc(&b, '/');
    for (const char *p = name; *p; p++)
        tdb_buf_addc(&b, *p == '.' ? '/' : *p);
    /* _C.so, _C.abi3.so, _C.cpython-311-x86_64-linux-gnu.so */
    tdb_buf_adds(&b, "\\.\\([^/]*\\.\\)\\{0,1\\}so$");
    return tdb_buf_detach(&b);
}

static const char *module_init_name(const char *module, tdb_buf *b)
{
    const char *last = strrchr(module, '.');
    tdb_buf_reset(b);
    tdb_buf_addf(b, "PyInit_%s", last ? last + 1 : module);
    return tdb_buf_str(b);
}

static unsigned long parse_addr(const char *s)
{
    return s ? strtoul(s, NULL, 0) : 0;
}

static int signal_number(const char *name)
{
    if (!name)
        return 0;
    for (int sig = 1; sig < 65; sig++) {
        const char *abbrev = sigabbrev_np(sig);
        if (abbrev && strncmp(name, "SIG", 3) == 0 && strcmp(name + 3, abbrev) == 0)
            return sig;
    }
    return 0;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = s ? strlen(s) : 0, t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* ---- events ---- */

json_t *tdb_event_vnew(const char *event, json_t *fields, const char *fmt, va_list ap)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_vaddf(&b, fmt, ap);
    json_t *e = json_pack("{s:s, s:s}", "event", event, "message", tdb_buf_str(&b));
    if (fields)
        json_object_update(e, fields);
    json_decref(fields);
    tdb_buf_free(&b);
    return e;
}

void tdb_session_emit(tdb_session *s, const char *event, json_t *fields, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *e = tdb_event_vnew(event, fields, fmt, ap);
    va_end(ap);
    if (s->fe.event)
        s->fe.event(s->fe.data, e);
    json_decref(e);
}

/* ---- libraries and breakpoints we track ---- */

static lib_info *find_lib(tdb_session *s, const char *path)
{
    for (size_t i = 0; i < s->n_libs; i++)
        if (strcmp(s->libs[i].path, path) == 0)
            return &s->libs[i];
    return NULL;
}

lib_info *tdb_session_note_lib(tdb_session *s, const char *path)
{
    lib_info *l = find_lib(s, path);
    if (l)
        return l;
    if (s->n_libs == s->cap_libs) {
        s->cap_libs = s->cap_libs ? s->cap_libs * 2 : 64;
        s->libs = tdb_xrealloc(s->libs, s->cap_libs * sizeof(*s->libs));
    }
    l = &s->libs[s->n_libs++];
    memset(l, 0, sizeof(*l));
    l->path = tdb_xstrdup(path);
    return l;
}

static bp_info *find_bp(tdb_session *s, int number)
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

static void free_bp(bp_info *b)
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
    free_bp(b);
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
static void update_bp(tdb_session *s, const json_t *bkpt)
{
    const char *num = tdb_mi_str(bkpt, "number");
    bp_info *b = num ? find_bp(s, atoi(num)) : NULL;
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

/* ---- gdb commands ---- */

int tdb_session_console(tdb_session *s, int timeout_ms, tdb_error *err, const char *fmt, ...)
{
    tdb_buf cli = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&cli, fmt, ap);
    va_end(ap);
    char *out = tdb_gdb_console(s->gdb, timeout_ms, err, tdb_buf_str(&cli));
    if (out && s->opts.verbose && *out && s->fe.gdb_output)
        s->fe.gdb_output(s->fe.data, out, strlen(out));
    tdb_buf_free(&cli);
    int rc = out ? 0 : -1;
    free(out);
    return rc;
}
#define console tdb_session_console

static void handle_notify(tdb_session *s, const tdb_mi_record *r);

/* Read queued notifications (library list, breakpoints, thread groups)
 * after a command, keeping any exec record for the event loop. */
static void drain_notifications(tdb_session *s)
{
    tdb_mi_record *r, *keep = NULL, **tail = &keep;
    while ((r = tdb_gdb_next_event(s->gdb, 0, NULL))) {
        if (r->kind == TDB_MI_NOTIFY) {
            handle_notify(s, r);
            tdb_mi_record_free(r);
        } else if (r->kind == TDB_MI_EXEC) {
            *tail = r;
            tail = &r->next;
        } else {
            tdb_mi_record_free(r);
        }
    }
    /* Put the exec records back, oldest first. */
    tdb_mi_record *rev = NULL;
    while (keep) {
        tdb_mi_record *next = keep->next;
        keep->next = rev;
        rev = keep;
        keep = next;
    }
    while (rev) {
        tdb_mi_record *next = rev->next;
        rev->next = NULL;
        tdb_gdb_unget_event(s->gdb, rev);
        rev = next;
    }
}

void tdb_session_drain(tdb_session *s)
{
    drain_notifications(s);
}

/* Read the symbols of every library matching the basic regex RE, and mark
 * them as read.  Breakpoints that bind meanwhile are updated (their PLT
 * locations dropped) at once. */
int tdb_session_load_symbols(tdb_session *s, const char *re, tdb_error *err)
{
    if (console(s, SYMBOLS_TIMEOUT_MS, err, "sharedlibrary %s", re) < 0)
        return -1;
    regex_t rx;
    if (regcomp(&rx, re, REG_NOSUB) == 0) {
        for (size_t i = 0; i < s->n_libs; i++)
            if (regexec(&rx, s->libs[i].path, 0, NULL, 0) == 0)
                s->libs[i].symbols = 1;
        regfree(&rx);
    }
    drain_notifications(s);
    return 0;
}

int tdb_session_load_library_symbols(tdb_session *s, const char *path, tdb_error *err)
{
    tdb_buf re = TDB_BUF_INIT;
    tdb_buf_addc(&re, '^');
    bre_escape(&re, path);
    tdb_buf_addc(&re, '$');
    int rc = tdb_session_load_symbols(s, tdb_buf_str(&re), err);
    tdb_buf_free(&re);
    return rc;
}

int tdb_session_ensure_base_symbols(tdb_session *s, tdb_error *err)
{
    if (s->base_symbols || s->opts.all_symbols)
        return 0;
    if (tdb_session_load_symbols(s, "/ld-linux[^/]*$\\|/libc\\.so[^/]*$", err) < 0)
        return -1;
    s->base_symbols = 1;
    return 0;
}

/* The program runs again: what this stop showed is stale. */
void tdb_session_note_running(tdb_session *s)
{
    s->state = RUNNING;
    tdb_session_drop_stop_readers(s);
    if (s->have_stop) {
        json_decref(s->stop.frames);
        json_decref(s->stop.python_frames);
        json_decref(s->stop.stack);
        json_decref(s->stop.libraries);
        json_decref(s->stop.exception);
        json_decref(s->stop.args);
        if (s->have_stop_view)
            tdb_stackview_clear(&s->stop_view);
        s->have_stop_view = 0;
        memset(&s->stop, 0, sizeof(s->stop));
        s->have_stop = 0;
    }
    tdb_strv_free(s->stop_strs);
    s->stop_strs = NULL;
    s->n_stop_strs = 0;
    s->selected = 0;
    s->hook.stop_is_hook = 0;
    s->python_top = -1;
    if (s->paused)
        s->paused_released = 1; /* running lets even wait_for_debugger() go */
}

static int resume_mi(tdb_session *s, const char *how, tdb_error *err)
{
    tdb_mi_response *r = tdb_gdb_send(s->gdb, CMD_TIMEOUT_MS, err, how);
    if (!r)
        return -1;
    int rc = 0;
    if (strcmp(r->result->klass, "error") == 0) {
        const char *msg = tdb_mi_str(r->result->results, "msg");
        tdb_error_set(err, 0, "%s", msg ? msg : "gdb cannot resume the program");
        rc = -1;
    } else {
        tdb_session_note_running(s);
    }
    tdb_mi_response_free(r);
    return rc;
}

int tdb_session_resume(tdb_session *s, tdb_resume how, tdb_error *err)
{
    static const char *const mi[] = {
        [TDB_RESUME_CONTINUE] = "-exec-continue", [TDB_RESUME_STEP] = "-exec-step",
        [TDB_RESUME_NEXT] = "-exec-next",         [TDB_RESUME_FINISH] = "-exec-finish",
        [TDB_RESUME_STEPI] = "-exec-step-instruction",
        [TDB_RESUME_NEXTI] = "-exec-next-instruction",
    };
    if (s->state != STOPPED) {
        tdb_error_set(err, 0, s->state == EXITED ? "the program is not being run"
                                                 : "the program is running");
        return -1;
    }
    s->hook.native_what[0] = '\0'; /* a step into native code says what it implements */
    int py = tdb_session_python_resume(s, how, err);
    if (py < 0)
        return -1;
    if (py == 1) {
        /* The hook steps in Python; the program just goes on. */
        if (resume_mi(s, "-exec-continue", err) < 0)
            return -1;
        s->last_resume = (int)how;
        return 0;
    }
    tdb_buf cmd = TDB_BUF_INIT;
    tdb_buf_adds(&cmd, mi[how]);
    if (how == TDB_RESUME_FINISH && s->have_stop_view) {
        /* finish out of the selected frame, gdb's number. */
        tdb_view_frame f;
        if (tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s), (size_t)s->selected,
                                   &f) == 0 &&
            f.kind == TDB_FRAME_NATIVE && f.level > 0)
            tdb_buf_addf(&cmd, " --frame %d", f.level);
    }
    int rc = resume_mi(s, tdb_buf_str(&cmd), err);
    tdb_buf_free(&cmd);
    if (rc == 0)
        s->last_resume = (int)how;
    return rc;
}

int tdb_session_interrupt(tdb_session *s, tdb_error *err)
{
    if (s->state != RUNNING || s->interrupt_sent)
        return 0;
    s->interrupt_sent = 1;
    return tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-exec-interrupt");
}

/* ---- events from gdb ---- */

static void handle_notify(tdb_session *s, const tdb_mi_record *r)
{
    if (strcmp(r->klass, "library-loaded") == 0) {
        const char *path = tdb_mi_str(r->results, "target-name");
        if (!path)
            return;
        lib_info *l = tdb_session_note_lib(s, path);
        const char *loaded = tdb_mi_str(r->results, "symbols-loaded");
        if (loaded && strcmp(loaded, "1") == 0)
            l->symbols = 1;
        json_t *ranges = json_object_get(r->results, "ranges");
        json_t *first = json_array_get(ranges, 0);
        unsigned long lo = parse_addr(tdb_mi_str(first, "from"));
        unsigned long hi = parse_addr(tdb_mi_str(first, "to"));
        if (first && hi > lo) { /* none before gdb has read the file */
            l->lo = lo;
            l->hi = hi;
        }
    } else if (strcmp(r->klass, "breakpoint-created") == 0) {
        json_t *bkpt = json_object_get(r->results, "bkpt");
        const char *type = tdb_mi_str(bkpt, "catch-type");
        if (type && strcmp(type, "load") == 0 && tdb_mi_str(bkpt, "number"))
            s->catch_load_bp = atoi(tdb_mi_str(bkpt, "number"));
    } else if (strcmp(r->klass, "breakpoint-modified") == 0) {
        json_t *bkpt = json_object_get(r->results, "bkpt");
        if (json_is_object(bkpt))
            update_bp(s, bkpt);
    } else if (strcmp(r->klass, "thread-group-started") == 0) {
        const char *pid = tdb_mi_str(r->results, "pid");
        if (pid && !s->attached) {
            s->pid = (pid_t)atoi(pid);
            if (s->fe.program_started)
                s->fe.program_started(s->fe.data, s->pid);
        }
    } else if (strcmp(r->klass, "thread-group-exited") == 0) {
        const char *code = tdb_mi_str(r->results, "exit-code");
        if (code && !s->have_exit) {
            /* gdb prints the exit code in octal ("03", "012"). */
            s->exit_status = (int)strtol(code, NULL, 8);
            s->have_exit = 1;
        }
    }
}

/* Place the breakpoint on module M's PyInit function inside library LIB,
 * just mapped: read LIB's symbols (it is small; its dependencies are not
 * even mapped yet), insert a temporary breakpoint and keep only the
 * location inside LIB, so another module's PyInit of the same name
 * (functorch._C also has PyInit__C) cannot fire it. */
static int arm_import_stop(tdb_session *s, module_watch *m, const char *lib, tdb_error *err)
{
    tdb_buf name = TDB_BUF_INIT;
    tdb_buf cmd = TDB_BUF_INIT;
    json_t *res = NULL;
    int rc = -1;

    if (tdb_session_load_library_symbols(s, lib, err) < 0)
        goto cleanup;
    module_init_name(m->name, &name);
    tdb_buf_adds(&cmd, "-break-insert -t ");
    tdb_mi_quote(&cmd, tdb_buf_str(&name));
    tdb_error local = {0};
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, &local, "%s", tdb_buf_str(&cmd)) < 0) {
        say(s, "warning", "'%s' has no %s: cannot stop before its init (%s)", lib,
            tdb_buf_str(&name), local.msg);
        rc = 0;
        goto cleanup;
    }
    json_t *bkpt = json_object_get(res, "bkpt");
    const char *num = tdb_mi_str(bkpt, "number");
    if (!num) {
        tdb_error_set(err, 0, "gdb gave no breakpoint number for %s", tdb_buf_str(&name));
        goto cleanup;
    }
    lib_info *l = find_lib(s, lib);
    json_t *locations = json_object_get(bkpt, "locations");
    if (json_is_array(locations) && l && l->hi > l->lo) {
        size_t i;
        json_t *loc;
        json_array_foreach(locations, i, loc)
        {
            unsigned long a = parse_addr(tdb_mi_str(loc, "addr"));
            const char *locno = tdb_mi_str(loc, "number");
            if (locno && (a < l->lo || a >= l->hi))
                tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-disable %s", locno);
        }
    }
    bp_info *b = tdb_session_add_bp(s, atoi(num), BP_IMPORT, tdb_buf_str(&name), m->name);
    b->temporary = 1;
    rc = 0;
cleanup:
    json_decref(res);
    tdb_buf_free(&name);
    tdb_buf_free(&cmd);
    return rc;
}

/* The load catchpoint fired: arm import stops for watched modules and read
 * the symbols of interesting libraries so pending breakpoints bind. */
static int handle_library_event(tdb_session *s, const json_t *added, module_watch **out_load,
                                tdb_error *err)
{
    size_t i;
    json_t *v;
    json_array_foreach(added, i, v)
    {
        const char *lib = json_is_string(v) ? json_string_value(v) : tdb_mi_str(v, "library");
        if (!lib)
            continue;
        tdb_session_note_lib(s, lib);
        for (size_t k = 0; k < s->n_mods; k++) {
            module_watch *m = &s->mods[k];
            if (!m->seen && regexec(&m->re, lib, 0, NULL, 0) == 0) {
                m->seen = 1;
                m->library = tdb_xstrdup(lib);
                if (m->at_import && arm_import_stop(s, m, lib, err) < 0)
                    return -1;
                if (m->at_load && !*out_load)
                    *out_load = m;
                if (!m->at_import)
                    m->stopped = 1; /* a load stop is all that was asked */
            }
        }
        if (s->have_interest && regexec(&s->interest_re, lib, 0, NULL, 0) == 0) {
            lib_info *l = find_lib(s, lib);
            if (l && !l->symbols && tdb_session_load_library_symbols(s, lib, err) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- a stop ---- */

static void describe_stop(tdb_session *s, const tdb_stop_info *st, tdb_buf *b)
{
    if (strcmp(st->reason, "import") == 0)
        tdb_buf_addf(b, "stopped at the import of %s: in its init function, before it runs (%s)",
                     st->module, st->library ? st->library : "?");
    else if (strcmp(st->reason, "breakpoint") == 0)
        tdb_buf_addf(b, "stopped at breakpoint %d (%s)", st->bp_number,
                     st->bp_location ? st->bp_location : "?");
    else if (strcmp(st->reason, "python-breakpoint") == 0)
        tdb_buf_addf(b, "stopped at Python breakpoint %d (%s)", st->bp_number,
                     st->bp_location ? st->bp_location : "?");
    else if (strcmp(st->reason, "throw") == 0)
        tdb_session_describe_throw(st, b);
    else if (strcmp(st->reason, "signal") == 0) {
        tdb_buf_addf(b, "program received %s (%s)", st->signal_name ? st->signal_name : "a signal",
                     st->signal_meaning ? st->signal_meaning : "?");
        if (st->fault_address)
            tdb_buf_addf(b, " at address %s", st->fault_address);
    } else if (strcmp(st->reason, "interrupt") == 0)
        tdb_buf_adds(b, "interrupted");
    else if (strcmp(st->reason, "loaded") == 0 && s->paused_load &&
             st->module && strcmp(st->module, s->paused_load->name) == 0)
        tdb_buf_addf(b, "%s is loaded: the preloaded library paused pid %d right after the "
                        "dynamic loader mapped %s and its dependencies, before any of their "
                        "code ran",
                     st->module, (int)s->pid, st->library ? st->library : "?");
    else if (strcmp(st->reason, "loaded") == 0)
        tdb_buf_addf(b, "%s is loaded: the dynamic loader mapped %s; %zu libraries are mapped so "
                        "far, its own dependencies not yet",
                     st->module, st->library ? st->library : "?", s->n_libs);
    else if (strcmp(st->reason, "attached") == 0)
        tdb_buf_addf(b, "attached to pid %d", (int)s->pid);
    else if (st->compact && strcmp(st->reason, "finish") == 0)
        tdb_buf_addf(b, "finish: returned to %s", st->where ? st->where : "the caller");
    else if (st->compact && strcmp(st->reason, "step") == 0 && s->hook.native_what[0] &&
             st->where && strncmp(st->where, "File ", 5) != 0)
        tdb_buf_addf(b, "step: into the native code of %s: %s", s->hook.native_what, st->where);
    else if (st->compact)
        tdb_buf_addf(b, "%s: %s", st->reason, st->where ? st->where : "done");
    else
        tdb_buf_addf(b, "stopped (%s)", st->reason);
}

/* "func (a=1, b=2) at file.c:3", or "0x... in func () from lib.so", the
 * way gdb names a stop's frame, from the *stopped record's frame. */
static void describe_frame(const json_t *frame, const char *named, tdb_buf *out)
{
    const char *func = tdb_mi_str(frame, "func"), *file = tdb_mi_str(frame, "file");
    if ((!func || strcmp(func, "??") == 0) && named)
        func = named; /* tdebug's own name for what gdb could not name */
    const char *line = tdb_mi_str(frame, "line"), *from = tdb_mi_str(frame, "from");
    const char *addr = tdb_mi_str(frame, "addr");
    if (!(file && line) && addr)
        tdb_buf_addf(out, "%s in ", addr);
    tdb_buf_adds(out, func ? func : "??");
    tdb_buf_adds(out, " (");
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(frame, "args"), i, a)
    {
        const char *name = tdb_mi_str(a, "name"), *value = tdb_mi_str(a, "value");
        tdb_buf_addf(out, "%s%s=%s", i ? ", " : "", name ? name : "?", value ? value : "...");
    }
    tdb_buf_adds(out, ")");
    if (file && line)
        tdb_buf_addf(out, " at %s:%s", file, line);
    else if (from)
        tdb_buf_addf(out, " from %s", from);
}

/* Line LINE of FILE as gdb lists it ("42\t..."), or 0 when unreadable. */
static int source_line(const char *file, long line, tdb_buf *out)
{
    FILE *f = file ? fopen(file, "re") : NULL;
    if (!f || line < 1) {
        if (f)
            fclose(f);
        return 0;
    }
    char *text = NULL;
    size_t cap = 0;
    long n = 0;
    ssize_t len = 0;
    while (n < line && (len = getline(&text, &cap, f)) >= 0)
        n++;
    int ok = n == line && len >= 0;
    if (ok) {
        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
            text[--len] = '\0';
        tdb_buf_addf(out, "%ld\t%s", line, text);
    }
    free(text);
    fclose(f);
    return ok;
}

/* The fault address of the signal the current thread got, or NULL. */
static void fault_address(tdb_session *s, const char *sig, tdb_buf *out)
{
    static const char *const faults[] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP"};
    int is_fault = 0;
    for (size_t i = 0; sig && i < sizeof(faults) / sizeof(faults[0]); i++)
        is_fault |= strcmp(sig, faults[i]) == 0;
    json_t *res = NULL;
    if (is_fault &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL,
                    "-data-evaluate-expression \"(unsigned long)$_siginfo._sifields._sigfault.si_addr\"") == 0) {
        const char *v = tdb_mi_str(res, "value");
        if (v)
            tdb_buf_addf(out, "0x%lx", strtoul(v, NULL, 0));
    }
    json_decref(res);
}

/* A copy of STR that lives as long as the current stop. */
static const char *stop_keep(tdb_session *s, const char *str)
{
    if (!str)
        return NULL;
    char *copy = tdb_xstrdup(str);
    tdb_ptrs_push(&s->stop_strs, &s->n_stop_strs, copy);
    return copy;
}

/* Record the stop described by ST (its strings are copied) and FRAME (the
 * *stopped record's frame, may be NULL): the stack, the message, the top
 * frame's name and source line. */
static int record_stop(tdb_session *s, const tdb_stop_info *st, const json_t *frame,
                       tdb_error *err)
{
    int hook_stop = s->hook.stop_is_hook;
    tdb_session_note_running(s); /* drop any earlier stop's state */
    s->hook.stop_is_hook = hook_stop;
    s->state = STOPPED;
    s->selected = 0;
    tdb_stop_info *out = &s->stop;
    memset(out, 0, sizeof(*out));
    out->reason = stop_keep(s, st->reason);
    out->module = stop_keep(s, st->module);
    out->library = stop_keep(s, st->library);
    out->signal_name = stop_keep(s, st->signal_name);
    out->signal_meaning = stop_keep(s, st->signal_meaning);
    out->fault_address = stop_keep(s, st->fault_address);
    out->bp_number = st->bp_number;
    out->bp_location = stop_keep(s, st->bp_location);
    out->thread = st->thread;
    out->return_value = stop_keep(s, st->return_value);
    out->compact = st->compact;
    out->exception = json_incref(st->exception);
    /* A prompt or commands at this stop need gdb's own view of the
     * libraries, and a crash's stack is worth its source lines (the
     * program is dying: speed no longer counts): a light session becomes
     * an ordinary one here. */
    if (s->light.on && (s->opts.gdb_view_at_stops || strcmp(st->reason, "signal") == 0) &&
        tdb_session_light_upgrade(s, err) < 0)
        return -1;
    if (tdb_session_collect_view(s, 0, &s->stop_view, err) < 0)
        return -1;
    s->have_stop_view = 1;
    s->have_stop = 1;
    out->view = &s->stop_view;
    tdb_session_python_describe(s, out);
    if (s->python_top > 0 && (st->compact || s->hook.stop_is_hook)) {
        /* A step or finish back into CPython (slot_nb_add, PyNumber_Add
         * over the Python line): that machinery is plumbing too; the stop
         * is the Python line. */
        tdb_stackview_fold_above(&s->stop_view, tdb_session_stack_flags(s), (size_t)s->python_top);
        s->python_top = 0;
    }
    out->frames = tdb_stackview_native_json(&s->stop_view);
    out->python_frames = tdb_session_view_python(s, &s->stop_view);
    out->stack = tdb_stackview_json(&s->stop_view, tdb_session_stack_flags(s));
    json_t *libs = json_array();
    for (size_t i = 0; i < s->n_libs; i++)
        json_array_append_new(libs, json_string(s->libs[i].path));
    out->libraries = libs;
    tdb_buf b = TDB_BUF_INIT;
    json_t *fresh = NULL;
    if (s->python_top >= 0 && (st->compact || s->hook.stop_is_hook)) {
        /* A stop whose top is Python reads as a Python line. */
        tdb_view_frame f;
        tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s), (size_t)s->python_top,
                               &f);
        tdb_buf_addf(&b, "File \"%s\", line %d, in %s", f.py->filename, f.py->line,
                     f.py->qualname);
        out->where = stop_keep(s, tdb_buf_str(&b));
        tdb_buf_reset(&b);
        if (source_line(f.py->filename, f.py->line, &b))
            out->source_line = stop_keep(s, tdb_buf_str(&b));
        tdb_buf_reset(&b);
        s->selected = s->python_top;
        frame = NULL;
    }
    const json_t *top_mi = json_array_get(s->stop_view.mi, 0);
    if (frame && s->light.synth && top_mi)
        frame = top_mi; /* tdebug's own frame names the stop: gdb knows no library */
    if (frame && !tdb_mi_str(frame, "line") && top_mi && tdb_mi_str(top_mi, "line")) {
        /* The library's symbols were read for the stack after gdb reported
         * the stop: its frame now has a source line, and arguments. */
        json_t *res = NULL;
        fresh = json_deep_copy(top_mi);
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-stack-list-arguments 2 0 0") == 0) {
            json_t *f0 = json_array_get(json_object_get(res, "stack-args"), 0);
            json_t *args = json_object_get(f0, "args");
            if (args)
                json_object_set(fresh, "args", args);
        }
        json_decref(res);
        frame = fresh;
    }
    if (frame) {
        const tdb_native_frame *top = s->stop_view.t.n_native ? &s->stop_view.t.native[0] : NULL;
        describe_frame(frame, top ? top->function : NULL, &b);
        out->where = stop_keep(s, tdb_buf_str(&b));
        const char *full = tdb_mi_str(frame, "fullname"), *line = tdb_mi_str(frame, "line");
        tdb_buf_reset(&b);
        if (full && line && source_line(full, atol(line), &b))
            out->source_line = stop_keep(s, tdb_buf_str(&b));
        tdb_buf_reset(&b);
    }
    describe_stop(s, out, &b);
    out->message = stop_keep(s, tdb_buf_str(&b));
    tdb_buf_free(&b);
    json_decref(fresh);
    return 0;
}

/* Handle a *stopped record.  Returns 1 when it is a stop to present
 * (s->stop), 0 when the core dealt with it (the program runs again or
 * ended), -1 on error. */
static int handle_stopped(tdb_session *s, const tdb_mi_record *r, tdb_error *err)
{
    const json_t *res = r->results;
    const char *reason = tdb_mi_str(res, "reason");
    json_t *frame = json_object_get(res, "frame");
    const char *thread = tdb_mi_str(res, "thread-id");
    tdb_stop_info st = {.reason = "stopped", .thread = thread ? atoi(thread) : 0};
    int last = s->last_resume;

    s->state = STOPPED;
    s->last_resume = -1;
    if (!reason) {
        /* A stop with no reason ends a step gdb started for a console
         * command, or an interrupt: name it by what was asked. */
        st.reason = s->interrupt_sent ? "interrupt"
                    : last == TDB_RESUME_STEP ? "step"
                    : last == TDB_RESUME_NEXT ? "next"
                    : last == TDB_RESUME_FINISH ? "finish" : "stopped";
        /* gdb 13 gives a finish no reason when it returns into a function
         * it has no symbol for (a static one of the stripped interpreter). */
        st.compact = !s->interrupt_sent && last >= TDB_RESUME_STEP;
    } else if (strcmp(reason, "exited-normally") == 0 || strcmp(reason, "exited") == 0) {
        const char *code = tdb_mi_str(res, "exit-code");
        s->exit_status = code ? (int)strtol(code, NULL, 8) : 0;
        s->have_exit = 1;
        s->state = EXITED;
        s->interrupt_sent = 0;
        return 0;
    } else if (strcmp(reason, "exited-signalled") == 0) {
        const char *sig = tdb_mi_str(res, "signal-name");
        int n = signal_number(sig);
        s->exit_status = 128 + (n ? n : 0);
        s->have_exit = 1;
        s->signalled = 1;
        s->state = EXITED;
        s->interrupt_sent = 0;
        say(s, "signalled", "program was killed by %s (%s)", sig ? sig : "a signal",
            tdb_mi_str(res, "signal-meaning") ? tdb_mi_str(res, "signal-meaning") : "?");
        return 0;
    } else if (strcmp(reason, "solib-event") == 0) {
        module_watch *loaded = NULL;
        if (handle_library_event(s, json_object_get(res, "added"), &loaded, err) < 0)
            return -1;
        if (!loaded && !s->interrupt_sent)
            return resume_mi(s, "-exec-continue", err) < 0 ? -1 : 0;
        if (!loaded)
            st.reason = "interrupt";
        else {
            st.reason = "loaded";
            st.module = loaded->name;
            st.library = loaded->library;
        }
    } else if (strcmp(reason, "breakpoint-hit") == 0) {
        const char *num = tdb_mi_str(res, "bkptno");
        int py = tdb_session_python_stopped(s, num ? atoi(num) : 0, res, &st, err);
        if (py < 0)
            return -1;
        if (py == 3)
            return 0; /* the core let it run */
        if (py == 1 && !s->interrupt_sent)
            return resume_mi(s, "-exec-continue", err) < 0 ? -1 : 0;
        if (py == 1)
            st.reason = "interrupt";
        bp_info *b = py ? NULL : num ? find_bp(s, atoi(num)) : NULL;
        if (py) {
            /* the hook's stop, filled in */
        } else if (b && b->kind == BP_IMPORT) {
            st.reason = "import";
            st.module = b->module;
            st.library = frame ? tdb_mi_str(frame, "from") : NULL;
            for (size_t k = 0; k < s->n_mods; k++)
                if (strcmp(s->mods[k].name, b->module) == 0) {
                    s->mods[k].stopped = 1;
                    if (!st.library) /* a frame with a source line has no from= */
                        st.library = s->mods[k].library;
                }
        } else {
            unsigned long pc = parse_addr(frame ? tdb_mi_str(frame, "addr") : NULL);
            for (size_t k = 0; b && k < b->n_locs; k++)
                if (b->locs[k].addr == pc)
                    b->locs[k].hits++;
            st.reason = b && b->kind == BP_CATCH ? "throw" : "breakpoint";
            if (b && b->kind == BP_CATCH) {
                /* The exception; a class the catchpoint does not want goes on. */
                int keep = tdb_session_throw_stop(s, b, &st.exception, err);
                if (keep < 0)
                    return -1;
                if (!keep) {
                    b->passed++;
                    if (!s->interrupt_sent)
                        return resume_mi(s, "-exec-continue", err) < 0 ? -1 : 0;
                    st.reason = "interrupt";
                }
            }
            st.bp_number = b ? b->id : (num ? atoi(num) : 0);
            st.bp_location = b ? b->location : NULL;
        }
        /* Hits are counted by gdb: =breakpoint-modified times="N". */
    } else if (strcmp(reason, "signal-received") == 0) {
        const char *sig = tdb_mi_str(res, "signal-name");
        int trap = sig && strcmp(sig, "SIGTRAP") == 0 ? tdb_session_light_trap(s, err) : 0;
        if (trap < 0)
            return -1;
        if (trap && !s->interrupt_sent)
            return resume_mi(s, "-exec-continue", err) < 0 ? -1 : 0;
        if (trap) {
            st.reason = "interrupt";
        } else if (sig && strcmp(sig, "SIGINT") == 0 && s->interrupt_sent) {
            st.reason = "interrupt";
        } else {
            st.reason = "signal";
            st.signal_name = sig;
            st.signal_meaning = tdb_mi_str(res, "signal-meaning");
        }
    } else if (strcmp(reason, "end-stepping-range") == 0) {
        st.reason = last == TDB_RESUME_NEXT ? "next" : last == TDB_RESUME_STEPI ? "stepi"
                    : last == TDB_RESUME_NEXTI ? "nexti" : "step";
        if (s->hook.native_prologue) {
            s->hook.native_prologue = 0; /* a Python step into native code */
            st.reason = "step";
        }
        st.compact = 1;
    } else if (strcmp(reason, "function-finished") == 0) {
        st.reason = "finish";
        st.compact = 1;
    } else if (strcmp(reason, "location-reached") == 0) {
        st.reason = "until";
        st.compact = 1;
    } else {
        st.reason = reason;
    }
    s->interrupt_sent = 0;

    tdb_buf ret = TDB_BUF_INIT, fault = TDB_BUF_INIT;
    const char *gdbvar = tdb_mi_str(res, "gdb-result-var"), *value = tdb_mi_str(res, "return-value");
    if (value)
        tdb_buf_addf(&ret, "%s = %s", gdbvar ? gdbvar : "Value returned", value);
    if (st.signal_name)
        fault_address(s, st.signal_name, &fault);
    st.return_value = ret.len ? tdb_buf_str(&ret) : NULL;
    st.fault_address = fault.len ? tdb_buf_str(&fault) : NULL;
    int rc = record_stop(s, &st, frame, err);
    json_decref(st.exception);
    if (rc == 0 && strcmp(s->stop.reason, "breakpoint") == 0)
        s->stop.args = tdb_session_stop_args(s);
    tdb_buf_free(&ret);
    tdb_buf_free(&fault);
    if (rc == 0 && strcmp(s->stop.reason, "python-breakpoint") == 0) {
        bp_info *pb = tdb_session_find_bp_id(s, s->stop.bp_number);
        if (pb && pb->temporary)
            tdb_session_bp_delete(s, pb); /* tbreak: once */
    }
    if (strcmp(reason ? reason : "", "breakpoint-hit") == 0) {
        /* gdb deleted a temporary breakpoint it hit: so do we, except the
         * import stops, whose hit is how a missed stop is told. */
        const char *num = tdb_mi_str(res, "bkptno"), *disp = tdb_mi_str(res, "disp");
        bp_info *b = num ? find_bp(s, atoi(num)) : NULL;
        if (b && b->kind == BP_NATIVE && disp && strcmp(disp, "del") == 0) {
            b->number = 0;
            tdb_session_bp_delete(s, b);
        }
    }
    return rc < 0 ? -1 : 1;
}

int tdb_session_poll_gdb(tdb_session *s, tdb_error *err)
{
    for (;;) {
        tdb_error local = {0};
        tdb_mi_record *r = tdb_gdb_next_event(s->gdb, 0, &local);
        if (!r) {
            if (local.set && local.code != ECANCELED) {
                tdb_error_set(err, local.code, "%s", local.msg);
                return TDB_WAIT_GDB_DIED;
            }
            if (!tdb_gdb_alive(s->gdb)) {
                tdb_error_set(err, EPIPE, "%s", tdb_gdb_death(s->gdb) ? tdb_gdb_death(s->gdb)
                                                                      : "gdb exited");
                return TDB_WAIT_GDB_DIED;
            }
            return 0;
        }
        int ended = 0;
        if (r->kind == TDB_MI_NOTIFY)
            handle_notify(s, r);
        else if (r->kind == TDB_MI_EXEC && strcmp(r->klass, "stopped") == 0) {
            const char *reason = tdb_mi_str(r->results, "reason");
            if (reason && strncmp(reason, "exited", 6) == 0) {
                handle_stopped(s, r, err);
                ended = s->state == EXITED;
            }
        }
        tdb_mi_record_free(r);
        if (ended)
            return TDB_WAIT_EXITED;
    }
}

int tdb_session_wait(tdb_session *s, int timeout_ms, int fd, tdb_error *err)
{
    int64_t deadline = timeout_ms >= 0 ? tdb_now_ms() + timeout_ms : -1;
    tdb_gdb_set_cancel_fd(s->gdb, fd);
    for (;;) {
        if (s->state == EXITED)
            return TDB_WAIT_EXITED;
        if (s->state == STOPPED && s->have_stop)
            return TDB_WAIT_STOPPED;
        int left = -1;
        if (deadline >= 0) {
            int64_t l = deadline - tdb_now_ms();
            if (l <= 0)
                return TDB_WAIT_TIMEOUT;
            left = (int)l;
        }
        tdb_error local = {0};
        tdb_mi_record *r = tdb_gdb_next_event(s->gdb, left, &local);
        if (!r) {
            if (local.code == ECANCELED)
                return TDB_WAIT_FD;
            if (local.set) {
                tdb_error_set(err, local.code, "%s", local.msg);
                return tdb_gdb_alive(s->gdb) ? -1 : TDB_WAIT_GDB_DIED;
            }
            continue; /* the deadline is checked above */
        }
        int rc = 0;
        switch (r->kind) {
        case TDB_MI_EXEC:
            if (strcmp(r->klass, "stopped") == 0)
                rc = handle_stopped(s, r, err);
            else if (strcmp(r->klass, "running") == 0 && s->state != RUNNING)
                tdb_session_note_running(s);
            break;
        case TDB_MI_NOTIFY:
            handle_notify(s, r);
            break;
        case TDB_MI_CONSOLE:
        case TDB_MI_LOG:
        case TDB_MI_TARGET:
            if (s->opts.verbose && s->fe.gdb_output)
                s->fe.gdb_output(s->fe.data, r->text, r->text_len);
            break;
        case TDB_MI_ERROR:
            /* Not MI: something wrote on gdb's stdout.  Pass it on. */
            if (s->fe.gdb_output) {
                char *line = tdb_xasprintf("%s\n", r->line);
                s->fe.gdb_output(s->fe.data, line, strlen(line));
                free(line);
            }
            break;
        default:
            break;
        }
        tdb_mi_record_free(r);
        if (rc < 0)
            return -1;
    }
}

const tdb_stop_info *tdb_session_stop(const tdb_session *s)
{
    return s->state == STOPPED && s->have_stop ? &s->stop : NULL;
}

/* ---- breakpoints ---- */

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

/* Add LOCATION's libraries to those whose symbols are read when they load
 * (the load catchpoint's regex), for a breakpoint whose library is not
 * mapped yet. */
static int widen_interest(tdb_session *s, tdb_error *err);
static int set_interest(tdb_session *s, char *re, tdb_error *err);
static int place_load_catchpoint(tdb_session *s, tdb_error *err);

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
    update_bp(s, bkpt);
    if (b->pending && s->state != NOT_STARTED && widen_interest(s, err) < 0)
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
        update_bp(s, json_object_get(res, "bkpt"));
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
        if (set_interest(s, tdb_buf_detach(&re), err) < 0 || place_load_catchpoint(s, err) < 0)
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

/* ---- setting up ---- */

tdb_session *tdb_session_new(const tdb_session_options *opts, const tdb_frontend *fe,
                             tdb_error *err)
{
    tdb_session *s = tdb_xcalloc(1, sizeof(*s));
    s->opts = *opts;
    if (fe)
        s->fe = *fe;
    s->py_bt = -1;
    s->last_resume = -1;
    s->cancel_fd = -1;
    s->saved_fds[0] = s->saved_fds[1] = s->saved_fds[2] = -1;
    tdb_mem_init(&s->light.mem, 0); /* no fd open yet */

    s->mods = tdb_xcalloc(opts->n_stop_at_import + opts->n_stop_at_load + 1, sizeof(*s->mods));
    for (size_t i = 0; i < opts->n_stop_at_import + opts->n_stop_at_load; i++) {
        int import = i < opts->n_stop_at_import;
        const char *name = import ? opts->stop_at_import[i]
                                  : opts->stop_at_load[i - opts->n_stop_at_import];
        module_watch *m = NULL;
        for (size_t k = 0; k < s->n_mods; k++)
            if (strcmp(s->mods[k].name, name) == 0)
                m = &s->mods[k];
        if (!m) {
            m = &s->mods[s->n_mods];
            m->name = name;
            m->regex = tdb_module_file_regex(name);
            if (regcomp(&m->re, m->regex, REG_NOSUB) != 0) {
                tdb_error_set(err, 0, "cannot compile the file pattern for module '%s'", name);
                free(m->regex);
                goto fail;
            }
            s->n_mods++;
        }
        if (import)
            m->at_import = 1;
        else
            m->at_load = 1;
    }

    /* Keep the program's stdio ours: gdb's stdin/stdout are MI pipes. */
    for (int i = 0; i < 3; i++) {
        int src = opts->program_stdio ? opts->program_stdio[i] : i;
        s->saved_fds[i] = fcntl(src, F_DUPFD_CLOEXEC, 10);
        if (s->saved_fds[i] < 0) {
            /* A closed stdio fd: give the program /dev/null there. */
            s->saved_fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (s->saved_fds[i] < 0) {
                tdb_error_errno(err, "cannot open /dev/null");
                goto fail;
            }
        }
    }
    s->opts.program_stdio = NULL; /* duplicated: the caller's may go */
    tdb_gdb_options gopts = {
        .stderr_fd = -1,
        .keep_fds = s->saved_fds,
        .n_keep_fds = 3,
        .own_pgrp = 1,
    };
    /* A light session starts the program while gdb starts. */
    s->light.wanted = tdb_session_light_applies(s);
    s->gdb = s->light.wanted ? tdb_gdb_spawn(&gopts, err) : tdb_gdb_start(&gopts, err);
    if (!s->gdb)
        goto fail;
    return s;
fail:
    tdb_session_free(s);
    return NULL;
}

const char *const tdb_session_interest_words[] = {"torch", "c10", NULL};

char **tdb_session_interest_dirs(const char *script_dir)
{
    char **dirs = NULL, cwd[4096];
    size_t n = 0;
    if (getcwd(cwd, sizeof(cwd)) && strcmp(cwd, "/") != 0)
        tdb_ptrs_push(&dirs, &n, tdb_xstrdup(cwd));
    if (script_dir && strcmp(script_dir, "/") != 0)
        tdb_ptrs_push(&dirs, &n, tdb_xstrdup(script_dir));
    tdb_ptrs_push(&dirs, &n, NULL);
    return dirs;
}

/* The basic regex of libraries whose symbols a --break may need, plus
 * --symbols; NULL when nothing beyond the watched modules is wanted. */
static char *interest_regex(tdb_session *s, const char *script_dir, int breaks)
{
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < s->opts.n_symbols; i++) {
        if (b.len)
            tdb_buf_adds(&b, "\\|");
        tdb_buf_adds(&b, s->opts.symbols[i]);
    }
    if (breaks) {
        /* A breakpoint may be in torch/c10 or in the user's own extensions,
         * which live under the working directory or beside the script. */
        for (const char *const *w = tdb_session_interest_words; *w; w++) {
            if (b.len)
                tdb_buf_adds(&b, "\\|");
            tdb_buf_adds(&b, *w);
        }
        char **dirs = tdb_session_interest_dirs(script_dir);
        for (char **d = dirs; *d; d++) {
            tdb_buf_adds(&b, "\\|^");
            bre_escape(&b, *d);
            tdb_buf_addc(&b, '/');
        }
        tdb_strv_free(dirs);
    }
    if (!b.len) {
        tdb_buf_free(&b);
        return NULL;
    }
    return tdb_buf_detach(&b);
}

static int set_interest(tdb_session *s, char *re, tdb_error *err)
{
    if (s->have_interest)
        regfree(&s->interest_re);
    s->have_interest = 0;
    free(s->interest);
    s->interest = re;
    if (!re)
        return 0;
    if (regcomp(&s->interest_re, re, REG_NOSUB) != 0) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "invalid --symbols regex in '%s'", re);
        return -1;
    }
    s->have_interest = 1;
    return 0;
}

/* (Re)place the load catchpoint for the watched modules and the
 * interesting libraries. */
static int place_load_catchpoint(tdb_session *s, tdb_error *err)
{
    tdb_buf re = TDB_BUF_INIT;
    json_t *res = NULL;
    int rc = 0;
    for (size_t i = 0; i < s->n_mods; i++) {
        if (re.len)
            tdb_buf_adds(&re, "\\|");
        tdb_buf_adds(&re, s->mods[i].regex);
    }
    if (s->have_interest) {
        if (re.len)
            tdb_buf_adds(&re, "\\|");
        tdb_buf_adds(&re, s->interest);
    }
    if (s->catch_load_bp > 0) {
        /* one catchpoint, the widest regex: the old one goes */
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", s->catch_load_bp);
        s->catch_load_bp = 0;
    }
    if (re.len) {
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "catch load %s", tdb_buf_str(&re));
        char *out = tdb_gdb_console(s->gdb, CMD_TIMEOUT_MS, err, tdb_buf_str(&cmd));
        tdb_buf_free(&cmd);
        rc = out ? 0 : -1;
        free(out);
        drain_notifications(s); /* its number: =breakpoint-created */
    }
    json_decref(res);
    tdb_buf_free(&re);
    return rc;
}

int tdb_session_add_interest(tdb_session *s, const char *regex, tdb_error *err)
{
    if (s->opts.all_symbols || (s->interest && strstr(s->interest, regex)))
        return 0;
    tdb_buf re = TDB_BUF_INIT;
    tdb_buf_addf(&re, "%s%s%s", s->interest ? s->interest : "", s->interest ? "\\|" : "", regex);
    if (set_interest(s, tdb_buf_detach(&re), err) < 0)
        return -1;
    /* Before the run, arm() places the catchpoint; one it placed already
     * must take the new regex too (a shared libpython added by Python
     * breakpoints after it). */
    return s->state == NOT_STARTED && s->catch_load_bp <= 0 ? 0 : place_load_catchpoint(s, err);
}

static int widen_interest(tdb_session *s, tdb_error *err)
{
    if (s->opts.all_symbols)
        return 0;
    /* Already covered: the break regex is in. */
    if (s->interest && strstr(s->interest, "torch\\|c10"))
        return 0;
    char *re = interest_regex(s, NULL, 1);
    if (set_interest(s, re, err) < 0)
        return -1;
    return place_load_catchpoint(s, err);
}

int tdb_session_prepare_interest(tdb_session *s, const char *script_dir, tdb_error *err)
{
    /* Breakpoints and catch throw placed before the program started (a
     * front-end's, tdb_session_breakpoint_add()) need the same symbols as
     * --break. */
    int user_bps = 0;
    for (size_t i = 0; i < s->n_bps; i++)
        user_bps |= s->bps[i].kind == BP_NATIVE;
    if (!s->opts.all_symbols &&
        set_interest(s, interest_regex(s, script_dir, s->opts.n_breaks > 0 || user_bps), err) < 0)
        return -1;
    if (s->stdcxx_interest && !s->opts.all_symbols &&
        set_interest(s, tdb_xasprintf("%s%s%s", s->interest ? s->interest : "",
                                      s->interest ? "\\|" : "", STDCXX_RE), err) < 0)
        return -1;
    return 0;
}

int tdb_session_place_load_catchpoint(tdb_session *s, tdb_error *err)
{
    return place_load_catchpoint(s, err);
}

/* Set up catchpoints and breakpoints before the program runs (or right
 * after attaching). */
static int arm(tdb_session *s, const char *script_dir, tdb_error *err)
{
    if (tdb_session_prepare_interest(s, script_dir, err) < 0 || place_load_catchpoint(s, err) < 0)
        return -1;
    for (size_t i = 0; i < s->opts.n_breaks; i++) {
        tdb_reply r = {0};
        if (tdb_session_break(s, s->opts.breaks[i], 0, &r, err) < 0) {
            tdb_reply_clear(&r);
            return -1;
        }
        if (r.error) {
            const char *msg = json_string_value(json_object_get(r.event, "message"));
            tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "%s --break '%s': %s",
                               tdb_break_location_kind(s->opts.breaks[i]) == TDB_BREAK_PYTHON_FILE ? "cannot place"
                                                                         : "gdb rejects",
                               s->opts.breaks[i], msg ? msg : "?");
            tdb_reply_clear(&r);
            return -1;
        }
        tdb_reply_clear(&r);
    }
    for (size_t i = 0; i < s->opts.n_catch_throw; i++) {
        tdb_reply r = {0};
        if (tdb_session_catch_throw(s, s->opts.catch_throw[i], &r, err) < 0) {
            tdb_reply_clear(&r);
            return -1;
        }
        if (r.error) {
            const char *msg = json_string_value(json_object_get(r.event, "message"));
            tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "cannot catch C++ throws: %s", msg ? msg : "?");
            tdb_reply_clear(&r);
            return -1;
        }
        tdb_reply_clear(&r);
    }
    return 0;
}

/* What the user asked for and did not get, said once the program ended:
 * stops that never happened, breakpoints that never bound or never hit.
 * Returns 1 when a requested stop is missing. */
static int report_missed(tdb_session *s)
{
    int missed = 0;
    for (size_t i = 0; i < s->n_mods; i++) {
        if (s->mods[i].stopped)
            continue;
        missed = 1;
        if (!s->mods[i].seen)
            say(s, "warning", "the program never imported '%s' (--stop-at-import): no library "
                              "matching '%s' was loaded",
                s->mods[i].name, s->mods[i].regex);
        else
            say(s, "warning", "'%s' was loaded but its init never ran before the program ended",
                s->mods[i].name);
    }
    for (size_t i = 0; i < s->n_bps; i++) {
        bp_info *b = &s->bps[i];
        if (b->kind == BP_NATIVE && b->hits && b->n_locs > 1) {
            /* Overloads: which were called, which not. */
            tdb_buf hit = TDB_BUF_INIT, not_hit = TDB_BUF_INIT;
            for (size_t k = 0; k < b->n_locs; k++) {
                tdb_buf *to = b->locs[k].hits ? &hit : &not_hit;
                if (to->len)
                    tdb_buf_adds(to, "; ");
                tdb_buf_adds(to, b->locs[k].what);
                if (b->locs[k].hits)
                    tdb_buf_addf(to, " (%d time%s)", b->locs[k].hits, b->locs[k].hits > 1 ? "s" : "");
            }
            if (not_hit.len)
                say(s, "note", "breakpoint '%s' bound to %zu locations; hit: %s; never hit: %s",
                    b->location, b->n_locs, tdb_buf_str(&hit), tdb_buf_str(&not_hit));
            tdb_buf_free(&hit);
            tdb_buf_free(&not_hit);
        }
        if (b->kind == BP_CATCH) {
            if (b->hits <= b->passed)
                say(s, "note", "catchpoint %d (%s) caught nothing", b->id, b->location);
            continue;
        }
        if (b->kind == BP_IMPORT || b->hits)
            continue;
        if (b->kind == BP_PYTHON) {
            missed = 1;
            say(s, "warning", "Python breakpoint '%s' was never hit%s", b->location,
                s->hook.failed ? ": Python breakpoints could not work in this process (see "
                                 "the warning above)"
                : b->py_line ? " (the program never ran that line of that file)"
                             : " (the program never called that function)");
            continue;
        }
        missed = 1;
        if (b->pending)
            say(s, "warning", "breakpoint '%s' never bound: no library the program loaded "
                              "defines it among those tdebug read symbols for (add --symbols "
                              "REGEX naming its library, or --all-symbols)",
                b->location);
        else
            tdb_session_emit(s, "warning",
                             json_pack("{s:i, s:s, s:s?}", "breakpoint", b->id, "location",
                                       b->location, "where", b->where),
                             "breakpoint '%s' was never hit; it bound to %s", b->location,
                             b->where ? b->where : "?");
    }
    return missed;
}

/* Wait up to MS for the program to stop after an interrupt; 0 once it did. */
static int wait_stopped(tdb_session *s, int ms)
{
    int64_t deadline = tdb_now_ms() + ms;
    while (tdb_now_ms() < deadline && s->state == RUNNING) {
        tdb_error err = {0};
        tdb_mi_record *r = tdb_gdb_next_event(s->gdb, 500, &err);
        if (!r) {
            if (err.set && err.code != ECANCELED)
                return -1;
            continue;
        }
        if (r->kind == TDB_MI_EXEC && strcmp(r->klass, "stopped") == 0) {
            const char *why = tdb_mi_str(r->results, "reason");
            if (why && strncmp(why, "exited", 6) == 0) {
                handle_stopped(s, r, &err);
            } else {
                s->state = STOPPED;
            }
        } else if (r->kind == TDB_MI_NOTIFY) {
            handle_notify(s, r);
        }
        tdb_mi_record_free(r);
    }
    return s->state == RUNNING ? -1 : 0;
}

/* The one-letter state of PID ('R', 'S', 'T', 't', 'Z'...), or 0. */
static char process_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* Put the process back the way it was before tdebug came: stopped if it was
 * stopped (and say so), running otherwise. */
static void restore_process_state(tdb_session *s)
{
    char now = process_state(s->pid);
    if (!now || now == 'Z' || now == 'X')
        return;
    if (s->state_before == 'T') {
        if (now != 'T')
            kill(s->pid, SIGSTOP);
        say(s, "note", "pid %d was stopped (SIGSTOP) before tdebug attached; it is left stopped: "
                       "'kill -CONT %d' resumes it",
            (int)s->pid, (int)s->pid);
    } else if (now == 'T') {
        kill(s->pid, SIGCONT);
    }
}

static void release_before_detach(tdb_session *s);

int tdb_session_end(tdb_session *s, tdb_end how)
{
    if (s->ended)
        return 0;
    s->ended = 1;
    int alive = s->gdb && tdb_gdb_alive(s->gdb);
    if (s->attached && s->paused && alive)
        release_before_detach(s);
    if (alive && s->state != EXITED && s->state != NOT_STARTED) {
        tdb_error err = {0};
        if (s->state == RUNNING) {
            s->interrupt_sent = 1;
            if (tdb_gdb_cmd(s->gdb, 10000, NULL, &err, "-exec-interrupt") == 0)
                wait_stopped(s, 10000);
        }
        if (s->state == STOPPED)
            tdb_session_python_end(s); /* no hook left in the process */
        if (s->state != EXITED) {
            /* Python breakpoints and hooks are undone before the process
             * goes on without tdebug. */
            if (s->attached || how == TDB_END_DETACH) {
                tdb_gdb_cmd(s->gdb, 30000, NULL, &err, "-target-detach");
                say(s, "detached", "detached from pid %d", (int)s->pid);
            } else {
                free(tdb_gdb_console(s->gdb, 30000, &err, "kill"));
            }
            s->state = EXITED;
        }
    }
    if (s->attached && s->pid > 0)
        restore_process_state(s);
    if (!alive && !s->attached && s->pid > 0 && !s->have_exit)
        /* gdb died under us; the program dies with it (tdebug-exec's
         * death signal), but make sure. */
        kill(s->pid, SIGKILL);
    tdb_session_light_end(s);
    return s->have_exit && !s->opts.started_by_tdebug ? report_missed(s) : 0;
}

/* Symbol loading policy, before any symbol file is read: no library's
 * symbols unless asked, and gdb's index cache in tdebug's cache directory
 * (later starts on the same interpreter skip rebuilding its index). */
int tdb_session_setup_symbols(tdb_session *s, tdb_error *err)
{
    if (!s->opts.all_symbols &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-gdb-set auto-solib-add off") < 0)
        return -1;
    /* Best effort: an unwritable cache only costs time. */
    char *dir = tdb_user_cache_dir("gdb-index", NULL);
    if (dir) {
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_adds(&cmd, "set index-cache directory ");
        tdb_buf_adds(&cmd, dir);
        if (console(s, CMD_TIMEOUT_MS, NULL, "%s", tdb_buf_str(&cmd)) == 0)
            console(s, CMD_TIMEOUT_MS, NULL, "set index-cache enabled on");
        tdb_buf_free(&cmd);
        free(dir);
    }
    return 0;
}

/* gdb reads CPython's debug info (python3-dbg: 11 MB without an index)
 * when it loads the interpreter, and its first backtrace expands ceval.c's
 * compile unit: 0.8 s and 1 s measured here, most of a session's cost.
 * tdebug reads Python frames from memory and names the interpreter's
 * functions from its symbol table instead, so unless --cpython-symbols
 * (or --all-symbols) the debug file is hidden from gdb while it loads the
 * interpreter, and shown again for every other library. */
void tdb_session_hide_cpython_debuginfo(tdb_session *s)
{
    json_t *res = NULL;
    if (s->opts.cpython_symbols || s->opts.all_symbols ||
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-gdb-show debug-file-directory") < 0)
        return;
    const char *dir = tdb_mi_str(res, "value");
    if (dir && console(s, CMD_TIMEOUT_MS, NULL,
                       "set debug-file-directory /nonexistent/tdebug-hides-cpython-debug-info") == 0)
        s->hidden_debug_dir = tdb_xstrdup(dir);
    json_decref(res);
}

void tdb_session_restore_debuginfo(tdb_session *s)
{
    if (!s->hidden_debug_dir)
        return;
    if (s->gdb) /* else gdb is gone (an attach to a process that died) */
        console(s, CMD_TIMEOUT_MS, NULL, "set debug-file-directory %s", s->hidden_debug_dir);
    free(s->hidden_debug_dir);
    s->hidden_debug_dir = NULL;
}

static char *dir_of(const char *path)
{
    char *copy = realpath(path, NULL);
    if (!copy)
        return NULL;
    char *slash = strrchr(copy, '/');
    if (slash && slash != copy)
        *slash = '\0';
    else if (slash)
        slash[1] = '\0';
    return copy;
}

int tdb_session_launch(tdb_session *s, char *const argv[], tdb_error *err)
{
    tdb_buf cmd = TDB_BUF_INIT;
    char *wrapper = NULL, *script_dir = NULL;
    int rc = -1;

    wrapper = tdb_companion_path("tdebug-exec");
    if (!wrapper) {
        tdb_error_set(err, ENOENT, "cannot find tdebug-exec beside tdebug or in %s (reinstall tdebug)",
                      TDB_LIBDIR);
        goto cleanup;
    }
    /* The script's directory, where the user's own extensions often are. */
    for (int i = 1; argv[i]; i++) {
        if (argv[i][0] != '-') {
            script_dir = dir_of(argv[i]);
            break;
        }
        if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "-m"))
            break;
        if (!strcmp(argv[i], "-X") || !strcmp(argv[i], "-W"))
            i++;
    }

    if (s->light.wanted) {
        int light = tdb_session_light_launch(s, argv, script_dir, err);
        if (light <= 0) {
            rc = light;
            goto cleanup;
        }
    }
    if (tdb_session_setup_symbols(s, err) < 0)
        goto cleanup;
    /* gdb starts the program through the shell (the only way it keeps
     * arguments with spaces intact) and our wrapper: the program gets
     * tdebug's stdio, its own process group, and dies with gdb. */
    tdb_buf_adds(&cmd, "set exec-wrapper ");
    tdb_shell_quote(&cmd, wrapper);
    tdb_buf_addf(&cmd, " --fds %d,%d,%d --pgrp --pdeathsig --", s->saved_fds[0], s->saved_fds[1],
                 s->saved_fds[2]);
    if (console(s, CMD_TIMEOUT_MS, err, "%s", tdb_buf_str(&cmd)) < 0 ||
        console(s, CMD_TIMEOUT_MS, err, "set startup-with-shell on") < 0)
        goto cleanup;
    tdb_buf_reset(&cmd);
    tdb_buf_adds(&cmd, "-file-exec-and-symbols ");
    tdb_mi_quote(&cmd, argv[0]);
    tdb_session_hide_cpython_debuginfo(s);
    int loaded = tdb_gdb_cmd(s->gdb, SYMBOLS_TIMEOUT_MS, NULL, err, "%s", tdb_buf_str(&cmd));
    tdb_session_restore_debuginfo(s);
    if (loaded < 0)
        goto cleanup;
    tdb_buf_reset(&cmd);
    tdb_buf_adds(&cmd, "set args");
    for (int i = 1; argv[i]; i++) {
        tdb_buf_addc(&cmd, ' ');
        tdb_shell_quote(&cmd, argv[i]);
    }
    if (console(s, CMD_TIMEOUT_MS, err, "%s", tdb_buf_str(&cmd)) < 0)
        goto cleanup;
    if (arm(s, script_dir, err) < 0)
        goto cleanup;
    if (tdb_session_python_launch(s, err) < 0)
        goto cleanup;
    s->state = STOPPED; /* resume_mi() wants a target it may run */
    if (resume_mi(s, "-exec-run", err) < 0) {
        s->state = NOT_STARTED;
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(wrapper);
    free(script_dir);
    tdb_buf_free(&cmd);
    return rc;
}

/* An fd for gdb's waits during an attach: readable when the target dies
 * (its pidfd) or the front-end's cancel fd is (Ctrl-C).  -1 when it cannot
 * be made (then only the cancel fd is watched). */
static int attach_watch_new(tdb_session *s, int *out_pidfd)
{
    *out_pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return -1;
    int fds[2] = {*out_pidfd, s->cancel_fd};
    for (int i = 0; i < 2; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        if (fds[i] >= 0)
            epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
    }
    return ep;
}

/* Is the target gone (exited or killed, a zombie included)? */
static int target_gone(tdb_session *s, int pidfd)
{
    struct pollfd p = {pidfd, POLLIN, 0};
    if (pidfd >= 0)
        return poll(&p, 1, 0) == 1;
    char st = process_state(s->pid);
    return !st || st == 'Z' || st == 'X';
}

/* A wait during an attach ended early (ECANCELED): the target died, or
 * the user interrupted.  Sets ERR. */
static void attach_cancelled(tdb_session *s, int pidfd, tdb_error *err)
{
    if (target_gone(s, pidfd)) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, ESRCH,
                           "pid %d exited while tdebug was attaching to it", (int)s->pid);
        s->state = EXITED;
    } else {
        tdb_error_set_exit(err, 130, ECANCELED, "interrupted while attaching to pid %d",
                           (int)s->pid);
    }
}

/* Wait for the *stopped that follows -target-attach, watching the target
 * and the user through WATCH (attach_watch_new()). */
static int wait_attach_stop(tdb_session *s, int watch, int pidfd, tdb_error *err)
{
    int64_t deadline = tdb_now_ms() + CMD_TIMEOUT_MS;
    tdb_gdb_set_cancel_fd(s->gdb, watch >= 0 ? watch : s->cancel_fd);
    while (tdb_now_ms() < deadline) {
        tdb_error local = {0};
        tdb_mi_record *r = tdb_gdb_next_event(s->gdb, 1000, &local);
        if (!r) {
            if (local.code == ECANCELED) {
                attach_cancelled(s, pidfd, err);
                return -1;
            }
            if (local.set) {
                tdb_error_set(err, local.code, "%s", local.msg);
                return -1;
            }
            continue;
        }
        int stopped = r->kind == TDB_MI_EXEC && strcmp(r->klass, "stopped") == 0;
        if (r->kind == TDB_MI_NOTIFY)
            handle_notify(s, r);
        tdb_mi_record_free(r);
        if (stopped) {
            s->state = STOPPED;
            return 0;
        }
    }
    tdb_error_set(err, ETIMEDOUT, "gdb attached to pid %d but never reported it stopped",
                  (int)s->pid);
    return -1;
}

/* ---- a paused process ----
 *
 * The preloaded library (lib/) pauses a process at the first point where
 * the loader's list is consistent after mapping torch._C: _C and all its
 * dependencies are mapped, nothing is relocated, no constructor and no
 * PyInit__C has run.  So unlike a plain attach, the module it waits at is
 * mapped but NOT imported: its import stop is armed in the mapped library
 * exactly as arm_import_stop() does when a load catchpoint reports it,
 * then the process is released (a variable write, while gdb holds it
 * stopped) and continued.  The waiting thread holds the loader's lock, so
 * nothing here may make the process call the loader (no gdb 'call').
 */

/* The announced file the process waits at, or NULL. */
static const char *paused_path(tdb_session *s)
{
    return s->paused ? json_string_value(json_object_get(s->paused, "path")) : NULL;
}

/* Is PATH (as gdb names it) the file the process waits at?  gdb and the
 * library both take the name from the link map; compare files too. */
static int paused_at(tdb_session *s, const char *path)
{
    const char *at = paused_path(s);
    struct stat a, b;

    if (!at || !path)
        return 0;
    return strcmp(at, path) == 0 || (stat(at, &a) == 0 && stat(path, &b) == 0 &&
                                     a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

/* The announcement may be a second old: a process whose wait timed out
 * meanwhile went on with its import (its module's init has run, or runs
 * in a moment: either way there is nothing to wait at), and is attached
 * to as any other.  The library's state says (tdebug_preload.h); when it
 * cannot be read (no symbols), trust the announcement.  The cast: gdb
 * finds the symbol but not its debug info in the audit namespace. */
static void check_still_paused(tdb_session *s)
{
    json_t *res = NULL;
    long state;

    if (!json_is_string(json_object_get(s->paused, "release_symbol")))
        return; /* wait_for_debugger(): it waits until it runs under us */
    console(s, SYMBOLS_TIMEOUT_MS, NULL, "sharedlibrary libtdebug-preload");
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL,
                    "-data-evaluate-expression \"*(int *)&%s\"", TDEBUG_PRELOAD_SYM_STATE) == 0 &&
        tdb_parse_long(tdb_mi_str(res, "value"), -1000, 1000, &state) == 0 &&
        state != TDEBUG_STATE_WAITING) {
        say(s, "warning", "pid %d stopped waiting before tdebug attached (%s): its import of "
                          "%s went on without tdebug",
            (int)s->pid,
            state == TDEBUG_STATE_TIMED_OUT ? "its wait timed out" : "something else released it",
            paused_path(s) ? paused_path(s) : "the module");
        json_decref(s->paused);
        s->paused = NULL;
    }
    json_decref(res);
}

/* Module M's file is the one the process waits at: stop in its PyInit
 * (--stop-at-import) or right here (--stop-at-load). */
static int arm_paused_module(tdb_session *s, module_watch *m, tdb_error *err)
{
    if (m->at_import && arm_import_stop(s, m, m->library, err) < 0)
        return -1;
    if (m->at_load && !s->paused_load)
        s->paused_load = m;
    if (!m->at_import)
        m->stopped = 1;
    return 0;
}

/* Write the release (tdb_preload_release_commands()); the process goes on
 * when gdb continues or detaches.  A process paused by
 * tdebug.wait_for_debugger() has nothing to write: running under gdb
 * releases it. */
static int release_paused(tdb_session *s, tdb_error *err)
{
    char **cmds = tdb_preload_release_commands(s->paused, 0);
    int rc = 0;

    for (char **c = cmds; *c && rc == 0; c++)
        if (console(s, CMD_TIMEOUT_MS, err, "%s", *c) < 0)
            rc = -1;
    if (rc == 0 && cmds[0])
        s->paused_released = 1;
    tdb_strv_free(cmds);
    return rc;
}

/* Before gdb detaches, whatever ended the session: a paused process is
 * never left waiting on tdebug.  Its release is written if it was not
 * yet; one from wait_for_debugger() that never ran under gdb is let run
 * for a moment, long enough for its 20 ms poll to see the tracer. */
static void release_before_detach(tdb_session *s)
{
    if (s->paused_released || s->state != STOPPED)
        return;
    if (release_paused(s, NULL) < 0 || s->paused_released)
        return;
    if (resume_mi(s, "-exec-continue", NULL) < 0)
        return;
    int64_t deadline = tdb_now_ms() + 500;
    while (s->state == RUNNING) {
        int64_t left = deadline - tdb_now_ms();
        tdb_mi_record *r = left > 0 ? tdb_gdb_next_event(s->gdb, (int)left, NULL) : NULL;
        if (!r)
            break; /* tdb_session_end() interrupts it */
        if (r->kind == TDB_MI_EXEC && strcmp(r->klass, "stopped") == 0) {
            const char *why = tdb_mi_str(r->results, "reason");
            s->state = why && strncmp(why, "exited", 6) == 0 ? EXITED : STOPPED;
        }
        tdb_mi_record_free(r);
    }
}

int tdb_session_gdb_attach(tdb_session *s, pid_t pid, tdb_error *err)
{
    int pidfd = -1, watch = attach_watch_new(s, &pidfd);
    tdb_gdb_set_cancel_fd(s->gdb, watch >= 0 ? watch : s->cancel_fd);
    int attached = tdb_gdb_cmd(s->gdb, SYMBOLS_TIMEOUT_MS, NULL, err, "-target-attach %d", (int)pid);
    if (attached == 0)
        attached = wait_attach_stop(s, watch, pidfd, err);
    else if (err->code == ECANCELED) {
        tdb_error_clear(err);
        attach_cancelled(s, pidfd, err);
    } else if (tdb_gdb_alive(s->gdb) && target_gone(s, pidfd)) {
        /* gdb's words for it vary ("Unable to attach: program terminated
         * with signal SIGKILL", "Couldn't get registers: No such process"). */
        tdb_error local = *err;
        tdb_error_clear(err);
        for (char *nl; (nl = strchr(local.msg, '\n'));)
            *nl = nl[1] ? ' ' : '\0';
        tdb_error_set_exit(err, TDB_EXIT_FAIL, ESRCH,
                           "pid %d exited while tdebug was attaching to it (gdb: %s)", (int)pid,
                           local.msg);
        s->state = EXITED;
    }
    tdb_gdb_set_cancel_fd(s->gdb, s->cancel_fd);
    if (watch >= 0)
        close(watch);
    if (pidfd >= 0)
        close(pidfd);
    if (attached < 0 && (err->code == ESRCH || err->code == ECANCELED)) {
        /* gdb may be stuck in its attach of a process that died: it goes,
         * and with it its hold on the zombie, which its parent reaps. */
        if (err->code == ESRCH) {
            tdb_gdb_close(s->gdb, 500);
            s->gdb = NULL;
        }
        return -1;
    }
    if (attached < 0 && s->state != STOPPED) {
        tdb_error local = *err;
        tdb_error_clear(err);
        if (!tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            return -1;
        }
        /* gdb may say it in two lines ("warning: ... already traced by
         * ...", "ptrace: Operation not permitted."): one line. */
        for (char *nl; (nl = strchr(local.msg, '\n'));)
            *nl = nl[1] ? ' ' : '\0';
        /* gdb says "ptrace: Operation not permitted." / "No such process." */
        int code = strstr(local.msg, "not permitted") ? EPERM
                   : strstr(local.msg, "No such process") ? ESRCH : local.code;
        tdb_error_set_exit(err, TDB_EXIT_FAIL, code,
                           "cannot attach to pid %d: %s (see 'tdebug doctor')", (int)pid, local.msg);
        return -1;
    }
    if (attached < 0)
        return -1;
    return 0;
}

int tdb_session_attach(tdb_session *s, pid_t pid, const json_t *announcement,
                       tdb_attach_start *out, tdb_error *err)
{
    int have_stops = s->n_mods || s->opts.n_breaks || s->opts.n_catch_throw;
    size_t already = 0;

    if (s->light.wanted) {
        /* opts.light is for a launch: gdb was only spawned */
        s->light.wanted = 0;
        if (tdb_gdb_handshake(s->gdb, err) < 0)
            return -1;
    }
    s->attached = 1;
    s->pid = pid;
    if (announcement)
        s->paused = json_deep_copy(announcement);
    s->state_before = process_state(pid);
    if (tdb_session_setup_symbols(s, err) < 0)
        return -1;
    tdb_session_hide_cpython_debuginfo(s);
    int attached = tdb_session_gdb_attach(s, pid, err);
    tdb_session_restore_debuginfo(s);
    if (attached < 0)
        return -1;
    drain_notifications(s);
    if (s->paused)
        check_still_paused(s);
    /* Which requested modules are already initialised: their PyInit ran
     * long ago, so a breakpoint on it would resolve and never fire. */
    for (size_t i = 0; i < s->n_mods; i++) {
        module_watch *m = &s->mods[i];
        for (size_t k = 0; k < s->n_libs; k++) {
            if (regexec(&m->re, s->libs[k].path, 0, NULL, 0) == 0) {
                m->seen = 1;
                m->library = tdb_xstrdup(s->libs[k].path);
                if (paused_at(s, s->libs[k].path)) {
                    if (arm_paused_module(s, m, err) < 0)
                        return -1;
                    break;
                }
                already++;
                m->stopped = 1; /* nothing to wait for: not a missed stop */
                say(s, "warning", "'%s' is already %s in pid %d (%s): %s before tdebug attached, "
                                  "so there is nothing to stop at; use --break on a function it "
                                  "runs, or start the program with 'tdebug run'",
                    m->name, m->at_import ? "imported" : "loaded", (int)pid, s->libs[k].path,
                    m->at_import ? "its init ran" : "it was mapped");
                break;
            }
        }
    }
    /* arm() reads the symbols each breakpoint needs, library by library;
     * --symbols are read now. */
    if (arm(s, NULL, err) < 0)
        return -1;
    if (s->opts.n_symbols && s->interest) {
        tdb_buf re = TDB_BUF_INIT;
        for (size_t i = 0; i < s->opts.n_symbols; i++)
            tdb_buf_addf(&re, "%s%s", i ? "\\|" : "", s->opts.symbols[i]);
        int rc = tdb_session_load_symbols(s, tdb_buf_str(&re), err);
        tdb_buf_free(&re);
        if (rc < 0)
            return -1;
    }
    if (s->paused && release_paused(s, err) < 0)
        return -1;

    if (have_stops && already == s->n_mods && s->opts.n_breaks == 0 && s->opts.n_catch_throw == 0)
        *out = TDB_ATTACH_NOTHING;
    else if (s->paused_load) {
        /* Where it waits is the --stop-at-load stop itself. */
        tdb_stop_info st = {.reason = "loaded", .module = s->paused_load->name,
                            .library = s->paused_load->library};
        if (record_stop(s, &st, NULL, err) < 0)
            return -1;
        *out = TDB_ATTACH_AT_LOAD;
    } else if (s->paused && have_stops)
        *out = TDB_ATTACH_RELEASED;
    else
        *out = TDB_ATTACH_STOPPED;
    return 0;
}

/* The "attached" stop: the process as it was when tdebug came. */
int tdb_session_attached_stop(tdb_session *s, tdb_error *err)
{
    tdb_stop_info st = {.reason = "attached"};
    return record_stop(s, &st, NULL, err);
}

/* ---- queries ---- */

void tdb_session_set_cancel_fd(tdb_session *s, int fd)
{
    s->cancel_fd = fd;
    if (s->gdb)
        tdb_gdb_set_cancel_fd(s->gdb, fd);
}

pid_t tdb_session_pid(const tdb_session *s)
{
    return s->pid;
}

int tdb_session_attached(const tdb_session *s)
{
    return s->attached;
}

int tdb_session_running(const tdb_session *s)
{
    return s->state == RUNNING;
}

int tdb_session_program_ended(const tdb_session *s)
{
    return s->have_exit;
}

int tdb_session_exit_status(const tdb_session *s, int *signalled)
{
    if (signalled)
        *signalled = s->signalled;
    return s->exit_status;
}

int tdb_session_gdb_fd(const tdb_session *s)
{
    return tdb_gdb_fd(s->gdb);
}

int tdb_session_stops_pending(const tdb_session *s)
{
    for (size_t i = 0; i < s->n_mods; i++)
        if (!s->mods[i].stopped)
            return 1;
    return 0;
}

int tdb_session_has_stops(const tdb_session *s)
{
    return s->n_mods || s->opts.n_breaks || s->opts.n_catch_throw;
}

unsigned tdb_session_stack_flags(const tdb_session *s)
{
    return s->opts.raw ? TDB_STACK_RAW : 0;
}

void tdb_reply_clear(tdb_reply *r)
{
    json_decref(r->event);
    tdb_buf_free(&r->text);
    memset(r, 0, sizeof(*r));
}

void tdb_session_free(tdb_session *s)
{
    if (!s)
        return;
    if (s->gdb)
        tdb_session_end(s, TDB_END_AUTO);
    tdb_session_note_running(s);
    tdb_session_drop_stop_readers(s);
    tdb_session_values_free(s);
    tdb_py_close(s->py);
    tdb_symcache_free(s->symcache);
    free(s->hidden_debug_dir);
    free(s->light.sysroot);
    free(s->light.exe);
    free(s->light.script_dir);
    free(s->light.audit);
    tdb_strv_free(s->light.ln_real);
    tdb_strv_free(s->light.ln_name);
    tdb_mem_close(&s->light.mem);
    free(s->hook.lib);
    free(s->hook.failed);
    tdb_gdb_close(s->gdb, 5000);
    for (size_t i = 0; i < s->n_libs; i++)
        free(s->libs[i].path);
    free(s->libs);
    for (size_t i = 0; i < s->n_bps; i++)
        free_bp(&s->bps[i]);
    free(s->bps);
    for (size_t i = 0; i < s->n_mods; i++) {
        free(s->mods[i].regex);
        free(s->mods[i].library);
        regfree(&s->mods[i].re);
    }
    free(s->mods);
    if (s->have_interest)
        regfree(&s->interest_re);
    free(s->interest);
    json_decref(s->paused);
    for (int i = 0; i < 3; i++)
        if (s->saved_fds[i] >= 0)
            close(s->saved_fds[i]);
    free(s);
}
