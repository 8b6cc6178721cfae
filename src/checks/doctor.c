/*
 * checks/doctor.c: the checks behind 'tdebug doctor' (see checks/doctor.h).
 *
 * ptrace is tried for real on processes we fork: configuration alone does
 * not tell (a container's seccomp profile, a missing capability, an LSM
 * other than Yama all refuse ptrace without a sysctl to show for it).
 */
#include "checks/doctor.h"
#include "native/elf.h"
#include "checks/inspect.h"
#include "gdb/mi_session.h"
#include "targets/ptrace_check.h"
#include "cpython/frames.h"
#include "process/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PY_TIMEOUT_MS 300000  /* 'import torch' on a loaded 2-core machine */
#define GDB_TIMEOUT_MS 300000

/* Checks are filled in after they are added, several at once: the array
 * never moves (MAX_CHECKS is more than tdb_doctor_run adds). */
#define MAX_CHECKS 32

static tdb_check *add_check(tdb_doctor *d, const char *id)
{
    if (!d->checks)
        d->checks = tdb_xcalloc(MAX_CHECKS, sizeof(tdb_check));
    if (d->n == MAX_CHECKS)
        abort(); /* a programming error: raise MAX_CHECKS */
    tdb_check *c = &d->checks[d->n++];
    memset(c, 0, sizeof(*c));
    c->id = id;
    return c;
}

static void set_check(tdb_check *c, tdb_check_status status, char *summary, char *remedy)
{
    free(c->summary);
    free(c->remedy);
    c->status = status;
    c->summary = summary;
    c->remedy = remedy;
}

const char *tdb_check_status_name(tdb_check_status s)
{
    switch (s) {
    case TDB_CHECK_OK: return "ok";
    case TDB_CHECK_WARN: return "warning";
    case TDB_CHECK_FAIL: break;
    }
    return "failure";
}

/* --- gdb ----------------------------------------------------------------- */

/* Start gdb the way every tdebug session does (MI3, version check), then
 * ask its Python for a version.  Returns nonzero when gdb is usable. */
static int check_gdb(tdb_doctor *d, const char *gdb_name)
{
    tdb_check *c = add_check(d, "gdb");
    tdb_check *py = add_check(d, "gdb-python");
    tdb_gdb_options o = {.gdb = gdb_name, .stderr_fd = -1};
    tdb_error err = {0};
    const char *name = gdb_name ? gdb_name : getenv("TDEBUG_GDB");
    if (!name || !*name)
        name = "gdb";
    char *path = tdb_which(name);

    tdb_gdb *g = tdb_gdb_start(&o, &err);
    if (!g) {
        set_check(c, TDB_CHECK_FAIL, tdb_xasprintf("gdb is not usable: %s", err.msg),
                  tdb_xstrdup(path ? "install gdb 10 or newer with Python (apt-get install gdb), "
                                     "or point TDEBUG_GDB at one"
                                   : "install gdb (apt-get install gdb), or set TDEBUG_GDB to "
                                     "its path"));
        set_check(py, TDB_CHECK_FAIL, tdb_xstrdup("not checked: no usable gdb"),
                  tdb_xstrdup("fix gdb first"));
        free(path);
        return 0;
    }
    int v = tdb_gdb_version(g);
    set_check(c, TDB_CHECK_OK, tdb_xasprintf("gdb %d.%d at %s", v / 100, v % 100,
                                             path ? path : name), NULL);
    tdb_error_clear(&err);
    char *out = tdb_gdb_console(g, GDB_TIMEOUT_MS, &err,
                                "python import sys; print('tdb-python ' + sys.version.split()[0])");
    const char *mark = out ? strstr(out, "tdb-python ") : NULL;
    if (mark) {
        char *ver = tdb_first_line(mark + 11);
        set_check(py, TDB_CHECK_OK, tdb_xasprintf("gdb runs Python %s (py-bt and tdebug's "
                                                  "gdb helpers need it)", ver), NULL);
        free(ver);
    } else {
        set_check(py, TDB_CHECK_FAIL,
                  tdb_xasprintf("this gdb has no Python scripting (%s)",
                                err.set ? err.msg : "python command failed"),
                  tdb_xstrdup("install a gdb built with Python (Debian's 'gdb', not "
                              "'gdb-minimal'), or point TDEBUG_GDB at one"));
    }
    free(out);
    free(path);
    tdb_gdb_close(g, 2000);
    return py->status == TDB_CHECK_OK;
}

