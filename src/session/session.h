/*
 * session/session.h: the debugging session core: one Python process under
 * gdb/MI, shared by every front-end (the terminal's prompt, --batch and
 * --json in src/cli/, the Debug Adapter Protocol in src/dap/) the way
 * gdb's CLI and MI are two interpreters over one model of inferiors,
 * threads and stops.
 *
 * The core decides and records: which symbols gdb reads (none by itself,
 * 'auto-solib-add off'; the module being imported, libc and ld.so, the
 * libraries a breakpoint may live in, those on the stack at a stop),
 * breakpoints and where they bound, stops and the merged stack at each,
 * the selected frame, and how the program ends (a program tdebug started
 * never outlives it; a process it attached to is detached, never killed,
 * never left stopped).  It reports and returns data: typed stops
 * (tdb_stop_info, tdb_stop_reason), events through the front-end's
 * callbacks (tdb_frontend), stacks, threads, breakpoints and values as
 * structs or JSON.  Front-ends present them and choose the policies their
 * mode needs (tdb_session_options); the command language typed at a stop
 * and the text of stops and stacks are src/commands/, over these data
 * functions:
 *
 *     s = tdb_session_new(&opts, &frontend, &err);
 *     tdb_session_launch(s, argv, &err);           // or tdb_session_attach()
 *     for (;;) {
 *         rc = tdb_session_wait(s, -1, my_fd, &err);
 *         if (rc == TDB_WAIT_STOPPED) {            // tdb_session_stop(s)
 *             ... present it, read it (tdb_session_thread_stack(), ...),
 *             then tdb_session_resume(s, TDB_RESUME_NEXT, &err) ...
 *         } else if (rc == TDB_WAIT_EXITED) break;
 *         else if (rc == TDB_WAIT_FD) ... my_fd is readable (Ctrl-C, a client) ...
 *     }
 *     status = tdb_session_end(s, TDB_END_AUTO);   // kill or detach, as it must
 *
 * Contract: the core never prints, never reads the terminal and never
 * knows which front-end drives it (tests/tools/session_core.c runs it with
 * none linked); its functions return 0/-1 or NULL and fill a tdb_error.
 * Its files are listed in session/internal.h.
 * May include: base, gdb, process, native, cpython, torch, stacks
 */
#ifndef TDB_SESSION_H
#define TDB_SESSION_H

#include "base/common.h"
#include "stacks/view.h"

#include <jansson.h>

#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct tdb_session_options {
    char **stop_at_import; /* module names ("torch._C"), validated */
    size_t n_stop_at_import;
    char **stop_at_load;   /* modules to stop at when their library is mapped */
    size_t n_stop_at_load;
    char **breaks;         /* gdb locations */
    size_t n_breaks;
    char **catch_throw;    /* --catch-throw[=TYPE]: "" for every C++ throw, or a
                            * class name (that class and those derived from it) */
    size_t n_catch_throw;
    char **catch_raise;    /* --catch-raise[=TYPE]: "" for every Python
                            * exception raised, or a class name (that class
                            * and those derived from it) */
    size_t n_catch_raise;
    char **symbols;        /* basic regexes of more libraries to load */
    size_t n_symbols;
    char **my_code;        /* --my-code DIR: directories of the user's own
                            * code, besides the program's and the working
                            * directory (a step from Python stops there) */
    size_t n_my_code;
    int step_into;         /* TDB_STEP_INTO_*: where a step from Python stops */
    int all_symbols;       /* gdb's default: read every library's symbols */
    int verbose;           /* report gdb's own chatter (frontend gdb_output) */
    int raw;               /* show CPython's plumbing frames in stacks */
    int cpython_symbols;   /* let gdb read CPython's debug info (source
                            * lines in the interpreter, gdb's py-* commands;
                            * about a second more per start and first bt) */
    int max_frames;        /* frames shown per backtrace (0: 64) */
    int started_by_tdebug; /* attach: a program tdebug started ('run --preload'),
                            * whose end its caller reaps and reports */
    int light;             /* launch: when the stops allow, start the program
                            * itself and trace it with a gdb that reads no
                            * library (a light session: session/internal.h) */
    int gdb_view_at_stops; /* a policy of the front-end: it runs commands at
                            * each stop (a prompt, a file of commands), which
                            * need gdb's whole view, so a light session
                            * becomes an ordinary one at its first stop */
    int children_wait;     /* launch: seconds each Python child (exec'd or
                            * forked, and theirs) waits at its start for a
                            * debugger to attach and let it run (a child
                            * session); 0: children run at once.  Through
                            * python/tdebug-children/sitecustomize.py, first on the
                            * program's PYTHONPATH, and TDB_CHILDREN_WAIT_VAR */
    const int *program_stdio; /* the launched program's stdin, stdout and
                               * stderr (duplicated by tdb_session_new(); the
                               * caller keeps its own); NULL: tdebug's own */
} tdb_session_options;

