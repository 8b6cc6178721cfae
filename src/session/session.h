/*
 * session/session.h: the debugging session core: one Python process under gdb/MI,
 * shared by every front-end ('tdebug run', 'tdebug attach', 'tdebug tour'
 * at a terminal, --batch, --json; src/cli/cli.h) the way gdb's CLI and MI are
 * two interpreters over one model of inferiors, threads and stops.
 *
 * The core decides and records: which symbols gdb reads (none by itself,
 * 'auto-solib-add off'; the module being imported, libc and ld.so, the
 * libraries a breakpoint may live in, those on the stack at a stop),
 * breakpoints and where they bound, stops and the merged stack at each,
 * the selected frame, and how the program ends (a program tdebug started
 * never outlives it; a process it attached to is detached, never killed,
 * never left stopped).  Front-ends only present what it emits and pass it
 * commands:
 *
 *     s = tdb_session_new(&opts, &frontend, &err);
 *     tdb_session_launch(s, argv, &err);           // or tdb_session_attach()
 *     for (;;) {
 *         rc = tdb_session_wait(s, -1, my_fd, &err);
 *         if (rc == TDB_WAIT_STOPPED) {            // tdb_session_stop(s)
 *             ... present it, then tdb_session_exec(s, "next", &reply, &err)
 *             or tdb_session_resume(s, TDB_RESUME_CONTINUE, &err) ...
 *         } else if (rc == TDB_WAIT_EXITED) break;
 *         else if (rc == TDB_WAIT_FD) ... my_fd is readable (Ctrl-C, a client) ...
 *     }
 *     status = tdb_session_end(s, &err);           // kill or detach, as it must
 *
 * Every event that is not a stop (warnings, notes, the program's start and
 * end, detaching) reaches the front-end's event() as one JSON object
 * {"event": NAME, "message": TEXT, ...}.
 */
#ifndef TDB_SESSION_H
#define TDB_SESSION_H

#include "base/common.h"
#include "stacks/view.h"

#include <jansson.h>

#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>

typedef enum tdb_output {
    TDB_OUTPUT_INTERACTIVE, /* a (tdebug) prompt at each stop */
    TDB_OUTPUT_BATCH,       /* print each stop with its backtrace, continue */
    TDB_OUTPUT_JSON         /* the same as one JSON object per line */
} tdb_output;

typedef struct tdb_session_options {
    tdb_output output;     /* the front-end's mode; the core only uses it to
                            * send a --json program's stdout to stderr */
    char **stop_at_import; /* module names ("torch._C"), validated */
    size_t n_stop_at_import;
    char **stop_at_load;   /* modules to stop at when their library is mapped */
    size_t n_stop_at_load;
    char **breaks;         /* gdb locations */
    size_t n_breaks;
    char **catch_throw;    /* --catch-throw[=TYPE]: "" for every C++ throw, or a
                            * class name (that class and those derived from it) */
    size_t n_catch_throw;
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
    const char *commands;  /* -x FILE: commands run at stops, one a line */
    int light;             /* launch: when the stops allow, start the program
                            * itself and trace it with a gdb that reads no
                            * library (a light session: session/internal.h) */
    const int *program_stdio; /* the launched program's stdin, stdout and
                               * stderr (duplicated; the caller keeps its
                               * own); NULL: tdebug's own (a front-end whose
                               * stdout is a protocol stream passes pipes) */
} tdb_session_options;

typedef struct tdb_session tdb_session;

/* A stop as the session records it. */
typedef struct tdb_stop_info {
    const char *reason;  /* "import" (in a --stop-at-import module's PyInit),
                          * "loaded" (a --stop-at-load module was mapped),
                          * "breakpoint", "signal", "interrupt", "step",
                          * "next", "finish", "attached", or gdb's own word */
    const char *module;  /* import/loaded: the module */
    const char *library; /* import/loaded: its file */
    const char *signal_name, *signal_meaning; /* signal */
    const char *fault_address; /* SIGSEGV/SIGBUS/...: the address, "0x10" */
    int bp_number;       /* breakpoint: tdebug's number and the location given */
    const char *bp_location;
    int thread;          /* gdb's thread id, 0 if unknown */
    const char *message; /* the line tdebug prints, without "tdebug: " */
    const char *where;   /* the top frame, gdb's way: "func (a=1) at f.c:3" */
    const char *source_line; /* "42\tx = y + 1" when the source is readable */
    const char *return_value; /* finish: "$1 = 3" */
    json_t *frames;      /* [{level, address, function, library, file, line}]
                          * innermost first (borrowed, valid during the stop) */
    json_t *python_frames; /* [{function, file, line}], innermost first, or
                            * NULL when unavailable (borrowed) */
    json_t *stack;       /* the merged stack: [{kind: "native"|"python", ...}]
                          * (stacks/view.h; borrowed) */
    json_t *libraries;   /* paths of the libraries mapped so far (borrowed) */
    const tdb_stackview *view; /* the same stack, for text rendering */
    json_t *exception;   /* throw: the C++ exception, {type, message} and
                          * "note" when the message cannot be read
                          * (native/cxxexc.h); NULL otherwise (borrowed) */
    json_t *args;        /* breakpoint: the arguments of the function it
                          * stopped in, {function, at_entry, ..., args:
                          * [{name, type, value}]} (torch/cxxargs.h; tensors
                          * decoded), when they can be named; else NULL
                          * (borrowed) */
    int compact;         /* a step: show the new location, not the stack */
} tdb_stop_info;

