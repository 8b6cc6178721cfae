/*
 * session/attach.c: attaching to a running process ('tdebug attach'), and
 * to one paused by the preloaded library or by tdebug.wait_for_debugger()
 * (see session/session.h, tdb_session_attach()).
 */
#include "session/internal.h"

#include "process/preload.h"
#include "process/procfs.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- a paused process ----
 *
 * The preloaded library (lib/) pauses a process at the first point where
 * the loader's list is consistent after mapping torch._C: _C and all its
 * dependencies are mapped, nothing is relocated, no constructor and no
 * PyInit__C has run.  So unlike a plain attach, the module it waits at is
 * mapped but NOT imported: its import stop is armed in the mapped library
 * exactly as tdb_session_arm_import_stop() does when a load catchpoint
 * reports it, then the process is released (a variable write, while gdb
 * holds it stopped) and continued.  The waiting thread holds the loader's
 * lock, so nothing here may make the process call the loader (no gdb
 * 'call').
 */

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
    char st = tdb_proc_state(s->pid, 0);
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
            tdb_session_handle_notify(s, r);
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
    tdb_session_console(s, SYMBOLS_TIMEOUT_MS, NULL, "sharedlibrary libtdebug-preload");
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
    if (m->at_import && tdb_session_arm_import_stop(s, m, m->library, err) < 0)
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
        if (tdb_session_console(s, CMD_TIMEOUT_MS, err, "%s", *c) < 0)
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
void tdb_session_release_before_detach(tdb_session *s)
{
    if (s->paused_released || s->state != STOPPED)
        return;
    if (release_paused(s, NULL) < 0 || s->paused_released)
        return;
    if (tdb_session_resume_mi(s, "-exec-continue", NULL) < 0)
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

/* Does PID wait in tdebug's sitecustomize for a debugger to let it run (a
 * Python child of a program launched with opts.children_wait)?  Its
 * environment says it may; one long past its wait only runs a moment
 * more under gdb before a detach. */
static int waits_for_a_debugger(pid_t pid)
{
    char path[64];
    size_t len = 0, n = strlen(TDB_CHILDREN_WAIT_VAR "=");
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    char *env = tdb_read_file(path, &len, NULL);
    int waits = 0;
    for (size_t i = 0; env && i < len && !waits; i += strlen(env + i) + 1)
        waits = !strncmp(env + i, TDB_CHILDREN_WAIT_VAR "=", n) && strcmp(env + i + n, "0") &&
                env[i + n];
    free(env);
    return waits;
}

int tdb_session_attach(tdb_session *s, pid_t pid, const json_t *announcement,
                       tdb_attach_start *out, tdb_error *err)
{
    int have_stops = s->n_mods || s->opts.n_breaks || s->opts.n_catch_throw || s->opts.n_catch_raise;
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
    else if (waits_for_a_debugger(pid))
        /* As a process in tdebug.wait_for_debugger(): nothing to write,
         * running under gdb releases it, and a detach that never let it
         * run lets it run a moment first (release_before_detach()). */
        s->paused = json_pack("{s:i, s:s, s:i}", "tdebug", TDEBUG_PRELOAD_ABI, "event", "waiting",
                              "pid", (int)pid);
    s->state_before = tdb_proc_state(pid, 0);
    if (tdb_session_setup_symbols(s, err) < 0)
        return -1;
    tdb_session_hide_cpython_debuginfo(s);
    int attached = tdb_session_gdb_attach(s, pid, err);
    tdb_session_restore_debuginfo(s);
    if (attached < 0)
        return -1;
    tdb_session_drain(s);
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
    /* tdb_session_arm() reads the symbols each breakpoint needs, library by library;
     * --symbols are read now. */
    if (tdb_session_arm(s, NULL, err) < 0)
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

    if (have_stops && already == s->n_mods && s->opts.n_breaks == 0 && s->opts.n_catch_throw == 0 &&
        s->opts.n_catch_raise == 0)
        *out = TDB_ATTACH_NOTHING;
    else if (s->paused_load) {
        /* Where it waits is the --stop-at-load stop itself. */
        tdb_stop_info st = {.reason = TDB_STOP_LOADED, .module = s->paused_load->name,
                            .library = s->paused_load->library};
        if (tdb_session_record_stop(s, &st, NULL, err) < 0)
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
    tdb_stop_info st = {.reason = TDB_STOP_ATTACHED};
    return tdb_session_record_stop(s, &st, NULL, err);
}