/* --- ptrace -------------------------------------------------------------- */

void tdb_doctor_ptrace_policy(const char *root, const char *gdb, tdb_check *out)
{
    char *proc = tdb_xasprintf("%s/proc", root);
    char *yama_dir = tdb_xasprintf("%s/sys/kernel/yama", proc);
    tdb_tracer tr;
    tdb_error err = {0};
    struct stat st;

    out->id = "ptrace-policy";
    /* The credentials gdb will run with: ours, plus any file capabilities
     * of the gdb binary (targets/ptrace_check.c). */
    int have = tdb_tracer_read(&tr, proc, gdb, &err) == 0;
    int cap = have && tr.cap_sys_ptrace;
    int bounded = have && !(tr.cap_bnd >> TDB_CAP_SYS_PTRACE & 1);
    int scope = have ? tr.yama_scope : -1;
    const char *capword = cap ? "CAP_SYS_PTRACE: yes" : "CAP_SYS_PTRACE: no";
    /* Without the capability in the bounding set not even root can trace
     * other users' processes: the mark of a container started without
     * --cap-add=SYS_PTRACE. */
    const char *container = bounded ? " (not in the bounding set either: a container without "
                                      "SYS_PTRACE?)" : "";
    if (have)
        tdb_tracer_release(&tr);

    if (!have) {
        set_check(out, TDB_CHECK_WARN, tdb_xasprintf("the ptrace policy is unknown: %s", err.msg),
                  tdb_xstrdup("the ptrace-run and ptrace-attach lines below tried it for real"));
        goto cleanup;
    }
    if (stat(yama_dir, &st) < 0) {
        set_check(out, TDB_CHECK_OK,
                  tdb_xasprintf("no Yama LSM: classic rules (same user, or CAP_SYS_PTRACE); %s%s",
                                capword, container),
                  bounded ? tdb_xstrdup("to debug other users' processes in a container, start "
                                        "it with --cap-add=SYS_PTRACE")
                          : NULL);
        goto cleanup;
    }
    switch (scope) {
    case 0:
        set_check(out, TDB_CHECK_OK,
                  tdb_xasprintf("Yama ptrace_scope 0 (classic rules); %s%s", capword, container),
                  NULL);
        break;
    case 1:
        if (cap)
            set_check(out, TDB_CHECK_OK,
                      tdb_xasprintf("Yama ptrace_scope 1 (descendants only), but %s", capword),
                      NULL);
        else
            set_check(out, TDB_CHECK_WARN,
                      tdb_xasprintf("Yama ptrace_scope 1: gdb may trace only programs it starts "
                                    "('tdebug run' works; attaching to a running process does "
                                    "not); %s", capword),
                      tdb_xstrdup("to attach: sudo sysctl kernel.yama.ptrace_scope=0 (until "
                                  "reboot), or run tdebug with CAP_SYS_PTRACE"));
        break;
    case 2:
        if (cap)
            set_check(out, TDB_CHECK_OK,
                      tdb_xasprintf("Yama ptrace_scope 2 (admin only), and %s", capword), NULL);
        else
            set_check(out, TDB_CHECK_FAIL,
                      tdb_xasprintf("Yama ptrace_scope 2: only CAP_SYS_PTRACE may trace; %s",
                                    capword),
                      tdb_xstrdup("sudo sysctl kernel.yama.ptrace_scope=1 (or 0), or run "
                                  "tdebug as root"));
        break;
    case 3:
        set_check(out, TDB_CHECK_FAIL,
                  tdb_xstrdup("Yama ptrace_scope 3: ptrace is disabled for everyone until reboot"),
                  tdb_xstrdup("set kernel.yama.ptrace_scope to 0 or 1 in /etc/sysctl.d/ and "
                              "reboot (scope 3 cannot be lowered at run time)"));
        break;
    default:
        set_check(out, TDB_CHECK_WARN,
                  tdb_xasprintf("cannot read Yama's ptrace_scope (%s/ptrace_scope); %s", yama_dir,
                                capword),
                  tdb_xasprintf("check it: cat %s/ptrace_scope", yama_dir));
        break;
    }
cleanup:
    free(yama_dir);
    free(proc);
}

/* What 'run' needs: a child asks to be traced (PTRACE_TRACEME), then
 * stops itself, and we see the stop.  Returns 0 or an errno. */
