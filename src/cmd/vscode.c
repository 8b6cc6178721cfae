/*
 * cmd/vscode.c: 'tdebug vscode', which writes .vscode/launch.json (and, for
 * the compound, tasks.json) so that F5 in VS Code debugs a Python program
 * and the C/C++ it calls, together: by default one configuration of the
 * "tdebug" debug type ('tdebug dap'), with --compound the C/C++
 * extension's gdb and debugpy.  The entries are made in src/vscode/launch.c
 * and merged into the user's files by src/vscode/jsonc.c; this file resolves
 * the options (interpreter, gdb, script, port, libraries, the process to
 * attach to), refuses what launch.json cannot carry, and reports, saying
 * when tdebug's extension is missing (src/cmd/vscode_extension.c).
 */
#include "cmd/cmd.h"
#include "cmd/vscode_attach.h"
#include "base/common.h"
#include "native/dwsource.h"
#include "vscode/jsonc.h"
#include "vscode/launch.h"
#include "targets/proc.h"
#include "targets/ptrace_check.h"
#include "session/session.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <regex.h>
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
    "       tdebug vscode [--workspace DIR] (--attach PID|pick | --wait) [options]\n"
    "       tdebug vscode --install-extension [--extensions-dir DIR]\n"
    "\n"
    "Write .vscode/launch.json in the workspace so that one F5 in VS Code debugs\n"
    "a Python program and the C/C++ it calls (torch, your extensions) together:\n"
    "pick \"tdebug: SCRIPT (Python + C++)\" in Run and Debug (SCRIPT is the\n"
    "script's path in the workspace, \"-m M\" for a module).  It is one\n"
    "configuration of the \"tdebug\" debug type, whose adapter is 'tdebug dap':\n"
    "one call stack of Python and C/C++ frames, breakpoints in .py and C/C++\n"
    "files, steps from a Python line into the C++ it runs and back.  VS Code\n"
    "knows that type from tdebug's extension: tdebug warns when it is not\n"
    "installed for you, and --install-extension installs it (alone, or in the\n"
    "same run).\n"
    "\n"
    "With --compound, write the other route instead: two debuggers in the\n"
    "compound \"tdebug: SCRIPT (Python + C++)\", the C/C++ extension's gdb and\n"
    "debugpy (two call stacks; no step crosses between them).  It needs VS\n"
    "Code's C/C++ and Python Debugger extensions and debugpy in the\n"
    "interpreter, not tdebug's extension.\n"
    "\n"
    "Only tdebug's own entries (named \"tdebug: ...\") are added, replaced or\n"
    "removed (one form for a program replaces the other's entries for it);\n"
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
    "                    reach the program byte for byte, except what VS Code\n"
    "                    would replace (\"${...}\", refused; --compound passes\n"
    "                    it) and, with --compound, a line break (refused)\n"
    "  --python PATH     the interpreter (default: $TDEBUG_PYTHON, else the one\n"
    "                    tdebug was built for); --compound needs debugpy in it\n"
    "  --attach PID      instead, attach to the running Python process PID:\n"
    "                    \"tdebug: attach (Python + C++)\".  As with 'tdebug\n"
    "                    attach', a debugpy adapter or launcher stands for the\n"
    "                    program it runs, and what cannot be attached to is\n"
    "                    refused with the reason; the process is detached,\n"
    "                    never killed, when the session ends.  '--attach pick':\n"
    "                    \"tdebug: attach to a picked process (Python + C++)\",\n"
    "                    which asks for the process from a list ('tdebug ps')\n"
    "                    when it starts (\"${command:pickProcess}\")\n"
    "  --wait            instead, attach to the first program that pauses as it\n"
    "                    loads torch._C, started from a shell where 'eval\n"
    "                    \"$(tdebug env)\"' was run (as 'tdebug attach --wait'):\n"
    "                    \"tdebug: attach when torch loads (Python + C++)\"\n"
    "  --lib PATTERN     also read the symbols of libraries whose file name\n"
    "                    matches PATTERN (* and ?; repeatable)\n"
    "  --install-extension  also install tdebug's extension (see the end)\n"
    "  --compound        write the compound of the C/C++ extension's gdb and\n"
    "                    debugpy instead of the \"tdebug\" configuration (above)\n"
    "\n"
    "The \"tdebug\" configuration (not --compound):\n"
    "  --stop-on-entry   stop at the program's first line (an attach: where the\n"
    "                    process is)\n"
    "  --stop-at-import MODULE  stop in MODULE's native init before it runs,\n"
    "                    e.g. torch._C (repeatable)\n"
    "  --symbols REGEX   also read the symbols of libraries whose path matches\n"
    "                    REGEX, a gdb basic regex (repeatable).  Once there are\n"
    "                    breakpoints, those of torch, c10 and the shared\n"
    "                    objects under the workspace are read by themselves\n"
    "  --catch-throw[=REGEX]  stop where C++ throws (an exception whose type\n"
    "                    matches REGEX)\n"
    "  --env NAME=VALUE  the program's environment (repeatable)\n"
    "\n"
    "The compound (--compound): \"tdebug: SCRIPT (C++, gdb)\", a cppdbg launch\n"
    "(no privileges needed), starts the interpreter under gdb on tdebug's\n"
    "runner, which listens with debugpy; \"tdebug: SCRIPT (Python, debugpy)\"\n"
    "attaches once it listens, after the task \"tdebug: wait for debugpy\n"
    "(SCRIPT)\" (tasks.json).  The launched program waits up to 60 s for the\n"
    "Python side, then runs without it.\n"
    "  --port N          debugpy's port (default: kept from the last run, else a\n"
    "                    free one chosen now); with --attach, the port of the\n"
    "                    process's debugpy server when tdebug cannot find it\n"
    "  --torch-src DIR   a PyTorch source tree: gdb shows torch's C++ from it\n"
    "                    (sourceFileMap from where torch was built, and gdb's\n"
    "                    source path)\n"
    "With --attach PID it writes \"tdebug: attach (C++, gdb)\", plus \"tdebug:\n"
    "attach (Python, debugpy)\" and the compound \"tdebug: attach (Python + C++)\"\n"
    "when the process runs a debugpy server.  When gdb can attach with your\n"
    "rights it is started through /bin/sh, so VS Code asks for no password\n"
    "(pkexec).  The compound has no stopAll: stopping it never ends the process.\n"
    "gdb loads the symbols of only the interpreter, libc, libm and the loader,\n"
    "torch/c10, what torch's stacks pass through (libstdc++, libgcc_s, libgomp,\n"
    "libffi, BLAS, ...), every Python extension module, the shared objects under\n"
    "the workspace (also ones built later) and --lib; breakpoints in the\n"
    "workspace and your extensions' sources go by full path; it steps over\n"
    "std:: and pybind11::, and loads CPython's gdb helpers (py-bt) when\n"
    "installed.\n"
    "\n"
    "Exit status: 0 written (or already up to date); 1 a file could not be\n"
    "parsed or updated (nothing is written), the interpreter has no debugpy\n"
    "(--compound), the process cannot be attached to (or stands for several),\n"
    "or the extension could not be installed; 2 usage error; 125 gdb missing,\n"
    "/proc unreadable or a write failed; 126 the interpreter does not run; 127\n"
    "the script or interpreter does not exist.\n"
    "\n"
    "--install-extension installs tdebug's extension, which gives VS Code the\n"
    "\"tdebug\" debug type with 'tdebug dap' as its adapter, into VS Code's and\n"
    "VS Code Server's extension folders (~/.vscode/extensions,\n"
    "~/.vscode-server/extensions) and, where code-server is used,\n"
    "code-server's ($XDG_DATA_HOME/code-server/extensions, by default under\n"
    "~/.local/share); --extensions-dir DIR, repeatable, for others.  With the\n"
    "packaged extension ('make vsix') and the editor's command on PATH (code,\n"
    "code-server), the editor installs it; else its files are copied the way\n"
    "the editor unpacks them.  Running it again changes nothing; a folder of\n"
    "the same name that is not tdebug's is left alone (exit status 1).\n";