/* ---- Options: the one validator of what a session is asked for ----
 * The command line (cmd/options.c) and the DAP (dap/lifecycle.c) check
 * their values here; the reason reads after the option's own name, as the
 * front-end spells it ("--symbols '(' is not a basic regex"). */
typedef enum tdb_option_list {
    TDB_OPTS_STOP_AT_IMPORT, /* a dotted module name */
    TDB_OPTS_STOP_AT_LOAD,   /* the same */
    TDB_OPTS_BREAK,          /* a location --break takes (tdb_break_refusal()) */
    TDB_OPTS_CATCH_THROW,    /* a C++ class name, or NULL for every throw */
    TDB_OPTS_CATCH_RAISE,    /* a Python class name, or NULL for every exception */
    TDB_OPTS_SYMBOLS,        /* a basic regex of library paths */
    TDB_OPTS_MY_CODE         /* a directory of the user's own code */
} tdb_option_list;

/* Where a step from a Python line into native code stops (session/stepinto.c).
 * The zero value is the default. */
typedef enum tdb_step_into {
    TDB_STEP_INTO_MINE = 0, /* the user's own code (--my-code, the program's
                             * and the working directory), else torch's
                             * operator entry, else the first native frame */
    TDB_STEP_INTO_OPERATOR, /* torch's operator entry (at::_ops::NAME::call),
                             * else the first native frame */
    TDB_STEP_INTO_BINDING   /* the first native frame: the binding's glue */
} tdb_step_into;

/* The words of tdb_step_into ("mine", "operator", "binding"), indexed by it. */
extern const char *const tdb_step_into_words[3];
/* WORD as a tdb_step_into, or -1 with ERR saying which words there are. */
int tdb_step_into_parse(const char *word, tdb_error *err);

/* Check VALUE (borrowed: it must outlive O) for LIST and append it to O.
 * 0, or -1 with ERR saying why VALUE is refused. */
int tdb_session_options_add(tdb_session_options *o, tdb_option_list list, char *value,
                            tdb_error *err);
/* Free the lists (not their strings); O's lists are empty afterwards. */
void tdb_session_options_release(tdb_session_options *o);

/* The variable of the program's environment that says how many seconds
 * its Python children wait for their debugger (opts.children_wait). */
#define TDB_CHILDREN_WAIT_VAR "TDEBUG_CHILDREN_WAIT"

typedef struct tdb_session tdb_session;

/* Why the program stopped. */
typedef enum tdb_stop_reason {
    TDB_STOP_IMPORT,            /* in a --stop-at-import module's PyInit */
    TDB_STOP_LOADED,            /* a --stop-at-load module was mapped */
    TDB_STOP_ATTACHED,          /* the process as it was when tdebug came */
    TDB_STOP_BREAKPOINT,        /* a native breakpoint */
    TDB_STOP_PYTHON_BREAKPOINT, /* a breakpoint in Python code (the hook's) */
    TDB_STOP_THROW,             /* a C++ throw a catchpoint wants */
    TDB_STOP_PYTHON_EXCEPTION,  /* a Python exception a catchpoint wants
                                 * (tdb_session_python_catch()) */
    TDB_STOP_SIGNAL,            /* the program got a signal */
    TDB_STOP_INTERRUPT,         /* the front-end interrupted it (Ctrl-C, pause) */
    TDB_STOP_STEP,              /* the end of a step, next, finish... */
    TDB_STOP_NEXT,
    TDB_STOP_FINISH,
    TDB_STOP_STEPI,
    TDB_STOP_NEXTI,
    TDB_STOP_UNTIL,
    TDB_STOP_WATCHPOINT,        /* a watched value changed or was read, or
                                 * its frame returned (bp_number: whose) */
    TDB_STOP_STOPPED,           /* gdb gave no reason and none was asked for */
    TDB_STOP_OTHER,             /* a reason of gdb's tdebug has no word for:
                                 * tdb_stop_info's gdb_reason */
    TDB_STOP_N_REASONS
} tdb_stop_reason;

/* The one table of the words of a stop reason: WORD is the terminal's
 * ("stopped (WORD)", "step: ...") and the JSON events' "reason" (the same
 * word, so a script reading --json sees what a terminal shows), DAP the
 * Debug Adapter Protocol's 'stopped' reason.  TDB_STOP_OTHER has none:
 * gdb's own word is both. */