static int try_traceme(void)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        return e;
    }
    if (pid == 0) {
        close(pfd[0]);
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0) {
            int e = errno;
            (void)!write(pfd[1], &e, sizeof(e));
            _exit(1);
        }
        close(pfd[1]); /* the parent reads until EOF: no error */
        raise(SIGSTOP);
        _exit(0);
    }
    close(pfd[1]);
    int child_errno = 0;
    ssize_t n;
    do
        n = read(pfd[0], &child_errno, sizeof(child_errno));
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    int status = 0, rc = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (n == (ssize_t)sizeof(child_errno))
        rc = child_errno;
    else if (!WIFSTOPPED(status))
        rc = ECHILD;
    if (WIFSTOPPED(status)) {
        /* A traced child stopped: kill it, and reap it. */
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    return rc;
}

/* What 'attach' needs: trace a process that is not our descendant (Yama
 * scope 1 refuses exactly that).  A grandchild whose parent has exited is
 * reparented away from us; we PTRACE_SEIZE it (which does not stop it),
 * then kill it.  Returns 0 or an errno. */
static int try_attach(void)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return errno;
    pid_t mid = fork();
    if (mid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        return e;
    }
    if (mid == 0) {
        close(pfd[0]);
        pid_t g = fork();
        if (g == 0) {
            close(pfd[1]);
            alarm(60); /* never outlive a doctor that died */
            for (;;)
                pause();
        }
        (void)!write(pfd[1], &g, sizeof(g));
        _exit(g < 0 ? 1 : 0);
    }
    close(pfd[1]);
    pid_t g = -1;
    ssize_t n;
    do
        n = read(pfd[0], &g, sizeof(g));
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof(g) || g <= 0)
        return ECHILD;
    int rc = 0;
    if (ptrace(PTRACE_SEIZE, g, NULL, NULL) < 0)
        rc = errno;
    kill(g, SIGKILL); /* our own grandchild */
    if (rc == 0) {
        /* As its tracer we hear of its death first: collect that. */
        int status;
        while (waitpid(g, &status, __WALL) < 0 && errno == EINTR)
            ;
    }
    return rc;
}

static void check_ptrace(tdb_doctor *d, const char *root, const char *gdb, int *out_can_run)
{
    tdb_check *policy = add_check(d, "ptrace-policy");
    tdb_doctor_ptrace_policy(root, gdb, policy);

    tdb_check *run = add_check(d, "ptrace-run");
    int e = try_traceme();
    if (e == 0)
        set_check(run, TDB_CHECK_OK, tdb_xstrdup("gdb can start and trace a program "
                                                 "(PTRACE_TRACEME on a child: tried)"), NULL);
    else
        set_check(run, TDB_CHECK_FAIL,
                  tdb_xasprintf("tracing a child is refused (PTRACE_TRACEME: %s)", strerror(e)),
                  tdb_xstrdup(e == EPERM ? "ptrace is forbidden here (a seccomp profile, Yama "
                                           "scope 3 or an LSM): in Docker, run with "
                                           "--cap-add=SYS_PTRACE --security-opt seccomp=unconfined"
                                         : "see dmesg for what refused it"));
    *out_can_run = e == 0;

    tdb_check *attach = add_check(d, "ptrace-attach");
    e = try_attach();
    if (e == 0)
        set_check(attach, TDB_CHECK_OK, tdb_xstrdup("gdb can attach to a running process of "
                                                    "yours (PTRACE_SEIZE on a non-child: tried)"),
                  NULL);
    else
        set_check(attach, TDB_CHECK_WARN,
                  tdb_xasprintf("attaching to a running process is refused (PTRACE_SEIZE: %s); "
                                "'tdebug run' still works", strerror(e)),
                  tdb_xstrdup(policy->remedy ? policy->remedy
                                             : "run tdebug as root or with CAP_SYS_PTRACE"));
}

