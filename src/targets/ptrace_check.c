/*
 * targets/ptrace_check.c: predicting and explaining ptrace refusals.
 *
 * PTRACE_ATTACH/SEIZE succeed when (kernel/ptrace.c, __ptrace_may_access
 * with PTRACE_MODE_ATTACH_REALCREDS, then the LSM hooks):
 *   1. the tracer's real uid equals the target's real, effective and saved
 *      uid, and likewise for gids -- or the tracer holds CAP_SYS_PTRACE;
 *   2. the target is dumpable -- or the tracer holds CAP_SYS_PTRACE;
 *   3. commoncap: the target's permitted capabilities are a subset of the
 *      tracer's permitted ones -- or the tracer holds CAP_SYS_PTRACE;
 *   4. Yama: scope 1 needs the target to descend from the tracer (gdb, a new
 *      child of tdebug: never for an existing process) or CAP_SYS_PTRACE or
 *      the target's prctl(PR_SET_PTRACER); scope 2 needs CAP_SYS_PTRACE;
 *      scope 3 refuses everything, root included, until reboot;
 *   5. the target has no tracer yet.
 * A seccomp filter or another security module can refuse on top; only
 * trying shows that, hence tdb_tracer_probe().
 */
#include "targets/ptrace_check.h"
#include "process/procfs.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char *const refusal_names[] = {
    [TDB_REFUSAL_NONE] = "",
    [TDB_REFUSAL_NO_PROCESS] = "no-process",
    [TDB_REFUSAL_SELF] = "self",
    [TDB_REFUSAL_KERNEL_THREAD] = "kernel-thread",
    [TDB_REFUSAL_ZOMBIE] = "zombie",
    [TDB_REFUSAL_NOT_PYTHON] = "not-python",
    [TDB_REFUSAL_PTRACE_DISABLED] = "ptrace-disabled",
    [TDB_REFUSAL_PTRACE_BLOCKED] = "ptrace-blocked",
    [TDB_REFUSAL_OTHER_USER] = "other-user",
    [TDB_REFUSAL_OTHER_GROUP] = "other-group",
    [TDB_REFUSAL_YAMA] = "yama",
    [TDB_REFUSAL_NOT_DUMPABLE] = "not-dumpable",
    [TDB_REFUSAL_CAPABILITIES] = "capabilities",
    [TDB_REFUSAL_ACCESS_DENIED] = "access-denied",
    [TDB_REFUSAL_TRACED] = "traced",
    [TDB_REFUSAL_UNKNOWN] = "unknown",
    [TDB_REFUSAL_AMBIGUOUS] = "ambiguous",
    [TDB_REFUSAL_NO_DEBUGGEE] = "no-debuggee",
};

const char *tdb_refusal_name(tdb_refusal r)
{
    return (unsigned)r < sizeof(refusal_names) / sizeof(refusal_names[0]) ? refusal_names[r]
                                                                           : "unknown";
}

/* --- the tracer */

/* security.capability of PATH (struct vfs_cap_data, little-endian; the
 * low 32 capabilities hold CAP_SYS_PTRACE). */
static void read_file_caps(tdb_tracer *t, const char *path)
{
    unsigned char buf[64];
    ssize_t n = getxattr(path, "security.capability", buf, sizeof(buf));
    if (n < (ssize_t)(3 * sizeof(uint32_t)))
        return;
    uint32_t magic = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
                     (uint32_t)buf[3] << 24;
    uint32_t prm = (uint32_t)buf[4] | (uint32_t)buf[5] << 8 | (uint32_t)buf[6] << 16 |
                   (uint32_t)buf[7] << 24;
    uint32_t inh = (uint32_t)buf[8] | (uint32_t)buf[9] << 8 | (uint32_t)buf[10] << 16 |
                   (uint32_t)buf[11] << 24;
    uint32_t rev = magic & VFS_CAP_REVISION_MASK;
    if (rev != VFS_CAP_REVISION_1 && rev != VFS_CAP_REVISION_2 && rev != VFS_CAP_REVISION_3)
        return;
    t->gdb_file_prm = prm;
    t->gdb_file_inh = inh;
    t->gdb_file_eff = (magic & VFS_CAP_FLAGS_EFFECTIVE) != 0;
}