typedef struct tdb_stop_words {
    const char *word;
    const char *dap;
} tdb_stop_words;
extern const tdb_stop_words tdb_stop_reasons[TDB_STOP_N_REASONS];

/* A stop as the session records it. */
typedef struct tdb_stop_info {
    tdb_stop_reason reason;
    const char *gdb_reason; /* TDB_STOP_OTHER: gdb's word ("watchpoint-trigger") */
    const char *module;  /* import/loaded: the module */
    const char *library; /* import/loaded: its file */
    const char *signal_name, *signal_meaning; /* signal */
    const char *fault_address; /* SIGSEGV/SIGBUS/...: the address, "0x10" */
    int bp_number;       /* breakpoint: tdebug's number and the location given */
    const char *bp_location;
    const char *condition_error; /* python breakpoint: why its condition (or
                                  * log message) could not be evaluated, so it
                                  * stopped ("the condition raised: NameError:
                                  * ..."), else NULL */
    int thread;          /* gdb's thread id, 0 if unknown */
    pid_t pid;           /* the process */
    int paused;          /* loaded: where the preloaded library paused it,
                          * before tdebug attached */
    const char *native_what; /* step: a Python step into native code, what
                              * that code implements ("torch.add"), or NULL */
    const json_t *frame; /* the top frame as gdb names it: its tuple
                          * {addr, func, args, file, fullname, line, from}
                          * (borrowed); NULL when the stop reads as a Python
                          * line (PYTHON_TOP) or gdb named none */
    int python_top;      /* the stop reads as a Python line (a Python
                          * breakpoint, a step into or back to Python): that
                          * frame's index in VIEW; else -1 */
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
                          * (native/cxxexc.h); python exception:
                          * {language: "python", event: "raised" |
                          * "uncaught" | "user-unhandled", type
                          * ("json.decoder.JSONDecodeError"), message
                          * (str()), traceback (as Python prints it)};
                          * NULL otherwise (borrowed) */
    json_t *args;        /* breakpoint: the arguments of the function it
                          * stopped in, {function, at_entry, ..., args:
                          * [{name, type, value}]} (torch/cxxargs.h; tensors
                          * decoded), when they can be named; else NULL
                          * (borrowed) */
    int compact;         /* a step: show the new location, not the stack */
    int partial;         /* a step between Python lines: VIEW holds the
                          * thread's Python frames only (frame 0 is the
                          * line, PYTHON_TOP 0), STACK those frames alone,
                          * FRAMES NULL;
                          * tdb_session_stop_full() reads the whole stack */
} tdb_stop_info;

/* The stop's word and its DAP reason (tdb_stop_reasons[], or gdb's own
 * word for TDB_STOP_OTHER).  Borrowed. */
const char *tdb_stop_word(const tdb_stop_info *st);
const char *tdb_stop_dap_reason(const tdb_stop_info *st);

/* What a front-end provides: the core reports through these and never
 * prints, reads the terminal or knows which front-end drives it.  Each may
 * be NULL (not told).
 *   EVENT: every event that is not a stop, {"event": NAME, "message": TEXT,
 *     ...} (borrowed): warnings, notes, the program killed by a signal,
 *     detaching.
 *   PROGRAM_STARTED: the program tdebug launched has a pid (a terminal
 *     front-end hands it the terminal).
 *   BREAKPOINT_CHANGED: a breakpoint bound (a library defining it loaded),
 *     moved or its locations changed: tdb_session_breakpoint()'s JSON
 *     (borrowed).
 *   GDB_OUTPUT: gdb's own words: its console output when opts.verbose, and
 *     any line it wrote that is not MI (always), TEXT[LEN] as gdb wrote it.
 * A stop is not a callback: tdb_session_wait() returns TDB_WAIT_STOPPED and
 * tdb_session_stop() is the stop, so the front-end, not the core, decides
 * what runs next. */
typedef struct tdb_frontend {
    void (*event)(void *data, const json_t *event);
    void (*program_started)(void *data, pid_t pid);
    void (*breakpoint_changed)(void *data, const json_t *bp);
    void (*gdb_output)(void *data, const char *text, size_t len);
    /* The program forked: process PID, its child, runs untraced (gdb
     * detached it); may be NULL. */
    void (*child_started)(void *data, pid_t pid);
    void *data;
} tdb_frontend;

/* A new event {"event": EVENT, "message": FMT..., ...FIELDS (stolen, may
 * be NULL)}: new reference. */
