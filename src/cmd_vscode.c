/*
 * cmd_vscode.c: 'tdebug vscode', which writes .vscode/launch.json and
 * tasks.json so that F5 in VS Code debugs a Python program and the C/C++
 * it calls, together.  The entries are made in vscode/launch.c and merged
 * into the user's files by vscode/jsonc.c; this file resolves the options
 * (interpreter, gdb, script, port, libraries, the process to attach to) and
 * reports.
 */
#include "cmd.h"
#include "common.h"
#include "dwsource.h"
#include "jsonc.h"
#include "launch.h"
#include "proc.h"
#include "ptrace_check.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* How deep the workspace is searched for the user's own shared objects. */
#define LIB_SCAN_DEPTH 8

const char cmd_vscode_usage[] =
    "usage: tdebug vscode [--workspace DIR] (--program SCRIPT | --module M)\n"
    "                     [options] [--args ARG...]\n"
    "       tdebug vscode [--workspace DIR] --attach PID [options]\n"
    "       tdebug vscode --install-extension [--extensions-dir DIR]\n"
    "\n"
    "Write .vscode/launch.json and .vscode/tasks.json in the workspace so that\n"
    "one F5 in VS Code debugs a Python program and the C/C++ it calls (torch,\n"
    "your extensions) together: pick \"tdebug: SCRIPT (Python + C++)\" in Run and\n"
    "Debug.  That compound starts the interpreter under gdb (\"tdebug: SCRIPT\n"
    "(C++, gdb)\", a cppdbg launch: no privileges needed) running the program\n"
    "under debugpy, and attaches the Python debugger to it once it listens\n"
    "(\"tdebug: SCRIPT (Python, debugpy)\", after the task \"tdebug: wait for\n"
    "debugpy (SCRIPT)\").  SCRIPT is the script's path in the workspace.\n"
    "\n"
    "Only tdebug's own entries (named \"tdebug: ...\") are added or replaced;\n"
    "every other configuration, compound, input, task and comment stays as it\n"
    "was, byte for byte.  A changed file's previous text is kept as\n"
    "launch.json.~N~ (tasks.json.~N~); running the command again changes\n"
    "nothing; runs at the same time take turns.  A file that does not parse, or\n"
    "is not a regular file (a FIFO, a device), is left alone.\n"
    "\n"
    "  --workspace DIR   the folder opened in VS Code (default: .)\n"
    "  --program SCRIPT  the Python script to run (a relative path is the\n"
    "                    workspace's, else the current directory's)\n"
    "  --module M        or the module to run (python -m M)\n"
    "  --args ARG...     the program's arguments: everything after --args; they\n"
    "                    reach the program byte for byte (a line break cannot)\n"
    "  --python PATH     the interpreter (default: $TDEBUG_PYTHON, else the one\n"
    "                    tdebug was built for); it needs debugpy\n"
    "  --port N          debugpy's port (default: kept from the last run, else a\n"
    "                    free one chosen now); with --attach, the port of the\n"
    "                    process's debugpy server when tdebug cannot find it\n"
    "  --torch-src DIR   a PyTorch source tree: gdb shows torch's C++ from it\n"
    "                    (sourceFileMap from where torch was built, and gdb's\n"
    "                    source path)\n"
    "  --lib PATTERN     also load the symbols of libraries whose file name\n"
    "                    matches PATTERN (* and ?; repeatable).  The workspace's\n"
    "                    own shared objects are found by themselves\n"
    "  --attach PID      instead, attach to the running Python process PID:\n"
    "                    \"tdebug: attach (C++, gdb)\", plus \"tdebug: attach\n"
    "                    (Python, debugpy)\" and the compound \"tdebug: attach\n"
    "                    (Python + C++)\" when it runs a debugpy server.  As\n"
    "                    with 'tdebug attach', a debugpy adapter or launcher\n"
    "                    stands for the program it runs, and what gdb could\n"
    "                    not attach to is refused with the reason.  When gdb\n"
    "                    can attach with your rights it is started through\n"
    "                    /bin/sh, so VS Code asks for no password (pkexec).\n"
    "                    The compound has no stopAll: stopping it never ends\n"
    "                    the process\n"
    "\n"
    "gdb loads the symbols of only the interpreter, libc, libm and the loader,\n"
    "torch/c10, what torch's stacks pass through (libstdc++, libgcc_s, libgomp,\n"
    "libffi, BLAS, ...), every Python extension module, the shared objects under\n"
    "the workspace (also ones built later) and --lib; breakpoints in the workspace and your extensions' sources\n"
    "go by full path; it steps over std:: and pybind11::, and loads CPython's gdb\n"
    "helpers (py-bt) when installed.  The launched program waits up to 60 s for\n"
    "the Python side, then runs without it.\n"
    "\n"
    "Exit status: 0 written (or already up to date); 1 a file could not be\n"
    "parsed or updated (nothing is written), the interpreter has no debugpy,\n"
    "or the process cannot be attached to (or stands for several); 2 usage\n"
    "error; 125 gdb missing, /proc unreadable or a write failed; 126 the\n"
    "interpreter does not run; 127 the script or interpreter does not exist.\n"
    "\n"
    "--install-extension installs the \"tdebug\" debug type for you instead: one\n"
    "configuration that stops at Python and C++ breakpoints, whose adapter is\n"
    "'tdebug dap', in VS Code's and VS Code Server's extension folders\n"
    "(~/.vscode/extensions, ~/.vscode-server/extensions; --extensions-dir DIR,\n"
    "repeatable, for others).  Running it again changes nothing; a folder of the\n"
    "same name that is not tdebug's is left alone (exit status 1).\n";

