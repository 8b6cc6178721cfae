/*
 * Folder checks/: the checks behind 'tdebug doctor', 'inspect' and
 * 'profile': what this machine, an object file or a process allows a
 * debugger, as reports (structs and JSON) that a command prints.  It never
 * prints and never exits.
 * May include: base, gdb, process, native, cpython, targets
 *
 * checks/inspect.h: what 'tdebug inspect' (and 'doctor', 'profile --check') look
 * at: Python module names resolved to files by the target interpreter, the
 * objects that matter in a running process, and questions put to Python.
 */
#ifndef TDB_INSPECT_H
#define TDB_INSPECT_H

#include "base/common.h"

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

/* One library the dynamic loader loads, as it found it. */
typedef struct tdb_loaded_lib {
    char *name; /* the name it was asked for (a DT_NEEDED entry) */
    char *path; /* where the loader found it; NULL: not found */
} tdb_loaded_lib;

/* Every library the dynamic loader loads with OBJECT (its DT_NEEDED
 * entries, theirs, and so on), found as a real load finds them: the
 * loader's own answer (what ldd runs: LD_TRACE_LOADED_OBJECTS=1 with the
 * interpreter tdebug itself runs with, so RUNPATH and $ORIGIN,
 * LD_LIBRARY_PATH, the ld.so.cache and its hwcaps subdirectories all count;
 * no code of OBJECT runs; LD_AUDIT and LD_PRELOAD are left out).  A library
 * the loader cannot find has a NULL path.  Returns the count (0 or
 * more) with *OUT (free with tdb_loaded_libs_free), or -1 with ERR set. */
ssize_t tdb_loader_list(const char *object, tdb_loaded_lib **out, tdb_error *err);
void tdb_loaded_libs_free(tdb_loaded_lib *v, size_t n);

/* A target named on a command line, resolved to a file. */
typedef struct tdb_target {
    char *label;     /* what the user named: a path, "torch._C", "libc10.so",
                      * "pid 12"; for a library a target loads,
                      * "libc10.so.1.13 (loaded by torch._C)" */
    char *path;      /* the file to inspect; NULL when resolving failed */
    char *loaded_by; /* a library found through another target (its
                      * dependencies, or a name looked up among them): that
                      * target's label; else NULL */
    char *needed_by; /* a dependency: the object whose DT_NEEDED names it */
    char *needed_as; /* ... and the name it gives (DT_NEEDED) */
    tdb_error err;   /* why it failed */
} tdb_target;

/* Flags of tdb_resolve_targets(). */
enum {
    TDB_TARGETS_NEEDED = 1 /* after each module or file named, the libraries
                            * it loads that belong to it: its DT_NEEDED
                            * closure, followed only through libraries of its
                            * own package directory or of torch (libtorch*,
                            * libc10*, libshm, libcaffe2), never into the
                            * system's (libc, libstdc++, ...) */
};

/* Resolve ARGS into a new array of *OUT_N targets, each with a path or an
 * error, in order:
 *  - an ELF file;
 *  - a Python module name, resolved by PYTHON to the file it loads;
 *  - a library name ("libc10.so", "libc10.so.1.13": lib*.so*, not a file
 *    here), looked up by file name and soname among the libraries the
 *    other targets load (tdb_loader_list) and PID's mapped objects, or,
 *    with neither, among those torch._C loads; an error says when it is
 *    not among them, or names each file when several match;
 * then, when PID > 0, PID's objects (WHICH: TDB_PID_*).  FLAGS:
 * TDB_TARGETS_*.  A dependency already listed, or named itself, is not
 * listed as a dependency. */
tdb_target *tdb_resolve_targets(char *const *args, size_t n_args, const char *python, pid_t pid,
                                int which, int flags, size_t *out_n);
void tdb_targets_free(tdb_target *t, size_t n);
/* Add T's names to the JSON object O of its report: "target" (the label)
 * and, for a library found through another target, "loaded_by",
 * "needed_by" and "needed_as" (tdb_json_set_str: bytes kept). */
void tdb_target_json(const tdb_target *t, json_t *o);
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
