/*
 * launch.h: the launch.json and tasks.json entries of 'tdebug vscode', and
 * what they are made from (the interpreter, the libraries whose symbols
 * matter, where PyTorch was built).
 *
 * The entries are written for what the C/C++ extension's MIEngine and VS
 * Code really do with them (read from their sources), not for an ideal
 * client:
 *  - MIEngine quotes a program argument only when it holds a space, tab or
 *    parenthesis and does not start with '"', escapes nothing, and gdb
 *    starts the program through /bin/sh: every argument is written as a
 *    word that sh reads back byte for byte (tdb_vscode_arg()), with no "${"
 *    left for VS Code's variable substitution;
 *  - with symbolLoadInfo.loadAll false MIEngine turns auto-solib-add off
 *    and loads only the libraries whose file names match exceptionList:
 *    the list holds what a torch stack passes through (libstdc++, whose
 *    pretty-printers load with it, libgcc_s, libgomp, libffi, BLAS...), and
 *    a gdb stop hook loads every shared object under the workspace, so an
 *    extension built later gets its symbols too;
 *  - MIEngine sends a breakpoint by file name alone unless sourceFileMap
 *    maps the file: the workspace and the user's extension sources are
 *    mapped to themselves, so breakpoints go by full path;
 *  - MIEngine sends 'set debuginfod enabled off' itself.
 *
 * Launch (the default): a compound of
 *   "tdebug: LABEL (C++, gdb)"      cppdbg launch: gdb starts the interpreter
 *                                   on tdebug's runner (python/tdebug/
 *                                   _vscode_run.py), which listens with
 *                                   debugpy on H:P, waits up to
 *                                   TDB_VSCODE_PYTHON_WAIT seconds for the
 *                                   Python side, then runs the program
 *   "tdebug: LABEL (Python, debugpy)" debugpy attach to H:P, after the task
 *   "tdebug: wait for debugpy (LABEL)" 'tdebug wait-port H:P' (tasks.json)
 * named "tdebug: LABEL (Python + C++)", with stopAll.  The program is gdb's
 * child, so no privilege is needed under ptrace_scope=1.
 *
 * Attach (--attach PID): "tdebug: attach (C++, gdb)", a cppdbg attach, and,
 * when the process runs a debugpy server, "tdebug: attach (Python,
 * debugpy)" and the compound "tdebug: attach (Python + C++)", without
 * stopAll: VS Code stops the other members of a stopAll compound with
 * 'disconnect' and terminateDebuggee, which makes debugpy kill the process.
 * When gdb can attach with the user's own rights the cppdbg attach starts
 * gdb through /bin/sh (pipeTransport): MIEngine wraps gdb in pkexec or sudo
 * for every local attach by processId under ptrace_scope > 0.
 *
 * Every cppdbg entry enables pretty printing, loads CPython's gdb helpers
 * when there are any, steps over std:: and pybind11:: code, and maps
 * PyTorch's build directory to --torch-src.  Every debugpy entry has
 * justMyCode false.
 */
#ifndef TDB_LAUNCH_H
#define TDB_LAUNCH_H

#include "common.h"

#include <jansson.h>
#include <sys/types.h>

#define TDB_VSCODE_PREFIX "tdebug: "

/* What an interpreter says about itself (tdb_vscode_probe_python). */
typedef struct tdb_python_info {
    char *version;    /* "3.11" */
    char *prefix;     /* sys.prefix */
    char *libpython;  /* the shared libpython's path, or NULL when linked in */
    char *torch_dir;  /* the torch package directory, or NULL */
    int has_debugpy;
} tdb_python_info;

/* Ask PYTHON (run directly, no shell) about itself without importing torch
 * or debugpy.  Returns 0, or -1 with ERR set (exit code TDB_EXIT_NOEXEC)
 * when it does not run as a Python interpreter. */
int tdb_vscode_probe_python(const char *python, tdb_python_info *out, tdb_error *err);
void tdb_python_info_clear(tdb_python_info *info);

/* CPython's gdb helper script (python3.X-gdb.py) for PYTHON, or NULL (new
 * string).  Looks where distributions and gdb's auto-load put it. */
char *tdb_vscode_python_gdb_helper(const char *python, const tdb_python_info *info);

/* Add to PATTERNS (a JSON array of strings) the file names of the ELF
 * shared objects under DIR (at most MAX_DEPTH levels; dot directories,
 * virtual environments, site-packages and __pycache__ skipped), sorted and
 * without duplicates, and to PATHS (an array, or NULL) their paths.  Best
 * effort: unreadable directories are skipped. */
void tdb_vscode_find_libraries(const char *dir, int max_depth, json_t *patterns, json_t *paths);

/* The directory PyTorch was compiled in, as its libraries record it in the
 * file names of their assertions ("./c10/core/..." gives "."; a source
 * build gives its checkout), looked up in TORCH_DIR/lib/libc10.so.  New
 * string, or NULL when unknown. */
char *tdb_vscode_torch_build_root(const char *torch_dir);
/* The same from BUF: the prefix before "c10/core/" of the first string in
 * it that names a c10 source file.  New string or NULL. */
char *tdb_vscode_build_root_in(const char *buf, size_t len);

/* How long the launched program waits for the Python side before it runs
 * without it (seconds): long enough for VS Code to start the debugpy
 * entry, short enough that a program restarted by the C++ side alone does
 * not wait forever. */
#define TDB_VSCODE_PYTHON_WAIT 60

