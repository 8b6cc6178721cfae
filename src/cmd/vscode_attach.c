/*
 * cmd/vscode_attach.c: the process 'tdebug vscode --attach PID' writes a
 * configuration for: resolved as 'tdebug attach' resolves it, and how the
 * gdb VS Code starts may attach to it.  Reached from 'tdebug vscode'
 * (src/cmd/vscode.c), not a command of its own.
 */
#include "cmd/vscode_attach.h"
#include "targets/ptrace_check.h"

#include <sys/stat.h>
#include <unistd.h>

static void keep_error(tdb_error *err, const tdb_error *e)
{
    if (err && !err->set && e->set)
        *err = *e;
}

/* May this process signal P (kill(2)'s rule: our real or effective uid is
 * its real or saved uid, or we are root)? */
static int can_signal(const tdb_proc *p)
{
    uid_t r = getuid(), e = geteuid();
    return e == 0 || (p && (p->uid == r || p->uid == e || p->suid == r || p->suid == e));
}

/* Resolve PID as 'tdebug attach' does (a debugpy adapter or launcher to
 * the debuggee, a thread to its process) and decide how the gdb VS Code
 * starts is to attach (tdb_vscode_plan_attach()): as the user, when gdb
 * with its file capabilities may attach and the user may signal the
 * process, or the process lets the user's debuggers in
 * (prctl(PR_SET_PTRACER), tried with a seize let go at once); else as
 * root, through the pkexec or sudo the C/C++ extension wraps gdb in
 * whenever ptrace_scope is not 0 and the user is not root (MIEngine's
 * UnixUtilities.GetDebuggerCommand).  Returns 0 with *OUT_TABLE (the
 * processes, to free), RES, *OUT_PLAN, *OUT_SCOPE (ptrace_scope, -1
 * without Yama), *OUT_PTRACER (the process's exception let gdb in),
 * *OUT_SIGNAL (the user may signal it) and, for a plan that is not
 * direct, *AS_USER (why gdb cannot attach as the user); 1 when ambiguous
 * (ERR lists the candidates) or -1 refused, with ERR set. */
int cmd_vscode_resolve_attach(pid_t pid, const char *gdb, tdb_proc_table **out_table,
                              tdb_resolution *res, tdb_vscode_attach_plan *out_plan,
                              int *out_scope, int *out_ptracer, int *out_signal,
                              tdb_error *out_as_user, tdb_error *err)
{
    tdb_proc_table *t = tdb_proc_table_read("/proc", err);
    tdb_error as_user = {0}, as_root = {0};
    tdb_refusal refusal = TDB_REFUSAL_NONE;
    tdb_tracer tr;
    int rc = -1, user_ok, signal_ok = 0, ptracer_ok = 0, root_ok = 0;

    if (!t)
        return -1;
    if (tdb_tracer_read(&tr, "/proc", gdb, err) < 0)
        goto cleanup;
    tdb_tracer_probe(&tr);
    rc = tdb_attach_resolve(t, &tr, pid, res, &refusal, &as_user);
    user_ok = rc == 0;
    if (res->pid > 0)
        signal_ok = can_signal(tdb_proc_table_lookup(t, res->pid, NULL));
    if (rc < 0 && refusal == TDB_REFUSAL_YAMA && res->pid > 0)
        ptracer_ok = tdb_trace_try(res->pid) == 0;
    if (rc != 1 && (!user_ok || !signal_ok) && !ptracer_ok && tr.yama_scope > 0 && geteuid() != 0) {
        tdb_resolution resr = {0};
        tdb_tracer_as_root(&tr);
        root_ok = tdb_attach_resolve(t, &tr, pid, &resr, NULL, &as_root) == 0;
        if (!user_ok || root_ok) { /* the resolution that is used */
            tdb_resolution_release(res);
            *res = resr;
        } else {
            tdb_resolution_release(&resr);
        }
    }
    *out_scope = tr.yama_scope;
    *out_ptracer = ptracer_ok;
    *out_signal = signal_ok;
    *out_plan = tdb_vscode_plan_attach(tr.yama_scope, geteuid() == 0, user_ok, signal_ok,
                                       ptracer_ok, root_ok);
    if (*out_plan != TDB_VSCODE_ATTACH_REFUSED)
        rc = 0;
    else
        keep_error(err, as_root.set ? &as_root : &as_user);
    if (*out_plan != TDB_VSCODE_ATTACH_DIRECT)
        keep_error(out_as_user, &as_user);
    tdb_tracer_release(&tr);
cleanup:
    if (rc == 0)
        *out_table = t;
    else
        tdb_proc_table_free(t);
    return rc;
}

/* The interpreter P runs as the user named it: its argv[0] when that is a
 * path to the same file as its executable (a virtual environment's
 * bin/python is a symlink whose site-packages are the environment's),
 * else the executable.  New string, or NULL when neither is known. */
char *cmd_vscode_interpreter_of(const tdb_proc *p)
{
    struct stat a, b;
    if (p->argc && p->argv[0][0] == '/' && p->exe && stat(p->argv[0], &a) == 0 &&
        stat(p->exe, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return tdb_xstrdup(p->argv[0]);
    return p->exe ? tdb_xstrdup(p->exe) : NULL;
}