json_t *tdb_event_vnew(const char *event, json_t *fields, const char *fmt, va_list ap);

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
 * NULL) says what to give instead, to read after the option's name
 * ("'torch.add' is a Python name, not a place: ..."); 0 when it is a
 * location. */
int tdb_break_refusal(const char *location, tdb_buf *why);
/* A breakpoint spec "LOCATION if CONDITION" (as gdb's 'break' takes it;
 * the condition in the location's language): the location (new string)
 * and *CONDITION pointing into SPEC after "if", or NULL when there is
 * none. */
char *tdb_break_split(const char *spec, const char **condition);

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
/* The stop with its whole stack (gdb's frames merged with Python's), for
 * what shows or walks it: a partial stop (a step between Python lines,
 * whose text needs its Python line alone) has its stack read here, once.
 * NULL with ERR when there is no stop or the stack cannot be read.  The
 * data functions of the core (stacks, frames, values) complete the stop
 * themselves. */
const tdb_stop_info *tdb_session_stop_full(tdb_session *s, tdb_error *err);

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
/* 'run' at a stop: start the program tdebug started again, from the
 * beginning, its Python breakpoints armed again.  -1 with ERR set (an
 * attached process is refused). */
int tdb_session_rerun(tdb_session *s, tdb_error *err);
/* The same COUNT times ('next 3'): the stops on the way are not reported;
 * a stop of another kind (a breakpoint, a signal, the end) ends it. */
int tdb_session_resume_n(tdb_session *s, tdb_resume how, int count, tdb_error *err);
/* Stop the running program; the stop comes out of tdb_session_wait() as
 * an "interrupt". */
int tdb_session_interrupt(tdb_session *s, tdb_error *err);

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
/* The processes the program forked so far, as gdb told of them (each let
 * go: frontend child_started), in order: *OUT (borrowed, valid until the
 * next wait) and their number. */
size_t tdb_session_children(const tdb_session *s, const pid_t **out);
int tdb_session_attached(const tdb_session *s);
int tdb_session_running(const tdb_session *s);
/* 1 while the program runs a step (tdb_session_resume() with anything but
 * TDB_RESUME_CONTINUE): interrupting it would end the step where it is. */
int tdb_session_stepping(const tdb_session *s);
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
/* Was anything asked to stop at (--stop-at-*, --break)? */
int tdb_session_has_stops(const tdb_session *s);

/* 1 while gdb runs: a call that failed with gdb gone ended the session. */
int tdb_session_gdb_alive(const tdb_session *s);
/* Make a light session an ordinary one (no-op otherwise): what needs
 * gdb's whole view (commands typed at a stop) calls it first. */
int tdb_session_upgrade(tdb_session *s, tdb_error *err);

/* The calls the Python line of frame INDEX of THREAD (0: the stop's) is
 * still to make, in the order they run, read by the hook in the process
 * (only at a Python breakpoint or step, for the line it stopped at): new
 * reference [{"name": what the call loads ("add" for torch.add), "label":
 * the source of what it calls ("torch.add"; the name alone before 3.11),
 * "column", "end_column": the call's columns, from 1 (3.11+)}], or NULL
 * with ERR saying why. */
json_t *tdb_session_step_targets(tdb_session *s, int thread, int index, tdb_error *err);
/* Step from the Python stop into the call named NAME of its line (as
 * tdb_session_step_targets() names it), letting SKIP earlier calls of that
 * name go: the step stops at the first line of that Python function, or
 * goes into that native call as any step does (torch's operator); the
 * line's other calls run.  When the line makes no such call the step stops
 * at the next line and says so.  0, or -1 with ERR (not a Python stop). */
int tdb_session_step_target(tdb_session *s, const char *name, int skip, tdb_error *err);

/* Where the next steps from Python stop ('set step-into'): MODE. */
void tdb_session_set_step_into(tdb_session *s, tdb_step_into mode);
tdb_step_into tdb_session_step_into(const tdb_session *s);

/* ==== The session as data ====
 *
 * What a stop holds, for the front-ends and for the command language
 * (src/commands/), which show it in their own forms: frames and the
 * selected one, threads, breakpoints, values, symbols, gdb's own console.
 * Queries of a stop fail with ERR "the program is running" (or "is not
 * being run") when there is none. */

/* 0 at a stop; else -1 with ERR (EAGAIN) saying why there is none: "the
 * program is running", "... is not being run", "... has not started". */
int tdb_session_need_stop(const tdb_session *s, tdb_error *err);
/* The flags (stacks/merge.h) the session shows stacks with (--raw). */
unsigned tdb_session_stack_flags(const tdb_session *s);
/* The index of the selected frame in the stop's view (0 at each stop; a
 * Python stop selects its Python line). */
