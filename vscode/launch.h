/*
 * launch.h: the launch.json and tasks.json entries of 'tdebug vscode', and
 * what they are made from (the interpreter, the libraries whose symbols
 * matter, where PyTorch was built).
 *
 * Launch (the default): a compound of
 *   "tdebug: LABEL (C++, gdb)"      cppdbg launch: gdb starts the interpreter
 *                                   running the program under
 *                                   'python -m debugpy --listen H:P --wait-for-client'
 *   "tdebug: LABEL (Python, debugpy)" debugpy attach to H:P, after the task
 *   "tdebug: wait for debugpy (LABEL)" 'tdebug wait-port H:P' (tasks.json)
 * named "tdebug: LABEL (Python + C++)".  The program is gdb's child, so no
 * privilege is needed under ptrace_scope=1.
 *
 * Attach (--attach PID): "tdebug: attach (C++, gdb)", a cppdbg attach, and,
 * when the process runs a debugpy server, "tdebug: attach (Python,
 * debugpy)" and the compound "tdebug: attach (Python + C++)".
 *
 * Every cppdbg entry loads the symbols of only the interpreter, libc and
 * the loader, torch/c10 and the user's own extensions (symbolLoadInfo),
 * enables pretty printing, loads CPython's gdb helpers when there are any,
 * steps over std:: and pybind11:: code, and maps PyTorch's build directory
 * to --torch-src.  Every debugpy entry has justMyCode false.
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
 * without duplicates.  Best effort: unreadable directories are skipped. */
void tdb_vscode_find_libraries(const char *dir, int max_depth, json_t *patterns);

/* The directory PyTorch was compiled in, as its libraries record it in the
 * file names of their assertions ("./c10/core/..." gives "."; a source
 * build gives its checkout), looked up in TORCH_DIR/lib/libc10.so.  New
 * string, or NULL when unknown. */
char *tdb_vscode_torch_build_root(const char *torch_dir);
/* The same from BUF: the prefix before "c10/core/" of the first string in
 * it that names a c10 source file.  New string or NULL. */
char *tdb_vscode_build_root_in(const char *buf, size_t len);

/* Everything an entry is made from.  Strings are borrowed. */
typedef struct tdb_vscode_spec {
    const char *label;         /* "train.py", "-m pkg.main"; NULL in attach mode */
    const char *program;       /* the script as launch.json names it, or NULL */
    const char *module;        /* or the module */
    char *const *args;         /* the program's arguments */
    int n_args;
    const char *python;        /* the interpreter (launch) */
    const char *python_version; /* "3.11": adds -Xfrozen_modules=off from 3.11 */
    const char *gdb;           /* miDebuggerPath */
    const char *tdebug;        /* the tdebug the wait-port task runs */
    const char *host;          /* debugpy's address */
    int port;                  /* debugpy's port (launch; attach: 0 = no server) */
    json_t *libraries;         /* symbolLoadInfo patterns (array of strings) */
    const char *gdb_helper;    /* CPython's gdb helper, or NULL */
    const char *torch_src;     /* --torch-src, or NULL */
    const char *build_root;    /* where PyTorch was compiled, or NULL */
    pid_t attach_pid;          /* nonzero: attach mode */
    const char *attach_program; /* the attached process's executable */
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
