/*
 * Folder targets/: processes as debugging targets: which are Python and
 * what part each plays in a debugpy session, which process a pid given for
 * attaching really means, and whether the kernel will let it be traced (and
 * if not, why and what to do).  It reads /proc (or a recorded tree of it),
 * never prints, never exits, and never signals or traces a process it is
 * asked about.
 * May include: base, process, native
 *
 * targets/proc.h: processes as /proc shows them, seen by a Python debugger.
 *
 * Reads pid, parent, owner, state, executable, command line and mappings of
 * every process, tells Python processes from others (whatever the
 * interpreter is called: python3.11, a venv's python, pyenv, a symlink, a
 * renamed copy, a program embedding libpython), whether torch._C is mapped,
 * who traces it, and its debugpy role: adapter, launcher, the debuggee the
 * launcher starts, a 'python -m debugpy --listen' server, a program that
 * started debugpy itself, or plain Python.  There are no DEBUGPY_*
 * environment markers; roles come from the command line, the process tree,
 * /proc/PID/maps and, for an adapter, its TCP connections.
 *
 * Every function takes the proc root ("/proc" on a live system) so unit
 * tests can read a recorded tree under tests/fixtures/proc/.  A fake tree
 * holds, per pid, the files read here: stat, status, cmdline, comm, maps,
 * an 'exe' symlink, 'fd/' symlinks and net/tcp; a file left out reads as
 * "not readable" (the kernel hides exe, maps and fd of another user's
 * process).
 */
#ifndef TDB_PROC_H
#define TDB_PROC_H

#include "base/common.h"

#include <stdint.h>
#include <sys/types.h>

/* A process's part in a debugpy session. */
typedef enum tdb_role {
    TDB_ROLE_NONE = 0,  /* not a Python process (or not known to be one) */
    TDB_ROLE_PLAIN,     /* Python without debugpy */
    TDB_ROLE_ADAPTER,   /* debugpy's adapter: speaks DAP, runs no user code */
    TDB_ROLE_LAUNCHER,  /* debugpy's launcher: starts the program VS Code launches */
    TDB_ROLE_DEBUGGEE,  /* 'debugpy --connect HOST:PORT PROG': user code, the launcher's child */
    TDB_ROLE_SERVER,    /* 'python -m debugpy --listen ADDR PROG': user code in this process */
    TDB_ROLE_EMBEDDED,  /* a program that started debugpy itself (debugpy.listen()): pydevd mapped */
    TDB_ROLE_INJECTOR   /* 'python -m debugpy --pid N': injecting debugpy into process N */
} tdb_role;

/* The short name ("adapter", "plain", ...; "" for NONE), as in 'tdebug ps'. */
const char *tdb_role_name(tdb_role role);
/* A phrase for messages: "the debugpy launcher", "a plain Python process". */
const char *tdb_role_describe(tdb_role role);
/* Nonzero for the roles whose process runs the user's Python code. */
int tdb_role_runs_user_code(tdb_role role);

/* Tri-state facts: what /proc did not let us see is unknown. */
enum { TDB_UNKNOWN = -1, TDB_NO = 0, TDB_YES = 1 };

typedef struct tdb_proc {
    pid_t pid;
    pid_t ppid;
    pid_t tgid;            /* != pid when PID names a thread */
    uid_t uid, euid, suid; /* status "Uid:"; ptrace compares all three */
    gid_t gid, egid, sgid;
    char *user;            /* the name of uid, or its number */
    char state;            /* stat's letter: R S D Z T t X I ... */
    int kernel_thread;     /* PF_KTHREAD in stat's flags */
    char *comm;            /* stat's (comm) */
    char *exe;             /* the executable's path; NULL when unreadable or gone */
    int exe_errno;         /* why exe is NULL: EACCES when the kernel denies us
                            * ptrace-read access (as it would ptrace), ENOENT gone */
    char **argv;           /* NULL-terminated; empty for kernel threads and zombies */
    size_t argc;
    int python;            /* TDB_YES/NO/UNKNOWN: a CPython interpreter */
    int torch;             /* torch._C mapped */
    int pydevd;            /* debugpy's pydevd native parts mapped */
    int maps_readable;     /* 0 when maps could not be read (another user's) */
    int dumpable;          /* TDB_NO after prctl(PR_SET_DUMPABLE, 0) or set-id exec */
    uint64_t cap_prm;      /* status "CapPrm:" */
    pid_t tracer_pid;      /* status "TracerPid:", 0 when not traced */
    char *tracer_comm;     /* the tracer's name; NULL when not traced or not visible */
    tdb_role role;
    pid_t role_pid;        /* INJECTOR: the pid named by --pid; else 0 */
    char *endpoint;        /* HOST:PORT a debugpy CLI --listen's on or --connect's to, or an
                            * adapter takes DAP clients on (--host/--port); else NULL */
} tdb_proc;

typedef struct tdb_proc_table {
    char *root;            /* "/proc" or a fake tree */
    tdb_proc **procs;      /* sorted by pid */
    size_t n;
    size_t cap;
} tdb_proc_table;