int tdb_session_selected(const tdb_session *s);
/* Whether the core reads the interpreter's memory for Python frames: 1 it
 * does, 0 not tried yet, -1 it cannot (said once as a warning). */
int tdb_session_reads_python(const tdb_session *s);
/* The si_code of the signal the stop's thread got (0x80, SI_KERNEL: a
 * terminal's Ctrl-C rather than a kill()).  0, or -1 with ERR set. */
int tdb_session_siginfo_code(tdb_session *s, int *out, tdb_error *err);

/* ---- frames and threads ---- */

/* The threads at this stop (new reference): [{"id": gdb's number,
 * "lwp": N, "name": its name or null, "current": bool}]. */
json_t *tdb_session_threads(tdb_session *s, tdb_error *err);
/* The same, each with the function it is in, named as tdebug names frames
 * (the stop's thread by the top of its stack): [{"id", "lwp", "target_id"
 * (gdb's "Thread 0x... (LWP N)"), "name" or null, "function" or null,
 * "current"}] (new reference). */
json_t *tdb_session_thread_list(tdb_session *s, tdb_error *err);
/* The thread the stop is in (gdb's number). */
int tdb_session_stop_thread(tdb_session *s);
/* THREAD's stack (0: the stop's thread) as the user sees it, innermost
 * first (new reference): the merged frames of tdb_stackview_json(), each
 * with "index" (its number for tdb_session_select(), stable until the
 * program runs): python {index, kind, function, file, line}; native
 * {index, kind, level, address, function, library, file, line}. */
json_t *tdb_session_thread_stack(tdb_session *s, int thread, tdb_error *err);
/* The same when the caller wants the top frame first (a DAP client's
 * first stackTrace): at a partial stop (tdb_stop_info.partial) of THREAD,
 * the Python line alone, gdb not asked, and *WHOLE 0; else the whole
 * stack and *WHOLE 1. */
json_t *tdb_session_thread_stack_top(tdb_session *s, int thread, int *whole, tdb_error *err);

/* The machine at a stop (session/native.c).  Instructions as a new array
 * of COUNT entries, from OFFSET instructions away from ADDR (negative:
 * before it), each {"address", "instruction", "bytes", "function",
 * "offset", "file", "line"} (what gdb knows of it) or null where nothing
 * could be decoded; NULL with ERR when ADDR cannot be read. */
json_t *tdb_session_disassemble(tdb_session *s, uint64_t addr, long offset, long count,
                                tdb_error *err);
/* The instructions of the function holding ADDR (or those around it when
 * gdb knows no bounds), entries as above: a new array, or NULL with ERR. */
json_t *tdb_session_disassemble_function(tdb_session *s, uint64_t addr, tdb_error *err);
/* Append to OUT the LEN bytes at ADDR up to the first unreadable one;
 * 0, or -1 with ERR. */
int tdb_session_read_memory(tdb_session *s, uint64_t addr, size_t len, tdb_buf *out,
                            tdb_error *err);
/* Write LEN bytes of DATA at ADDR: 0, or -1 with ERR (gdb's reason). */
int tdb_session_write_memory(tdb_session *s, uint64_t addr, const void *data, size_t len,
                             tdb_error *err);
/* A watchpoint (gdb's, hardware where it can) on the C/C++ lvalue EXPR
 * as frame INDEX of THREAD sees it (a local's ends when that frame
 * returns): ACCESS "write", "read" or "readWrite".  The breakpoint as
 * tdb_session_breakpoint() gives it (new reference; "refused" with gdb's
 * reason when gdb cannot watch it, a Python frame's included), or NULL
 * with ERR when gdb died. */
json_t *tdb_session_watchpoint_add(tdb_session *s, int thread, int index, const char *expr,
                                   const char *access, tdb_error *err);
/* The libraries mapped so far, in load order, as a new array of {"path",
 * "symbols": gdb read them, "text_start", "text_end" (when known)}; with
 * DEBUG_FILES each also says where its DWARF is ("dwarf_in": "object",
 * "debug file" or null, "debug_file": its path, "stripped"), which reads
 * each file (libbfd: milliseconds a library). */
json_t *tdb_session_libraries(tdb_session *s, int debug_files);
/* The source files of the program at this stop (new reference):
 * {"python": [{"name": module, "file": its .py}] (sys.modules, read from
 * memory; a file once), "native": [{"file"}] (the files of the debug info gdb read that
 * are on this machine)}, or NULL with ERR. */
json_t *tdb_session_loaded_sources(tdb_session *s, tdb_error *err);
/* Make THREAD the stop's thread ('thread N'): its stack becomes the
 * stop's view, its frame 0 selected.  -1 with ERR set when gdb refuses
 * (no such thread) or failed. */