/* The capabilities gdb gets when tdebug execs it (capabilities(7),
 * "Transformation of capabilities during execve()"): root's exec gets its
 * bounding set (and inheritable); anyone else keeps only ambient
 * capabilities, or what gdb's file capabilities grant. */
static void compute_debugger_caps(tdb_tracer *t)
{
    uint64_t prm, eff;
    if (t->uid == 0) {
        prm = t->cap_bnd | t->cap_inh;
        eff = prm;
    } else {
        int has_file_caps = t->gdb_file_prm || t->gdb_file_inh || t->gdb_file_eff;
        uint64_t amb = has_file_caps ? 0 : t->cap_amb;
        prm = (t->cap_inh & t->gdb_file_inh) | (t->cap_bnd & t->gdb_file_prm) | amb;
        eff = t->gdb_file_eff ? prm : amb;
    }
    t->debugger_prm = prm;
    t->cap_sys_ptrace = (eff >> TDB_CAP_SYS_PTRACE & 1) != 0;
}

/* A capability set of a /proc status TEXT ("CapEff:\t000001ffffffffff"),
 * 0 when missing. */
static uint64_t status_caps(const char *text, const char *name)
{
    const char *v = tdb_status_value(text, name);
    unsigned long long caps;
    return v && sscanf(v, "%llx", &caps) == 1 ? caps : 0;
}

int tdb_tracer_read(tdb_tracer *out, const char *root, const char *gdb, tdb_error *err)
{
    tdb_tracer t;
    char *path = NULL, *text = NULL;
    int result = -1;

    if (!root)
        root = "/proc";
    memset(&t, 0, sizeof(t));
    t.yama_scope = -1;
    t.probe_errno = -1;
    path = tdb_xasprintf("%s/self/status", root);
    text = tdb_read_file(path, NULL, err);
    if (!text)
        goto cleanup;
    const char *v;
    unsigned u;
    int pid;
    if ((v = tdb_status_value(text, "Pid")) && sscanf(v, "%d", &pid) == 1)
        t.pid = pid;
    if ((v = tdb_status_value(text, "Uid")) && sscanf(v, "%u", &u) == 1)
        t.uid = u;
    if ((v = tdb_status_value(text, "Gid")) && sscanf(v, "%u", &u) == 1)
        t.gid = u;
    t.cap_inh = status_caps(text, "CapInh");
    t.cap_prm = status_caps(text, "CapPrm");
    t.cap_eff = status_caps(text, "CapEff");
    t.cap_bnd = status_caps(text, "CapBnd");
    t.cap_amb = status_caps(text, "CapAmb");
    free(text);
    free(path);
    path = tdb_xasprintf("%s/sys/kernel/yama/ptrace_scope", root);
    text = tdb_read_file(path, NULL, NULL);
    if (text) {
        long scope;
        char *nl = strchr(text, '\n');
        if (nl)
            *nl = '\0';
        if (tdb_parse_long(text, 0, 3, &scope) == 0)
            t.yama_scope = (int)scope;
    }
    t.user = tdb_user_name(t.uid);
    if (!gdb || !*gdb)
        gdb = getenv("TDEBUG_GDB");
    gdb = gdb && *gdb ? gdb : "gdb";
    t.gdb = tdb_which(gdb);
    if (!t.gdb)
        t.gdb = tdb_xstrdup(gdb);
    read_file_caps(&t, t.gdb);
    compute_debugger_caps(&t);
    *out = t;
    result = 0;
cleanup:
    free(text);
    free(path);
    return result;
}

void tdb_tracer_release(tdb_tracer *t)
{
    if (!t)
        return;
    free(t->user);
    free(t->gdb);
    t->user = t->gdb = NULL;
}

void tdb_tracer_as_root(tdb_tracer *t)
{
    t->uid = 0;
    t->gid = 0;
    free(t->user);
    t->user = tdb_xstrdup("root");
    compute_debugger_caps(t);
}

int tdb_trace_try(pid_t pid)
{
    int status;
    pid_t child = fork();

    if (child < 0)
        return errno;
    if (child == 0) {
        int e = ptrace(PTRACE_SEIZE, pid, NULL, NULL) == 0 ? 0 : errno;
        _exit(e > 0 && e < 256 ? e : e ? EPERM : 0);
    }
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR)
            return errno;
    return WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
}