typedef struct options {
    const char *workspace;
    const char *program;
    const char *module;
    const char *python;
    const char *torch_src;
    long port;
    long attach;
    char **args;
    int n_args;
    const char **libs;
    int n_libs;
} options;

/* ------------------------------------------------------------------ */
/* Paths */

/* NAME as an absolute path, symlinks kept (a virtual environment's
 * bin/python is a symlink that must stay one). */
static char *absolute(const char *name)
{
    char cwd[PATH_MAX];
    if (name[0] == '/' || !getcwd(cwd, sizeof(cwd)))
        return tdb_xstrdup(name);
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    return tdb_xasprintf("%s/%s", cwd, name);
}

/* An interpreter given by name or path, checked for existence. */
static int resolve_program(const char *what, const char *name, char **out, tdb_error *err)
{
    char *found = tdb_which(name), *path = found ? absolute(found) : NULL;
    free(found);
    if (!path) {
        tdb_error_set_exit(err, TDB_EXIT_NOTFOUND, ENOENT, "cannot find %s '%s' on PATH", what, name);
        return -1;
    }
    if (access(path, F_OK) < 0) {
        tdb_error_set_exit(err, TDB_EXIT_NOTFOUND, errno, "cannot find %s '%s': %s", what, name,
                           strerror(errno));
        free(path);
        return -1;
    }
    if (access(path, X_OK) < 0) {
        tdb_error_set_exit(err, TDB_EXIT_NOEXEC, errno, "cannot run %s '%s': %s", what, name,
                           strerror(errno));
        free(path);
        return -1;
    }
    *out = path;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The process to attach to */

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
 * without Yama), *OUT_PTRACER (the process's exception let gdb in) and
 * *OUT_SIGNAL (the user may signal it); 1 when ambiguous (ERR lists the
 * candidates) or -1 refused, with ERR set. */
static int resolve_attach(pid_t pid, const char *gdb, tdb_proc_table **out_table,
                          tdb_resolution *res, tdb_vscode_attach_plan *out_plan, int *out_scope,
                          int *out_ptracer, int *out_signal, tdb_error *err)
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
static char *interpreter_of(const tdb_proc *p)
{
    struct stat a, b;
    if (p->argc && p->argv[0][0] == '/' && p->exe && stat(p->argv[0], &a) == 0 &&
        stat(p->exe, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return tdb_xstrdup(p->argv[0]);
    return p->exe ? tdb_xstrdup(p->exe) : NULL;
}

/* ------------------------------------------------------------------ */

static int free_port(void)
{
    struct sockaddr_in a = {0};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* The libraries whose symbols gdb loads: tdebug's fixed set, --lib, and the
 * shared objects in the workspace (and the script's folder outside it),
 * whose paths go to PATHS.  The fixed set is what a torch stack passes
 * through: without a library's symbols gdb has none of its unwind
 * information either, and a stack through it ends there in '??'. */
static json_t *library_patterns(const options *o, const tdb_python_info *py, const char *ws_real,
                                const char *script_dir, json_t *paths)
{
    json_t *libs = json_array();
    const char *version = py && py->version ? py->version : "3";
    char *libpython = tdb_xasprintf("libpython%s*.so*", version);
    /* every extension module of this Python, wherever it is: the user's
     * own, also one built or installed later ("3.11" gives
     * "*.cpython-311-*.so") */
    char *extensions = tdb_xasprintf("*.cpython-%.*s%s-*.so", (int)strcspn(version, "."), version,
                                     strchr(version, '.') ? strchr(version, '.') + 1 : "*");
    const char *fixed[] = {
        "libc.so.6", "ld-linux*.so*", "libm.so.6", libpython, extensions, "*.abi3.so",
        "libtorch*.so*", "libc10*.so*", "libshm.so*", "_C.cpython*.so", "_C_flatbuffer*.so",
        /* C++: exceptions and std:: (its pretty-printers load with it) */
        "libstdc++.so*", "libgcc_s.so*",
        /* intra-op threads, ctypes and callbacks, torch's math kernels */
        "libgomp*.so*", "libffi.so*", "libblas.so*", "liblapack.so*", "libopenblas*.so*",
        "libdnnl.so*", "libsleef.so*", "libpthreadpool.so*",
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(*fixed); i++)
        json_array_append_new(libs, json_string(fixed[i]));
    for (int i = 0; i < o->n_libs; i++)
        json_array_append_new(libs, json_string(o->libs[i]));
    tdb_vscode_find_libraries(ws_real, LIB_SCAN_DEPTH, libs, paths);
    if (script_dir)
        tdb_vscode_find_libraries(script_dir, 0, libs, paths);
    free(libpython);
    free(extensions);
    return libs;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Where the sources of the libraries at PATHS are (their DWARF), outside
 * the workspace (mapped already) and the system's directories, existing,
 * sorted, none inside another: what sourceFileMap maps to itself so that
 * MIEngine sends breakpoints in them by full path.  New array. */
static json_t *source_dirs(json_t *paths, const char *ws_real)
{
    json_t *found = json_object(), *dirs = json_array();
    size_t i, n = 0, wl = strlen(ws_real);
    const char *key;
    json_t *v;

    json_array_foreach(paths, i, v) {
        tdb_error ignored = {0};
        tdb_dwarf_source_dirs(json_string_value(v), found, &ignored); /* no DWARF: nothing */
    }
    const char **sorted = tdb_xcalloc(json_object_size(found) + 1, sizeof(*sorted));
    json_object_foreach(found, key, v) {
        struct stat st;
        int in_ws = !strncmp(key, ws_real, wl) && (key[wl] == '/' || key[wl] == '\0');
        if (in_ws || !strncmp(key, "/usr/", 5) || stat(key, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        sorted[n++] = key;
    }
    qsort(sorted, n, sizeof(*sorted), cmp_str);
    for (i = 0; i < n && json_array_size(dirs) < 32; i++) {
        const char *last = json_string_value(json_array_get(dirs, json_array_size(dirs) - 1));
        size_t ll = last ? strlen(last) : 0;
        if (last && !strncmp(sorted[i], last, ll) && (sorted[i][ll] == '/' || !strcmp(last, "/")))
            continue; /* inside the one before */
        json_array_append_new(dirs, json_string(sorted[i]));
    }
    free(sorted);
    json_decref(found);
    return dirs;
}

/* Why S cannot be written into launch.json as a program argument (or a
 * path gdb's shell reads), or NULL when it can. */
static const char *passable(const char *s)
{
    if (strpbrk(s, "\n\r"))
        return "holds a line break (VS Code's C/C++ extension sends the program's arguments to gdb "
               "on one line; pass it in a file or an environment variable)";
    json_t *j = json_string(s); /* NULL when not UTF-8 */
    json_decref(j);
    return j ? NULL : "is not UTF-8 text (launch.json is UTF-8)";
}

static int parse_options(int argc, char **argv, options *o)
{
    static const struct option opts[] = {
        {"workspace", required_argument, NULL, 'w'},
        {"program", required_argument, NULL, 'p'},
        {"module", required_argument, NULL, 'm'},
        {"python", required_argument, NULL, 'P'},
        {"torch-src", required_argument, NULL, 't'},
        {"port", required_argument, NULL, 'o'},
        {"attach", required_argument, NULL, 'a'},
        {"lib", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, nargs = argc;

    /* Everything after --args belongs to the program, options included. */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--args")) {
            nargs = i;
            o->args = argv + i + 1;
            o->n_args = argc - i - 1;
            break;
        }
    o->libs = tdb_xcalloc((size_t)argc + 1, sizeof(*o->libs));
    optind = 1;
    opterr = 0; /* our own message, in our own words */
    while ((c = getopt_long(nargs, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'w': o->workspace = optarg; break;
        case 'p': o->program = optarg; break;
        case 'm': o->module = optarg; break;
        case 'P': o->python = optarg; break;
        case 't': o->torch_src = optarg; break;
        case 'l': o->libs[o->n_libs++] = optarg; break;
        case 'o':
            if (tdb_parse_long(optarg, 1, 65535, &o->port) < 0)
                return tdb_usage_error("vscode", "bad --port '%s' (expected 1 to 65535)", optarg);
            break;
        case 'a':
            if (tdb_parse_long(optarg, 1, INT_MAX, &o->attach) < 0)
                return tdb_usage_error("vscode", "bad --attach '%s' (expected a process id)", optarg);
            break;
        case 'h': return -TDB_EXIT_OK - 1;
        default: return tdb_usage_error("vscode", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (optind < nargs)
        return tdb_usage_error("vscode", "unexpected argument '%s' (program arguments go after --args)",
                               argv[optind]);
    if (!!o->program + !!o->module + !!o->attach != 1)
        return tdb_usage_error("vscode", "give one of --program SCRIPT, --module M or --attach PID");
    if (o->attach && o->n_args)
        return tdb_usage_error("vscode", "--args does not go with --attach (the process already runs)");
    if (o->attach && o->python)
        return tdb_usage_error("vscode", "--python does not go with --attach (the process's own "
                                         "interpreter is the one)");
    if (o->module && (!*o->module || strpbrk(o->module, " \t/\n\r")))
        return tdb_usage_error("vscode", "bad --module '%s' (expected a dotted module name)", o->module);
    for (int i = 0; i < o->n_args; i++) {
        const char *why = passable(o->args[i]);
        if (why)
            return tdb_usage_error("vscode", "cannot pass argument %d to the program: it %s", i + 1,
                                   why);
    }
    return 0;
}

static void say_waiting(void *workspace)
{
    const char *ws = workspace;
    fprintf(stderr, "tdebug: another 'tdebug vscode' is writing '%s%s': waiting for it\n",
            strcmp(ws, ".") ? ws : "", strcmp(ws, ".") ? "/.vscode" : ".vscode");
}

static void report(const tdb_vscode_written *w)
{
    if (!w->path)
        return;
    if (!w->changed)
        printf("%s is up to date\n", w->path);
    else if (w->backup)
        printf("wrote %s (the previous file is kept as %s)\n", w->path, w->backup);
    else
        printf("wrote %s\n", w->path);
}

int cmd_vscode(int argc, char **argv)
{
    options o = {0};
    tdb_error err = {0};
    tdb_python_info py = {0};
    tdb_vscode_spec spec = {0};
    tdb_vscode_written written[2] = {{0}};
    char *ws_real = NULL, *python = NULL, *gdb = NULL, *script = NULL;
    char *label = NULL, *script_dir = NULL, *helper = NULL, *root = NULL, *torch_src = NULL;
    char *host = NULL, *attach_exe = NULL, *debugpy_name = NULL, *runner = NULL, tdebug[PATH_MAX];
    json_t *libs = NULL, *lib_paths = json_array(), *src_dirs = NULL;
    json_t *configurations = NULL, *compounds = NULL, *tasks = NULL;
    tdb_proc_table *procs = NULL;
    tdb_resolution target = {0};
    tdb_vscode_attach_plan plan = TDB_VSCODE_ATTACH_DIRECT;
    pid_t attach_pid = 0;
    int rc, port = 0, yama_scope = -1, by_ptracer = 0, signal_ok = 1;

    for (int i = 1; i < argc && strcmp(argv[i], "--args") != 0; i++)
        if (!strcmp(argv[i], "--install-extension"))
            return cmd_vscode_install_extension(argc, argv);
    rc = parse_options(argc, argv, &o);
    if (rc == -TDB_EXIT_OK - 1) {
        free(o.libs);
        return tdb_print_usage("vscode");
    }
    if (rc != 0)
        goto cleanup;
    rc = TDB_EXIT_TOOL;
    if (!o.workspace)
        o.workspace = ".";
    ws_real = realpath(o.workspace, NULL);
    struct stat st;
    if (!ws_real || stat(ws_real, &st) < 0 || !S_ISDIR(st.st_mode)) {
        rc = tdb_usage_error("vscode", "cannot use --workspace '%s': %s", o.workspace,
                             ws_real ? "Not a directory" : strerror(errno));
        goto cleanup;
    }

    /* gdb, and the tdebug the task runs. */
    const char *gdb_name = getenv("TDEBUG_GDB") && *getenv("TDEBUG_GDB") ? getenv("TDEBUG_GDB") : "gdb";
    if (resolve_program("gdb", gdb_name, &gdb, &err) < 0) {
        tdb_fail("%s (install gdb, or set TDEBUG_GDB)", err.msg);
        rc = TDB_EXIT_TOOL;
        goto cleanup;
    }
    ssize_t n = readlink("/proc/self/exe", tdebug, sizeof(tdebug) - 1);
    if (n <= 0) {
        tdb_fail("cannot find tdebug's own path: %s", strerror(errno));
        goto cleanup;
    }
    tdebug[n] = '\0';

    if (o.attach) {
        if (resolve_attach((pid_t)o.attach, gdb, &procs, &target, &plan, &yama_scope, &by_ptracer,
                           &signal_ok, &err) != 0) {
            rc = tdb_error_exit(&err);
            goto cleanup;
        }
        if (target.note)
            fprintf(stderr, "tdebug: %s\n", target.note);
        attach_pid = target.pid;
        const tdb_proc *p = tdb_proc_table_lookup(procs, attach_pid, NULL);
        /* Unreadable only to tdebug when VS Code's gdb will be root. */
        attach_exe = p && p->exe ? tdb_xstrdup(p->exe) : tdb_xasprintf("/proc/%d/exe", (int)attach_pid);
        python = p ? interpreter_of(p) : NULL;
        if (!python || tdb_vscode_probe_python(python, &py, &err) < 0) {
            /* an embedding program is no interpreter: fine, fewer details */
            tdb_error_clear(&err);
            tdb_python_info_clear(&py);
        }
        if (o.port) {
            host = tdb_xstrdup("127.0.0.1");
            port = (int)o.port;
        } else if (p && p->role == TDB_ROLE_DEBUGGEE) {
            tdb_warn("pid %d is already debugged by a debugpy client (%s): writing only the C++ "
                     "attach", (int)attach_pid,
                     p->endpoint ? "it was started with --connect"
                                 : "debugpy started it connected to its adapter");
        } else if (!tdb_proc_debugpy_server(procs, attach_pid, &host, &port)) {
            printf("pid %d runs no debugpy server: writing only the C++ attach "
                   "(pass --port N if it listens where tdebug cannot see)\n", (int)attach_pid);
        }
        if (plan == TDB_VSCODE_ATTACH_ELEVATED)
            tdb_warn("ptrace_scope is %d: gdb can attach to pid %d only as root, so VS Code's C/C++ "
                     "extension starts it through pkexec (or sudo) and asks for a password; the "
                     "launch entry (--program) needs none",
                     yama_scope, (int)attach_pid);
        else if (!signal_ok)
            tdb_warn("gdb can attach to pid %d, another user's process, only by its CAP_SYS_PTRACE, "
                     "which gives no right to signal it: VS Code will not be able to pause it, nor "
                     "to detach while it runs (run VS Code as that user, or as root)",
                     (int)attach_pid);
        else if (by_ptracer)
            tdb_warn("pid %d lets debuggers of its user attach (prctl(PR_SET_PTRACER), as a program "
                     "paused by 'tdebug env' does while it waits): gdb is started as you, without "
                     "pkexec; start \"tdebug: attach (C++, gdb)\" before the process takes that back",
                     (int)attach_pid);
    } else {
        if (resolve_program("python", tdb_target_python(o.python), &python, &err) < 0) {
            rc = tdb_error_exit(&err);
            goto cleanup;
        }
        if (tdb_vscode_probe_python(python, &py, &err) < 0) {
            rc = tdb_error_exit(&err);
            goto cleanup;
        }
        if (!py.has_debugpy) {
            tdb_fail("cannot use '%s' for VS Code: it has no debugpy module "
                     "(install python3-debugpy or 'pip install debugpy', or pass --python)", python);
            rc = TDB_EXIT_FAIL;
            goto cleanup;
        }
        if (o.program) {
            /* A relative SCRIPT is the workspace's, as launch.json names
             * it, else the current directory's. */
            if (o.program[0] != '/') {
                char *in_ws = tdb_xasprintf("%s/%s", ws_real, o.program);
                script = realpath(in_ws, NULL);
                free(in_ws);
            }
            if (!script)
                script = realpath(o.program, NULL);
            if (!script) {
                tdb_fail("cannot find the script '%s': %s", o.program, strerror(errno));
                rc = TDB_EXIT_NOTFOUND;
                goto cleanup;
            }
            if (passable(script)) {
                rc = tdb_usage_error("vscode", "cannot use the script '%s': its path %s", o.program,
                                     passable(script));
                goto cleanup;
            }
            size_t wl = strlen(ws_real);
            if (!strncmp(script, ws_real, wl) && script[wl] == '/') {
                label = tdb_xstrdup(script + wl + 1);
            } else {
                label = tdb_xstrdup(script);
                script_dir = tdb_xstrdup(script);
                *strrchr(script_dir, '/') = '\0';
            }
        } else {
            label = tdb_xasprintf("-m %s", o.module);
        }
        host = tdb_xstrdup("127.0.0.1");
        /* The runner gdb starts the interpreter on: beside the binary in a
         * build tree, in LIBDIR/tdebug once installed. */
        runner = tdb_companion_path("python/tdebug/_vscode_run.py");
        if (!runner)
            runner = tdb_companion_path("tdebug/_vscode_run.py");
        if (!runner || passable(runner)) {
            tdb_fail("cannot find tdebug's '_vscode_run.py' beside %s or in %s (reinstall tdebug)",
                     tdebug, TDB_LIBDIR);
            goto cleanup;
        }
    }

    if (o.torch_src) {
        torch_src = realpath(o.torch_src, NULL);
        if (!torch_src || stat(torch_src, &st) < 0 || !S_ISDIR(st.st_mode)) {
            rc = tdb_usage_error("vscode", "cannot use --torch-src '%s': %s", o.torch_src,
                                 torch_src ? "Not a directory" : strerror(errno));
            goto cleanup;
        }
        root = py.torch_dir ? tdb_vscode_torch_build_root(py.torch_dir) : NULL;
        if (!root)
            tdb_warn("cannot tell where PyTorch was built (%s): gdb searches '%s' for its sources, "
                     "but no sourceFileMap is written",
                     py.torch_dir ? "no source file names in its libc10.so" : "torch is not installed",
                     torch_src);
    }

    spec.label = label;
    spec.program = script;
    spec.module = o.module;
    spec.workspace = ws_real;
    spec.runner = runner;
    spec.attach_direct = attach_pid && plan == TDB_VSCODE_ATTACH_DIRECT;
    spec.args = o.args;
    spec.n_args = o.n_args;
    spec.python = python;
    spec.python_version = py.version;
    spec.gdb = gdb;
    spec.tdebug = tdebug;
    spec.host = host;
    spec.attach_pid = attach_pid;
    spec.attach_program = attach_exe;
    spec.torch_src = torch_src;
    spec.build_root = root;
    helper = tdb_vscode_python_gdb_helper(python, &py);
    spec.gdb_helper = helper;
    libs = library_patterns(&o, &py, ws_real, script_dir, lib_paths);
    spec.libraries = libs;
    src_dirs = source_dirs(lib_paths, ws_real);
    spec.source_dirs = src_dirs;

    if (!attach_pid) {
        /* The port is kept between runs, so that running again gives the
         * same file. */
        debugpy_name = tdb_vscode_debugpy_name(&spec);
        port = o.port ? (int)o.port : tdb_vscode_existing_port(ws_real, debugpy_name);
        if (!port)
            port = free_port();
        if (!port) {
            tdb_fail("cannot find a free TCP port on 127.0.0.1 for debugpy (pass --port N)");
            goto cleanup;
        }
    }
    spec.port = port;

    tdb_vscode_entries(&spec, &configurations, &compounds, &tasks);
    if (tdb_vscode_write(ws_real, o.workspace, configurations, compounds, tasks,
                         tdb_vscode_stale_names(&spec), say_waiting, (void *)o.workspace, written,
                         &err) < 0) {
        rc = tdb_error_exit(&err);
        goto cleanup;
    }
    report(&written[0]);
    report(&written[1]);
    if (attach_pid)
        printf("In VS Code: Run and Debug, pick \"tdebug: attach (%s)\", press F5.\n",
               port ? "Python + C++" : "C++, gdb");
    else
        printf("In VS Code: Run and Debug, pick \"tdebug: %s (Python + C++)\", press F5.\n", label);
    printf("gdb reads the symbols of every shared object under %s and of every Python extension "
           "module as they load; for another library, add --lib NAME and run this again (or type "
           "'-exec sharedlibrary NAME' in the Debug Console).\n",
           !strcmp(o.workspace, ".") ? "this folder" : o.workspace);
    rc = TDB_EXIT_OK;
cleanup:
    tdb_vscode_written_clear(&written[0]);
    tdb_vscode_written_clear(&written[1]);
    json_decref(configurations);
    json_decref(compounds);
    json_decref(tasks);
    json_decref(libs);
    json_decref(lib_paths);
    json_decref(src_dirs);
    free(runner);
    tdb_python_info_clear(&py);
    free(o.libs);
    free(ws_real);
    free(python);
    free(gdb);
    free(script);
    free(label);
    free(script_dir);
    free(helper);
    free(root);
    free(torch_src);
    free(host);
    free(attach_exe);
    free(debugpy_name);
    tdb_resolution_release(&target);
    tdb_proc_table_free(procs);
    return rc;
}