/* ARG written as an element of a cppdbg "args" array so that it reaches
 * the program byte for byte through MIEngine (which leaves a word starting
 * with '"' alone) and gdb's /bin/sh: unchanged when it holds only
 * [A-Za-z0-9_@%+=:,./-], else in double quotes with '"', '\' and '`'
 * escaped and each '$' as "'$'" (no "${" remains for VS Code to
 * substitute).  New string, or NULL when ARG holds a line break (MIEngine
 * sends the arguments to gdb on one line). */
char *tdb_vscode_arg(const char *arg);

/* How 'tdebug vscode --attach' lets gdb attach (tdb_vscode_attach_plan()). */
typedef enum tdb_vscode_attach_plan {
    TDB_VSCODE_ATTACH_DIRECT,   /* gdb as the user, started through /bin/sh: no pkexec */
    TDB_VSCODE_ATTACH_ELEVATED, /* gdb as root through MIEngine's pkexec/sudo: warn first */
    TDB_VSCODE_ATTACH_REFUSED   /* neither would work */
} tdb_vscode_attach_plan;

/* The plan, from what was found: USER_OK when gdb run as the user (with
 * its file capabilities) may attach; CAN_SIGNAL when the user may also
 * signal the process (same user, or root): MIEngine pauses a running
 * program with a signal, which CAP_SYS_PTRACE does not grant, so a gdb
 * that attaches to another user's process by its capability alone could
 * neither pause it nor detach; PTRACER_OK when the process let the user's
 * debuggers in (prctl(PR_SET_PTRACER), as a process paused by 'tdebug env'
 * does while it waits), which is what Yama scope 1 asks; ROOT_OK when root
 * could.  MIEngine elevates gdb only when YAMA_SCOPE > 0 and the user is
 * not root (IS_ROOT); without Yama both entries run gdb as the user. */
tdb_vscode_attach_plan tdb_vscode_plan_attach(int yama_scope, int is_root, int user_ok,
                                              int can_signal, int ptracer_ok, int root_ok);

/* Everything an entry is made from.  Strings are borrowed. */
typedef struct tdb_vscode_spec {
    const char *label;         /* "train.py", "-m pkg.main"; NULL in attach mode */
    const char *program;       /* the script's absolute path, or NULL */
    const char *module;        /* or the module */
    const char *workspace;     /* the workspace's real path */
    const char *runner;        /* the runner the interpreter runs (launch) */
    char *const *args;         /* the program's arguments (no line breaks) */
    int n_args;
    const char *python;        /* the interpreter (launch) */
    const char *python_version; /* "3.11": adds -Xfrozen_modules=off from 3.11 */
    const char *gdb;           /* miDebuggerPath */
    const char *tdebug;        /* the tdebug the wait-port task runs */
    const char *host;          /* debugpy's address */
    int port;                  /* debugpy's port (launch; attach: 0 = no server) */
    json_t *libraries;         /* symbolLoadInfo patterns (array of strings) */
    json_t *source_dirs;       /* directories mapped to themselves (sourceFileMap), or NULL */
    const char *gdb_helper;    /* CPython's gdb helper, or NULL */
    const char *torch_src;     /* --torch-src, or NULL */
    const char *build_root;    /* where PyTorch was compiled, or NULL */
    pid_t attach_pid;          /* nonzero: attach mode */
    const char *attach_program; /* the attached process's executable */
    int attach_direct;         /* attach: gdb started by /bin/sh, not through pkexec */
} tdb_vscode_spec;

/* The entries for SPEC (new references): the launch.json configurations
 * and compounds, and the tasks.json tasks. */
void tdb_vscode_entries(const tdb_vscode_spec *spec, json_t **out_configurations,
                        json_t **out_compounds, json_t **out_tasks);

/* The name of SPEC's debugpy entry (new string), where the port is kept
 * between runs. */
char *tdb_vscode_debugpy_name(const tdb_vscode_spec *spec);

/* The names tdebug owned in attach mode but does not write this time
 * (NULL-terminated, static): a process without a debugpy server loses the
 * debugpy entry and compound of an earlier attach. */
const char *const *tdb_vscode_stale_names(const tdb_vscode_spec *spec);

/* The outcome of writing one file. */
typedef struct tdb_vscode_written {
    char *path;    /* as shown to the user */
    int changed;
    char *backup;  /* the numbered backup made, or NULL */
} tdb_vscode_written;

/* Called when another process holds the workspace's .vscode (ARG is the
 * caller's), before waiting for it. */
typedef void (*tdb_vscode_wait_fn)(void *arg);

/* Read WORKSPACE/.vscode/launch.json and tasks.json, apply the entries and
 * write both (creating .vscode).  Neither file is written unless both
 * parse and take the edits; anything but a regular file there is refused
 * untouched.  One process at a time does this for a workspace (a lock on
 * the .vscode directory): ON_WAIT(WAIT_ARG), when not NULL, is called
 * before waiting for another.  SHOWN is the workspace as messages name it
 * ("." for the current directory).  Returns 0 with OUT[0] (launch.json)
 * and OUT[1] (tasks.json) filled, or -1 with ERR set. */
int tdb_vscode_write(const char *workspace, const char *shown, json_t *configurations,
                     json_t *compounds, json_t *tasks, const char *const *stale,
                     tdb_vscode_wait_fn on_wait, void *wait_arg, tdb_vscode_written out[2],
                     tdb_error *err);
void tdb_vscode_written_clear(tdb_vscode_written *w);

/* The port of the existing configuration NAME in WORKSPACE's launch.json
 * ("connect": {"port": N}), or 0.  A file that does not parse gives 0: the
 * write reports it. */
int tdb_vscode_existing_port(const char *workspace, const char *name);

#endif