void tdb_doctor_ptrace_pid(pid_t pid, const char *gdb, tdb_check *out)
{
    tdb_resolution res;
    tdb_refusal why = TDB_REFUSAL_NONE;
    tdb_error err = {0};

    out->id = "ptrace-pid";
    /* What 'tdebug attach PID' checks before it starts gdb, attaching to
     * nothing: targets/ptrace_check.c has the kernel's rules, adapters and
     * launchers resolved to their debuggee. */
    int rc = tdb_attach_prepare(pid, gdb, &res, &why, &err);
    if (rc == 0) {
        set_check(out, TDB_CHECK_OK,
                  res.note ? tdb_xasprintf("may attach: %s", res.note)
                           : tdb_xasprintf("may attach to pid %d", (int)pid), NULL);
    } else {
        /* "cannot attach to pid N: WHY (WHAT TO DO)": the parenthesis is
         * the remedy. */
        char *msg = tdb_xstrdup(err.msg);
        char *remedy = NULL;
        size_t len = strlen(msg);
        if (len && msg[len - 1] == ')') {
            int depth = 0;
            for (size_t i = len; i-- > 0;) {
                depth += msg[i] == ')' ? 1 : msg[i] == '(' ? -1 : 0;
                if (depth == 0 && i > 0 && msg[i - 1] == ' ') {
                    remedy = tdb_xstrndup(msg + i + 1, len - i - 2);
                    msg[i - 1] = '\0';
                    break;
                }
            }
        }
        set_check(out, TDB_CHECK_FAIL, msg,
                  remedy ? remedy : tdb_xasprintf("'tdebug ps --check %d' says more", (int)pid));
    }
    tdb_resolution_release(&res);
}

/* --- Python -------------------------------------------------------------- */

static const char python_info_code[] =
    "import sys, os, json, sysconfig as s\n"
    "print(json.dumps({'executable': os.path.realpath(sys.executable),\n"
    "  'version': '%d.%d.%d' % sys.version_info[:3],\n"
    "  'short': '%d.%d' % sys.version_info[:2],\n"
    "  'libdir': s.get_config_var('LIBDIR') or '',\n"
    "  'library': s.get_config_var('INSTSONAME') or '',\n"
    "  'pydebug': hasattr(sys, 'gettotalrefcount')}))\n";

/* The Debian package that ships PATH ("python3.11-dbg"), or NULL. */
static char *dpkg_owner(const char *path)
{
    char *argv[] = {"dpkg", "-S", (char *)path, NULL};
    char *env[] = {"LC_ALL=C", NULL};
    tdb_spawn_result r = TDB_SPAWN_RESULT_INIT;
    char *pkg = NULL;
    if (tdb_spawn_capture(argv, env, 60000, &r, NULL) == 0 && r.status == 0) {
        char *colon = strstr(r.out, ": ");
        if (colon && !strchr(r.out, ',')) {
            pkg = tdb_xstrndup(r.out, (size_t)(colon - r.out));
            char *arch = strchr(pkg, ':');
            if (arch)
                *arch = '\0';
        }
    }
    tdb_spawn_result_free(&r);
    return pkg;
}

/* The object holding the interpreter's runtime: the executable when it
 * exports _PyRuntime, else libpython (a --enable-shared build). */
static char *runtime_object(json_t *info)
{
    const char *exe = json_string_value(json_object_get(info, "executable"));
    const char *libdir = json_string_value(json_object_get(info, "libdir"));
    const char *lib = json_string_value(json_object_get(info, "library"));
    uint64_t v;
    if (exe && tdb_elf_dynsym_value(exe, "_PyRuntime", &v, NULL) == 0)
        return tdb_xstrdup(exe);
    if (libdir && lib && *lib) {
        char *p = tdb_xasprintf("%s/%s", libdir, lib);
        if (access(p, R_OK) == 0)
            return p;
        free(p);
    }
    return exe ? tdb_xstrdup(exe) : NULL;
}

/* Really read Python frames the way every tdebug stack does: start PYTHON
 * in a known function, read its stack from memory, find the frame. */
