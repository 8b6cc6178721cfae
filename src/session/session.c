/*
 * session/session.c: the session core's life (see session/session.h): a
 * session made and freed, the events it reports to the front-end, gdb's
 * console commands, how the target ends (and what the user asked for and
 * never got), the queries.  Its other concerns have files of their own:
 * session/launch.c, attach.c, stops.c, resume.c, breakpoints.c,
 * symbols.c, stack.c, python.c, light.c, values.c, query.c.
 */
#include "session/internal.h"

#include "process/procfs.h"

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

/* Does the gdb command CMD print values (which gdb's printers for torch
 * show: session/values.c)? */
static int prints_values(const char *cmd)
{
    static const char *const words[] = {"print", "p", "output", "call", "finish", "fin",
                                        "display", "info locals", "info args", "info frame",
                                        "frame", "f", "up", "down", "inspect", "ptype"};
    while (*cmd == ' ')
        cmd++;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = strlen(words[i]);
        if (!strncmp(cmd, words[i], n) && (!cmd[n] || cmd[n] == ' ' || cmd[n] == '/'))
            return 1;
    }
    return 0;
}

int tdb_session_gdb_console(tdb_session *s, const char *cmd, char **out, int *resumed,
                            tdb_error *err)
{
    tdb_buf mi = TDB_BUF_INIT;
    if (prints_values(cmd))
        tdb_session_printers_prepare(s); /* 'print t' shows the tensor */
    tdb_buf_adds(&mi, "-interpreter-exec console ");
    tdb_mi_quote(&mi, cmd);
    tdb_mi_response *resp = tdb_gdb_send(s->gdb, SYMBOLS_TIMEOUT_MS, err, tdb_buf_str(&mi));
    tdb_buf_free(&mi);
    *resumed = 0;
    if (!resp)
        return -1;
    int rc = 0;
    *out = tdb_xstrdup(tdb_buf_str(&resp->console));
    if (strcmp(resp->result->klass, "error") == 0) {
        const char *msg = tdb_mi_str(resp->result->results, "msg");
        tdb_error_set(err, EINVAL, "%s", msg ? msg : "error");
        rc = 1;
    } else if (strcmp(resp->result->klass, "running") == 0) {
        tdb_session_note_running(s);
        *resumed = 1;
    }
    tdb_mi_response_free(resp);
    return rc;
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
    s->step.mode = opts->step_into;
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
        if (b->kind == BP_WATCH) {
            if (!b->hits)
                say(s, "note", "watchpoint %d (%s) never triggered", b->id, b->location);
            continue;
        }
        if (b->silent)
            continue;
        if (b->kind == BP_CATCH || (b->kind == BP_PYTHON && b->py_exc)) {
            if (b->kind == BP_PYTHON && s->hook.failed && !b->hits)
                say(s, "warning", "catchpoint %d (%s) could not work in this process (see the "
                                  "warning above)", b->id, b->location);
            else if (b->hits <= b->passed)
                say(s, "note", "catchpoint %d (%s) caught nothing", b->id, b->location);
            continue;
        }
        if (b->kind == BP_IMPORT || b->hits || b->log_message)
            continue;
        if (!b->enabled) {
            /* Disabled by the user: whether the program ran its place is
             * unknown, and nothing was missed. */
            tdb_session_emit(s, "note",
                             json_pack("{s:i, s:s, s:b}", "breakpoint", b->id, "location",
                                       b->location, "disabled", 1),
                             "breakpoint %d '%s' was disabled and never hit while it was "
                             "enabled", b->id, b->location);
            continue;
        }
        if (b->condition || b->hit_op || b->ignore) {
            say(s, "note", "breakpoint '%s' never stopped: its condition or hit count never "
                           "held, or the program never got there", b->location);
            continue;
        }
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
                tdb_session_handle_stopped(s, r, &err);
            } else {
                s->state = STOPPED;
            }
        } else if (r->kind == TDB_MI_NOTIFY) {
            tdb_session_handle_notify(s, r);
        }
        tdb_mi_record_free(r);
    }
    return s->state == RUNNING ? -1 : 0;
}

/* Put the process back the way it was before tdebug came: stopped if it was
 * stopped (and say so), running otherwise. */
