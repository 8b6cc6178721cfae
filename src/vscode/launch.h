/*
 * Folder vscode/: VS Code's files: launch.json and tasks.json entries made,
 * read and merged keeping every byte that is not tdebug's (JSONC with
 * spans, edits by splicing), and the extension's installer.  It never
 * prints and never exits; a user's file is replaced only through
 * tdb_write_file_keeping(), which keeps the old one.
 * May include: base, process
 *
 * vscode/launch.h: the launch.json and tasks.json entries of 'tdebug vscode', and
 * what they are made from (the interpreter, the libraries whose symbols
 * matter, where PyTorch was built).
 *
 * The default is ONE configuration of the "tdebug" debug type, which the
 * extension in vscode/extension/ contributes and whose adapter is 'tdebug
 * dap' (installed by 'tdebug vscode --install-extension'):
 *   "tdebug: LABEL (Python + C++)"   a launch of the script or module with
 *                                    its arguments, interpreter and the
 *                                    workspace as cwd
 *   "tdebug: attach (Python + C++)"  (--attach PID) an attach by processId
 *   "tdebug: attach to a picked process (Python + C++)"  (--attach pick)
 *                                    an attach whose processId is
 *                                    "${command:pickProcess}"
 *   "tdebug: attach when torch loads (Python + C++)"  (--wait) an attach
 *                                    with "wait": true
 * with only the attributes of the extension's configurationAttributes.
 * Its "args" reach the adapter as a JSON array, and the adapter quotes each
 * for gdb's shell itself: every UTF-8 string gets to the program byte for
 * byte, line breaks included.  What no JSON string of a configuration can
 * carry past VS Code is a variable: VS Code substitutes every "${...}" in
 * every string (keys too) before the adapter sees it, and has no escape
 * (tdb_vscode_has_variable(): the caller refuses those).
 *
 * The alternative (--compound) is two debuggers, the C/C++ extension's gdb
 * and debugpy, whose entries are written for what the C/C++ extension's
 * MIEngine and VS Code really do with them (read from their sources), not
 * for an ideal client:
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
 * Launch: a compound of
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
 * Writing one form for a program (or attach) removes the other form's
 * entries for it (tdb_vscode_stale_names()): the picker never shows two
 * "tdebug: LABEL (Python + C++)".
 *
 * Every cppdbg entry enables pretty printing, loads CPython's gdb helpers
 * when there are any, steps over std:: and pybind11:: code, and maps
 * PyTorch's build directory to --torch-src.  Every debugpy entry has
 * justMyCode false.
 */
#ifndef TDB_LAUNCH_H
#define TDB_LAUNCH_H

#include "base/common.h"

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
/* The same for the interpreter PYTHON of a process whose owner is OWNER:
 * another user's is not run (its executable, its environment's .pth files
 * would run as us): -1 with ERR's code EPERM. */
int tdb_vscode_probe_process_python(const char *python, uid_t owner, tdb_python_info *out,
                                    tdb_error *err);
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

/* Nonzero when VS Code would substitute something in S: a "${" with its
 * closing "}" (braces nest), as VS Code's ConfigurationResolverExpression
 * finds variables in every string of a configuration, keys included.
 * There is no escape for one, so such a string cannot reach a "tdebug"
 * configuration's adapter as it is. */
int tdb_vscode_has_variable(const char *s);

/* GLOB, a file name pattern as fnmatch(3) reads it ('*', '?', '[...]',
 * '\'), as a basic regex of the paths of the files it names: "/", the
 * pattern ('*' and '?' never crossing a '/'), "$".  For --lib in a "tdebug"
 * configuration's "symbols" (gdb's 'sharedlibrary' regexes).  New string. */
char *tdb_vscode_glob_regex(const char *glob);