/* What a front-end provides.  EVENT receives every event that is not a
 * stop: {"event": NAME, "message": TEXT, ...} (borrowed).  NULL: printed
 * as tdb_event() does in the options' output mode.  PROGRAM_STARTED is
 * called once the program tdebug launched has a pid (a terminal front-end
 * hands it the terminal). */
typedef struct tdb_frontend {
    void (*event)(void *data, const json_t *event);
    void (*program_started)(void *data, pid_t pid);
    void *data;
    /* A breakpoint changed: it bound (a library defining it loaded), moved
     * or its locations changed.  BP is tdb_session_breakpoint()'s JSON
     * (borrowed).  NULL: not told. */
    void (*breakpoint_changed)(void *data, const json_t *bp);
} tdb_frontend;

/* Print one event the way sessions do: with TDB_OUTPUT_JSON, one line
 * {"event": EVENT, "message": MSG, ...FIELDS} on stdout; otherwise
 * "tdebug: MSG" on stdout, or "tdebug: warning: MSG" on stderr when EVENT
 * is "warning".  FIELDS (stolen, may be NULL) adds keys to the JSON form. */
void tdb_event(tdb_output output, const char *event, json_t *fields, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A new event {"event": EVENT, "message": FMT..., ...FIELDS (stolen)}. */
json_t *tdb_event_vnew(const char *event, json_t *fields, const char *fmt, va_list ap);
/* Print an event object (borrowed) as tdb_event() would. */
void tdb_event_print(tdb_output output, const json_t *event);
/* Print EVENT (stolen) as one compact JSON line on stdout. */
void tdb_event_json(json_t *event);
/* "the program was killed" because tdebug got signal SIG (0: the user
 * quit), as a "killed" event. */
void tdb_say_killed(tdb_output output, int sig);
/* The program's end: an "exited" event {status, signalled}, or in text
 * "tdebug: program exited with status N" (nothing when SIGNALLED: that
 * was said when it happened). */
void tdb_say_exited(tdb_output output, int status, int signalled);

/* What a --break LOCATION names. */
typedef enum tdb_break_kind {
    TDB_BREAK_NATIVE,      /* gdb's own: FUNCTION, FILE:LINE, *ADDRESS, ... */
    TDB_BREAK_PYTHON_FILE, /* a line or function of Python code: FILE.py:LINE,
                            * FILE.py:FUNCTION */
    TDB_BREAK_PYTHON_NAME  /* a dotted Python name: torch.add, torch.nn.functional.relu
                            * (not a GCC clone such as foo.cold or foo.part.0) */
} tdb_break_kind;

/* Classify LOCATION as given to -b/--break (or typed at the prompt). */
tdb_break_kind tdb_break_location_kind(const char *location);

/* Is LOCATION something --break cannot take (a Python name such as
 * torch.add, a .py file without LINE or FUNCTION)?  1 and WHY (may be
 * NULL) says what to give instead; 0 when it is a location. */
int tdb_break_refusal(const char *location, tdb_buf *why);

/* Is TYPE something 'catch throw TYPE' / --catch-throw=TYPE cannot take?
 * TYPE is a C++ class name as the demangler spells it ("c10::Error",
 * "std::out_of_range"), which catches that class and every class derived
 * from it; not a regex.  1 and WHY (may be NULL) says what to give
 * instead; 0 when it is a name. */
int tdb_catch_type_refusal(const char *type, tdb_buf *why);

/* Check that NAME is a dotted Python module name ("torch._C"). */
int tdb_valid_module_name(const char *name);

/* The basic regex (gdb's 'catch load' / 'sharedlibrary' dialect) matching
 * the file of extension module NAME: "torch._C" ->
 * "/torch/_C\.\([^/]*\.\)\{0,1\}so$".  New string. */
char *tdb_module_file_regex(const char *name);

/* Start gdb and prepare a session.  NULL with ERR set when gdb is missing,
 * too old or fails.  OPTS and FE are copied (OPTS' strings are borrowed and
 * must outlive the session); FE may be NULL. */
tdb_session *tdb_session_new(const tdb_session_options *opts, const tdb_frontend *fe,
                             tdb_error *err);
/* The fd (a signal self-pipe) whose readability cancels the core's waits
 * for gdb (a slow symbol load, attaching): -1 for none, the default. */
void tdb_session_set_cancel_fd(tdb_session *s, int fd);
/* The "attached" stop: the process as it was when tdebug came (after
 * TDB_ATTACH_STOPPED), for a front-end that shows it. */
int tdb_session_attached_stop(tdb_session *s, tdb_error *err);

/* Quit gdb and free the session; ends the target first if
 * tdb_session_end() was not called.  Accepts NULL. */
void tdb_session_free(tdb_session *s);

/* Run ARGV[0] (an interpreter, absolute or on PATH) with ARGV[1..] under
 * gdb: place the stops and start it.  Returns 0 with the program running,
 * -1 with ERR set (ERR's exit code: TDB_EXIT_USAGE for a --break gdb
 * rejects, else TDB_EXIT_TOOL). */
int tdb_session_launch(tdb_session *s, char *const argv[], tdb_error *err);

/* How an attach begins (tdb_session_attach()'s *OUT). */
typedef enum tdb_attach_start {
    TDB_ATTACH_STOPPED,  /* stopped where it was: nothing released yet */
    TDB_ATTACH_AT_LOAD,  /* a paused process at its --stop-at-load module:
                          * that is the first stop (tdb_session_stop()) */
    TDB_ATTACH_RELEASED, /* a paused process with stops placed and released:
                          * let it run to them */
    TDB_ATTACH_NOTHING   /* every stop asked for already happened long ago
                          * (said): nothing can stop */
} tdb_attach_start;

/* Attach to PID (stopping it), place the stops, and say which requested
 * modules are already imported.  ANNOUNCEMENT (borrowed, copied; NULL for
 * a plain attach) is that of a process paused by the preloaded library or
 * by tdebug.wait_for_debugger() (lib/tdebug_preload.h): the module it
 * waits at is mapped but not initialised, so a --stop-at-import of it
 * stops in its PyInit and a --stop-at-load of it at once; the process is
 * released once the stops are placed (a paused process is never left
 * waiting on tdebug, whatever ends the session).  Returns 0 with *OUT, or
 * -1 with ERR set (TDB_EXIT_FAIL when gdb was refused, the reason said). */
int tdb_session_attach(tdb_session *s, pid_t pid, const json_t *announcement,
                       tdb_attach_start *out, tdb_error *err);

/* What tdb_session_wait() returns. */
enum {
    TDB_WAIT_STOPPED = 1, /* a stop to present: tdb_session_stop() */
    TDB_WAIT_EXITED,      /* the program ended (tdb_session_exit_status()) */
    TDB_WAIT_FD,          /* FD is readable */
    TDB_WAIT_TIMEOUT,
    TDB_WAIT_GDB_DIED     /* gdb is gone (ERR says how) */
};

/* Handle gdb's events until something a front-end must act on: a stop to
 * present, the program's end, FD (>= 0) readable, TIMEOUT_MS passed (-1:
 * never).  Stops the core handles itself (a library load it watches, a
 * breakpoint's PLT stub) never come out.  Returns a TDB_WAIT_* value, or
 * -1 with ERR set. */
int tdb_session_wait(tdb_session *s, int timeout_ms, int fd, tdb_error *err);

/* The stop the program is at (after TDB_WAIT_STOPPED, until it resumes);
 * NULL while it runs.  Borrowed. */
const tdb_stop_info *tdb_session_stop(const tdb_session *s);

typedef enum tdb_resume {
    TDB_RESUME_CONTINUE,
    TDB_RESUME_STEP,   /* one source line, into calls */
    TDB_RESUME_NEXT,   /* one source line, over calls */
    TDB_RESUME_FINISH, /* until the selected frame returns */
    TDB_RESUME_STEPI,
    TDB_RESUME_NEXTI
} tdb_resume;

/* Let the program run.  -1 with ERR set when gdb refuses (the message is
 * gdb's: "The program is not being run."). */
int tdb_session_resume(tdb_session *s, tdb_resume how, tdb_error *err);
/* Stop the running program; the stop comes out of tdb_session_wait() as
 * an "interrupt". */
int tdb_session_interrupt(tdb_session *s, tdb_error *err);

/* The result of a command. */
typedef struct tdb_reply {
    int resumed;   /* the program runs again: wait for the next stop */
    int quit;      /* the user asked to end the session */
    int error;     /* the command failed (TEXT/EVENT say why) */
    json_t *event; /* the result as an event ({"event": ..., ...}) or NULL */
    tdb_buf text;  /* the result as a terminal shows it */
} tdb_reply;
void tdb_reply_clear(tdb_reply *r); /* frees and zeroes; accepts zeroed */

/* Run one command typed at a stop ("bt", "step", "frame 3", "info
 * breakpoints", "break x.c:3", any gdb command...) and fill R.  Returns 0,
 * or -1 with ERR set when gdb failed (not when the command did: that is
 * R->error).  "help" lists the commands. */
int tdb_session_exec(tdb_session *s, const char *line, tdb_reply *r, tdb_error *err);

/* Every thread's merged stack as one "threads" event and its text. */
int tdb_session_all_threads(tdb_session *s, tdb_reply *r, tdb_error *err);

/* Names for completion at a prompt: commands, then symbols gdb knows that
 * start with PREFIX.  New NULL-terminated list (tdb_strv_free). */
char **tdb_session_complete(tdb_session *s, const char *prefix);

/* How the session ends. */
typedef enum tdb_end {
    TDB_END_AUTO, /* kill a program tdebug started, detach from one it attached to */
    TDB_END_DETACH
} tdb_end;

/* End the target as it must end: a launched program is killed, an
 * attached one detached and left as it was before (a process that was
 * stopped with SIGSTOP is left stopped, and said).  Reports breakpoints
 * never hit and stops that never happened.  Returns 1 when a requested
 * stop never happened, else 0.  Idempotent. */
int tdb_session_end(tdb_session *s, tdb_end how);

/* Queries. */
pid_t tdb_session_pid(const tdb_session *s);
int tdb_session_attached(const tdb_session *s);
int tdb_session_running(const tdb_session *s);
/* 1 once the program ended by itself (it exited, or a signal killed it),
 * 0 while it runs or when the session ended it (quit, detach). */
int tdb_session_program_ended(const tdb_session *s);
/* The program's exit status (128+N when killed by signal N) and whether a
 * signal killed it; valid once it ended. */
int tdb_session_exit_status(const tdb_session *s, int *signalled);
/* gdb's output pipe, to poll beside a prompt: readable when gdb says
 * something (tdb_session_poll_gdb() handles it) or dies. */
int tdb_session_gdb_fd(const tdb_session *s);
/* Handle what gdb said while the program is stopped (a notification, its
 * death): 0, or TDB_WAIT_EXITED / TDB_WAIT_GDB_DIED / -1 as
 * tdb_session_wait(). */
int tdb_session_poll_gdb(tdb_session *s, tdb_error *err);
/* The requested stops that have not happened yet: 1 if any. */
int tdb_session_stops_pending(const tdb_session *s);
/* Was anything asked to stop at (--stop-at-*, --break)? */
int tdb_session_has_stops(const tdb_session *s);

/* Printing helpers a terminal front-end uses for stacks: the flags
 * (stacks/merge.h) the session shows stacks with, and the stop's stack as
 * text (tdb_stackview_render(), plus gdb's py-bt for an interpreter tdebug
 * does not read itself). */
unsigned tdb_session_stack_flags(const tdb_session *s);
void tdb_session_render_stack(tdb_session *s, const tdb_stop_info *st, tdb_buf *out);

/* ==== Structured queries (src/session/query.c) ====
 *
 * The session as data rather than text, for front-ends that show it in
 * their own form (the Debug Adapter Protocol front-end, src/dap*.c): the
 * program's environment, breakpoints, threads, one thread's merged stack,
 * values.  Stack and value queries need a stop (tdb_session_stop()); they
 * fail with ERR "the program is running" otherwise. */

/* Set NAME=VALUE (VALUE NULL: unset NAME) in the environment of the program
 * tdb_session_launch() will start; tdebug's and gdb's own environments are
 * left alone.  Before launching.  -1 with ERR set when gdb cannot carry it
 * (NAME empty or with '=', a newline in either, blanks around VALUE). */
int tdb_session_program_setenv(tdb_session *s, const char *name, const char *value,
                               tdb_error *err);

/* Whether the core can stop in Python code: breakpoints on FILE.py:LINE
 * and on Python functions (tdb_session_breakpoint_add()).  0 until the
 * core has Python breakpoints; a front-end then says so instead of placing
 * a gdb breakpoint that could never bind. */
int tdb_session_python_breakpoints(const tdb_session *s);
/* Is LOCATION a place in Python ("train.py:12", "pkg/mod.py:3", a dotted
 * name such as "torch.nn.functional.relu") rather than a native one
 * ("at::native::add", "csrc/x.c:3", "main", "*0x401000")? */
int tdb_session_location_is_python(const char *location);

/* A breakpoint as data (new reference), or NULL when there is no
 * breakpoint ID:
 *   {"id": N, "kind": "native"|"catch"|"python", "location": as given,
 *    "pending": bool, "verified": bool (bound somewhere), "hits": N,
 *    "where": "f at x.c:3; ..." or null, "file": full path or null,
 *    "line": N or null (its first location with a line),
 *    "message": why it is not verified, or null} */
json_t *tdb_session_breakpoint(tdb_session *s, int id);
/* Add a breakpoint at LOCATION (as 'break' takes it), at a stop or before
 * the program starts.  Returns tdb_session_breakpoint()'s JSON (new
 * reference); a location gdb rejects gives {"id": 0, "verified": false,
 * "message": gdb's reason}.  NULL with ERR set when gdb failed. */
json_t *tdb_session_breakpoint_add(tdb_session *s, const char *location, int temporary,
                                   tdb_error *err);
/* A catchpoint on C++ throws of class TYPE or a class derived from it
 * (NULL or "": every throw), as 'catch throw' makes it.  Returns as
 * tdb_session_breakpoint_add(). */
json_t *tdb_session_catchpoint_add(tdb_session *s, const char *type, tdb_error *err);
/* Delete breakpoint ID: 0, or -1 when there is no such breakpoint. */
int tdb_session_breakpoint_delete(tdb_session *s, int id);

/* The threads at this stop (new reference): [{"id": gdb's number,
 * "lwp": N, "name": its name or null, "current": bool}]. */
json_t *tdb_session_threads(tdb_session *s, tdb_error *err);
/* The thread the stop is in (gdb's number). */
int tdb_session_stop_thread(tdb_session *s);
/* THREAD's stack (0: the stop's thread) as the user sees it, innermost
 * first (new reference): the merged frames of tdb_stackview_json(), each
 * with "index" (its number for tdb_session_select(), stable until the
 * program runs): python {index, kind, function, file, line}; native
 * {index, kind, level, address, function, library, file, line}. */
json_t *tdb_session_thread_stack(tdb_session *s, int thread, tdb_error *err);
/* Make frame INDEX of THREAD (0: the stop's) the selected one, as
 * 'thread' and 'frame' do: commands, finish and values then use it. */
int tdb_session_select(tdb_session *s, int thread, int index, tdb_error *err);

/* Values at a stop, named by handles (small positive numbers) a front-end
 * shows and expands.  Handles are valid until tdb_values_reset(), which a
 * front-end calls when the program runs again. */
typedef struct tdb_values tdb_values;
tdb_values *tdb_values_new(tdb_session *s);
void tdb_values_free(tdb_values *v); /* accepts NULL */
/* Forget every handle, and gdb's variable objects behind them. */
void tdb_values_reset(tdb_values *v);
/* The scopes of frame INDEX of THREAD (new reference): [{"name": "Locals",
 * "kind": "locals"|"arguments"|"python-locals", "handle": N}]. */
json_t *tdb_values_scopes(tdb_values *v, int thread, int index, tdb_error *err);
/* What handle H holds (a scope, or a value with parts): [{"name", "type"
 * (or null), "value", "handle": N (0: nothing inside)}] (new reference).
 * A scope the core cannot read yet (Python locals before the core reads
 * them) gives [] and *NOTE (may be NULL) says why (borrowed, static). */
json_t *tdb_values_list(tdb_values *v, int h, const char **note, tdb_error *err);
/* EXPR evaluated in frame INDEX of THREAD: a gdb expression in a native
 * frame, a Python name in a Python frame.  {"value", "type", "handle"}
 * (new reference), or NULL with ERR set to why (gdb's or Python's words). */
json_t *tdb_values_evaluate(tdb_values *v, int thread, int index, const char *expr,
                            tdb_error *err);

#endif