typedef struct options {
    const char *workspace;
    const char *program;
    const char *module;
    const char *python;
    const char *torch_src;
    long port;
    long attach;     /* -1: 'pick' (the process asked for when it starts) */
    int wait;
    int compound;
    int install;
    int stop_on_entry;
    const char *catch_throw; /* NULL, "" (every throw) or a regex */
    char **args;
    int n_args;
    const char **libs;
    int n_libs;
    char **stop_at_import;
    int n_stop_at_import;
    const char **symbols;
    int n_symbols;
    const char **envs; /* NAME=VALUE */
    int n_envs;
    char **ext_dirs; /* --extensions-dir: NULL-terminated, or NULL */
    size_t n_ext_dirs;
} options;

/* parse_options(): --install-extension alone (cmd_vscode_install_extension()). */
#define INSTALL_ONLY (-TDB_EXIT_OK - 2)

static void options_release(options *o)
{
    free(o->libs);
    free(o->stop_at_import);
    free(o->symbols);
    free(o->envs);
    tdb_strv_free(o->ext_dirs);
}

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
 * path gdb's shell reads), or NULL when it can: for the compound
 * (COMPOUND), MIEngine sends the arguments to gdb on one line; for the
 * "tdebug" configuration, VS Code replaces its variables in every string
 * and has no escape for them. */
