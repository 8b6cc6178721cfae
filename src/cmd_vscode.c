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
    "nothing.  A file that does not parse is left alone.\n"
    "\n"
    "  --workspace DIR   the folder opened in VS Code (default: .)\n"
    "  --program SCRIPT  the Python script to run (a relative path is the\n"
    "                    workspace's, else the current directory's)\n"
    "  --module M        or the module to run (python -m M)\n"
    "  --args ARG...     the program's arguments: everything after --args\n"
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
    "                    not attach to is refused with the reason\n"
    "\n"
    "gdb loads the symbols of only the interpreter, libc and the loader,\n"
    "torch/c10 and your own extensions, steps over std:: and pybind11::, and\n"
    "loads CPython's gdb helpers (py-bt) when installed.\n"
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

/* Resolve PID as 'tdebug attach' does (a debugpy adapter or launcher to
 * the debuggee, a thread to its process) and refuse what the gdb VS Code
 * starts could not attach to.  That gdb runs with the user's credentials,
 * or as root when ptrace_scope is not 0 and the user is not root: the
 * C/C++ extension then starts it through pkexec or sudo (MIEngine's
 * UnixUtilities.GetDebuggerCommand), and *OUT_SCOPE gets that ptrace_scope
 * (else 0).  Returns 0 with *OUT_TABLE (the processes, to free) and RES;
 * 1 when ambiguous (ERR lists the candidates) or -1, with ERR set. */
static int resolve_attach(pid_t pid, const char *gdb, tdb_proc_table **out_table,
                          tdb_resolution *res, int *out_scope, tdb_error *err)
{
    tdb_proc_table *t = tdb_proc_table_read("/proc", err);
    tdb_tracer tr;
    int rc = -1;

    if (!t)
        return -1;
    if (tdb_tracer_read(&tr, "/proc", gdb, err) < 0)
        goto cleanup;
    tdb_tracer_probe(&tr);
    *out_scope = tr.yama_scope > 0 && geteuid() != 0 ? tr.yama_scope : 0;
    if (*out_scope)
        tdb_tracer_as_root(&tr);
    rc = tdb_attach_resolve(t, &tr, pid, res, NULL, err);
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
 * shared objects in the workspace (and the script's folder outside it). */
static json_t *library_patterns(const options *o, const tdb_python_info *py, const char *ws_real,
                                const char *script_dir)
{
    json_t *libs = json_array();
    char *libpython = tdb_xasprintf("libpython%s*.so*", py && py->version ? py->version : "3");
    const char *fixed[] = {
        "libc.so.6", "ld-linux*.so*", libpython,
        "libtorch*.so*", "libc10*.so*", "libshm.so*", "_C.cpython*.so", "_C_flatbuffer*.so",
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(*fixed); i++)
        json_array_append_new(libs, json_string(fixed[i]));
    for (int i = 0; i < o->n_libs; i++)
        json_array_append_new(libs, json_string(o->libs[i]));
    tdb_vscode_find_libraries(ws_real, LIB_SCAN_DEPTH, libs);
    if (script_dir)
        tdb_vscode_find_libraries(script_dir, 0, libs);
    free(libpython);
    return libs;
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
    if (o->module && (!*o->module || strpbrk(o->module, " \t/")))
        return tdb_usage_error("vscode", "bad --module '%s' (expected a dotted module name)", o->module);
    return 0;
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
    char *ws_real = NULL, *python = NULL, *gdb = NULL, *script = NULL, *program = NULL;
    char *label = NULL, *script_dir = NULL, *helper = NULL, *root = NULL, *torch_src = NULL;
    char *host = NULL, *attach_exe = NULL, *debugpy_name = NULL, tdebug[PATH_MAX];
    json_t *libs = NULL, *configurations = NULL, *compounds = NULL, *tasks = NULL;
    tdb_proc_table *procs = NULL;
    tdb_resolution target = {0};
    pid_t attach_pid = 0;
    int rc, port = 0, elevated_scope = 0;

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
        if (resolve_attach((pid_t)o.attach, gdb, &procs, &target, &elevated_scope, &err) != 0) {
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
        if (elevated_scope)
            tdb_warn("ptrace_scope is %d: gdb can attach to pid %d only with privileges (VS Code "
                     "asks through pkexec); the launch entry (--program) needs none",
                     elevated_scope, (int)attach_pid);
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
            size_t wl = strlen(ws_real);
            if (!strncmp(script, ws_real, wl) && script[wl] == '/') {
                program = tdb_xasprintf("${workspaceFolder}/%s", script + wl + 1);
                label = tdb_xstrdup(script + wl + 1);
            } else {
                program = tdb_xstrdup(script);
                label = tdb_xstrdup(script);
                script_dir = tdb_xstrdup(script);
                *strrchr(script_dir, '/') = '\0';
            }
        } else {
            label = tdb_xasprintf("-m %s", o.module);
        }
        host = tdb_xstrdup("127.0.0.1");
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
    spec.program = program;
    spec.module = o.module;
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
    libs = library_patterns(&o, &py, ws_real, script_dir);
    spec.libraries = libs;

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
                         tdb_vscode_stale_names(&spec), written, &err) < 0) {
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
    rc = TDB_EXIT_OK;
cleanup:
    tdb_vscode_written_clear(&written[0]);
    tdb_vscode_written_clear(&written[1]);
    json_decref(configurations);
    json_decref(compounds);
    json_decref(tasks);
    json_decref(libs);
    tdb_python_info_clear(&py);
    free(o.libs);
    free(ws_real);
    free(python);
    free(gdb);
    free(script);
    free(program);
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
