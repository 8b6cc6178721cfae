/*
 * inspect.h: what 'tdebug inspect' (and 'doctor', 'profile --check') look
 * at: Python module names resolved to files by the target interpreter, the
 * objects that matter in a running process, and questions put to Python.
 */
#ifndef TDB_INSPECT_H
#define TDB_INSPECT_H

#include "common.h"

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* Nonzero when ARG reads as a dotted Python module name ("torch._C") and
 * not as an existing file. */
int tdb_looks_like_module(const char *arg);

/* Run PYTHON -c CODE ARG... and parse the last line of its stdout as JSON
 * (new reference in *OUT).  Fails with ERR set when PYTHON cannot be run,
 * exits non-zero, or prints no JSON; a timeout of TIMEOUT_MS kills it. */
int tdb_py_json(const char *python, const char *code, char *const args[], int timeout_ms,
                json_t **out, tdb_error *err);

/* PYTHON's own executable (sys.executable): the interpreter itself when
 * PYTHON is a pyenv shim or another script that execs it, which is what
 * gdb must run.  When MODULE is not NULL, *OUT_HAS_MODULE (if given) says
 * whether PYTHON finds MODULE (importlib.util.find_spec, which imports its
 * parent packages but not MODULE).  TIMEOUT_MS kills a PYTHON that does not
 * answer.  Returns 0 with *OUT_EXE (new string); -1 with ERR set when
 * PYTHON cannot be started (exit code TDB_EXIT_NOTFOUND or
 * TDB_EXIT_NOEXEC) or does not answer as a Python interpreter
 * (TDB_EXIT_NOEXEC). */
int tdb_py_executable(const char *python, const char *module, int timeout_ms, char **out_exe,
                      int *out_has_module, tdb_error *err);

/* The file PYTHON would load native extension MODULE from.  Finds parent
 * packages without importing them when it can (so 'torch._C' takes
 * milliseconds, not an 'import torch').  Returns a new string, or NULL
 * with ERR set: unknown module, a pure-Python module, a built-in one. */
char *tdb_py_module_path(const char *python, const char *module, tdb_error *err);

/* Which mapped objects of a process to report. */
enum {
    TDB_PID_MATTERS = 0, /* the interpreter, libpython, extension modules, torch/c10 */
    TDB_PID_ALL = 1      /* every file-backed executable mapping */
};

/* The ELF files mapped into PID, in /proc/PID/maps order, each once: a
 * new NULL-terminated array (free with tdb_strv_free) of paths readable
 * from here (through /proc/PID/root when the process sees another mount
 * namespace).  NULL with ERR set when the maps cannot be read. */
char **tdb_pid_objects(pid_t pid, int which, size_t *out_n, tdb_error *err);

/* A target named on a command line, resolved to a file. */
typedef struct tdb_target {
    char *label;   /* what the user named: a path, "torch._C", "pid 12" */
    char *path;    /* the file to inspect; NULL when resolving failed */
    tdb_error err; /* why it failed */
} tdb_target;

/* Resolve ARGS (files, or module names resolved by PYTHON) and, when PID
 * > 0, PID's objects (WHICH: TDB_PID_*) into a new array of *OUT_N
 * targets, each with a path or an error, in order. */
tdb_target *tdb_resolve_targets(char *const *args, size_t n_args, const char *python, pid_t pid,
                                int which, size_t *out_n);
void tdb_targets_free(tdb_target *t, size_t n);
/* Inspect T (OPT as tdb_elf_inspect).  NULL when it failed to resolve or
 * inspect; the failure is appended to the JSON array ERRORS as
 * {"target": label, "error": message}. */
struct tdb_elf_report;
struct tdb_elf_options;
struct tdb_elf_report *tdb_target_inspect(tdb_target *t, const struct tdb_elf_options *opt,
                                          json_t *errors);

/* Nonzero when PATH (a mapped object's path) is one that matters for mixed
 * Python/C++ debugging; EXE is the process's executable or NULL. */
int tdb_object_matters(const char *path, const char *exe);

/* Nonzero when PATH is one of torch's own objects (torch/..., libtorch*,
 * libc10*). */
int tdb_is_torch_object(const char *path);

/* Append the human-readable report of R to B: one "  label  value" line
 * per fact, ending with a verdict line that says what to do. */
void tdb_elf_report_format(const struct tdb_elf_report *r, tdb_buf *b);

#endif