static const char *passable(const char *s, int compound)
{
    if (compound && strpbrk(s, "\n\r"))
        return "holds a line break (VS Code's C/C++ extension sends the program's arguments to gdb "
               "on one line; pass it in a file or an environment variable)";
    if (!tdb_utf8_valid(s, strlen(s)))
        return "is not UTF-8 text (launch.json is UTF-8)";
    if (!compound && tdb_vscode_has_variable(s))
        return "holds a \"${...}\", which VS Code replaces in a configuration before the adapter "
               "sees it (there is no escape for it; --compound passes it)";
    return NULL;
}

/* A path written into the configuration: as passable(), and never a line
 * break (PATH as the user gave it, for the message). */
static int path_usable(const char *what, const char *shown, const char *path, int compound)
{
    const char *why = strpbrk(path, "\n\r") ? "holds a line break" : passable(path, compound);
    if (why)
        return tdb_usage_error("vscode", "cannot use the %s '%s': its path %s", what, shown, why);
    return 0;
}

/* A gdb basic regex for "symbols" or "catchThrow": one line, compiles,
 * passable.  0, or a usage error about OPTION. */
static int regex_usable(const char *option, const char *re)
{
    regex_t compiled;
    const char *why = passable(re, 0);
    if (!why && (!*re || strpbrk(re, "\n\r")))
        why = "is not one line of a regex";
    if (!why) {
        if (regcomp(&compiled, re, REG_NOSUB) != 0)
            why = "is not a basic regex";
        else
            regfree(&compiled);
    }
    if (why)
        return tdb_usage_error("vscode", "bad %s '%s': it %s", option, re, why);
    return 0;
}

/* The options that go with one form only. */
static int check_form(const options *o)
{
    const char *only_tdebug = o->wait ? "--wait"
                              : o->stop_on_entry ? "--stop-on-entry"
                              : o->n_stop_at_import ? "--stop-at-import"
                              : o->n_symbols ? "--symbols"
                              : o->catch_throw ? "--catch-throw"
                              : o->n_envs ? "--env" : NULL;
    if (o->compound && only_tdebug)
        return tdb_usage_error("vscode", "%s goes with the \"tdebug\" configuration, not with "
                                         "--compound", only_tdebug);
    if (!o->compound && o->port)
        return tdb_usage_error("vscode", "--port is debugpy's port: it goes with --compound (the "
                                         "\"tdebug\" configuration has no debugpy)");
    if (!o->compound && o->torch_src)
        return tdb_usage_error("vscode", "--torch-src goes with --compound (the \"tdebug\" "
                                         "configuration has no source map for PyTorch's sources "
                                         "yet)");
    if (o->attach < 0 && o->compound)
        return tdb_usage_error("vscode", "--attach pick goes with the \"tdebug\" configuration "
                                         "(the compound attaches to one process id: --attach PID)");
    if ((o->attach || o->wait) && o->n_envs)
        return tdb_usage_error("vscode", "--env does not go with %s (the process already runs)",
                               o->wait ? "--wait" : "--attach");
    if (o->ext_dirs && !o->install)
        return tdb_usage_error("vscode", "--extensions-dir goes with --install-extension");
    return 0;
}