static void check_python_frames(tdb_doctor *d, const char *python, int can_run)
{
    tdb_check *c = add_check(d, "python-frames");
    static const char code[] = "import sys, time\n"
                               "def tdebug_doctor_frame():\n"
                               "    print('ready', flush=True)\n"
                               "    time.sleep(60)\n"
                               "tdebug_doctor_frame()\n";
    char *argv[] = {(char *)python, "-c", (char *)code, NULL};
    tdb_child child;
    tdb_error err = {0};
    tdb_py_process *py = NULL;
    tdb_py_snapshot *snap = NULL;
    char *line = NULL;
    if (!can_run) {
        set_check(c, TDB_CHECK_WARN, tdb_xstrdup("not tried: this machine cannot trace processes"),
                  tdb_xstrdup("fix ptrace first"));
        return;
    }
    if (tdb_child_start(argv, NULL, &child, &err) < 0) {
        set_check(c, TDB_CHECK_FAIL, tdb_xasprintf("cannot start %s: %s", python, err.msg),
                  tdb_xstrdup("check --python"));
        return;
    }
    if (!(line = tdb_child_wait_line(&child, "ready", PY_TIMEOUT_MS, &err))) {
        set_check(c, TDB_CHECK_FAIL, tdb_xasprintf("%s did not start: %s", python, err.msg),
                  tdb_xstrdup("check --python"));
        goto done;
    }
    int rc = tdb_py_open(child.pid, NULL, &py, &err);
    if (rc != 0) {
        set_check(c, TDB_CHECK_FAIL,
                  tdb_xasprintf("tdebug cannot read this interpreter's Python frames: %s",
                                rc > 0 ? "no CPython runtime found in it" : err.msg),
                  tdb_xstrdup("stacks still show native frames; see 'tdebug stacks --help' for "
                              "the CPython versions read"));
        goto done;
    }
    int found = 0;
    if ((snap = tdb_py_read(py, &err)))
        for (size_t i = 0; i < snap->n_threads && !found; i++)
            for (size_t k = 0; k < snap->threads[i].n_frames && !found; k++)
                found = strcmp(snap->threads[i].frames[k].name, "tdebug_doctor_frame") == 0;
    if (found)
        set_check(c, TDB_CHECK_OK,
                  tdb_xasprintf("tdebug reads Python %s frames from memory (tried; python3-dbg "
                                "not needed)", tdb_py_version(py)), NULL);
    else
        set_check(c, TDB_CHECK_FAIL,
                  tdb_xasprintf("tdebug read Python %s but not the frame it ran (%s)",
                                tdb_py_version(py), snap ? "frame missing" : err.msg),
                  tdb_xstrdup("report this with 'tdebug stacks -v' on that interpreter"));
done:
    tdb_py_snapshot_free(snap);
    tdb_py_close(py);
    free(line);
    tdb_child_finish(&child, 0);
}

static void check_python_debuginfo(tdb_doctor *d, const char *python, json_t *info)
{
    tdb_check *c = add_check(d, "python-debuginfo");
    char *obj = runtime_object(info);
    tdb_error err = {0};
    tdb_elf_report *r = obj ? tdb_elf_inspect(obj, NULL, &err) : NULL;
    const char *short_version = json_string_value(json_object_get(info, "short"));

    if (!r) {
        set_check(c, TDB_CHECK_FAIL, tdb_xasprintf("cannot inspect the interpreter: %s",
                                                   err.set ? err.msg : "no executable"),
                  tdb_xstrdup("check --python"));
        free(obj);
        return;
    }
    tdb_elf_verdict v;
    tdb_elf_get_verdict(r, &v);
    if (v.dwarf) {
        const char *where = r->dwarf_in && !strcmp(r->dwarf_in, "debug file") ? r->debug_file
                                                                                : obj;
        char *pkg = dpkg_owner(where);
        set_check(c, TDB_CHECK_OK,
                  tdb_xasprintf("CPython debug info for %s: %s%s%s%s", obj, where,
                                pkg ? " (package " : "", pkg ? pkg : "", pkg ? ")" : ""),
                  NULL);
        free(pkg);
    } else {
        char *pkg = dpkg_owner(obj);
        char *remedy;
        if (pkg && short_version)
            remedy = tdb_xasprintf("apt-get install python%s-dbg (Debian/Ubuntu; %s comes from "
                                   "package %s)", short_version, obj, pkg);
        else
            remedy = tdb_xasprintf("this interpreter was built without debug info: rebuild it "
                                   "with CFLAGS=-g (pyenv: PYTHON_CFLAGS=-g pyenv install), or "
                                   "use one that has it (--python)");
        set_check(c, TDB_CHECK_WARN,
                  tdb_xasprintf("no CPython debug info for %s (%s): only gdb's own py-bt and "
                                "--cpython-symbols need it (tdebug reads Python frames itself)",
                                obj, r->debug_file ? "debug file has no DWARF"
                                : r->debuglink || r->build_id ? "no debug file found"
                                                              : "stripped"),
                  remedy);
        free(pkg);
    }
    (void)python;
    tdb_elf_report_free(r);
    free(obj);
}

/* Really run py-bt: start PYTHON under gdb, let it stop itself with
 * SIGTRAP, ask for the Python backtrace. */
