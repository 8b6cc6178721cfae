/*
 * debugger.h: a debugging session of one Python process over gdb/MI, the
 * policy shared by 'tdebug run' and 'tdebug attach':
 *
 *  - fast symbol loading: gdb reads no library's symbols by itself
 *    ('auto-solib-add off'); tdebug loads the few that matter: the module
 *    being imported, libraries named with --symbols, the libraries a
 *    --break may live in, libc and ld.so (without them backtraces are
 *    garbage), and at a stop, the libraries on the stack;
 *  - --stop-at-import MODULE: a load catchpoint for the module's file, then
 *    a breakpoint on its PyInit_<name> placed in that very library, so the
 *    stop comes before the module's init runs;
 *  - --break LOCATION: pending breakpoints that really bind when their
 *    library loads (with auto-solib-add off gdb would never bind them);
 *  - three ways to present stops: an interactive (tdebug) prompt, --batch
 *    text, --json lines;
 *  - the program's terminal, Ctrl-C and shutdown: a program tdebug started
 *    never outlives it; a process it attached to is detached, never killed,
 *    never left stopped.
 */
#ifndef TDB_DEBUGGER_H
#define TDB_DEBUGGER_H

#include "common.h"

#include <jansson.h>

#include <stdio.h>
#include <sys/types.h>

typedef enum tdb_output {
    TDB_OUTPUT_INTERACTIVE, /* a (tdebug) prompt at each stop */
    TDB_OUTPUT_BATCH,       /* print each stop with its backtrace, continue */
    TDB_OUTPUT_JSON         /* the same as one JSON object per line */
} tdb_output;

typedef struct tdb_session_options {
    tdb_output output;
    char **stop_at_import; /* module names ("torch._C"), validated */
    size_t n_stop_at_import;
    char **stop_at_load;   /* modules to stop at when their library is mapped */
    size_t n_stop_at_load;
    char **breaks;         /* gdb locations */
    size_t n_breaks;
    char **symbols;        /* basic regexes of more libraries to load */
    size_t n_symbols;
    int all_symbols;       /* gdb's default: read every library's symbols */
    int verbose;           /* show gdb's own chatter */
    int raw;               /* show CPython's plumbing frames in stacks */
    int cpython_symbols;   /* let gdb read CPython's own debug info (source
                            * lines in the interpreter, gdb's py-* commands;
                            * about a second more per start and first bt) */
    int max_frames;        /* frames shown per backtrace (0: 64) */
    const char *prompt;    /* interactive prompt (NULL: "(tdebug) ") */
    int empty_continues;   /* interactive: an empty line resumes the program
                            * (tours: Enter goes to the next stop) */
    int started_by_tdebug; /* attach: a program tdebug started ('run --preload'),
                            * whose end its caller reaps and reports */
} tdb_session_options;

typedef struct tdb_session tdb_session;

/* A stop as the session presents it (and hands it to a stop hook). */
typedef struct tdb_stop_info {
    const char *reason;  /* "import" (in a --stop-at-import module's PyInit),
                          * "loaded" (a --stop-at-load module was mapped),
                          * "breakpoint", "signal", "interrupt", "step",
                          * "attached", or gdb's own word */
    const char *module;  /* import/loaded: the module */
    const char *library; /* import/loaded: its file */
    const char *signal_name, *signal_meaning; /* signal */
    int bp_number;       /* breakpoint: gdb's number and the location given */
    const char *bp_location;
    int thread;          /* gdb's thread id, 0 if unknown */
    const char *message; /* the line tdebug prints, without "tdebug: " */
    json_t *frames;      /* [{level, address, function, library, file, line}]
                          * innermost first (borrowed, valid during the hook) */
    json_t *python_frames; /* [{function, file, line}], innermost first, or
                            * NULL when unavailable (borrowed) */
    json_t *stack;       /* the merged stack: [{kind: "native"|"python", ...}]
                          * (stackview.h; borrowed) */
    json_t *libraries;   /* paths of the libraries mapped so far (borrowed) */
} tdb_stop_info;

/* A stop hook is called twice at each stop: BEFORE the stop line and
 * stacks are printed and AFTER.  The BEFORE call may filter: CONTINUE
 * resumes the program without showing the stop (and without an AFTER
 * call), QUIT ends the session, DEFAULT shows it.  The AFTER call's answer
 * decides what happens next. */