int tdb_session_select_thread(tdb_session *s, int thread, tdb_error *err);
/* Make frame INDEX of THREAD (0: the stop's) the selected one, as
 * 'thread' and 'frame' do: gdb's commands, finish and values then use it.
 * -1 with ERR set (ERANGE: no such frame). */
int tdb_session_select(tdb_session *s, int thread, int index, tdb_error *err);

/* One thread's stack, for tdb_session_each_thread(). */
typedef struct tdb_thread_stack {
    int id;                    /* gdb's number */
    const char *target_id;     /* gdb's "Thread 0x... (LWP N)" */
    const char *name;          /* or NULL */
    const tdb_stackview *view; /* its merged stack */
    const json_t *python;      /* its Python frames (from memory, or gdb's
                                * py-bt for an interpreter tdebug cannot
                                * read), or NULL */
    const char *gil;           /* "held", "waiting", or NULL */
} tdb_thread_stack;
/* Call FN with every thread's stack, in gdb's order (the views live during
 * the call).  0, or -1 with ERR set. */
int tdb_session_each_thread(tdb_session *s, void (*fn)(void *data, const tdb_thread_stack *t),
                            void *data, tdb_error *err);

/* ---- breakpoints ---- */

/* Whether the core can stop in Python code: breakpoints on FILE.py:LINE
 * and on Python functions (tdb_session_breakpoint_add()).  0 when the
 * Python hook cannot work in this process; WHY (may be NULL) then says
 * why (borrowed). */
int tdb_session_python_breakpoints(const tdb_session *s, const char **why);
/* Is LOCATION a place in Python ("train.py:12", "pkg/mod.py:3", a dotted
 * name such as "torch.nn.functional.relu") rather than a native one
 * ("at::native::add", "csrc/x.c:3", "main", "*0x401000")? */
int tdb_session_location_is_python(const char *location);

/* A breakpoint as data (new reference), or NULL when there is no
 * breakpoint ID:
 *   {"id": N, "kind": "native"|"catch"|"python", "location": as given,
 *    "pending": bool, "verified": bool (bound somewhere), "enabled": bool,
 *    "temporary": bool, "hits": N (stops shown), "where": "f at x.c:3;
 *    ..." or null, "file": full path or null, "line": N or null (its
 *    first location with a line: gdb is asked), "message": why it is not
 *    verified, or null}
 * and for kind "python" "function" (or null) and, when a line without
 * code moved it, "moved_from" (the line given); for kind "catch" "type"
 * (the class, "" for every throw). */
json_t *tdb_session_breakpoint(tdb_session *s, int id);
/* Every breakpoint the user has, in the order they were made, as
 * tdb_session_breakpoint() without asking gdb for "file" and "line" (new
 * reference). */
json_t *tdb_session_breakpoints(tdb_session *s);
/* Add a breakpoint at LOCATION (as 'break' takes it), at a stop or before
 * the program starts.  Returns its JSON (new reference), or one that says
 * it was refused: {"id": 0, "location", "verified": false, "pending":
 * false, "message": why, "refused": "location" (tdebug's reason),
 * "python location" (not LINE or FUNCTION after FILE.py:), "no code" (no
 * line at or after LINE holds code) or "gdb" (gdb's reason)}.  NULL with
 * ERR set when gdb failed. */
json_t *tdb_session_breakpoint_add(tdb_session *s, const char *location, int temporary,
                                   tdb_error *err);
/* A catchpoint on C++ throws of class TYPE or a class derived from it
 * (NULL or "": every throw), as 'catch throw' makes it.  Returns as
 * tdb_session_breakpoint_add() (refused: "location", a TYPE that is not a
 * class name; "gdb"). */
json_t *tdb_session_catchpoint_add(tdb_session *s, const char *type, tdb_error *err);

/* A catchpoint on Python exceptions (session/pyexc.c) of class TYPE or a
 * class derived from it (NULL or "": every class; a name as __qualname__,
 * __name__ or "module.qualname" say it), at the event WHEN:
 *   TDB_CATCH_PY_RAISED   where it is raised (not StopIteration,
 *                         StopAsyncIteration, GeneratorExit nor inside
 *                         <frozen ...> unless TYPE names them);
 *   TDB_CATCH_PY_UNCAUGHT in the outermost Python frame of its thread,
 *                         which does not handle it: once, before the end;
 *   TDB_CATCH_PY_USER     in a frame of the user's code (as a step's rule,
 *                         session/stepinto.c) that does not handle it,
 *                         about to return into a Python caller outside the
 *                         user's code that does not handle it either.
 * A Python breakpoint ("kind": "python", "location": "python-raise TYPE",
 * "python-uncaught", "python-user-unhandled"): enable, disable, delete,
 * condition and ignore work on it.  As tdb_session_catchpoint_add()
 * returns. */