static void check_py_bt(tdb_doctor *d, const char *gdb_name, const char *python, int can_run)
{
    tdb_check *c = add_check(d, "py-bt");
    if (!can_run) {
        set_check(c, TDB_CHECK_WARN, tdb_xstrdup("not tried: gdb cannot trace programs here"),
                  tdb_xstrdup("fix ptrace first"));
        return;
    }
    const char *gdb = gdb_name ? gdb_name : getenv("TDEBUG_GDB");
    if (!gdb || !*gdb)
        gdb = "gdb";
    char *argv[] = {(char *)gdb, "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
                    "-ex", "run", "-ex", "py-bt", "--args", (char *)python, "-c",
                    "import os, signal; os.kill(os.getpid(), signal.SIGTRAP)", NULL};
    char *env[] = {"LC_ALL=C", "PYTHONSTARTUP", NULL};
    tdb_spawn_result r = TDB_SPAWN_RESULT_INIT;
    tdb_error err = {0};
    if (tdb_spawn_capture(argv, env, GDB_TIMEOUT_MS, &r, &err) < 0) {
        set_check(c, TDB_CHECK_FAIL, tdb_xasprintf("cannot run gdb: %s", err.msg),
                  tdb_xstrdup("fix gdb first"));
        return;
    }
    if (strstr(r.out, "in <module>")) {
        set_check(c, TDB_CHECK_OK, tdb_xstrdup("gdb's py-bt shows Python frames (tried)"), NULL);
    } else if (strstr(r.out, "Undefined command: \"py-bt\"") ||
               strstr(r.err, "Undefined command: \"py-bt\"")) {
        set_check(c, TDB_CHECK_WARN,
                  tdb_xasprintf("gdb has no py-bt command for %s: CPython's gdb helpers "
                                "(python-gdb.py) were not loaded; tdebug's own py-bt does "
                                "not need them",
                                python),
                  tdb_xstrdup("Debian: the python3.X-dbg package installs them under "
                              "/usr/share/gdb/auto-load/; elsewhere, copy Tools/gdb/libpython.py "
                              "beside the interpreter as NAME-gdb.py and allow it with "
                              "'add-auto-load-safe-path' in ~/.gdbinit"));
    } else if (r.timed_out) {
        set_check(c, TDB_CHECK_WARN, tdb_xasprintf("gdb did not finish within %d s",
                                                   GDB_TIMEOUT_MS / 1000),
                  tdb_xstrdup("try again on a less loaded machine"));
    } else {
        char *e = tdb_first_line(*r.err ? r.err : r.out);
        set_check(c, TDB_CHECK_WARN,
                  tdb_xasprintf("gdb's py-bt showed no Python frame (%s); tdebug's own py-bt "
                                "does not need it", *e ? e : "no output"),
                  tdb_xstrdup("install the interpreter's debug info (see python-debuginfo) and "
                              "check 'gdb --args PYTHON' then 'run', 'py-bt' by hand"));
        free(e);
    }
    tdb_spawn_result_free(&r);
}

static void check_debugpy(tdb_doctor *d, const char *python)
{
    tdb_check *c = add_check(d, "debugpy");
    json_t *j = NULL;
    tdb_error err = {0};
    if (tdb_py_json(python,
                    "import json, debugpy\n"
                    "print(json.dumps({'version': debugpy.__version__, "
                    "'file': debugpy.__file__}))\n",
                    NULL, PY_TIMEOUT_MS, &j, &err) < 0) {
        set_check(c, TDB_CHECK_WARN,
                  tdb_xasprintf("debugpy is not importable by %s: %s", python, err.msg),
                  tdb_xasprintf("VS Code's Python debugging needs it: apt-get install "
                                "python3-debugpy, or %s -m pip install debugpy", python));
        return;
    }
    set_check(c, TDB_CHECK_OK,
              tdb_xasprintf("debugpy %s (%s)", json_string_value(json_object_get(j, "version")),
                            json_string_value(json_object_get(j, "file"))),
              NULL);
    json_decref(j);
}

/* torch's own libraries: torch/_C*.so and torch/lib/lib*.so*, resolved. */
static const char torch_code[] =
    "import json, os, glob, torch\n"
    "d = os.path.dirname(torch.__file__)\n"
    "libs = []\n"
    "for p in [torch._C.__file__] + sorted(glob.glob(os.path.join(d, 'lib', 'lib*.so*'))):\n"
    "    r = os.path.realpath(p)\n"
    "    if os.path.exists(r) and r not in libs: libs.append(r)\n"
    "print(json.dumps({'version': torch.__version__, 'dir': d, 'libs': libs}))\n";