typedef enum tdb_hook_phase { TDB_HOOK_BEFORE, TDB_HOOK_AFTER } tdb_hook_phase;
typedef enum tdb_hook_action {
    TDB_HOOK_DEFAULT,  /* BEFORE: show the stop; AFTER: what the output mode
                        * does (prompt, or continue) */
    TDB_HOOK_CONTINUE, /* resume the program */
    TDB_HOOK_QUIT      /* end the session */
} tdb_hook_action;
typedef tdb_hook_action (*tdb_stop_hook)(tdb_session *s, tdb_hook_phase phase,
                                         const tdb_stop_info *st, void *data);

/* Print one event the way sessions do: with TDB_OUTPUT_JSON, one line
 * {"event": EVENT, "message": MSG, ...FIELDS} on stdout; otherwise
 * "tdebug: MSG" on stdout, or "tdebug: warning: MSG" on stderr when EVENT
 * is "warning".  FIELDS (stolen, may be NULL) adds keys to the JSON form. */
void tdb_event(tdb_output output, const char *event, json_t *fields, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Print EVENT (stolen) as one compact JSON line on stdout. */
void tdb_event_json(json_t *event);
/* "the program was killed" because tdebug got signal SIG (0: the user
 * quit), as a "killed" event. */
void tdb_say_killed(tdb_output output, int sig);
/* The program's end: an "exited" event {status, signalled}, or in text
 * "tdebug: program exited with status N" (nothing when SIGNALLED: that
 * was said when it happened). */
void tdb_say_exited(tdb_output output, int status, int signalled);

/* Check that NAME is a dotted Python module name ("torch._C"). */
int tdb_valid_module_name(const char *name);

/* The basic regex (gdb's 'catch load' / 'sharedlibrary' dialect) matching
 * the file of extension module NAME: "torch._C" ->
 * "/torch/_C\.\([^/]*\.\)\{0,1\}so$".  New string. */
char *tdb_module_file_regex(const char *name);

/* Start gdb and prepare a session.  NULL with ERR set when gdb is missing,
 * too old or fails.  OPTS is copied (the strings are borrowed and must
 * outlive the session). */
tdb_session *tdb_session_new(const tdb_session_options *opts, tdb_error *err);

/* Run ARGV[0] (an interpreter, absolute or on PATH) with ARGV[1..] under
 * gdb and handle every event until the program ends or the user quits.
 * Returns the status tdebug should exit with: the program's own (128+N when
 * killed by signal N), 1 when a requested stop never happened, 130 when
 * interrupted, or TDB_EXIT_TOOL with ERR set when gdb failed. */
int tdb_session_run(tdb_session *s, char *const argv[], tdb_error *err);

/* Attach to PID and handle events until the user quits or the process
 * exits; with --batch/--json and no stops asked for, print every thread's
 * stack and detach at once.  Always detaches, never kills; leaves a process
 * that was stopped before stopped, and says so.  A module asked for with
 * --stop-at-import that is already initialised is reported instead of
 * waited for.  Returns tdebug's exit status: 0, 1 (refused, or a requested
 * stop cannot or did not happen), 130/143 when interrupted, TDB_EXIT_TOOL
 * with ERR set when gdb failed. */
int tdb_session_attach(tdb_session *s, pid_t pid, tdb_error *err);

/* Attach to PID, a process paused by the preloaded library (lib/) or by
 * Python's tdebug.wait_for_debugger(), which sent ANNOUNCEMENT
 * (lib/tdebug_preload.h; borrowed, copied).  As tdb_session_attach(),
 * except that the module the process waits at is mapped but not yet
 * initialised: a --stop-at-import of it stops in its PyInit (armed in the
 * mapped library), a --stop-at-load of it stops at once.  The process is
 * then released (tdb_preload_release_commands()) and runs to the stops.
 * One whose wait ended before gdb attached is handled as by
 * tdb_session_attach(), with a warning.  However the session ends, the
 * process is released before gdb detaches: it never waits on tdebug.  Same
 * exit statuses as tdb_session_attach(). */
int tdb_session_attach_paused(tdb_session *s, pid_t pid, const json_t *announcement,
                              tdb_error *err);

/* Call HOOK (with DATA) at every stop presented; NULL removes it. */
void tdb_session_set_stop_hook(tdb_session *s, tdb_stop_hook hook, void *data);

/* 1 once the program ended by itself (it exited, or a signal killed it),
 * 0 while it runs or when the session ended it (quit, detach). */
int tdb_session_program_ended(const tdb_session *s);

/* Quit gdb and free the session.  Accepts NULL. */
void tdb_session_free(tdb_session *s);

#endif
