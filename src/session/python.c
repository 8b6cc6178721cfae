/*
 * session/python.c: Python breakpoints (FILE.py:LINE, FILE.py:FUNCTION)
 * and stepping from Python into the C/C++ it calls and back, in every
 * session, through the library tdebug loads into the process
 * (lib/tdebug_pyhook.h; built per CPython version as
 * pyhook/libtdebug-pyhook-cpython-3X.so).
 *
 * The protocol is the header's: at a safe point (a thread holding the GIL
 * at the entry of _PyEval_EvalFrameDefault, or of PyErr_CheckSignals,
 * which a pending call makes the main thread run) gdb loads the library
 * and installs it; tdebug writes its breakpoint table and step requests
 * into the library's control block (gdb's memory commands: no call), and
 * keeps a gdb breakpoint on tdebug_pyhook_stop, which the library calls
 * with a report when a breakpoint or a step ends.  A step into native code
 * is reported as the address of the C function about to be called: tdebug
 * puts a temporary breakpoint there.  At the end the library is told to
 * remove itself (a memory write), so a process tdebug leaves runs with no
 * hook and at its normal speed.
 */
#include "session/internal.h"

#include "tdebug_pyhook.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(tdb_pyhook_report) <= sizeof(((pyhook_state *)0)->report),
               "pyhook_state.report holds a tdb_pyhook_report");

/* A step from the user's code goes through at most this many lines of the
 * Python of others before it stops anyway (a few ms each). */
#define DEEP_LINES_MAX 2000

/* ---- locations ---- */

/* Is LINE of TEXT code a breakpoint can stop at: not blank, not a comment
 * alone?  (A docstring or a continuation line stops nowhere either, but
 * the library's binding says so: these are the common slips.) */
static int is_code_line(const char *text)
{
    while (isspace((unsigned char)*text))
        text++;
    return *text && *text != '#';
}

/* For a line breakpoint in a file tdebug can read: the first line at or
 * after LINE holding code, or -1 when there is none (*NLINES: the file's
 * length).  The file's lines are read once for a run of breakpoints in it
 * (a thousand breakpoints in one file read it once, not a thousand times). */
static int code_line_from(tdb_session *s, const char *file, int line, int *nlines)
{
    pyhook_state *h = &s->hook;
    struct stat st;
    if (stat(file, &st) < 0)
        return line;
    if (!h->lines_file || strcmp(h->lines_file, file) != 0 || st.st_size != h->lines_size ||
        st.st_mtim.tv_sec != h->lines_mtime.tv_sec || st.st_mtim.tv_nsec != h->lines_mtime.tv_nsec) {
        FILE *f = fopen(file, "re");
        char *text = NULL;
        size_t cap = 0, n = 0, ncap = 0;
        if (!f)
            return line;
        free(h->lines_file);
        free(h->lines_code);
        h->lines_code = NULL;
        while (getline(&text, &cap, f) >= 0) {
            TDB_GROW(h->lines_code, n, ncap);
            h->lines_code[n++] = (unsigned char)is_code_line(text);
        }
        free(text);
        fclose(f);
        h->lines_file = tdb_xstrdup(file);
        h->lines_n = (int)n;
        h->lines_size = st.st_size;
        h->lines_mtime = st.st_mtim;
    }
    *nlines = h->lines_n;
    for (int n = line; n <= h->lines_n; n++)
        if (n >= 1 && h->lines_code[n - 1])
            return n;
    return -1;
}

/* ---- log points ---- */

/* The FIFO the hook writes log points' lines to (lib/tdebug_pyhook.h):
 * made and opened for reading (so the hook's open for writing finds a
 * reader) before its path is written in the control block.  Read and
 * write: with a writer of its own it never reads as ended (an ended FIFO
 * is always readable) when the program closes it. */