static void summarise_torch_libs(tdb_check *c, const char *version, char **libs, size_t n)
{
    size_t with_dwarf = 0, debuggable = 0, optimised = 0, links = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        tdb_error err = {0};
        tdb_elf_report *r = tdb_elf_inspect(libs[i], NULL, &err);
        if (!r) {
            failed++;
            continue;
        }
        tdb_elf_verdict v;
        tdb_elf_get_verdict(r, &v);
        with_dwarf += v.dwarf;
        debuggable += v.debuggable;
        optimised += v.dwarf && v.opt == TDB_OPT_ON;
        links += r->debuglink != NULL && !r->debug_file;
        tdb_elf_report_free(r);
    }
    if (n && debuggable == n) {
        set_check(c, TDB_CHECK_OK, tdb_xasprintf("torch %s: all %zu libraries have DWARF, "
                                                 "unoptimised and indexed", version, n), NULL);
    } else if (with_dwarf == 0) {
        set_check(c, TDB_CHECK_WARN,
                  tdb_xasprintf("torch %s: none of its %zu libraries has DWARF (%zu stripped "
                                "with a debuglink and no debug file found%s): gdb stops at "
                                "exported C++ functions but shows no source lines or locals",
                                version, n, links, failed ? "; some unreadable" : ""),
                  tdb_xstrdup("for source-level debugging build torch with debug info: "
                              "'tdebug profile --torch' prints the environment; "
                              "'tdebug inspect torch._C' shows the details"));
    } else {
        set_check(c, TDB_CHECK_WARN,
                  tdb_xasprintf("torch %s: %zu of %zu libraries have DWARF, %zu of them "
                                "optimised, %zu fully debuggable", version, with_dwarf, n,
                                optimised, debuggable),
                  tdb_xstrdup("'tdebug inspect --pid PID' or 'tdebug profile --check' on each "
                              "library says what is missing"));
    }
}

static void check_torch(tdb_doctor *d, const char *python, pid_t pid)
{
    tdb_check *c = add_check(d, "torch");
    if (pid > 0) {
        /* The libraries the process really mapped, when we may look. */
        size_t n = 0;
        char **objs = tdb_pid_objects(pid, TDB_PID_MATTERS, &n, NULL);
        if (objs) {
            char **libs = tdb_xcalloc(n + 1, sizeof(char *));
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (tdb_is_torch_object(objs[i]))
                    libs[k++] = objs[i];
            if (k) {
                char *label = tdb_xasprintf("in pid %d", (int)pid);
                summarise_torch_libs(c, label, libs, k);
                free(label);
                free(libs);
                tdb_strv_free(objs);
                return;
            }
            free(libs);
            tdb_strv_free(objs);
        }
    }
    json_t *j = NULL;
    tdb_error err = {0};
    if (tdb_py_json(python, torch_code, NULL, PY_TIMEOUT_MS, &j, &err) < 0) {
        set_check(c, TDB_CHECK_WARN,
                  tdb_xasprintf("torch is not importable by %s: %s", python, err.msg),
                  tdb_xasprintf("install it for that interpreter (apt-get install python3-torch, "
                                "or %s -m pip install torch), or pass --python", python));
        return;
    }
    json_t *libs = json_object_get(j, "libs");
    size_t n = json_array_size(libs);
    char **paths = tdb_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        paths[i] = (char *)json_string_value(json_array_get(libs, i));
    summarise_torch_libs(c, json_string_value(json_object_get(j, "version")), paths, n);
    free(paths);
    json_decref(j);
}

/* The loader must accept the preloaded (rtld-audit) library: run Python
 * with LD_AUDIT set to it.  ld.so only warns about an audit library it
 * cannot load and runs the program anyway, so its stderr is the verdict. */