/* Read every process under ROOT (NULL: "/proc").  Processes that vanish
 * while being read are left out.  Returns NULL with ERR set only when ROOT
 * itself cannot be listed.  Free with tdb_proc_table_free(). */
tdb_proc_table *tdb_proc_table_read(const char *root, tdb_error *err);
/* An empty table over ROOT (NULL: "/proc") that tdb_proc_table_lookup()
 * fills with the processes asked for, for questions about a few pids. */
tdb_proc_table *tdb_proc_table_new(const char *root);
void tdb_proc_table_free(tdb_proc_table *t);

/* The process PID, borrowed from T; read and added to T when it was not
 * listed (a thread id, or a process born after the scan).  NULL with ERR
 * set (code ESRCH) when there is no such process. */
tdb_proc *tdb_proc_table_lookup(tdb_proc_table *t, pid_t pid, tdb_error *err);

/* The children of PID in T, in pid order, borrowed; *OUT_N gets their
 * count.  Returns a new array (free() it) or NULL when there are none. */
tdb_proc **tdb_proc_children(const tdb_proc_table *t, pid_t pid, size_t *out_n);

/* Nonzero when PID descends from (or is) ANCESTOR in T. */
int tdb_proc_descends_from(const tdb_proc_table *t, pid_t pid, pid_t ancestor);

/* Where user code behind a pid runs, for attaching a debugger. */
typedef struct tdb_resolution {
    pid_t pid;            /* the process to attach to */
    char *note;           /* why it is not the pid asked for, ready to print:
                           * "pid 1234 is the debugpy launcher; attaching to its
                           * child 1240"; NULL when it is that pid */
    pid_t *candidates;    /* when ambiguous: the processes to choose from */
    size_t ncandidates;
} tdb_resolution;

/* Resolve PID to the process that runs user code: an adapter or a launcher
 * resolves to the debuggee (through its children, its launcher's children
 * or, for the double-forked adapter of a '--listen' server, its TCP
 * connections); an injector to the process it injects into; a thread to its
 * process; anything else to itself.  Returns 0 with *OUT filled; 1 when
 * ambiguous, with OUT->candidates filled and ERR saying so (list them and
 * stop); -1 with ERR set (exit code TDB_EXIT_FAIL) when it cannot be
 * resolved, saying why and what to do.  Release OUT with
 * tdb_resolution_release() after 0 or 1. */
int tdb_proc_resolve_debuggee(tdb_proc_table *t, pid_t pid, tdb_resolution *out,
                              tdb_error *err);
void tdb_resolution_release(tdb_resolution *r);

/* The pids of the processes holding a TCP connection to one of PID's
 * sockets (an adapter's peers), found through ROOT/PID/net/tcp{,6} and the
 * socket inodes under each process's ROOT/PID/fd.  Returns the count (0 or more) and a new
 * array in *OUT (NULL when 0); -1 with ERR set when PID's file descriptors
 * cannot be read. */
ssize_t tdb_proc_tcp_peers(tdb_proc_table *t, pid_t pid, pid_t **out, tdb_error *err);

/* Where a DAP client (VS Code's "debugpy" attach) connects to debug the
 * Python of PID: a '--listen' server's own address; for a program that
 * called debugpy.listen(), the --host/--port of the adapter it is
 * connected to (the port the adapter was given by the kernel when it was
 * asked for 0).  Returns 1 with *OUT_HOST (a new string) and *OUT_PORT; 0
 * when PID runs no debugpy server: a debuggee ('--connect') is a client of
 * an adapter that already has its own client. */
int tdb_proc_debugpy_server(tdb_proc_table *t, pid_t pid, char **out_host, int *out_port);

/* The command line shortened for a table: debugpy's installation path as
 * '.../debugpy', access tokens elided, newlines and other control
 * characters escaped (\n, \t, \xNN).  With MAX_LEN (0: no limit), made to
 * fit in MAX_LEN bytes step by step: the interpreter's directory goes
 * ('.../python3.11'), its options become '...', then debugpy's options,
 * then the program's arguments from the end, then the program's directory,
 * then -c's code is cut; the program's name (the script, -m MODULE, or the
 * script debugpy runs) is never cut, so the result is longer than MAX_LEN
 * when that alone does not fit.  Returns a new string. */
char *tdb_proc_short_command(const tdb_proc *p, size_t max_len);

/* The name of user UID, or its number when it has none: a new string. */
char *tdb_user_name(uid_t uid);

/* Nonzero when NAME (a file name, no directory) is a CPython interpreter's:
 * python, python3, python3.11, python3.11d, ... */
int tdb_is_python_name(const char *name);

/* CHILD, just forked by PARENT (live /proc): what does it become?  Waits
 * up to SETTLE_MS for it to exec (its executable or command line changes);
 * one still the same then is a fork of PARENT.  Returns 1 when it runs
 * Python (*OUT_CMDLINE: its command line, arguments joined by spaces, new),
 * 0 when it runs something else, -1 when it is gone. */
int tdb_python_child(pid_t parent, pid_t child, int settle_ms, char **out_cmdline);

#endif