static int open_log(tdb_session *s, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    if (h->log_path)
        return 0;
    char *dir = tdb_private_dir("tdebug-log", err);
    if (!dir)
        return -1;
    char *path = tdb_xasprintf("%s/log", dir);
    free(dir);
    if (strlen(path) >= TDB_PYHOOK_LOG_PATH_MAX || mkfifo(path, 0600) < 0 ||
        (h->log_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
        tdb_error_errno(err, "cannot make the log points' FIFO: mkfifo '%s'", path);
        free(path);
        return -1;
    }
    h->log_path = path;
    char field[TDB_PYHOOK_LOG_PATH_MAX] = "";
    snprintf(field, sizeof(field), "%s", path);
    return tdb_hook_write_mem(s, CONTROL(s, log_path), field, sizeof(field), err);
}

int tdb_session_python_log_fd(const tdb_session *s)
{
    return s->hook.log_fd > 0 ? s->hook.log_fd : -1;
}

void tdb_session_python_drain_log(tdb_session *s)
{
    pyhook_state *h = &s->hook;
    if (h->log_fd <= 0)
        return;
    char buf[65536];
    ssize_t n;
    while ((n = read(h->log_fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            tdb_buf_add(&h->log_tail, buf, (size_t)n);
    size_t at = 0;
    while (at < h->log_tail.len) {
        const char *rec = h->log_tail.s + at, *end = memchr(rec, 0, h->log_tail.len - at);
        if (!end)
            break;
        char *tab = strchr(rec, '\t');
        int id = atoi(rec);
        tdb_session_emit(s, "log", json_pack("{s:i}", "breakpoint", id), "%s", tab ? tab + 1 : rec);
        at = (size_t)(end - h->log_tail.s) + 1;
    }
    if (at) {
        memmove(h->log_tail.s, h->log_tail.s + at, h->log_tail.len - at);
        h->log_tail.len -= at;
        h->log_tail.s[h->log_tail.len] = '\0';
    }
}

static void close_log(tdb_session *s)
{
    pyhook_state *h = &s->hook;
    if (h->log_fd > 0) {
        tdb_session_python_drain_log(s);
        close(h->log_fd);
    }
    h->log_fd = -1;
    if (h->log_path) {
        unlink(h->log_path);
        char *slash = strrchr(h->log_path, '/');
        *slash = 0;
        rmdir(h->log_path);
        free(h->log_path);
        h->log_path = NULL;
    }
    tdb_buf_free(&h->log_tail);
}

/* ---- loading the library ---- */

static void hook_failed(tdb_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hook_failed(tdb_session *s, const char *fmt, ...)
{
    tdb_buf b = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    free(s->hook.failed);
    s->hook.failed = tdb_buf_detach(&b);
    s->hook.state = PYHOOK_FAILED;
    say(s, "warning", "Python breakpoints cannot stop in pid %d: %s", (int)s->pid, s->hook.failed);
}

/* The library for the process's CPython ("3.11.2" -> ...-311.so):
 * $TDEBUG_PYHOOK names one, else pyhook/ beside tdebug or in its libdir. */
static char *find_library(tdb_session *s)
{
    const char *env = getenv("TDEBUG_PYHOOK");
    if (env && *env)
        return access(env, R_OK) == 0 ? tdb_xstrdup(env) : NULL;
    unsigned major = 0, minor = 0;
    if (!s->py || sscanf(tdb_py_version(s->py), "%u.%u", &major, &minor) != 2)
        return NULL;
    char *name = tdb_xasprintf("pyhook/libtdebug-pyhook-cpython-%u%u.so", major, minor);
    char *path = tdb_companion_path(name);
    free(name);
    return path;
}

/* Stop the process at a safe point soon: at the entry of the evaluator
 * (any Python call), or of PyErr_CheckSignals, which a pending call makes
 * the main thread run at its next instruction boundary even inside a loop
 * that calls nothing (3.11 runs Python-to-Python calls inline).  WITH_CALL:
 * the process is stopped now and may take that pending call (it is made
 * first: gdb lets other threads run during a call, and one reaching a
 * breakpoint would abandon it). */
static int arm_safe_point(tdb_session *s, int with_call, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    /* A program not started yet: where the interpreter, initialized,
     * starts the program (the first Python calls run before that, when
     * CPython may not be called yet). */
    const char *where[] = {s->state == NOT_STARTED ? "*Py_RunMain" : "*_PyEval_EvalFrameDefault",
                           with_call ? "*PyErr_CheckSignals" : NULL};
    if (h->state != PYHOOK_NONE && !(h->state == PYHOOK_ARMING && !h->safe_bps[0] && !h->safe_bps[1]))
        return 0;
    if (!s->opts.all_symbols)
        tdb_session_load_symbols(s, LIBPYTHON_RE, NULL);
    if (with_call) {
        uint64_t rc = 1;
        tdb_error local = {0};
        if (tdb_hook_eval_u64(s, "(int) Py_AddPendingCall(PyErr_CheckSignals, 0)", &rc, &local) < 0 ||
            rc != 0) {
            /* Not fatal: the next Python call is a safe point too. */
            if (!tdb_gdb_alive(s->gdb)) {
                tdb_error_set(err, local.code, "%s", local.msg);
                return -1;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        json_t *res = NULL;
        h->safe_bps[i] = 0;
        if (!where[i])
            continue;
        /* In a shared libpython not mapped yet (a program not started),
         * the pending form binds when it loads (its symbols are read). */
        /* A light session's gdb knows no name: the address. */
        char *at = tdb_session_light_location(s, where[i] + 1);
        int placed = tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-break-insert %s",
                                 at ? at : where[i]);
        free(at);
        if (placed == 0 ||
            (s->state == NOT_STARTED &&
             tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-break-insert -f %s", where[i] + 1) == 0))
            h->safe_bps[i] = atoi(tdb_mi_str(json_object_get(res, "bkpt"), "number") ?: "0");
        json_decref(res);
    }
    if (!h->safe_bps[0] && !h->safe_bps[1]) {
        hook_failed(s, "gdb finds no %s in the interpreter (not CPython?)", where[0] + 1);
        return 0;
    }
    h->state = PYHOOK_ARMING;
    return 0;
}

/* At a safe point: load the library, write the table, install, and keep a
 * breakpoint on tdebug_pyhook_stop.  Failures are said and leave Python
 * breakpoints pending; only gdb's death is an error. */
static int load_and_install(tdb_session *s, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    tdb_error local = {0};
    uint64_t handle = 0, v = 0;
    char *lib = NULL;

    for (int i = 0; i < 2; i++)
        if (h->safe_bps[i])
            tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", h->safe_bps[i]);
    h->safe_bps[0] = h->safe_bps[1] = 0;
    tdb_session_make_stop_readers(s);
    if (h->loaded)
        goto loaded;
    lib = find_library(s);
    const char *named = getenv("TDEBUG_PYHOOK");
    if (!lib && named && *named) {
        hook_failed(s, "TDEBUG_PYHOOK names '%s', which cannot be read (%s): unset it to use "
                       "the library built for this CPython", named, strerror(errno));
        goto done;
    }
    if (!lib) {
        hook_failed(s, s->py ? "tdebug has no hook library for its Python %s (build it: 'make "
                               "pyhook PYTHON=/path/to/python%.4s' where that interpreter's "
                               "headers are installed)"
                             : "tdebug cannot read this interpreter (%s%s)",
                    s->py ? tdb_py_version(s->py) : "see the warning above",
                    s->py ? tdb_py_version(s->py) : "");
        goto done;
    }
    tdb_buf expr = TDB_BUF_INIT;
    tdb_buf_adds(&expr, "(void *) dlopen(\"");
    for (const char *p = lib; *p; p++) {
        if (*p == '"' || *p == '\\')
            tdb_buf_addc(&expr, '\\');
        tdb_buf_addc(&expr, *p);
    }
    tdb_buf_adds(&expr, "\", 2)");
    int rc = tdb_hook_eval_u64(s, tdb_buf_str(&expr), &handle, &local);
    tdb_buf_free(&expr);
    if (rc < 0 || !handle) {
        if (!tdb_gdb_alive(s->gdb))
            goto gdb_died;
        hook_failed(s, "cannot load '%s' into it: %s", lib, rc < 0 ? local.msg : "dlopen failed");
        goto done;
    }
    if (!s->light.on) /* else by address, until an upgrade reads them */
        tdb_session_load_symbols(s, PYHOOK_LIB_RE, NULL);
    h->loaded = 1;
    h->lib = lib;
    lib = NULL;
    if (tdb_hook_eval_u64(s, "(unsigned long) &tdebug_pyhook_control", &h->control, &local) < 0 ||
        !h->control) {
        hook_failed(s, "'%s' was loaded but gdb finds no tdebug_pyhook_control in it", h->lib);
        goto done;
    }
    tdb_pyhook_control head;
    size_t head_len = offsetof(tdb_pyhook_control, installed);
    if (tdb_hook_read_mem(s, h->control, &head, head_len, &local) < 0 || head.magic != TDB_PYHOOK_MAGIC ||
        head.abi != TDB_PYHOOK_ABI || head.size != sizeof(tdb_pyhook_control)) {
        hook_failed(s, "'%s' is not the hook this tdebug speaks to (magic, ABI or size differ: "
                       "rebuild tdebug)", h->lib);
        goto done;
    }
loaded:
    h->state = PYHOOK_READY;
    if (open_log(s, &local) < 0)
        goto write_failed;
    uint64_t gen = 0;
    tdb_hook_read_mem(s, CONTROL(s, generation), &gen, sizeof(gen), NULL);
    h->generation = gen;
    if (tdb_hook_read_mem(s, CONTROL(s, table), &h->table, sizeof(h->table), &local) < 0 ||
        tdb_hook_read_mem(s, CONTROL(s, capacity), &h->capacity, sizeof(h->capacity), &local) < 0)
        goto write_failed;
    if (tdb_hook_write_my_code(s, &local) < 0 || tdb_hook_write_all_slots(s, &local) < 0 ||
        tdb_hook_table_changed(s, &local) < 0)
        goto write_failed;
    if (tdb_hook_eval_u64(s, "(int) tdebug_pyhook_install()", &v, &local) < 0 || (int)v != 0) {
        char why[256] = "";
        tdb_hook_read_mem(s, CONTROL(s, error), why, sizeof(why) - 1, NULL);
        if (!tdb_gdb_alive(s->gdb))
            goto gdb_died;
        if (strncmp(why, "not at a safe point", 19) == 0 && h->retries++ < 100) {
            /* This thread may not call CPython now: the next Python call
             * may (the library stays loaded). */
            h->state = PYHOOK_ARMING;
            if (arm_safe_point(s, 0, err) < 0)
                return -1;
            goto done;
        }
        hook_failed(s, "the hook refused to install: %s", *why ? why : local.msg);
        goto done;
    }
    json_t *res = NULL;
    char *at = tdb_session_light_location(s, "tdebug_pyhook_stop");
    rc = tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, &local, "-break-insert %s",
                     at ? at : "tdebug_pyhook_stop");
    free(at);
    if (rc < 0) {
        hook_failed(s, "gdb cannot break in the hook: %s", local.msg);
        goto done;
    }
    h->stop_bp = atoi(tdb_mi_str(json_object_get(res, "bkpt"), "number") ?: "0");
    json_decref(res);
    goto done;
write_failed:
    hook_failed(s, "cannot write the breakpoint table: %s", local.msg);
done:
    free(lib);
    return tdb_gdb_alive(s->gdb) ? 0 : (tdb_error_set(err, EPIPE, "gdb died"), -1);
gdb_died:
    free(lib);
    tdb_error_set(err, local.code ? local.code : EPIPE, "%s", local.msg[0] ? local.msg : "gdb died");
    return -1;
}

int tdb_session_python_launch(tdb_session *s, tdb_error *err)
{
    int any = 0;
    for (size_t i = 0; i < s->n_bps; i++)
        any |= s->bps[i].kind == BP_PYTHON;
    if (!any)
        return 0;
    if (tdb_session_add_interest(s, LIBPYTHON_RE, err) < 0)
        return -1;
    /* tdb_session_arm() placed no load catchpoint when nothing else was
     * watched (Python breakpoints only): a shared libpython's load must be. */
    if (s->catch_load_bp <= 0 && !s->opts.all_symbols && tdb_session_place_load_catchpoint(s, err) < 0)
        return -1;
    return arm_safe_point(s, 0, err);
}

/* ---- breakpoints ---- */

json_t *tdb_session_python_break(tdb_session *s, const char *location, int temporary,
                                 tdb_error *err)
{
    const char *colon = strrchr(location, ':');
    char *file = tdb_xstrndup(location, (size_t)(colon - location));
    const char *what = colon + 1;
    char *resolved = NULL, *func = NULL;
    json_t *out = NULL;
    long line = 0, given = 0;

    if (tdb_parse_long(what, 1, 1L << 30, &line) < 0) {
        line = 0;
        /* FUNCTION, or Class.method: identifiers and dots */
        for (const char *p = what; *p && strcmp(what, "<module>") != 0; p++)
            if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '.' || (unsigned char)*p >= 0x80)) {
                out = tdb_session_bp_refused(location, "python location", "not a Python location");
                goto cleanup;
            }
        func = tdb_xstrdup(what);
    }
    /* The path as given, relative to the working directory, else as the
     * tail of the files the process loads. */
    resolved = realpath(file, NULL);
    if (resolved && line > 0) {
        int nlines = 0, at = code_line_from(s, resolved, (int)line, &nlines);
        if (at < 0) {
            char *msg = tdb_xasprintf("'%s' has %d lines and none at or after line %ld holds code",
                                      resolved, nlines, line);
            out = tdb_session_bp_refused(location, "no code", msg);
            free(msg);
            goto cleanup;
        }
        if (at != line)
            given = line;
        line = at;
    }
    bp_info *b = tdb_session_add_bp(s, 0, BP_PYTHON, location, NULL);
    b->temporary = temporary;
    b->py_file = tdb_xstrdup(resolved ? resolved : file);
    b->py_line = (int)line;
    b->py_moved_from = (int)given;
    b->py_function = func;
    func = NULL;
    b->slot = -1;
    b->pending = 1;
    out = tdb_session_python_bp_placed(s, b, err);
cleanup:
    free(resolved);
    free(file);
    free(func);
    return out;
}

json_t *tdb_session_python_bp_placed(tdb_session *s, bp_info *b, tdb_error *err)
{
    if (s->hook.state == PYHOOK_READY) {
        tdb_error why = {0};
        if (tdb_hook_write_slot(s, b, 0, &why) < 0 || tdb_hook_table_changed(s, &why) < 0) {
            /* No room in the process for a larger table: this breakpoint
             * is refused and the session goes on (gdb gone ends it). */
            if (!tdb_gdb_alive(s->gdb)) {
                tdb_error_set(err, why.code, "%s", why.msg);
                return NULL;
            }
            char *location = tdb_xstrdup(b->location);
            tdb_session_bp_delete(s, b);
            json_t *out = tdb_session_bp_refused(location, "location", why.msg);
            free(location);
            return out;
        }
    }
    if (s->hook.state == PYHOOK_NONE && s->state != NOT_STARTED &&
        arm_safe_point(s, s->state == STOPPED, err) < 0)
        return NULL;
    return tdb_session_bp_json(s, b, NULL, 0);
}

void tdb_session_python_bp_changed(tdb_session *s, bp_info *b, int deleted)
{
    if (s->hook.state == PYHOOK_READY && s->gdb && tdb_gdb_alive(s->gdb) &&
        tdb_hook_write_slot(s, b, deleted, NULL) == 0)
        tdb_hook_table_changed(s, NULL);
}

/* ---- evaluating Python at a stop ---- */

json_t *tdb_session_python_eval(tdb_session *s, int thread, uint64_t frame, const char *text,
                                int statements, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    if (h->state != PYHOOK_READY || !h->stop_is_hook || s->state != STOPPED) {
        tdb_error_set(err, EPERM, "tdebug runs Python code only at a Python breakpoint or step "
                                  "(a thread holding the GIL where CPython can be re-entered); "
                                  "here it reads values from memory only: a variable's name "
                                  "works, an expression does not");
        return NULL;
    }
    if (thread != tdb_session_stop_thread(s)) {
        tdb_error_set(err, EPERM, "only the thread stopped at the Python line holds the GIL: "
                                  "tdebug runs Python code there, and reads the other threads' "
                                  "variables from memory only");
        return NULL;
    }
    if (strlen(text) >= TDB_PYHOOK_EXPR_MAX) {
        tdb_error_set(err, E2BIG, "an expression of at most %d bytes", TDB_PYHOOK_EXPR_MAX - 1);
        return NULL;
    }
    char buf[TDB_PYHOOK_EXPR_MAX] = "";
    snprintf(buf, sizeof(buf), "%s", text);
    uint64_t v = 0;
    int32_t mode = statements ? TDB_PYHOOK_EVAL_STATEMENTS : TDB_PYHOOK_EVAL_EXPRESSION;
    if (tdb_hook_write_u64(s, CONTROL(s, eval_frame), frame, err) < 0 ||
        tdb_hook_write_i32(s, CONTROL(s, eval_mode), mode, err) < 0 ||
        tdb_hook_write_mem(s, CONTROL(s, eval_text), buf, sizeof(buf), err) < 0 ||
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-thread-select %d", thread) < 0 ||
        tdb_hook_eval_u64(s, "(int) tdebug_pyhook_eval()", &v, err) < 0)
        return NULL;
    char result[sizeof(((tdb_pyhook_control *)0)->eval_result)];
    char type[TDB_PYHOOK_NAME_MAX];
    if (tdb_hook_read_mem(s, CONTROL(s, eval_result), result, sizeof(result), err) < 0 ||
        tdb_hook_read_mem(s, CONTROL(s, eval_type), type, sizeof(type), err) < 0)
        return NULL;
    result[sizeof(result) - 1] = 0;
    type[sizeof(type) - 1] = 0;
    if ((int)v != 0) {
        tdb_error_set(err, EINVAL, "%s", result);
        return NULL;
    }
    return json_pack("{s:s, s:s}", "value", result, "type", type);
}

/* ---- stops ---- */

static const tdb_pyhook_report *report_of(tdb_session *s)
{
    return (const tdb_pyhook_report *)s->hook.report;
}

static bp_info *python_bp(tdb_session *s, int id)
{
    bp_info *b = tdb_session_find_bp_id(s, id);
    return b && b->kind == BP_PYTHON ? b : NULL;
}

/* A step into one call of the line (session/steptargets.c) reached a
 * Python line: a function of another name the line called is finished and
 * the step goes on in the line (TDB_HOOK_GO_ON); the function asked for,
 * or the next line, is the stop (TDB_HOOK_STOP; the next line says the
 * call never came).  -1 with ERR. */
static int step_target_stop(tdb_session *s, const tdb_pyhook_report *rep, tdb_error *err)
{
    int callee = rep->frame != s->step.target_frame;
    int mode = 0;
    if (rep->reason == TDB_PYHOOK_STOP_STEP && callee &&
        !tdb_session_step_target_matches(s, rep->function, 1))
        mode = TDB_PYHOOK_STEP_FINISH;
    else if (rep->reason == TDB_PYHOOK_STOP_FINISH && !callee && rep->line == s->step.target_line)
        mode = TDB_PYHOOK_STEP_STEP;
    if (mode) {
        tdb_pyhook_step on = {.mode = mode, .tstate = rep->tstate, .tid = rep->tid,
                              .frame = rep->frame,
                              .line = mode == TDB_PYHOOK_STEP_STEP ? s->step.target_line : rep->line};
        if (tdb_hook_write_mem(s, CONTROL(s, step), &on, sizeof(on), err) < 0)
            return -1;
        return TDB_HOOK_GO_ON;
    }
    if (!callee || rep->reason != TDB_PYHOOK_STOP_STEP)
        say(s, "warning", "step: line %d made no call to '%s' that tdebug saw; stopped at the "
                          "line it went on to", s->step.target_line, s->step.target);
    free(s->step.target);
    s->step.target = NULL;
    return TDB_HOOK_STOP;
}

int tdb_session_python_stopped(tdb_session *s, int bkptno, const json_t *res, tdb_stop_info *st,
                               tdb_error *err)
{
    pyhook_state *h = &s->hook;
    if (!bkptno)
        return TDB_HOOK_NOT_OURS;
    if (h->state == PYHOOK_ARMING && (bkptno == h->safe_bps[0] || bkptno == h->safe_bps[1])) {
        if (load_and_install(s, err) < 0)
            return -1;
        return TDB_HOOK_GO_ON;
    }
    if (h->native_bp && bkptno == h->native_bp) {
        /* A step reached the native function the Python line called. */
        h->native_bp = 0;
        const json_t *frame = json_object_get(res, "frame");
        json_t *fi = NULL;
        int has_line = tdb_mi_str(frame, "line") != NULL;
        const char *from = tdb_mi_str(frame, "from");
        if (!has_line && from && !tdb_session_note_lib(s, from)->symbols) {
            /* A library outside the ones whose symbols tdebug reads as
             * they load (a user's extension elsewhere than the script):
             * read them now, then ask gdb again where the stop is. */
            if (tdb_session_load_library_symbols(s, from, err) < 0)
                return -1;
            tdb_session_note_lib(s, from)->symbols = 1;
            if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &fi, NULL, "-stack-info-frame") == 0) {
                frame = json_object_get(fi, "frame");
                has_line = tdb_mi_str(frame, "line") != NULL;
            }
        }
        /* The libraries it calls into that carry DWARF (its own core
         * library, installed anywhere): a step goes into them too. */
        lib_info *at = from ? tdb_session_find_lib(s, from)
                            : tdb_session_lib_at(s, parse_addr(tdb_mi_str(frame, "addr")));
        if (at && tdb_session_read_dep_symbols(s, at->path, err) < 0) {
            json_decref(fi);
            return -1;
        }
        /* On to the user's code or torch's operator, past the glue
         * (session/stepinto.c); the hook's step stays armed in case the
         * call never gets there. */
        const char *thread = tdb_mi_str(res, "thread-id");
        int land = tdb_session_step_land(s, frame, thread ? atoi(thread) : 0, err);
        if (land == 0 && !s->step.native_from_mine && s->step.deep &&
            tdb_session_step_policy(s) != TDB_STEP_INTO_BINDING) {
            /* A call made by the Python of others that leads nowhere of
             * the user's: the hook's step goes on. */
            json_decref(fi);
            return TDB_HOOK_GO_ON;
        }
        json_decref(fi);
        if (land < 0)
            return -1;
        if (land > 0)
            return TDB_HOOK_RUNNING;
        tdb_session_python_step_done(s);
        return tdb_session_step_arrived(s, has_line, st, err);
    }
    if (h->state != PYHOOK_READY || bkptno != h->stop_bp)
        return TDB_HOOK_NOT_OURS;
    if (tdb_hook_read_mem(s, CONTROL(s, report), h->report, sizeof(tdb_pyhook_report), err) < 0)
        return tdb_gdb_alive(s->gdb) ? TDB_HOOK_GO_ON : -1;
    /* The thread is in the hook at a Python line: when the front-end's
     * interrupt makes even a stop the hook lets go on a stop, it is that
     * line (the hook's frames hidden), never tdebug_pyhook_stop(). */
    h->stop_is_hook = 1;
    const tdb_pyhook_report *rep = report_of(s);
    (void)res;
    switch (rep->reason) {
    case TDB_PYHOOK_STOP_BREAKPOINT:
    case TDB_PYHOOK_STOP_FUNCTION: {
        bp_info *b = python_bp(s, rep->breakpoint_id);
        st->reason = TDB_STOP_PYTHON_BREAKPOINT;
        st->bp_number = rep->breakpoint_id;
        st->bp_location = b ? b->location : NULL;
        st->condition_error = rep->message[0] ? rep->message : NULL;
        if (b) {
            b->hits++;
            b->pending = 0;
        }
        h->step_pending = 0;
        break;
    }
    case TDB_PYHOOK_STOP_NATIVE: {
        if (s->step.target && !tdb_session_step_target_matches(s, rep->native_what, 0)) {
            /* A step into another call of the line: this one runs, the
             * hook steps on in the line. */
            tdb_pyhook_step on = {.mode = TDB_PYHOOK_STEP_STEP, .tstate = rep->tstate,
                                  .tid = rep->tid, .frame = rep->frame,
                                  .line = s->step.target_line};
            if (tdb_hook_write_mem(s, CONTROL(s, step), &on, sizeof(on), err) < 0)
                return -1;
            h->step_pending = 1;
            return TDB_HOOK_GO_ON;
        }
        free(s->step.target);
        s->step.target = NULL;
        /* The line calls native code first: stop where it starts (on this
         * thread), and let the hook stop at the next line if the call
         * never gets there.  Where that is, gdb says: a light session
         * becomes an ordinary one. */
        json_t *r = NULL;
        if (tdb_session_light_upgrade(s, err) < 0)
            return -1;
        const char *thread = tdb_mi_str(res, "thread-id");
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &r, NULL, "-break-insert -t%s%s *0x%llx",
                        thread ? " -p " : "", thread ? thread : "",
                        (unsigned long long)rep->native_addr) == 0)
            h->native_bp = atoi(tdb_mi_str(json_object_get(r, "bkpt"), "number") ?: "0");
        json_decref(r);
        snprintf(h->native_what, sizeof(h->native_what), "%s", rep->native_what);
        s->step.native_from_mine = !s->step.deep || tdb_session_is_mine(s, rep->file);
        h->step_pending = 1;
        tdb_pyhook_step next = {.mode = TDB_PYHOOK_STEP_NEXT, .tstate = rep->tstate,
                                .tid = rep->tid, .frame = rep->frame, .line = rep->line};
        tdb_hook_write_mem(s, CONTROL(s, step), &next, sizeof(next), NULL);
        return TDB_HOOK_GO_ON;
    }
    case TDB_PYHOOK_STOP_STEP:
    case TDB_PYHOOK_STOP_FINISH:
        if (!h->step_pending)
            return TDB_HOOK_GO_ON; /* the end of a step tdebug no longer wants (it ended in native code) */
        if (s->step.target) {
            int go = step_target_stop(s, rep, err);
            if (go != TDB_HOOK_STOP)
                return go;
        }
        if (s->step.deep && rep->reason == TDB_PYHOOK_STOP_STEP && !tdb_session_is_mine(s, rep->file) &&
            tdb_session_step_policy(s) != TDB_STEP_INTO_BINDING &&
            ++s->step.deep_lines <= DEEP_LINES_MAX) {
            /* A step from the user's code goes through the Python of
             * others (torch's nn.Module.__call__) to what it calls. */
            tdb_pyhook_step again = {.mode = TDB_PYHOOK_STEP_STEP, .tstate = rep->tstate,
                                     .tid = rep->tid, .frame = rep->frame, .line = rep->line};
            if (tdb_hook_write_mem(s, CONTROL(s, step), &again, sizeof(again), err) < 0)
                return -1;
            return TDB_HOOK_GO_ON;
        }
        h->step_pending = 0;
        if (s->step.deep_lines > DEEP_LINES_MAX)
            say(s, "warning", "step: went through %d lines of Python outside your code without "
                              "reaching your code or a native call; stopped here ('set step-into "
                              "binding' steps into the first function called)",
                DEEP_LINES_MAX);
        if (s->step.deep && rep->reason == TDB_PYHOOK_STOP_STEP) {
            s->step.deep = 0;
            st->reason = TDB_STOP_STEP;
            st->compact = 1;
            break;
        }
        st->reason = rep->reason == TDB_PYHOOK_STOP_FINISH ? TDB_STOP_FINISH
                     : rep->step_mode == TDB_PYHOOK_STEP_NEXT ? TDB_STOP_NEXT : TDB_STOP_STEP;
        st->compact = 1;
        break;
    case TDB_PYHOOK_STOP_EXCEPTION:
        tdb_session_python_exc_stop(s, rep, st);
        h->step_pending = 0;
        break;
    case TDB_PYHOOK_STOP_FOREIGN:
        say(s, "warning", "Python breakpoints cannot stop in thread %lld of pid %d (%s, in "
                          "'%s'): the program's own trace function (sys.settrace: coverage, pdb "
                          "or debugpy) holds that thread; run it without one to stop there",
            (long long)rep->tid, (int)s->pid, rep->function, rep->file);
        return TDB_HOOK_GO_ON;
    default:
        return TDB_HOOK_GO_ON; /* nothing to show */
    }
    h->stop_is_hook = 1;
    return TDB_HOOK_STOP;
}

pid_t tdb_session_python_stop_lwp(tdb_session *s)
{
    return s->hook.state == PYHOOK_READY && s->hook.stop_is_hook ? (pid_t)report_of(s)->tid : 0;
}

uint64_t tdb_session_python_stop_frame(tdb_session *s)
{
    return s->hook.state == PYHOOK_READY && s->hook.stop_is_hook ? report_of(s)->frame : 0;
}

/* The hook library's code in the process: [*LO, *HI).  0 when known. */
static int hook_range(tdb_session *s, uint64_t *lo, uint64_t *hi)
{
    for (size_t i = 0; s->hook.lib && i < s->n_libs; i++)
        if (strcmp(s->libs[i].path, s->hook.lib) == 0 && s->libs[i].hi > s->libs[i].lo) {
            *lo = s->libs[i].lo;
            *hi = s->libs[i].hi;
            return 0;
        }
    return -1;
}

size_t tdb_session_python_hidden_frames(tdb_session *s, int thread, const json_t *mi_stack)
{
    uint64_t lo, hi;
    (void)thread;
    if (hook_range(s, &lo, &hi) < 0)
        return 0;
    /* Not only at the hook's stops: an interrupt (a pause) can land in
     * the hook's code while it runs a Python step.
     * The hook's own frames (tdebug_pyhook_stop, its trace function) sit
     * on top, then CPython's tracing machinery (call_trace) down to the
     * evaluator running the Python frame the hook reports: the stop is
     * that Python line. */
    tdb_session_make_stop_readers(s);
    size_t n = 0, i;
    int in_hook = 1;
    json_t *f;
    json_array_foreach(mi_stack, i, f)
    {
        uint64_t pc = strtoull(tdb_mi_str(f, "addr") ? tdb_mi_str(f, "addr") : "0", NULL, 0);
        if (pc >= lo && pc < hi) {
            if (!in_hook)
                break;
        } else if (!n || !s->py || !tdb_py_owns_pc(s->py, pc) || tdb_py_is_eval_pc(s->py, pc)) {
            break;
        } else {
            in_hook = 0;
        }
        n = i + 1;
    }
    return n;
}

void tdb_session_python_fold(tdb_session *s, tdb_stackview *v)
{
    uint64_t lo, hi;
    if (hook_range(s, &lo, &hi) == 0)
        tdb_stackview_fold_range(v, lo, hi);
}

/* ---- stepping ---- */

/* A step the hook was running when something else stopped the program
 * (an interrupt, a breakpoint): it is over, so its end must not stop a
 * later continue. */
static void forget_step(tdb_session *s)
{
    pyhook_state *h = &s->hook;
    if (h->native_bp)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", h->native_bp);
    h->native_bp = 0;
    if (h->step_pending && h->state == PYHOOK_READY)
        tdb_hook_write_i32(s, CONTROL(s, step.mode), TDB_PYHOOK_STEP_NONE, NULL);
    h->step_pending = 0;
}

int tdb_session_python_resume(tdb_session *s, tdb_resume how, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    forget_step(s);
    int mode = how == TDB_RESUME_STEP ? TDB_PYHOOK_STEP_STEP
               : how == TDB_RESUME_NEXT ? TDB_PYHOOK_STEP_NEXT
               : how == TDB_RESUME_FINISH ? TDB_PYHOOK_STEP_FINISH : 0;
    int target = s->python_top; /* the Python frame the step starts in */
    tdb_view_frame sel;
    if (how == TDB_RESUME_FINISH && s->python_top >= 0 && s->selected > s->python_top &&
        tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s), (size_t)s->selected,
                               &sel) == 0 &&
        sel.kind == TDB_FRAME_PYTHON)
        target = s->selected; /* 'up' to an older Python frame: finish that one */
    if (!mode || s->python_top < 0 || (s->selected > s->python_top && target == s->python_top))
        return 0;
    if (h->state != PYHOOK_READY) {
        /* Load the hook first: the step starts where the stop is once it
         * is in (a later stop); say so rather than step machine code. */
        return 0;
    }
    /* A hook stop: the hook takes the request when the thread goes on.
     * Another stop with a Python top is a native step or finish that
     * returned into the evaluator on the thread running Python (a safe
     * point): the hook takes it through tdebug_pyhook_step_arm(). */
    tdb_stop_reason reason = s->stop.reason;
    int from_hook = h->stop_is_hook;
    int arm_call = !from_hook && (reason == TDB_STOP_STEP || reason == TDB_STOP_NEXT ||
                                  reason == TDB_STOP_FINISH);
    if (!from_hook && !arm_call)
        return 0;
    tdb_view_frame f;
    if (tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s), (size_t)target, &f) < 0)
        return 0;
    s->step.landed = 0;
    s->step.deep_lines = 0;
    s->step.deep = how == TDB_RESUME_STEP && f.py->filename && tdb_session_is_mine(s, f.py->filename);
    if (s->step.target) {
        /* A step into one call: that call, not the user's code beyond it. */
        s->step.deep = 0;
        s->step.target_frame = f.py->addr;
        s->step.target_line = f.py->line;
    }
    /* One write, the mode with the rest: every thread is stopped. */
    tdb_pyhook_step req = {.mode = mode,
                           .tstate = from_hook ? report_of(s)->tstate : 0,
                           .tid = from_hook ? report_of(s)->tid
                                            : tdb_session_thread_lwp(s, s->stop.thread),
                           .frame = f.py->addr,
                           .line = f.py->line};
    if (tdb_hook_write_mem(s, CONTROL(s, step), &req, sizeof(req), err) < 0)
        return -1;
    if (arm_call) {
        uint64_t rc = 1;
        if (tdb_hook_eval_u64(s, "(int) tdebug_pyhook_step_arm()", &rc, err) < 0)
            return -1;
        if ((int)rc != 0) {
            char why[256] = "";
            tdb_hook_read_mem(s, CONTROL(s, error), why, sizeof(why) - 1, NULL);
            tdb_hook_write_i32(s, CONTROL(s, step.mode), 0, NULL);
            say(s, "warning", "cannot step in Python here (%s): stepping machine code", why);
            return 0;
        }
    }
    h->step_pending = 1;
    return 1;
}