static void restore_process_state(tdb_session *s)
{
    char now = tdb_proc_state(s->pid, 0);
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

int tdb_session_end(tdb_session *s, tdb_end how)
{
    if (s->ended)
        return 0;
    s->ended = 1;
    int alive = s->gdb && tdb_gdb_alive(s->gdb);
    if (s->attached && s->paused && alive)
        tdb_session_release_before_detach(s);
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

/* The addresses of the next process differ (a light session's program
 * is tdebug's child, its address space randomized): nothing of the old
 * one may be kept. */
void tdb_session_forget_process(tdb_session *s)
{
    light_state *l = &s->light;
    tdb_session_python_free(s); /* the log points' FIFO */
    tdb_session_python_forget(s);
    tdb_session_step_landing_end(s);
    step_state keep = s->step;
    s->step.dirs = NULL;
    tdb_session_step_free(s);
    memset(&s->step, 0, sizeof(s->step));
    s->step.mode = keep.mode;
    s->step.dirs = keep.dirs;
    s->step.n_dirs = keep.n_dirs;
    s->step.dirs_known = keep.dirs_known;
    for (size_t i = 0; i < s->n_bps;) {
        bp_info *b = &s->bps[i];
        if (b->kind == BP_IMPORT) {
            tdb_session_bp_delete(s, b);
            continue;
        }
        if (b->kind == BP_NATIVE && b->number > 0) {
            tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", b->number);
            b->number = 0;
            b->pending = 1;
            b->by_address = 0;
            for (size_t k = 0; k < b->n_locs; k++)
                free(b->locs[k].what);
            free(b->locs);
            b->locs = NULL;
            b->n_locs = 0;
            free(b->where);
            b->where = NULL;
        }
        i++;
    }
    if (s->catch_load_bp > 0)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", s->catch_load_bp);
    s->catch_load_bp = 0;
    for (size_t k = 0; k < s->n_mods; k++) {
        free(s->mods[k].library);
        s->mods[k].library = NULL;
        s->mods[k].seen = s->mods[k].stopped = 0;
    }
    for (size_t i = 0; i < s->n_libs; i++) {
        free(s->libs[i].path);
        free(s->libs[i].mine);
        tdb_strv_free(s->libs[i].deps);
    }
    s->n_libs = 0;
    s->base_symbols = 0;
    json_decref(s->last_c10_throw);
    s->last_c10_throw = NULL;
    tdb_session_note_running(s); /* what the stop showed is gone */
    tdb_py_close(s->py); /* the interpreter's reader was the old process's */
    s->py = NULL;
    s->py_state = 0;
    tdb_session_values_free(s);
    l->state_addr = l->release_addr = l->r_debug = l->scratch = 0;
    l->scanned = l->disarmed = l->synth = l->startup_pending = 0;
    tdb_strv_free(l->ln_real);
    tdb_strv_free(l->ln_name);
    l->ln_real = l->ln_name = NULL;
    l->n_ln = 0;
    tdb_strv_free(l->fn_name);
    free(l->fn_addr);
    l->fn_name = NULL;
    l->fn_addr = NULL;
    l->n_fn = 0;
    tdb_mem_close(&l->mem);
    s->have_exit = s->signalled = s->exit_status = 0;
    s->interrupt_sent = s->stale_sigint = s->repeat = 0;
    s->last_resume = -1;
    s->state = NOT_STARTED;
}

/* ---- queries ---- */

int tdb_session_need_stop(const tdb_session *s, tdb_error *err)
{
    if (s->state == STOPPED && s->have_stop)
        return 0;
    tdb_error_set(err, EAGAIN, "%s", s->state == RUNNING ? "the program is running"
                                     : s->state == EXITED ? "the program is not being run"
                                                          : "the program has not started");
    return -1;
}

int tdb_session_selected(const tdb_session *s)
{
    return s->selected;
}

int tdb_session_reads_python(const tdb_session *s)
{
    return s->py_state;
}

int tdb_session_gdb_alive(const tdb_session *s)
{
    return s->gdb && tdb_gdb_alive(s->gdb);
}

int tdb_session_upgrade(tdb_session *s, tdb_error *err)
{
    return tdb_session_light_upgrade(s, err);
}

int tdb_session_siginfo_code(tdb_session *s, int *out, tdb_error *err)
{
    int64_t code;
    if (tdb_session_need_stop(s, err) < 0 ||
        tdb_gdb_eval_int(s->gdb, CMD_TIMEOUT_MS, "$_siginfo.si_code", &code, err) < 0)
        return -1;
    *out = (int)code;
    return 0;
}

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

int tdb_session_stepping(const tdb_session *s)
{
    return s->state == RUNNING && s->last_resume > TDB_RESUME_CONTINUE;
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

int tdb_session_has_stops(const tdb_session *s)
{
    return s->n_mods || s->opts.n_breaks || s->opts.n_catch_throw || s->opts.n_catch_raise;
}

unsigned tdb_session_stack_flags(const tdb_session *s)
{
    return s->opts.raw ? TDB_STACK_RAW : 0;
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
    free(s->children);
    free(s->light.sysroot);
    free(s->light.exe);
    tdb_strv_free(s->light.argv);
    free(s->light.script_dir);
    free(s->light.audit);
    tdb_strv_free(s->light.ln_real);
    tdb_strv_free(s->light.ln_name);
    tdb_strv_free(s->light.fn_name);
    json_decref(s->light.env);
    free(s->light.fn_addr);
    tdb_mem_close(&s->light.mem);
    tdb_session_python_free(s);
    json_decref(s->last_c10_throw);
    free(s->hook.lib);
    free(s->hook.failed);
    free(s->hook.free_slots);
    free(s->hook.lines_file);
    free(s->hook.lines_code);
    tdb_gdb_close(s->gdb, 5000);
    tdb_session_light_reap(s);
    for (size_t i = 0; i < s->n_libs; i++) {
        free(s->libs[i].path);
        free(s->libs[i].mine);
        tdb_strv_free(s->libs[i].deps);
    }
    free(s->libs);
    tdb_session_step_free(s);
    for (size_t i = 0; i < s->n_bps; i++)
        tdb_session_bp_free(&s->bps[i]);
    free(s->bps);
    for (size_t i = 0; i < s->n_mods; i++) {
        free(s->mods[i].regex);
        free(s->mods[i].library);
        regfree(&s->mods[i].re);
    }
    free(s->mods);
    if (s->have_interest)
        regfree(&s->interest_re);
    if (s->libpython_watched)
        regfree(&s->libpython_re);
    free(s->interest);
    json_decref(s->paused);
    for (int i = 0; i < 3; i++)
        if (s->saved_fds[i] >= 0)
            close(s->saved_fds[i]);
    free(s);
}