static void check_preload(tdb_doctor *d, const char *python)
{
    tdb_check *c = add_check(d, "preload");
    char *lib = tdb_companion_path("libtdebug-preload.so");
    if (!lib) {
        set_check(c, TDB_CHECK_WARN,
                  tdb_xstrdup("libtdebug-preload.so is not built or installed: stopping at "
                              "torch._C's load without gdb's slow path needs it"),
                  tdb_xstrdup("run 'make' in the tdebug tree (or 'make install')"));
        return;
    }
    char *audit = tdb_xasprintf("LD_AUDIT=%s", lib);
    char *argv[] = {(char *)python, "-c", "pass", NULL};
    char *env[] = {audit, "LD_PRELOAD", NULL};
    tdb_spawn_result r = TDB_SPAWN_RESULT_INIT;
    tdb_error err = {0};
    if (tdb_spawn_capture(argv, env, PY_TIMEOUT_MS, &r, &err) < 0) {
        set_check(c, TDB_CHECK_FAIL, tdb_xasprintf("cannot run %s: %s", python, err.msg),
                  tdb_xstrdup("check --python"));
    } else if (r.status != 0 || strstr(r.err, "ld.so") || strstr(r.err, "audit")) {
        char *why = tdb_first_line(*r.err ? r.err : "no message");
        set_check(c, TDB_CHECK_FAIL,
                  tdb_xasprintf("the loader does not accept %s as LD_AUDIT (exit %d: %s)", lib,
                                r.status, why),
                  tdb_xstrdup("rebuild it ('make') for this machine's architecture and glibc"));
        free(why);
    } else {
        set_check(c, TDB_CHECK_OK, tdb_xasprintf("%s loads as LD_AUDIT into %s", lib, python),
                  NULL);
    }
    tdb_spawn_result_free(&r);
    free(audit);
    free(lib);
}

void tdb_doctor_run(const tdb_doctor_options *opt, tdb_doctor *d)
{
    const char *root = opt->root ? opt->root : "";
    const char *python = tdb_target_python(opt->python);
    int can_run = 0;

    memset(d, 0, sizeof(*d));
    int gdb_ok = check_gdb(d, opt->gdb);
    check_ptrace(d, root, opt->gdb, &can_run);
    if (opt->pid > 0)
        tdb_doctor_ptrace_pid(opt->pid, opt->gdb, add_check(d, "ptrace-pid"));

    tdb_check *py = add_check(d, "python");
    json_t *info = NULL;
    tdb_error err = {0};
    if (tdb_py_json(python, python_info_code, NULL, PY_TIMEOUT_MS, &info, &err) < 0) {
        set_check(py, TDB_CHECK_FAIL, tdb_xasprintf("the target Python does not run: %s",
                                                    err.msg),
                  tdb_xstrdup("pass --python /path/to/python3 (the interpreter your program "
                              "runs under)"));
        return;
    }
    set_check(py, TDB_CHECK_OK,
              tdb_xasprintf("%s (Python %s%s)", json_string_value(json_object_get(info,
                                                                                  "executable")),
                            json_string_value(json_object_get(info, "version")),
                            json_is_true(json_object_get(info, "pydebug")) ? ", debug build" : ""),
              NULL);
    check_python_frames(d, python, can_run);
    check_python_debuginfo(d, python, info);
    if (gdb_ok)
        check_py_bt(d, opt->gdb, python, can_run);
    check_debugpy(d, python);
    check_torch(d, python, opt->pid);
    check_preload(d, python);
    json_decref(info);
}

void tdb_doctor_free(tdb_doctor *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->checks[i].summary);
        free(d->checks[i].remedy);
    }
    free(d->checks);
    d->checks = NULL;
    d->n = 0;
}

void tdb_doctor_counts(const tdb_doctor *d, size_t *out_warnings, size_t *out_failures)
{
    size_t w = 0, f = 0;
    for (size_t i = 0; i < d->n; i++) {
        w += d->checks[i].status == TDB_CHECK_WARN;
        f += d->checks[i].status == TDB_CHECK_FAIL;
    }
    *out_warnings = w;
    *out_failures = f;
}

json_t *tdb_doctor_json(const tdb_doctor *d)
{
    size_t w, f;
    json_t *checks = json_array();
    for (size_t i = 0; i < d->n; i++) {
        const tdb_check *c = &d->checks[i];
        /* Summaries and remedies hold paths: bytes, kept whole. */
        json_t *o = json_pack("{s:s, s:s}", "id", c->id, "status",
                              tdb_check_status_name(c->status));
        tdb_json_set_str(o, "summary", c->summary ? c->summary : "");
        tdb_json_set_str(o, "remedy", c->remedy);
        json_array_append_new(checks, o);
    }
    tdb_doctor_counts(d, &w, &f);
    return tdb_json_versioned(json_pack("{s:o, s:I, s:I, s:b}", "checks", checks, "warnings",
                                        (json_int_t)w, "failures", (json_int_t)f, "ok", f == 0));
}