enum { TDB_CATCH_PY_RAISED = 1, TDB_CATCH_PY_UNCAUGHT = 2, TDB_CATCH_PY_USER = 4 };
json_t *tdb_session_python_catch(tdb_session *s, int when, const char *type, tdb_error *err);
/* Is TYPE something tdb_session_python_catch() cannot take?  1 and WHY
 * (may be NULL) says why. */
int tdb_python_exc_type_refusal(const char *type, tdb_buf *why);
/* Can LOCATION stop here at all: one line, and for a place in Python, a
 * process where the hook works?  0, or -1 with ERR saying why not. */
int tdb_session_breakpoint_check(tdb_session *s, const char *location, tdb_error *err);
/* Delete breakpoint ID: 0, or -1 when there is no such breakpoint. */
int tdb_session_breakpoint_delete(tdb_session *s, int id);
/* Enable (ON 1) or disable breakpoint ID: 0, or -1 when there is none. */
int tdb_session_breakpoint_enable(tdb_session *s, int id, int on);
/* gdb's number of tdebug's breakpoint ID, for a gdb command that takes one
 * ('condition', 'ignore'): > 0; 0 when ID is tdebug's but not gdb's (a
 * Python breakpoint, or one not bound yet); -1 when there is no ID. */
int tdb_session_breakpoint_gdb_number(tdb_session *s, int id);
/* What decides whether a hit of breakpoint ID stops; each 0, or -1 with
 * ERR set (no such breakpoint, a catchpoint, gdb refused the condition).
 * A Python breakpoint's are evaluated by the hook in the process
 * (lib/tdebug_pyhook.h); a native one's condition and ignore count by gdb,
 * its hit condition and log message by the core.  In the JSON of a
 * breakpoint: "condition", "hit_condition", "ignore", "log_message".
 *   condition: an expression in the breakpoint's language (Python's in
 *     a Python frame, C/C++ as gdb evaluates it); NULL or "": none.
 *   hit condition: "N" (the Nth hit whose condition held), ">=N", ">N",
 *     "<=N", "<N", "%N" (every Nth); NULL or "": none.
 *   ignore: let the next COUNT hits go.
 *   log: not a stop but a "log" event {"event": "log", "message": TEXT,
 *     "breakpoint": ID}, TEXT the message with its {expression} parts
 *     evaluated ({{ and }} are braces); NULL or "": it stops again. */
int tdb_session_breakpoint_set_condition(tdb_session *s, int id, const char *condition,
                                         tdb_error *err);
int tdb_session_breakpoint_set_hit_condition(tdb_session *s, int id, const char *hit,
                                             tdb_error *err);
int tdb_session_breakpoint_set_ignore(tdb_session *s, int id, int count, tdb_error *err);
int tdb_session_breakpoint_set_log(tdb_session *s, int id, const char *message, tdb_error *err);
/* Parse hit condition TEXT into *OP (0: none, else TDB_PYHOOK_HIT_*) and
 * *VALUE: 0, or -1 with ERR saying what it takes. */
int tdb_session_parse_hit_condition(const char *text, int *op, int *value, tdb_error *err);

/* ---- values ---- */

/* Run Python TEXT in the Python frame INDEX of THREAD (0: the stop's), in
 * the process: an expression (its repr) or, with STATEMENTS, statements
 * (an assignment to a local changes the frame).  Only at a Python
 * breakpoint or step, on its thread (which holds the GIL where CPython may
 * be re-entered); elsewhere ERR says why tdebug reads memory only.  New
 * reference {"value": repr, "type": type name}, or NULL with ERR set (the
 * exception it raised: "NameError: name 'x' is not defined"). */
json_t *tdb_session_py_eval(tdb_session *s, int thread, int index, const char *text,
                            int statements, tdb_error *err);

/* The arguments of native frame INDEX of THREAD (0: the stop's thread):
 * gdb's with debug info, else from the function's demangled signature and
 * the registers at its entry, tensors decoded (torch/cxxargs.h): new
 * reference {"function", "debug_info" or "at_entry", ..., "args":
 * [{"name", "type", "value"}], "tensors_note"?}, or NULL with ERR saying
 * why they cannot be named. */