int tdb_tracer_probe(tdb_tracer *t)
{
    pid_t child = fork();
    if (child < 0) {
        t->probe_errno = errno;
        return t->probe_errno;
    }
    if (child == 0) {
        /* Wait to be killed; die with tdebug whatever happens. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
            pause();
    }
    int rc = (int)ptrace(PTRACE_SEIZE, child, NULL, NULL);
    t->probe_errno = rc == 0 ? 0 : errno;
    kill(child, SIGKILL);
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        ;
    return t->probe_errno;
}

/* --- the check */

static const char *group_name(gid_t gid, char *buf, size_t len)
{
    struct group gr, *res = NULL;
    char tmp[4096];
    if (getgrgid_r(gid, &gr, tmp, sizeof(tmp), &res) == 0 && res)
        snprintf(buf, len, "%s", res->gr_name);
    else
        snprintf(buf, len, "%u", (unsigned)gid);
    return buf;
}

const tdb_trace_purpose tdb_purpose_attach = {"attach to", "attach", 1, 0};
const tdb_trace_purpose tdb_purpose_stacks = {"read the stacks of", "stacks", 0, 1};

/* Set ERR to "cannot VERB pid PID: " and the rest (the reason alone when
 * the purpose has no verb) and return R. */
static tdb_refusal refuse(tdb_error *err, tdb_refusal r, int code, const tdb_trace_purpose *why,
                          pid_t pid, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static tdb_refusal refuse(tdb_error *err, tdb_refusal r, int code, const tdb_trace_purpose *why,
                          pid_t pid, const char *fmt, ...)
{
    tdb_buf b = TDB_BUF_INIT;
    va_list ap;
    if (why->verb)
        tdb_buf_addf(&b, "cannot %s pid %d: ", why->verb, (int)pid);
    va_start(ap, fmt);
    tdb_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    tdb_error_set_exit(err, TDB_EXIT_FAIL, code, "%s", tdb_buf_str(&b));
    tdb_buf_free(&b);
    return r;
}

static tdb_refusal refuse_yama(const tdb_tracer *tr, const tdb_trace_purpose *why, pid_t pid,
                               tdb_error *err)
{
    if (tr->yama_scope == 1 && why->by_tdebug)
        return refuse(err, TDB_REFUSAL_YAMA, EPERM, why, pid,
                      "ptrace is restricted by Yama (kernel.yama.ptrace_scope is 1: a process "
                      "may trace only its own children) (run tdebug as root, e.g. 'sudo tdebug "
                      "%s %d', or allow tracing with 'sudo sysctl kernel.yama.ptrace_scope=0')",
                      why->command, (int)pid);
    if (tr->yama_scope == 1)
        return refuse(err, TDB_REFUSAL_YAMA, EPERM, why, pid,
                      "ptrace is restricted by Yama (kernel.yama.ptrace_scope is 1: a process "
                      "may trace only its own children) (start the program under 'tdebug run' "
                      "instead, or allow attaching with 'sudo sysctl kernel.yama.ptrace_scope=0', "
                      "or let gdb attach with 'sudo setcap cap_sys_ptrace+ep %s')",
                      tr->gdb);
    if (why->by_tdebug)
        return refuse(err, TDB_REFUSAL_YAMA, EPERM, why, pid,
                      "ptrace is restricted to administrators by Yama (kernel.yama.ptrace_scope "
                      "is 2: only processes with CAP_SYS_PTRACE may trace) (run tdebug as root, "
                      "e.g. 'sudo tdebug %s %d', or lower the restriction with 'sudo sysctl "
                      "kernel.yama.ptrace_scope=0')",
                      why->command, (int)pid);
    return refuse(err, TDB_REFUSAL_YAMA, EPERM, why, pid,
                  "ptrace is restricted to administrators by Yama (kernel.yama.ptrace_scope is 2: "
                  "only processes with CAP_SYS_PTRACE may trace, and 'tdebug run' needs it too) "
                  "(run tdebug as root, e.g. 'sudo tdebug %s %d', or let gdb trace with 'sudo "
                  "setcap cap_sys_ptrace+ep %s', or lower the restriction with 'sudo sysctl "
                  "kernel.yama.ptrace_scope=1')",
                  why->command, (int)pid, tr->gdb);
}

static tdb_refusal refuse_other_user(const tdb_proc *p, const tdb_tracer *tr,
                                     const tdb_trace_purpose *why, tdb_error *err)
{
    char *setuid_owner = NULL;
    const char *owner;
    const char *how = "";

    if (p->uid != tr->uid) {
        owner = p->user;
    } else {
        owner = setuid_owner = tdb_user_name(p->euid != tr->uid ? p->euid : p->suid);
        how = " (set-user-ID)";
    }
    if (tr->uid == 0)
        refuse(err, TDB_REFUSAL_OTHER_USER, EPERM, why, p->pid,
               "it runs as user '%s'%s and tdebug runs as root without CAP_SYS_PTRACE "
               "(capabilities dropped, as in a container: start the container with "
               "'--cap-add=SYS_PTRACE', or run tdebug as '%s')",
               owner, how, owner);
    else if (!strcmp(owner, "root"))
        refuse(err, TDB_REFUSAL_OTHER_USER, EPERM, why, p->pid,
               "it runs as user 'root'%s and tdebug runs as '%s' (run tdebug as root, e.g. "
               "'sudo tdebug %s %d')",
               how, tr->user, why->command, (int)p->pid);
    else
        refuse(err, TDB_REFUSAL_OTHER_USER, EPERM, why, p->pid,
               "it runs as user '%s'%s and tdebug runs as '%s' (run tdebug as that user, e.g. "
               "'sudo -u %s tdebug %s %d', or as root)",
               owner, how, tr->user, owner, why->command, (int)p->pid);
    free(setuid_owner);
    return TDB_REFUSAL_OTHER_USER;
}

static int is_zombie(const tdb_proc *p)
{
    return p->state == 'Z' || p->state == 'X' || p->state == 'x';
}

tdb_refusal tdb_trace_check(tdb_proc_table *t, const tdb_tracer *tr, const tdb_trace_purpose *why,
                            pid_t pid, tdb_error *err)
{
    tdb_proc *p = tdb_proc_table_lookup(t, pid, NULL);
    /* CAP_SYS_PTRACE, and the permitted set, of the process that traces:
     * tdebug itself, or gdb as tdebug execs it (its file capabilities). */
    int self_cap = (tr->cap_eff >> TDB_CAP_SYS_PTRACE & 1) != 0;
    int cap = why->by_tdebug ? self_cap : tr->cap_sys_ptrace;
    uint64_t prm = why->by_tdebug ? tr->cap_prm : tr->debugger_prm;

    if (!p)
        return refuse(err, TDB_REFUSAL_NO_PROCESS, ESRCH, why, pid, "no such process%s",
                      why->python_only ? " ('tdebug ps' lists the Python processes you can "
                                         "attach to)" : "");
    if (p->pid == tr->pid || (p->tgid == tr->pid && tr->pid))
        return refuse(err, TDB_REFUSAL_SELF, EPERM, why, pid,
                      "that is tdebug itself (give the pid of a Python program; 'tdebug ps' "
                      "lists them)");
    if (p->kernel_thread)
        return refuse(err, TDB_REFUSAL_KERNEL_THREAD, EPERM, why, pid,
                      "it is a kernel thread ('%s'), not a program (give the pid of a Python "
                      "process; 'tdebug ps' lists them)",
                      p->comm);
    if (is_zombie(p))
        return refuse(err, TDB_REFUSAL_ZOMBIE, ESRCH, why, pid,
                      "it is a zombie ('%s' has exited and its parent %d has not reaped it; "
                      "nothing runs there any more) (start the program again, under 'tdebug "
                      "run' to debug it from the start)",
                      p->comm, (int)p->ppid);
    if (why->python_only && p->python == TDB_NO)
        return refuse(err, TDB_REFUSAL_NOT_PYTHON, 0, why, pid,
                      "it is not a Python process (it runs '%s'; 'tdebug ps' lists Python "
                      "processes)",
                      p->exe ? p->exe : p->comm);
    if (tr->yama_scope == 3)
        return refuse(err, TDB_REFUSAL_PTRACE_DISABLED, EPERM, why, pid,
                      "ptrace is disabled on this system (kernel.yama.ptrace_scope is 3: no "
                      "process may trace another, root included, and 'tdebug run' cannot work "
                      "either, until a reboot) (set kernel.yama.ptrace_scope = 0 or 1 in "
                      "/etc/sysctl.d/ and reboot)");
    if (p->uid != tr->uid || p->euid != tr->uid || p->suid != tr->uid) {
        if (!cap)
            return refuse_other_user(p, tr, why, err);
    } else if (p->gid != tr->gid || p->egid != tr->gid || p->sgid != tr->gid) {
        if (!cap) {
            char g[256];
            gid_t other = p->gid != tr->gid ? p->gid : p->egid != tr->gid ? p->egid : p->sgid;
            return refuse(err, TDB_REFUSAL_OTHER_GROUP, EPERM, why, pid,
                          "it runs with group '%s' (set-group-ID) and tdebug does not (run "
                          "tdebug as root, e.g. 'sudo tdebug %s %d')",
                          group_name(other, g, sizeof(g)), why->command, (int)pid);
        }
    }
    if ((tr->yama_scope == 1 || tr->yama_scope == 2) && !cap)
        return refuse_yama(tr, why, pid, err);
    if (tr->probe_errno > 0)
        return refuse(err, TDB_REFUSAL_PTRACE_BLOCKED, tr->probe_errno, why, pid,
                      "ptrace is blocked for tdebug: tracing even its own child failed: %s (a "
                      "seccomp filter or a security module forbids ptrace, as a container's "
                      "default profile does: start the container with '--cap-add=SYS_PTRACE', "
                      "or '--security-opt seccomp=unconfined')",
                      strerror(tr->probe_errno));
    if (p->dumpable == TDB_NO && !cap)
        return refuse(err, TDB_REFUSAL_NOT_DUMPABLE, EPERM, why, pid,
                      "it is not dumpable (it called prctl(PR_SET_DUMPABLE, 0) or was started "
                      "set-user-ID), so only root may trace it (run tdebug as root, e.g. 'sudo "
                      "tdebug %s %d')",
                      why->command, (int)pid);
    if ((p->cap_prm & ~prm) && !cap)
        return refuse(err, TDB_REFUSAL_CAPABILITIES, EPERM, why, pid,
                      "it holds capabilities tdebug lacks (its permitted set is %#llx, %s with "
                      "%#llx; without CAP_SYS_PTRACE only a process holding at least the same "
                      "capabilities may trace) (run tdebug with the same privileges, e.g. as root "
                      "outside the container, or start the container with "
                      "'--cap-add=SYS_PTRACE')",
                      (unsigned long long)p->cap_prm,
                      why->by_tdebug ? "tdebug runs" : "gdb would run", (unsigned long long)prm);
    if ((p->exe_errno == EACCES || p->exe_errno == EPERM) && (self_cap || !cap))
        /* Reading /proc/PID/exe takes the same ptrace access check (in read
         * mode) that attaching takes: the kernel already said no -- unless
         * gdb will hold CAP_SYS_PTRACE (its file capabilities) where tdebug
         * does not. */
        return refuse(err, TDB_REFUSAL_ACCESS_DENIED, EPERM, why, pid,
                      "the kernel denies tdebug access to it (reading /proc/%d/exe: %s) although "
                      "none of the usual reasons applies (it may be protected by a security "
                      "module or run in another user namespace; the kernel log ('dmesg') may "
                      "say which)",
                      (int)pid, strerror(p->exe_errno));
    if (p->tracer_pid)
        return refuse(err, TDB_REFUSAL_TRACED, EPERM, why, pid,
                      "it is already traced by pid %d (%s) (a process has only one tracer: "
                      "detach or quit that debugger first)",
                      (int)p->tracer_pid,
                      p->tracer_comm ? p->tracer_comm : "not visible from here");
    return TDB_REFUSAL_NONE;
}

tdb_refusal tdb_attach_check(tdb_proc_table *t, const tdb_tracer *tr, pid_t pid, tdb_error *err)
{
    return tdb_trace_check(t, tr, &tdb_purpose_attach, pid, err);
}

tdb_refusal tdb_trace_explain(tdb_proc_table *t, const tdb_tracer *tr,
                              const tdb_trace_purpose *why, pid_t pid, int errnum, tdb_error *err)
{
    tdb_error local = {0};
    tdb_refusal r = tdb_trace_check(t, tr, why, pid, &local);
    if (r != TDB_REFUSAL_NONE) {
        tdb_error_set_exit(err, local.exit_code, local.code, "%s", local.msg);
        return r;
    }
    if (errnum == EBUSY)
        /* The caller saw a tracer that has gone since: a debugger that
         * detached, another 'tdebug stacks'. */
        return refuse(err, TDB_REFUSAL_UNKNOWN, errnum, why, pid,
                      "another process was tracing it at that moment (a process has only one "
                      "tracer; try again)");
    if (errnum == ESRCH)
        /* It existed a moment ago and still does: a thread of it, or it
         * was stopped by another tracer in between. */
        return refuse(err, TDB_REFUSAL_UNKNOWN, errnum, why, pid,
                      "%s (it may have exited and been replaced, or been traced by another "
                      "process meanwhile; 'tdebug ps --check %d' tells what it is now)",
                      strerror(errnum), (int)pid);
    return refuse(err, TDB_REFUSAL_UNKNOWN, errnum, why, pid,
                  "%s (none of the usual reasons applies: a security module (AppArmor, SELinux) "
                  "or a seccomp filter may forbid it; the kernel log ('dmesg') may say which)",
                  strerror(errnum ? errnum : EPERM));
}

tdb_refusal tdb_attach_explain(tdb_proc_table *t, const tdb_tracer *tr, pid_t pid, int errnum,
                               tdb_error *err)
{
    return tdb_trace_explain(t, tr, &tdb_purpose_attach, pid, errnum, err);
}

int tdb_attach_resolve(tdb_proc_table *t, const tdb_tracer *tr, pid_t pid, tdb_resolution *out,
                       tdb_refusal *out_refusal, tdb_error *err)
{
    tdb_refusal r = TDB_REFUSAL_NONE;
    int rc;

    memset(out, 0, sizeof(*out));
    /* A pid that does not exist, a zombie, a kernel thread, a non-Python
     * process: nothing to resolve, say so first. */
    tdb_proc *p = tdb_proc_table_lookup(t, pid, NULL);
    if (!p || p->kernel_thread || p->state == 'Z' || p->python == TDB_NO) {
        r = tdb_attach_check(t, tr, pid, err);
        if (r != TDB_REFUSAL_NONE) {
            rc = -1;
            goto done;
        }
    }
    rc = tdb_proc_resolve_debuggee(t, pid, out, err);
    if (rc == 1) {
        r = TDB_REFUSAL_AMBIGUOUS;
    } else if (rc < 0) {
        r = TDB_REFUSAL_NO_DEBUGGEE;
    } else {
        r = tdb_attach_check(t, tr, out->pid, err);
        if (r != TDB_REFUSAL_NONE)
            rc = -1;
    }
done:
    if (out_refusal)
        *out_refusal = r;
    return rc;
}

int tdb_attach_prepare(pid_t pid, const char *gdb, tdb_resolution *out, tdb_refusal *out_refusal,
                       tdb_error *err)
{
    tdb_tracer tr;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    if (out_refusal)
        *out_refusal = TDB_REFUSAL_NONE;
    tdb_proc_table *t = tdb_proc_table_read("/proc", err);
    if (!t)
        return -1;
    if (tdb_tracer_read(&tr, "/proc", gdb, err) == 0) {
        tdb_tracer_probe(&tr);
        rc = tdb_attach_resolve(t, &tr, pid, out, out_refusal, err);
        tdb_tracer_release(&tr);
    }
    tdb_proc_table_free(t);
    return rc;
}

tdb_refusal tdb_ptrace_explain_for(const tdb_trace_purpose *why, pid_t pid, const char *gdb,
                                   int errnum, tdb_error *err)
{
    tdb_tracer tr;
    tdb_refusal r = TDB_REFUSAL_UNKNOWN;
    tdb_error local = {0};
    /* Only PID (and its tracer's name) is looked at: no need to read every
     * process. */
    tdb_proc_table *t = tdb_proc_table_new("/proc");

    if (tdb_tracer_read(&tr, "/proc", gdb, &local) == 0) {
        tdb_tracer_probe(&tr);
        r = tdb_trace_explain(t, &tr, why, pid, errnum, err);
        tdb_tracer_release(&tr);
    } else {
        /* Nothing to explain with: at least the system's words. */
        refuse(err, TDB_REFUSAL_UNKNOWN, errnum, why, pid, "%s (%s)", strerror(errnum),
               local.msg);
    }
    tdb_proc_table_free(t);
    return r;
}

tdb_refusal tdb_ptrace_explain(pid_t pid, const char *gdb, int errnum, tdb_error *err)
{
    return tdb_ptrace_explain_for(&tdb_purpose_attach, pid, gdb, errnum, err);
}