/* Everything an entry is made from.  Strings are borrowed. */
typedef struct tdb_vscode_spec {
    int compound;              /* 1: the cppdbg + debugpy compound (--compound);
                                * 0: one "tdebug" configuration */
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
    /* The "tdebug" configuration only (the caller refused what VS Code
     * would substitute): */
    int wait;                  /* attach to the first process 'tdebug env' paused */
    int pick;                  /* attach to the process the user picks when it starts
                                * ("${command:pickProcess}": the extension's list) */
    int stop_on_entry;         /* "stopOnEntry": true */
    char *const *stop_at_import; /* "stopAtImport": module names */
    int n_stop_at_import;
    json_t *symbols;           /* "symbols": basic regexes (array), or NULL */
    const char *catch_throw;   /* "catchThrow": NULL none, "" true, else the regex */
    json_t *env;               /* "env": NAME -> VALUE (object), or NULL */
} tdb_vscode_spec;

/* The entries for SPEC (new references): the launch.json configurations
 * and compounds, and the tasks.json tasks. */
void tdb_vscode_entries(const tdb_vscode_spec *spec, json_t **out_configurations,
                        json_t **out_compounds, json_t **out_tasks);

/* The name of SPEC's debugpy entry (new string), where the port is kept
 * between runs. */
char *tdb_vscode_debugpy_name(const tdb_vscode_spec *spec);

/* The name of what the user picks in Run and Debug for SPEC: the "tdebug"
 * configuration, or the compound ("tdebug: attach (C++, gdb)" alone for an
 * attach compound without a debugpy server).  New string. */
char *tdb_vscode_pick_name(const tdb_vscode_spec *spec);

/* Entries tdebug wrote before that this write removes, by array: the other
 * form's for the same program (or attach), and the debugpy entry and
 * compound of an earlier attach to a process that had a debugpy server
 * when this one has none.  NULL-terminated lists (tdb_strv_free), never
 * NULL. */
typedef struct tdb_vscode_stale {
    char **configurations;
    char **compounds;
    char **tasks;
} tdb_vscode_stale;

/* SPEC's stale names into OUT (release with tdb_vscode_stale_clear()). */
void tdb_vscode_stale_names(const tdb_vscode_spec *spec, tdb_vscode_stale *out);
void tdb_vscode_stale_clear(tdb_vscode_stale *stale);

/* The outcome of writing one file. */
typedef struct tdb_vscode_written {
    char *path;    /* as shown to the user */
    int changed;
    char *backup;  /* the numbered backup made, or NULL */
} tdb_vscode_written;

/* Called when another process holds the workspace's .vscode (ARG is the
 * caller's), before waiting for it. */
typedef void (*tdb_vscode_wait_fn)(void *arg);

/* Read WORKSPACE/.vscode/launch.json and tasks.json, apply the entries
 * (removing STALE's, which may be NULL) and write both (creating .vscode).
 * Neither file is written unless both parse and take the edits; anything
 * but a regular file there is refused untouched.  Without TASKS to write,
 * tasks.json is only edited when it exists, parses and holds one of
 * STALE's tasks (else it is left as it is, whatever it holds: nothing
 * needs it), and launch.json gets no empty "compounds".  One process at a
 * time does this for a workspace (a lock on the .vscode directory):
 * ON_WAIT(WAIT_ARG), when not NULL, is called before waiting for another.
 * SHOWN is the workspace as messages name it ("." for the current
 * directory), the path as the user gave it.  As root in another user's
 * workspace (its owner's, or reached through a link of theirs) every file
 * is read and written with that user's file-system ids.  Returns 0 with OUT[0] (launch.json) and OUT[1] (tasks.json;
 * its path NULL when it was left alone) filled, or -1 with ERR set. */
int tdb_vscode_write(const char *workspace, const char *shown, json_t *configurations,
                     json_t *compounds, json_t *tasks, const tdb_vscode_stale *stale,
                     tdb_vscode_wait_fn on_wait, void *wait_arg, tdb_vscode_written out[2],
                     tdb_error *err);
void tdb_vscode_written_clear(tdb_vscode_written *w);

/* The port of the existing configuration NAME in WORKSPACE's launch.json
 * ("connect": {"port": N}), or 0.  A file that does not parse gives 0: the
 * write reports it. */
int tdb_vscode_existing_port(const char *workspace, const char *name);

#endif