json_t *tdb_session_frame_args(tdb_session *s, int thread, int index, tdb_error *err);
/* A tensor at what EXPR evaluates to in the selected frame (an at::Tensor,
 * a TensorImpl*, a Python tensor's address): new reference {"name": EXPR,
 * "type": the struct read, "address": N, "layout": "dwarf"|"calibration"|
 * "cache", "value": the tensor (torch/tensor.h)}, or NULL with ERR saying
 * why. */
json_t *tdb_session_tensor(tdb_session *s, const char *expr, tdb_error *err);
/* The variables of Python frame INDEX of THREAD, read from memory: new
 * reference {"frame": {index, function, file, line}, "locals": [{"name",
 * "kind", "value", "type", "tensor"?, "error"?...}] (cpython/values.h; a
 * tensor's "value" is its summary)}, or NULL with ERR. */
json_t *tdb_session_py_locals(tdb_session *s, int thread, int index, tdb_error *err);
/* Python variable NAME as frame INDEX of THREAD sees it (its locals, its
 * module's globals, builtins): new reference {"name", "scope", "value",
 * "type", "tensor"?, ..., "frame": {...}}, or NULL with ERR (ENOENT: not
 * defined there). */
json_t *tdb_session_py_value(tdb_session *s, int thread, int index, const char *name,
                             tdb_error *err);

/* ---- symbols and gdb itself ---- */

/* Read the symbols of the libraries matching the basic regex RE. */
int tdb_session_read_symbols(tdb_session *s, const char *re, tdb_error *err);
/* Symbols gdb knows that start with PREFIX (its completer), for a prompt:
 * a new NULL-terminated list (tdb_strv_free); none while the program runs. */
char **tdb_session_complete_symbols(tdb_session *s, const char *prefix);
/* Run CMD as a gdb console command ('info registers', 'x/4i $pc', 'list
 * f.c:3'...).  0 with *OUT (a new string) what it printed and *RESUMED 1
 * when it let the program run; 1 when gdb refused it: *OUT what it printed
 * before, ERR gdb's reason; -1 with ERR set when gdb failed. */
int tdb_session_gdb_console(tdb_session *s, const char *cmd, char **out, int *resumed,
                            tdb_error *err);

/* Set NAME=VALUE (VALUE NULL: unset NAME) in the environment of the program
 * tdb_session_launch() will start; tdebug's and gdb's own environments are
 * left alone.  Before launching.  -1 with ERR set when gdb cannot carry it
 * (NAME empty or with '=', a newline in either, blanks around VALUE). */
int tdb_session_program_setenv(tdb_session *s, const char *name, const char *value,
                               tdb_error *err);

/* ---- values by handle, for a front-end that expands them (the DAP) ---- */

/* Values at a stop, named by handles (small positive numbers) a front-end
 * shows and expands (session/handles.c).  Handles are valid until
 * tdb_values_reset(), which a front-end calls when the program runs
 * again. */
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
/* When handle H is a native frame's Arguments or Locals: 0 with that
 * frame's THREAD and INDEX; else -1. */
int tdb_values_native_scope(tdb_values *v, int h, int *thread, int *index);
/* EXPR evaluated in frame INDEX of THREAD: a gdb expression in a native
 * frame; in a Python frame a name read from memory, else a Python
 * expression run in the frame where tdb_session_py_eval() may run.  {"value", "type", "handle"}
 * (new reference), or NULL with ERR set to why (gdb's or Python's words). */
json_t *tdb_values_evaluate(tdb_values *v, int thread, int index, const char *expr,
                            tdb_error *err);
/* TARGET = VALUE in frame INDEX of THREAD: Python's assignment in a
 * Python frame (run by the hook: only where tdb_session_py_eval() runs),
 * gdb's in a native one.  The new value {"value", "type"} (new
 * reference), or NULL with ERR saying why. */
json_t *tdb_values_assign(tdb_values *v, int thread, int index, const char *target,
                          const char *value, tdb_error *err);
/* Completions of the last word of TEXT (a Debug Console line) in frame
 * INDEX of THREAD: in a Python frame the frame's names (or after a dot
 * the attributes of what precedes it), run by the hook where it may run,
 * else the frame's variables read from memory; in a native frame gdb's
 * completion of an expression.  A JSON array of words (new reference) to
 * put at byte *OUT_START of TEXT, or NULL with ERR set. */
json_t *tdb_values_complete(tdb_values *v, int thread, int index, const char *text,
                            size_t *out_start, tdb_error *err);
/* Variable NAME of scope handle H (from tdb_values_scopes()) = VALUE: as
 * tdb_values_assign(). */
json_t *tdb_values_set(tdb_values *v, int h, const char *name, const char *value,
                       tdb_error *err);

#endif