/* What the options hold goes into launch.json as it is: check it. */
static int check_values(const options *o)
{
    /* 'tdebug dap' takes only what its module check takes */
    if (o->module && (!*o->module || strpbrk(o->module, " \t/\n\r") ||
                      (!o->compound && !tdb_valid_module_name(o->module))))
        return tdb_usage_error("vscode", "bad --module '%s' (expected a dotted module name)", o->module);
    for (int i = 0; i < o->n_args; i++) {
        const char *why = passable(o->args[i], o->compound);
        if (why)
            return tdb_usage_error("vscode", "cannot pass argument %d to the program: it %s", i + 1,
                                   why);
    }
    for (int i = 0; i < o->n_libs && !o->compound; i++) {
        const char *why = passable(o->libs[i], 0);
        if (why)
            return tdb_usage_error("vscode", "bad --lib '%s': it %s", o->libs[i], why);
    }
    for (int i = 0; i < o->n_stop_at_import; i++)
        if (!tdb_valid_module_name(o->stop_at_import[i]))
            return tdb_usage_error("vscode", "bad --stop-at-import '%s' (expected a module name, "
                                             "like torch._C)", o->stop_at_import[i]);
    for (int i = 0; i < o->n_symbols; i++)
        if (regex_usable("--symbols", o->symbols[i]) != 0)
            return TDB_EXIT_USAGE;
    if (o->catch_throw && *o->catch_throw && regex_usable("--catch-throw", o->catch_throw) != 0)
        return TDB_EXIT_USAGE;
    for (int i = 0; i < o->n_envs; i++) {
        const char *eq = strchr(o->envs[i], '=');
        char *name = eq ? tdb_xstrndup(o->envs[i], (size_t)(eq - o->envs[i])) : NULL;
        const char *why = !name ? "expected NAME=VALUE" : tdb_gdb_env_problem(name, eq + 1);
        const char *cannot = why ? NULL : passable(o->envs[i], 0);
        free(name);
        if (why || cannot)
            return tdb_usage_error("vscode", "bad --env '%s': %s%s", o->envs[i], why ? "" : "it ",
                                   why ? why : cannot);
    }
    return 0;
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
        {"wait", no_argument, NULL, 'W'},
        {"lib", required_argument, NULL, 'l'},
        {"compound", no_argument, NULL, 'c'},
        {"stop-on-entry", no_argument, NULL, 'e'},
        {"stop-at-import", required_argument, NULL, 'I'},
        {"symbols", required_argument, NULL, 's'},
        {"catch-throw", optional_argument, NULL, 'T'},
        {"env", required_argument, NULL, 'E'},
        {"install-extension", no_argument, NULL, 'i'},
        {"extensions-dir", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc, nargs = argc;

    /* Everything after --args belongs to the program, options included. */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--args")) {
            nargs = i;
            o->args = argv + i + 1;
            o->n_args = argc - i - 1;
            break;
        }
    o->libs = tdb_xcalloc((size_t)argc + 1, sizeof(*o->libs));
    o->stop_at_import = tdb_xcalloc((size_t)argc + 1, sizeof(*o->stop_at_import));
    o->symbols = tdb_xcalloc((size_t)argc + 1, sizeof(*o->symbols));
    o->envs = tdb_xcalloc((size_t)argc + 1, sizeof(*o->envs));
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
        case 'W': o->wait = 1; break;
        case 'c': o->compound = 1; break;
        case 'e': o->stop_on_entry = 1; break;
        case 'I': o->stop_at_import[o->n_stop_at_import++] = optarg; break;
        case 's': o->symbols[o->n_symbols++] = optarg; break;
        case 'T':
            if (optarg && !*optarg)
                return tdb_usage_error("vscode", "bad --catch-throw= (give a regex after '=', or "
                                                 "nothing for every throw)");
            o->catch_throw = optarg ? optarg : "";
            break;
        case 'E': o->envs[o->n_envs++] = optarg; break;
        case 'i': o->install = 1; break;
        case 'd': tdb_ptrs_push(&o->ext_dirs, &o->n_ext_dirs, tdb_xstrdup(optarg)); break;
        case 'o':
            if (tdb_parse_long(optarg, 1, 65535, &o->port) < 0)
                return tdb_usage_error("vscode", "bad --port '%s' (expected 1 to 65535)", optarg);
            break;
        case 'a':
            if (!strcmp(optarg, "pick"))
                o->attach = -1;
            else if (tdb_parse_long(optarg, 1, INT_MAX, &o->attach) < 0)
                return tdb_usage_error("vscode", "bad --attach '%s' (expected a process id)", optarg);
            break;
        case 'h': return -TDB_EXIT_OK - 1;
        default: return tdb_usage_error("vscode", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (optind < nargs)
        return tdb_usage_error("vscode", "unexpected argument '%s' (program arguments go after --args)",
                               argv[optind]);
    if (o->install && !o->program && !o->module && !o->attach && !o->wait)
        return INSTALL_ONLY; /* its own parser says what else it takes */
    if (!!o->program + !!o->module + !!o->attach + o->wait != 1)
        return tdb_usage_error("vscode", "give one of --program SCRIPT, --module M, --attach PID "
                                         "or --wait");
    if ((o->attach || o->wait) && o->n_args)
        return tdb_usage_error("vscode", "--args does not go with %s (the process already runs)",
                               o->wait ? "--wait" : "--attach");
    if ((o->attach || o->wait) && o->python)
        return tdb_usage_error("vscode", "--python does not go with %s (the process's own "
                                         "interpreter is the one)", o->wait ? "--wait" : "--attach");
    if ((rc = check_form(o)) != 0)
        return rc;
    return check_values(o);
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

/* The "tdebug" configuration's "symbols": --symbols, and --lib's globs as
 * regexes of the paths they name.  New array. */
static json_t *tdebug_symbols(const options *o)
{
    json_t *symbols = json_array();
    for (int i = 0; i < o->n_symbols; i++)
        json_array_append_new(symbols, json_string(o->symbols[i]));
    for (int i = 0; i < o->n_libs; i++) {
        char *re = tdb_vscode_glob_regex(o->libs[i]);
        json_array_append_new(symbols, json_string(re));
        free(re);
    }
    return symbols;
}

/* --env NAME=VALUE as an object (checked already).  New object, or NULL. */
static json_t *tdebug_env(const options *o)
{
    json_t *env = o->n_envs ? json_object() : NULL;
    for (int i = 0; i < o->n_envs; i++) {
        const char *eq = strchr(o->envs[i], '=');
        char *name = tdb_xstrndup(o->envs[i], (size_t)(eq - o->envs[i]));
        json_object_set_new(env, name, json_string(eq + 1));
        free(name);
    }
    return env;
}

/* The "tdebug" configuration attaches as the user ('tdebug dap' runs gdb
 * as the user VS Code runs as): PLAN and AS_USER (cmd_vscode_resolve_attach()) say
 * whether gdb can.  0, or -1 after saying why not. */
static int tdebug_may_attach(pid_t pid, tdb_vscode_attach_plan plan, const tdb_error *as_user)
{
    /* ELEVATED without a reason of the user's: gdb could attach but not
     * signal (the C/C++ extension would go through pkexec for that). */
    if (plan == TDB_VSCODE_ATTACH_DIRECT || (plan == TDB_VSCODE_ATTACH_ELEVATED && !as_user->set))
        return 0;
    if (as_user->set)
        tdb_fail("%s (the \"tdebug\" configuration attaches as you; --compound writes the C/C++ "
                 "extension's attach, which can start gdb as root through pkexec)",
                 as_user->msg);
    else
        tdb_fail("cannot attach to pid %d as you (the \"tdebug\" configuration attaches as you; "
                 "--compound writes the C/C++ extension's attach, which can start gdb as root "
                 "through pkexec)", (int)pid);
    return -1;
}

int cmd_vscode(int argc, char **argv)
{
    options o = {0};
    tdb_error err = {0}, as_user = {0};
    tdb_python_info py = {0};
    tdb_vscode_spec spec = {0};
    tdb_vscode_stale stale = {0};
    tdb_vscode_written written[2] = {{0}};
    char *ws_real = NULL, *python = NULL, *gdb = NULL, *script = NULL, *pick = NULL;
    char *label = NULL, *script_dir = NULL, *helper = NULL, *root = NULL, *torch_src = NULL;
    char *host = NULL, *attach_exe = NULL, *debugpy_name = NULL, *runner = NULL, tdebug[PATH_MAX];
    json_t *libs = NULL, *lib_paths = NULL, *src_dirs = NULL, *symbols = NULL, *env = NULL;
    json_t *configurations = NULL, *compounds = NULL, *tasks = NULL;
    tdb_proc_table *procs = NULL;
    tdb_resolution target = {0};
    tdb_vscode_attach_plan plan = TDB_VSCODE_ATTACH_DIRECT;
    pid_t attach_pid = 0;
    int rc, port = 0, yama_scope = -1, by_ptracer = 0, signal_ok = 1, installed = 0;

    rc = parse_options(argc, argv, &o);
    if (rc == -TDB_EXIT_OK - 1 || rc == INSTALL_ONLY) {
        options_release(&o);
        return rc == INSTALL_ONLY ? cmd_vscode_install_extension(argc, argv)
                                  : tdb_print_usage("vscode");
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

    /* gdb (the compound's, or the one 'tdebug dap' drives), and the
     * tdebug the task runs. */
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

    if (o.attach > 0) {
        if (cmd_vscode_resolve_attach((pid_t)o.attach, gdb, &procs, &target, &plan, &yama_scope, &by_ptracer,
                           &signal_ok, &as_user, &err) != 0) {
            rc = tdb_error_exit(&err);
            goto cleanup;
        }
        if (!o.compound && tdebug_may_attach(target.pid, plan, &as_user) < 0) {
            rc = TDB_EXIT_FAIL;
            goto cleanup;
        }
        if (target.note)
            fprintf(stderr, "tdebug: %s\n", target.note);
        attach_pid = target.pid;
        const tdb_proc *p = tdb_proc_table_lookup(procs, attach_pid, NULL);
        if (o.compound) {
            /* Unreadable only to tdebug when VS Code's gdb will be root. */
            attach_exe = p && p->exe ? tdb_xstrdup(p->exe)
                                     : tdb_xasprintf("/proc/%d/exe", (int)attach_pid);
            python = p ? cmd_vscode_interpreter_of(p) : NULL;
            if (!python || tdb_vscode_probe_process_python(python, p->euid, &py, &err) < 0) {
                if (err.code == EPERM && p->euid != geteuid()) /* another user's: not run */
                    fprintf(stderr, "tdebug: pid %d %s\n", (int)attach_pid, err.msg);
                /* an embedding program is no interpreter: fine, fewer details */
                tdb_error_clear(&err);
                tdb_python_info_clear(&py);
            }
        }
        if (!o.compound) {
            /* 'tdebug dap' reads the Python side itself: debugpy or not */
        } else if (o.port) {
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
        if (o.compound && plan == TDB_VSCODE_ATTACH_ELEVATED)
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
                     "pkexec; start \"%s\" before the process takes that back",
                     (int)attach_pid, o.compound ? "tdebug: attach (C++, gdb)"
                                                 : "tdebug: attach (Python + C++)");
    } else if (!o.wait && !o.attach) {
        if (resolve_program("python", tdb_target_python(o.python), &python, &err) < 0) {
            rc = tdb_error_exit(&err);
            goto cleanup;
        }
        if (!o.compound && path_usable("interpreter", python, python, 0) != 0) {
            rc = TDB_EXIT_USAGE;
            goto cleanup;
        }
        if (tdb_vscode_probe_python(python, &py, &err) < 0) {
            rc = tdb_error_exit(&err);
            goto cleanup;
        }
        if (o.compound && !py.has_debugpy) {
            tdb_fail("cannot use '%s' for VS Code: it has no debugpy module "
                     "(install python3-debugpy or 'pip install debugpy', or pass --python; "
                     "without --compound no debugpy is needed)", python);
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
                label = tdb_xstrdup(script + wl + 1);
            } else {
                label = tdb_xstrdup(script);
                script_dir = tdb_xstrdup(script);
                *strrchr(script_dir, '/') = '\0';
            }
            /* Of a script in the workspace, "${workspaceFolder}/LABEL" is
             * written: VS Code looks for variables in LABEL only. */
            if (path_usable("script", o.program, o.compound ? script : label, o.compound) != 0) {
                rc = TDB_EXIT_USAGE;
                goto cleanup;
            }
        } else {
            label = tdb_xasprintf("-m %s", o.module);
        }
        if (o.compound) {
            host = tdb_xstrdup("127.0.0.1");
            /* The runner gdb starts the interpreter on: beside the binary
             * in a build tree, in LIBDIR/tdebug once installed. */
            runner = tdb_companion_path("python/tdebug/_vscode_run.py");
            if (!runner)
                runner = tdb_companion_path("tdebug/_vscode_run.py");
            if (!runner || passable(runner, 1)) {
                tdb_fail("cannot find tdebug's '_vscode_run.py' beside %s or in %s (reinstall "
                         "tdebug)", tdebug, TDB_LIBDIR);
                goto cleanup;
            }
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

    spec.compound = o.compound;
    spec.label = label;
    spec.program = script;
    spec.module = o.module;
    spec.workspace = ws_real;
    spec.args = o.args;
    spec.n_args = o.n_args;
    spec.python = python;
    spec.python_version = py.version;
    spec.attach_pid = attach_pid;
    spec.wait = o.wait;
    spec.pick = o.attach < 0;
    if (o.compound) {
        spec.runner = runner;
        spec.attach_direct = attach_pid && plan == TDB_VSCODE_ATTACH_DIRECT;
        spec.gdb = gdb;
        spec.tdebug = tdebug;
        spec.host = host;
        spec.attach_program = attach_exe;
        spec.torch_src = torch_src;
        spec.build_root = root;
        helper = tdb_vscode_python_gdb_helper(python, &py);
        spec.gdb_helper = helper;
        lib_paths = json_array();
        libs = library_patterns(&o, &py, ws_real, script_dir, lib_paths);
        spec.libraries = libs;
        src_dirs = source_dirs(lib_paths, ws_real);
        spec.source_dirs = src_dirs;
        if (!attach_pid) {
            /* The port is kept between runs, so that running again gives
             * the same file. */
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
    } else {
        spec.stop_on_entry = o.stop_on_entry;
        spec.stop_at_import = o.stop_at_import;
        spec.n_stop_at_import = o.n_stop_at_import;
        symbols = tdebug_symbols(&o);
        spec.symbols = symbols;
        spec.catch_throw = o.catch_throw;
        env = tdebug_env(&o);
        spec.env = env;
    }

    tdb_vscode_entries(&spec, &configurations, &compounds, &tasks);
    tdb_vscode_stale_names(&spec, &stale);
    if (tdb_vscode_write(ws_real, o.workspace, configurations, compounds, tasks, &stale,
                         say_waiting, (void *)o.workspace, written, &err) < 0) {
        rc = tdb_error_exit(&err);
        goto cleanup;
    }
    report(&written[0]);
    report(&written[1]);
    if (o.install) {
        rc = cmd_vscode_install_into(o.ext_dirs, &installed);
        if (rc != TDB_EXIT_OK)
            goto cleanup;
    }
    pick = tdb_vscode_pick_name(&spec);
    printf("In VS Code: %sRun and Debug, pick \"%s\", press F5%s.\n",
           installed ? "reload the window, then " : "", pick,
           o.attach < 0 ? ", then pick the process in the list" : o.wait ? ", then start the program from a shell where 'eval \"$(tdebug env)\"' was run: "
                    "it pauses as it loads torch._C, and VS Code attaches"
                  : "");
    if (o.compound)
        printf("gdb reads the symbols of every shared object under %s and of every Python "
               "extension module as they load; for another library, add --lib NAME and run this "
               "again (or type '-exec sharedlibrary NAME' in the Debug Console).\n",
               !strcmp(o.workspace, ".") ? "this folder" : o.workspace);
    else if (!attach_pid && !o.wait && !o.attach)
        printf("Breakpoints bind in torch, c10 and the shared objects under %s%s as they load; for "
               "another library, add --symbols REGEX and run this again (or type '-exec "
               "sharedlibrary REGEX' in the Debug Console).\n",
               !strcmp(o.workspace, ".") ? "this folder" : o.workspace,
               script_dir ? " or beside the script" : "");
    if (!o.compound && !o.install)
        cmd_vscode_check_extension();
    rc = TDB_EXIT_OK;
cleanup:
    tdb_vscode_written_clear(&written[0]);
    tdb_vscode_written_clear(&written[1]);
    tdb_vscode_stale_clear(&stale);
    json_decref(configurations);
    json_decref(compounds);
    json_decref(tasks);
    json_decref(libs);
    json_decref(lib_paths);
    json_decref(src_dirs);
    json_decref(symbols);
    json_decref(env);
    free(runner);
    tdb_python_info_clear(&py);
    options_release(&o);
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
    free(pick);
    tdb_resolution_release(&target);
    tdb_proc_table_free(procs);
    return rc;
}