void tdb_session_python_forget(tdb_session *s)
{
    pyhook_state *h = &s->hook;
    int bps[4] = {h->safe_bps[0], h->safe_bps[1], h->stop_bp, h->native_bp};
    for (int i = 0; i < 4; i++)
        if (bps[i] && s->gdb && tdb_gdb_alive(s->gdb))
            tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", bps[i]);
    free(h->lib);
    free(h->failed);
    memset(h, 0, sizeof(*h));
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].kind == BP_PYTHON) {
            s->bps[i].slot = -1;
            s->bps[i].pending = 1;
        }
    s->step.landing = 0;
    s->step.deep = 0;
}

void tdb_session_python_step_done(tdb_session *s)
{
    s->hook.step_pending = 0;
    s->step.deep = 0;
    tdb_hook_write_i32(s, CONTROL(s, step.mode), TDB_PYHOOK_STEP_NONE, NULL);
}

void tdb_session_python_free(tdb_session *s)
{
    close_log(s);
}

void tdb_session_python_end(tdb_session *s)
{
    pyhook_state *h = &s->hook;
    if (!s->gdb || !tdb_gdb_alive(s->gdb))
        return;
    for (int i = 0; i < 2; i++)
        if (h->safe_bps[i])
            tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", h->safe_bps[i]);
    if (h->state != PYHOOK_READY)
        return;
    tdb_hook_write_i32(s, CONTROL(s, step.mode), TDB_PYHOOK_STEP_NONE, NULL);
    tdb_hook_write_i32(s, CONTROL(s, disable), 1, NULL);
    tdb_hook_sync_soon(s, NULL);
    if (h->stop_bp)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", h->stop_bp);
    if (h->native_bp)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", h->native_bp);
    h->stop_bp = h->native_bp = 0;
}
