/*
 * session/internal.h: the session core's state, shared by its files and by
 * no one else:
 *   session/session.c      a session's life: new, free, events, gdb's
 *                          console, the end, the queries
 *   session/options.c      the one validator of what a session is asked for
 *   session/launch.c       starting the program under gdb
 *   session/attach.c       attaching, a paused process included
 *   session/light.c        a light session: a gdb that reads no library
 *   session/lightpy.c      ...its Python breakpoints: the hook by address
 *   session/stops.c        gdb's records; a *stopped record as a stop
 *   session/resume.c       continue, the steps, interrupting
 *   session/breakpoints.c  breakpoints, catchpoints, and as data
 *   session/symbols.c      which symbols gdb reads; the libraries
 *   session/python.c       Python breakpoints and steps (the hook library)
 *   session/pytable.c      the hook's control block and breakpoint table,
 *                          through gdb's memory commands
 *   session/stack.c        the stack at a stop: readers, merged views,
 *                          selecting a frame
 *   session/threads.c      the threads (gdb's -thread-info, read once)
 *   session/values.c       what a stop shows of values: C++ exceptions,
 *                          arguments, tensors, Python variables
 *   session/handles.c      values by handle, for a front-end that expands
 *                          them
 *   session/native.c       instructions and memory at a stop
 */
#ifndef TDB_SESSION_INT_H
#define TDB_SESSION_INT_H

#include "session/session.h"

#include "gdb/mi_session.h"
#include "process/procfs.h"
#include "stacks/view.h"

#include <regex.h>
#include <stdlib.h>

#define CMD_TIMEOUT_MS 60000       /* ordinary MI commands */

/* session/native.c: 1 when this machine's hardware watchpoints trigger
 * (probed once with a perf event on a variable), 0 when they are set and
 * never fire (a virtual machine without working debug registers). */
int tdb_hw_watchpoints_fire(void);
#define SYMBOLS_TIMEOUT_MS 300000  /* reading symbols of big libraries */
#define DEFAULT_MAX_FRAMES 64
#define STACK_LOAD_ROUNDS 8

enum tdb_state { NOT_STARTED, RUNNING, STOPPED, EXITED };

typedef struct lib_info {
    char *path;
    int symbols;          /* symbols read by gdb */
    unsigned long lo, hi; /* .text range, from =library-loaded */
    int mine_scanned;     /* its DWARF was searched for the user's functions */
    uint64_t *mine;       /* ...their entries (link-time; session/stepinto.c) */
    size_t n_mine;
    int deps_read;        /* its DT_NEEDED were looked at (session/symbols.c) */
    char **deps;          /* ...those mapped that carry DWARF: their paths (NULL-terminated) */
} lib_info;

typedef enum bp_kind {
    BP_NATIVE,  /* a gdb breakpoint the user asked for */
    BP_IMPORT,  /* internal: a --stop-at-import module's PyInit */
    BP_CATCH,   /* catch throw [TYPE]: where C++ throws */
    BP_PYTHON,  /* FILE.py:LINE or FILE.py:FUNCTION, in the process's hook */
    BP_WATCH    /* watch/rwatch/awatch EXPR: gdb's watchpoint */
} bp_kind;

/* One place a breakpoint bound (an overload, an inlined copy). */
typedef struct bp_loc {
    unsigned long addr;
    char *what;      /* "at::native::add(...) in libtorch_cpu.so.1.13", "f at x.c:3" */
    int hits;        /* stops at it */
} bp_loc;

typedef struct bp_info {
    int id;          /* tdebug's number, shown to the user; 0: internal */
    int number;      /* gdb's number */
    bp_kind kind;
    char *location;  /* as given (--break), or "PyInit_x" */
    char *module;    /* import stops: the module */
    int pending;
    int hits;
    int enabled;
    int temporary;
    char *where;     /* where it bound, as gdb says ("at::native::add in
                      * libtorch_cpu.so", "x.c:3"), for 'never hit' */
    bp_loc *locs;    /* the places it bound (PLT stubs left out) */
    size_t n_locs;
    /* BP_PYTHON: what the hook matches (lib/tdebug_pyhook.h) */
    char *py_file;   /* absolute path, or a tail ("pkg/mod.py") */
    int py_line;     /* > 0: a line breakpoint */
    int py_moved_from; /* the line given, when it held no code; else 0 */
    char *py_function; /* else: a function name; py_exc: the class, or NULL */
    int py_exc;      /* a Python exception catchpoint (session/pyexc.c):
                      * the TDB_CATCH_PY_* event it stops at; else 0 */
    int slot;        /* its slot in the hook's table, -1 before it has one */
    int passed;      /* BP_CATCH with a TYPE: throws of other classes let go
                      * (gdb counts them among its hits) */
    int silent;      /* BP_CATCH, internal (id 0): a throw is recorded
                      * (s->last_c10_throw), never a stop */
    int by_address;  /* placed by tdebug at an address it found itself (a
                      * light session's): gdb knows no name for it, so its
                      * description (locs, where) is tdebug's own */
    /* What decides whether a hit stops (session/breakpoints.c): for a
     * Python breakpoint the hook decides (lib/tdebug_pyhook.h); for a
     * native one gdb evaluates the condition and counts the ignores, the
     * core the rest. */
    char *condition;   /* NULL: none */
    char *hit_condition; /* as given ("5", ">=5", "%5"), NULL: none */
    int hit_op, hit_value; /* TDB_PYHOOK_HIT_* and its N */
    int ignore;        /* hits to let go first */
    int ignore_new;    /* Python: 'ignore' given since the slot was last
                        * written (the hook counts it down in the slot) */
    char *log_message; /* a log point: {expression} parts; NULL: stops */
    int cond_hits;     /* native: hits whose condition held (gdb's) */
} bp_info;

/* Python breakpoints and stepping: the library tdebug loads into the
 * process (session/python.c). */
typedef struct pyhook_state {
    int state;           /* PYHOOK_* */
    int safe_bps[2];     /* gdb's numbers of the safe-point breakpoints */
    int stop_bp;         /* gdb's number of the breakpoint on tdebug_pyhook_stop */
    int native_bp;       /* a step into native code: its temporary breakpoint */
    int native_thread;
    uint64_t control;    /* &tdebug_pyhook_control in the process */
    uint64_t generation;
    int n_slots;         /* slots of the table in use */
    uint64_t table;      /* the library's breakpoint table in the process */
    int capacity;        /* and its slots */
    int *free_slots;     /* slots below n_slots that no breakpoint holds */
    size_t n_free, cap_free;
    char *lines_file;    /* the file whose lines were last read for a breakpoint */
    unsigned char *lines_code; /* its lines: 1 holds code */
    int lines_n;
    off_t lines_size;    /* and its size and time when read */
    struct timespec lines_mtime;
    int stop_is_hook;    /* the current stop is in tdebug_pyhook_stop */
    int step_pending;    /* a Python step the hook runs */
    char *lib;           /* the library's path in the process */
    int loaded;          /* dlopen'ed (install may still be refused) */
    int native_prologue; /* a step into native code goes past its prologue */
    char native_what[128]; /* what the native function implements */
    int retries;         /* installs refused: not a safe point yet */
    char *failed;        /* why Python breakpoints cannot work here */
    unsigned char report[8192]; /* the last tdb_pyhook_report read */
    int log_fd;          /* the log points' FIFO, read end; -1: none */
    char *log_path;      /* its path (in its own temporary folder) */
    tdb_buf log_tail;    /* a record not read whole yet */
} pyhook_state;

enum { PYHOOK_NONE, PYHOOK_ARMING, PYHOOK_READY, PYHOOK_FAILED };

/* The operator entries a binding calls (session/stepinto.c). */
typedef struct op_cache {
    uint64_t entry;      /* the binding's entry */
    uint64_t *ops;       /* the at::_ops::NAME::call it calls */
    size_t n;
    struct op_cache *next;
} op_cache;

/* Where a step from Python stops, and the steps under way
 * (session/stepinto.c). */
typedef struct step_state {
    tdb_step_into mode;
    char **dirs;         /* the user's directories, real paths */
    size_t n_dirs;
    int dirs_known;      /* dirs filled */
    int landing;         /* a step goes on from the glue to its landing */
    int thread;          /* the stepping thread (gdb's number) */
    int *bps;            /* gdb's numbers of the user's functions' breakpoints */
    size_t n_bps;
    int return_bp;       /* at the glue entry's return address */
    int *ops;            /* of those, the ones at operator entries */
    size_t n_ops_bps;
    uint64_t entry_pc;   /* where the step entered native code */
    uint64_t *op_addrs;  /* operator entries found (while reading a binding) */
    size_t n_op_addrs;
    int ops_read;        /* libtorch_cpu's operator entries were read */
    char **op_names;     /* their mangled names... */
    uint64_t *op_values; /* ...and runtime addresses */
    size_t n_ops;
    op_cache *cache;     /* by binding */
    int args_at_stop;    /* the stop is at an operator entry: read its arguments */
    int landed;          /* the last step landed past the glue */
    int deep;            /* a Python step from the user's code, through the
                          * Python of others */
    int deep_lines;      /* lines of the Python of others it went through */
    int native_from_mine; /* the native call the hook reported is made from
                           * the user's Python code */
    /* a step into one call of the line (session/steptargets.c) */
    char *want_target;   /* asked for the next resume, which takes it */
    int want_skip;
    char *target;        /* the step under way stops only in a call of this name */
    int target_skip;     /* calls of that name to let go first */
    uint64_t target_frame; /* the Python frame it started in, and its line */
    int target_line;
    int finish_rest;     /* a finish through the glue: 1 + the level of the
                          * outermost glue frame, to finish once the
                          * selected frame has returned (0: none) */
    char *finish_value;  /* what the selected frame returned ("$1 = ...") */
} step_state;

typedef struct module_watch {
    const char *name; /* "torch._C" */
    char *regex;      /* its file, as a basic regex */
    regex_t re;
    char *library;    /* the file it was loaded from */
    int at_import;    /* --stop-at-import: stop in its PyInit */
    int at_load;      /* --stop-at-load: stop when its library is mapped */
    int seen;         /* its library was loaded */
    int stopped;      /* the stop(s) asked for happened */
} module_watch;

/* A light session (session/light.c): 'tdebug run' starts the program
 * itself, with the preloaded library, while gdb starts; gdb attaches
 * reading no library file (its sysroot hidden), so it never stops at the
 * loader's events; the library traps when a watched library maps, and
 * tdebug places the stops by address and unwinds stacks itself.  Anything
 * that needs gdb's own knowledge of the libraries (a prompt, commands, a
 * frame in a library with debug info, an overloaded breakpoint) makes it
 * an ordinary session first (tdb_session_light_upgrade()). */
typedef struct light_state {
    int wanted;          /* tdb_session_new() left gdb starting for it */
    int on;              /* gdb reads no library file now */
    pid_t child;         /* the program, tdebug's own child (reaped at the end) */
    pid_t unreaped;      /* killed, but gdb still held it: reaped once gdb is gone */
    char *sysroot;       /* gdb's own sysroot, which the upgrade gives back */
    char *exe;           /* the interpreter, whose symbols the upgrade reads */
    char **argv;         /* the program's command line, which 'run' starts again */
    char *script_dir;    /* the script's directory (interest) */
    char *audit;         /* the preloaded library, its real path */
    uint64_t state_addr, release_addr; /* its variables in the process, 0: not yet */
    int scanned;         /* the libraries mapped at the attach were searched */
    int startup_pending; /* native breakpoints wait for the startup trap */
    int disarmed;        /* its traps are off */
    int synth;           /* the stack being recorded was unwound by tdebug */
    uint64_t r_debug;    /* the loader's _r_debug in the process, 0: not found yet */
    char **ln_real;      /* the files the loader's list names, their real paths... */
    char **ln_name;      /* ...and its names for them (l_name: what gdb shows) */
    size_t n_ln;
    char **fn_name;      /* what the Python hook's calls name (dlopen, the hook's own)... */
    uint64_t *fn_addr;   /* ...at these addresses in the process (gdb knows no name) */
    size_t n_fn;
    uint64_t scratch;    /* a page mapped in the process for those calls' strings, 0: none */
    json_t *env;         /* the program's variables the front-end set (null: unset), for its start */
    int env_changed;     /* ...and one a light launch cannot take (the preloaded library's) */
    tdb_mem mem;
} light_state;

struct tdb_session {
    tdb_session_options opts;
    tdb_frontend fe;
    tdb_gdb *gdb;
    enum tdb_state state;
    int attached;
    pid_t pid;
    pid_t *children;     /* the program's forks gdb told of, in order */
    size_t n_children;
    int exit_status;
    int have_exit;
    int signalled;       /* the program was killed by a signal */
    int ended;           /* tdb_session_end() ran */
    char *interest;      /* basic regex of libraries whose symbols we load */
    regex_t interest_re;
    int have_interest;
    regex_t libpython_re;  /* LIBPYTHON_RE, once libpython_watched */
    int libpython_watched; /* the load catchpoint watches a shared libpython
                            * for breakpoints pending on functions */
    lib_info *libs;
    size_t n_libs, cap_libs;
    bp_info *bps;
    size_t n_bps, cap_bps;
    int next_bp_id;
    int stdcxx_interest; /* libstdc++'s symbols are read when it loads */
    json_t *last_c10_throw; /* the last c10::Error thrown, as the silent
                             * catchpoint of session/pyexc.c saw it:
                             * {type, message, frames}; NULL when none */
    int catch_load_bp;   /* gdb's number of the load catchpoint, 0 none */
    pyhook_state hook;
    step_state step;
    int python_top;      /* the stop's top frame a user sees is Python: the
                          * index of it among the visible frames, else -1 */
    module_watch *mods;
    size_t n_mods;
    int base_symbols;    /* libc and ld.so symbols loaded */
    int py_bt;           /* -1 unknown, 0 unavailable, 1 works */
    int interrupt_sent;  /* we sent -exec-interrupt */
    int stale_sigint;    /* another stop came before our interrupt did: its
                          * SIGINT is still on its way */
    char last_mi[64];    /* the MI command that let the program run last */
    int last_resume;     /* the tdb_resume of the last resume, -1 none */
    int repeat;          /* resumes of repeat_how still to make ('next N') */
    int repeat_how;
    int saved_fds[3];
    int cancel_fd;       /* the front-end's: readable cancels waits */
    char state_before;   /* attach: the process's state letter before (T: stopped) */
    /* a paused process (tdb_session_attach() with an announcement) */
    json_t *paused;           /* its announcement; NULL when not paused */
    int paused_released;      /* the release was written, or it ran */
    module_watch *paused_load; /* --stop-at-load of the module it waits at */
    /* The current stop: what tdb_session_stop() returns, and what it owns. */
    int have_stop;
    tdb_stop_info stop;
    json_t *stop_frame;  /* the stop's frame tuple (stop.frame), owned */
    char **stop_strs;    /* the strings the stop points to */
    size_t n_stop_strs;
    tdb_stackview stop_view;
    int have_stop_view;
    int selected;        /* index of the selected frame in the merged stack */
    /* Stacks: the interpreter reader (opened once) and the symbol cache live
     * as long as the session; the memory map, symbolizer and Python
     * snapshot belong to one stop and are dropped when the program runs. */
    tdb_py_process *py;
    int py_state;        /* 0 not tried, 1 reading, -1 unavailable */
    tdb_symcache *symcache;
    int stop_readers;    /* the readers below are for this stop */
    tdb_maps maps;
    int have_maps;
    tdb_symbolizer *sym;
    tdb_py_snapshot *snap;
    char *hidden_debug_dir; /* gdb's debug-file-directory while hidden */
    struct tdb_session_values *values; /* session/values.c's, made when first used */
    light_state light;
};

/* An address as gdb writes it ("0x7f..."), 0 for none. */
static inline unsigned long parse_addr(const char *s)
{
    return s ? strtoul(s, NULL, 0) : 0;
}

/* libstdc++'s file, whose symbols catch throw needs. */
#define STDCXX_RE "/libstdc++\\.so[^/]*$"
/* A shared libpython (pyenv's interpreters, --enable-shared builds). */
#define LIBPYTHON_RE "/libpython3[^/]*\\.so[^/]*$"
/* Libraries outside the system's directories (/usr/lib*, /lib*): a user's
 * extension and its own libraries, wherever they are installed; the load
 * catchpoint watches them for the breakpoints pending on functions.  The
 * light session's globs (session/light.c) and tdb_session_outside_system()
 * say the same. */
#define OUTSIDE_SYSTEM_RE                                                                          \
    "^/\\([^ul]\\|u[^s]\\|us[^r]\\|usr[^/]\\|usr/[^l]\\|usr/l[^i]\\|usr/li[^b]\\|l[^i]\\|li[^b]\\)"
/* The Python hook's library (session/python.c), as a basic regex of paths. */
#define PYHOOK_LIB_RE "/libtdebug-pyhook[^/]*$"

/* session/session.c */
/* The process is gone ('run' starts another): what tdebug knew of it,
 * which was its alone (addresses, libraries, the hook, the interpreter's
 * reader, a light session's names and variables), goes; the breakpoints
 * stay, the native ones held again (b->number 0, pending) until a library
 * defines them, the Python ones until the new hook is loaded; internal
 * import stops and the load catchpoint go.  gdb's own breakpoints of them
 * are deleted.  The state is NOT_STARTED after. */
void tdb_session_forget_process(tdb_session *s);
void tdb_session_emit(tdb_session *s, const char *event, json_t *fields, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define say(s, event, ...) tdb_session_emit((s), event, NULL, __VA_ARGS__)
int tdb_session_console(tdb_session *s, int timeout_ms, tdb_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* session/symbols.c */
int tdb_session_load_symbols(tdb_session *s, const char *re, tdb_error *err);
lib_info *tdb_session_find_lib(tdb_session *s, const char *path);
lib_info *tdb_session_note_lib(tdb_session *s, const char *path);
/* The library whose text holds ADDR, or NULL. */
lib_info *tdb_session_lib_at(tdb_session *s, unsigned long addr);
int tdb_session_load_library_symbols(tdb_session *s, const char *path, tdb_error *err);
/* Is PATH outside the system's library directories (OUTSIDE_SYSTEM_RE)? */
int tdb_session_outside_system(const char *path);
/* Read the symbols of the mapped libraries LIB needs (DT_NEEDED, and
 * theirs) that carry DWARF of their own and whose symbols gdb has not read
 * (a user's extension's own core library, installed anywhere), so that a
 * step into them stops there rather than stepping over the call; looked at
 * once per library.  The DWARF-carrying dependencies go in LIB's
 * lib_info.deps.  0, or -1 with ERR set (gdb died). */
int tdb_session_read_dep_symbols(tdb_session *s, const char *lib, tdb_error *err);
int tdb_session_ensure_base_symbols(tdb_session *s, tdb_error *err);
int tdb_session_add_interest(tdb_session *s, const char *regex, tdb_error *err);
/* Replace the interest regex with RE (stolen; NULL: none). */
int tdb_session_set_interest(tdb_session *s, char *re, tdb_error *err);
/* Add the libraries a breakpoint may be in (torch, c10, the directories)
 * to the interest, when they are not in it yet. */
int tdb_session_widen_interest(tdb_session *s, tdb_error *err);
int tdb_session_setup_symbols(tdb_session *s, tdb_error *err);
/* session/breakpoints.c: whether the library at PATH defines a function a
 * pending breakpoint names (its symbol tables, a few milliseconds). */
int tdb_session_defines_pending(tdb_session *s, const char *path);
/* Whether any breakpoint naming a function is pending. */
int tdb_session_any_pending_function(const tdb_session *s);
void tdb_session_hide_cpython_debuginfo(tdb_session *s);
void tdb_session_restore_debuginfo(tdb_session *s);
/* The libraries whose symbols breakpoints need (torch, c10, the working
 * and script directories, --symbols): s->interest. */
int tdb_session_prepare_interest(tdb_session *s, const char *script_dir, tdb_error *err);
/* The words and directories of that interest, for the preloaded
 * library's patterns: words a path contains, then directories it is under
 * (new strings; NULL-terminated). */
extern const char *const tdb_session_interest_words[];
char **tdb_session_interest_dirs(const char *script_dir);
int tdb_session_place_load_catchpoint(tdb_session *s, tdb_error *err);
/* Module M's library LIB was just mapped: its PyInit's temporary
 * breakpoint, inside LIB only. */
int tdb_session_arm_import_stop(tdb_session *s, module_watch *m, const char *lib, tdb_error *err);
/* The load catchpoint reported the libraries ADDED: import stops armed,
 * interesting libraries' symbols read; *OUT_LOAD a --stop-at-load module
 * among them. */
int tdb_session_library_event(tdb_session *s, const json_t *added, module_watch **out_load,
                              tdb_error *err);

/* session/breakpoints.c */
bp_info *tdb_session_find_bp(tdb_session *s, int number);
bp_info *tdb_session_find_bp_id(tdb_session *s, int id);
bp_info *tdb_session_add_bp(tdb_session *s, int number, bp_kind kind, const char *location,
                           const char *module);
/* Update the breakpoint of gdb's tuple BKPT (=breakpoint-modified). */
void tdb_session_update_bp(tdb_session *s, const json_t *bkpt);
void tdb_session_bp_delete(tdb_session *s, bp_info *b);
void tdb_session_bp_free(bp_info *b);
/* B as data (session.h: tdb_session_breakpoint()); BKPT, gdb's tuple for
 * it, says where it bound; without it, ASK_GDB asks gdb. */
json_t *tdb_session_bp_json(tdb_session *s, const bp_info *b, const json_t *bkpt, int ask_gdb);
/* A breakpoint refused (session.h: tdb_session_breakpoint_add()). */
json_t *tdb_session_bp_refused(const char *location, const char *kind, const char *why);
/* Tell the front-end that breakpoint B changed (BKPT: gdb's tuple). */
void tdb_session_bp_changed(tdb_session *s, const bp_info *b, const json_t *bkpt);
/* Give gdb breakpoint B, which tdebug held back (b->number 0): read the
 * mapped libraries that define it, insert it pending.  0, or -1 with ERR
 * set (gdb died); a location gdb rejects stays unbound (warned). */
int tdb_session_bind_held(tdb_session *s, bp_info *b, tdb_error *err);
/* Native breakpoint B was just given to gdb (b->number): what the user set
 * on it while tdebug held it, or in an earlier run (disabled, the hits to
 * ignore), goes to gdb too.  Best effort (gdb's death shows later). */
void tdb_session_bp_give_state(tdb_session *s, const bp_info *b);

/* session/stops.c */
/* Read the notifications gdb queued (library list, breakpoints, thread
 * groups) after a command, keeping any exec record for the event loop. */
void tdb_session_drain(tdb_session *s);
/* Note a library as gdb describes it (an =library-loaded record's results,
 * an entry of -file-list-shared-libraries): its path, whether its symbols
 * are read, its text range. */
void tdb_session_note_library(tdb_session *s, const json_t *lib);
void tdb_session_handle_notify(tdb_session *s, const tdb_mi_record *r);
/* A *stopped record: 1 a stop to present (s->stop), 0 the core dealt with
 * it (the program runs again or ended), -1 on error. */
int tdb_session_handle_stopped(tdb_session *s, const tdb_mi_record *r, tdb_error *err);
/* A partial stop (tdb_stop_info.partial) gets its whole stack: what
 * reads s->stop_view beyond its Python frames calls this first.  0, or -1
 * with ERR. */
int tdb_session_stop_complete(tdb_session *s, tdb_error *err);
/* Record the stop ST (its strings copied) with FRAME, the *stopped record's
 * frame (may be NULL): the stack, the message, the top frame. */
int tdb_session_record_stop(tdb_session *s, const tdb_stop_info *st, const json_t *frame,
                            tdb_error *err);

/* session/resume.c */
void tdb_session_note_running(tdb_session *s);
/* Send the MI command HOW that lets the program run ("-exec-continue"). */
int tdb_session_resume_mi(tdb_session *s, const char *how, tdb_error *err);

/* session/launch.c */
/* Place --break and --catch-throw (before the program runs, or right
 * after attaching). */
int tdb_session_arm(tdb_session *s, const char *script_dir, tdb_error *err);
/* One --break WHAT (IS_BREAK) or --catch-throw WHAT of the options, placed
 * as tdb_session_arm() places them: 0, or -1 with ERR set (a refusal is a
 * usage error). */
int tdb_session_arm_one(tdb_session *s, const char *what, int is_break, tdb_error *err);

/* session/attach.c */
/* gdb attaches to PID (s->pid): 0 stopped, -1 with ERR set as
 * tdb_session_attach() says it. */
int tdb_session_gdb_attach(tdb_session *s, pid_t pid, tdb_error *err);
/* Before gdb detaches: a paused process is never left waiting on tdebug. */
void tdb_session_release_before_detach(tdb_session *s);

/* A native breakpoint B was hit (gdb's condition held): 1 it stops; 0 it
 * goes on (its hit condition is not met, or it is a log point, whose
 * "log" event was emitted). */
int tdb_session_native_hit_stops(tdb_session *s, bp_info *b);

/* session/pytable.c: the hook's control block (at s->hook.control) and
 * breakpoint table, through gdb.  Each 0, or -1 with ERR set. */
#define HOOK_TIMEOUT_MS 30000
#define CONTROL(s, field) ((s)->hook.control + offsetof(tdb_pyhook_control, field))
int tdb_hook_read_mem(tdb_session *s, uint64_t addr, void *buf, size_t len, tdb_error *err);
int tdb_hook_write_mem(tdb_session *s, uint64_t addr, const void *buf, size_t len, tdb_error *err);
int tdb_hook_write_i32(tdb_session *s, uint64_t addr, int32_t v, tdb_error *err);
int tdb_hook_write_u64(tdb_session *s, uint64_t addr, uint64_t v, tdb_error *err);
/* The library is to apply the new generation at its next safe point. */
int tdb_hook_sync_soon(tdb_session *s, tdb_error *err);
/* EXPR's value (a number) in *OUT; it may call a function in the process,
 * with the session's breakpoints off meanwhile. */
int tdb_hook_eval_u64(tdb_session *s, const char *expr, uint64_t *out, tdb_error *err);
/* Breakpoint B into its slot (one taken if it has none), or the slot
 * cleared (CLEAR); every Python breakpoint at once, the hook just loaded;
 * then a new generation for the library. */
int tdb_hook_write_slot(tdb_session *s, bp_info *b, int clear, tdb_error *err);
int tdb_hook_write_all_slots(tdb_session *s, tdb_error *err);
int tdb_hook_table_changed(tdb_session *s, tdb_error *err);

/* session/python.c */
/* A breakpoint on FILE.py:LINE or FILE.py:FUNCTION: as
 * tdb_session_breakpoint_add(). */
json_t *tdb_session_python_break(tdb_session *s, const char *location, int temporary,
                                 tdb_error *err);
/* What a breakpoint hit is to the Python hook (-1: an error). */
enum {
    TDB_HOOK_NOT_OURS, /* not one of the hook's breakpoints */
    TDB_HOOK_GO_ON,    /* handled: let the program run again */
    TDB_HOOK_STOP,     /* a stop to present: a Python line (*ST filled) */
    TDB_HOOK_RUNNING   /* handled, and the program already runs */
};
/* A *stopped at gdb breakpoint BKPTNO (RES: the record): TDB_HOOK_*. */
int tdb_session_python_stopped(tdb_session *s, int bkptno, const json_t *res, tdb_stop_info *st,
                               tdb_error *err);
/* A step/next/finish at a stop whose top is Python: 1 started, 0 not a
 * Python step (gdb's applies), -1 error. */
int tdb_session_python_resume(tdb_session *s, tdb_resume how, tdb_error *err);
/* The breakpoint's slot in the hook: written, cleared (B deleted), or its
 * enabled flag. */
void tdb_session_python_bp_changed(tdb_session *s, bp_info *b, int deleted);
/* Before the program starts: with Python breakpoints asked for, the safe
 * point where the hook is loaded (the first Python call). */
int tdb_session_python_launch(tdb_session *s, tdb_error *err);
/* The process is gone ('run' restarts it): the hook and its breakpoints
 * forgotten, the Python breakpoints to be written again. */
void tdb_session_python_forget(tdb_session *s);
/* A step the hook ran ended in native code: cancel its pending part. */
void tdb_session_python_step_done(tdb_session *s);
/* Before the process goes on without tdebug: no hook left. */
void tdb_session_python_end(tdb_session *s);
/* Run TEXT (an expression, or with STATEMENTS statements) in the Python
 * frame at FRAME (its address; 0: the innermost) of THREAD, by the hook:
 * only at a hook stop, on its thread.  New reference {"value": repr,
 * "type"}, or NULL with ERR saying why (the exception it raised, or why
 * no code can run here). */
/* session/steptargets.c: does WHAT (the hook's name of a native call, or
 * a Python function's qualified name when PYTHON) name the call the step
 * under way is for?  1 when it does (and no earlier call of that name is
 * still to be let go). */
int tdb_session_step_target_matches(tdb_session *s, const char *what, int python);
json_t *tdb_session_python_eval(tdb_session *s, int thread, uint64_t frame, const char *text,
                                int statements, tdb_error *err);
/* The session is freed: the log points' FIFO goes (what it still holds
 * is emitted first). */
void tdb_session_python_free(tdb_session *s);
/* The log points' FIFO (read end), -1 before the hook is loaded. */
int tdb_session_python_log_fd(const tdb_session *s);
/* Emit every whole log record the FIFO holds: a "log" event each,
 * {"event": "log", "message": TEXT, "breakpoint": ID}. */
void tdb_session_python_drain_log(tdb_session *s);
/* At a stop in the hook (stop_is_hook): the thread's native id and the
 * Python frame it reports (_PyInterpreterFrame * or PyFrameObject *), or 0. */
pid_t tdb_session_python_stop_lwp(tdb_session *s);
uint64_t tdb_session_python_stop_frame(tdb_session *s);
/* Frames of the hook library at the top of a hook stop's stack: how many
 * leading frames of MI_STACK to leave out. */
size_t tdb_session_python_hidden_frames(tdb_session *s, int thread, const json_t *mi_stack);
/* The hook's frames in V (its evaluation function, deeper in a stack)
 * are plumbing. */
void tdb_session_python_fold(tdb_session *s, tdb_stackview *v);

/* Python breakpoint B was just added: its slot written (the hook loaded)
 * or the hook's safe point armed.  Its JSON (new reference), or NULL with
 * ERR set. */
json_t *tdb_session_python_bp_placed(tdb_session *s, bp_info *b, tdb_error *err);

/* session/pyexc.c */
/* The user's directories into the hook's control block (my_code). */
int tdb_hook_write_my_code(tdb_session *s, tdb_error *err);
/* The hook reported TDB_PYHOOK_STOP_EXCEPTION (REP): fill ST (its
 * exception a new reference). */
struct tdb_pyhook_report;
void tdb_session_python_exc_stop(tdb_session *s, const struct tdb_pyhook_report *rep,
                                 tdb_stop_info *st);
/* A throw the silent catchpoint saw (EXC: its exception, stolen): kept,
 * with its first native frames, for the Python exception it becomes. */
void tdb_session_c10_throw_seen(tdb_session *s, json_t *exc);

/* session/stepinto.c */
/* The user's directories: the program's (SCRIPT_DIR, may be NULL), the
 * working directory, --my-code, TDEBUG_MY_CODE (once: later calls do
 * nothing). */
void tdb_session_step_dirs(tdb_session *s, const char *script_dir);
/* Is PATH (a source file) under the user's directories? */
int tdb_session_is_mine(tdb_session *s, const char *path);
/* Is a native frame of FUNC (demangled, may be NULL) in FROM (its
 * library, may be NULL) binding glue? */
int tdb_step_is_glue(const char *func, const char *from);
/* The tdb_step_into in force (--raw: binding). */
int tdb_session_step_policy(const tdb_session *s);
/* A step from Python reached the native function FRAME (gdb's frame
 * tuple, symbols read) on THREAD: 1 when it goes on to a landing (the
 * program runs), 0 to stop here, -1 with ERR set. */
int tdb_session_step_land(tdb_session *s, const json_t *frame, int thread, tdb_error *err);
/* A breakpoint hit (BKPTNO, RES the record) while landing: TDB_HOOK_*. */
int tdb_session_step_landed(tdb_session *s, int bkptno, const json_t *res, tdb_stop_info *st,
                            tdb_error *err);
/* A step from Python arrived at a native function's entry, the hook's
 * step ended: with debug info (PAST_PROLOGUE) it goes on past the
 * prologue to the first line of the body (TDB_HOOK_RUNNING), else it is a
 * step's stop here (TDB_HOOK_STOP, ST filled); -1 with ERR set. */
int tdb_session_step_arrived(tdb_session *s, int past_prologue, tdb_stop_info *st,
                             tdb_error *err);
/* What the step state holds, freed (the session's end). */
void tdb_session_step_free(tdb_session *s);
/* The landing's breakpoints removed (any stop ends it). */
void tdb_session_step_landing_end(tdb_session *s);
/* 'finish' at the selected frame: 1 with *OUT_LEVEL the outermost glue
 * frame between it and its Python caller (finish that one), else 0. */
int tdb_session_step_finish_level(tdb_session *s, int *out_level);
/* A native step ended in FRAME on THREAD: 1 when it stepped off the end of
 * a landed frame into glue and goes on to the Python line (the program
 * runs), 0 to stop here, -1 with ERR set. */
int tdb_session_step_off_end(tdb_session *s, const json_t *frame, int thread, tdb_error *err);

/* session/values.c */
/* At a stop of catchpoint B: the exception being thrown (*OUT_EXC, a new
 * reference, stop_info's "exception"), and whether B's TYPE (its
 * location "throw TYPE") is its class or a base of it.  1: a stop to
 * present; 0: another class, let the program go on (*OUT_EXC untouched);
 * -1 with ERR set when gdb failed. */
int tdb_session_throw_stop(tdb_session *s, const bp_info *b, json_t **out_exc, tdb_error *err);
/* At a breakpoint stop: the arguments of frame 0 (new reference, the
 * stop_info's "args"), or NULL when they cannot be named. */
json_t *tdb_session_stop_args(tdb_session *s);
void tdb_session_values_free(tdb_session *s);
/* gdb's own pretty-printers for torch's values (lib/gdb/tdebug_printers.py,
 * beside tdebug or in its library directory), loaded at gdb's start, so
 * that the gdb commands a user types ('print', 'info locals', 'finish')
 * and gdb's variables show tensors as tdebug does.  Best effort: a gdb
 * without Python, or no printers file, only loses that. */
void tdb_session_printers_load(tdb_session *s);
/* Before a gdb command that may print values: when the process has torch,
 * its tensor layout (cached, else learned now) is handed to the printers,
 * once.  1 when that happened now, else 0. */
int tdb_session_printers_prepare(tdb_session *s);

/* session/stack.c */
void tdb_session_drop_stop_readers(tdb_session *s);
void tdb_session_make_stop_readers(tdb_session *s);
/* This stop's Python snapshot alone (s->snap), without the memory map and
 * the symbolizer when the interpreter was found at an earlier stop; NULL
 * when it cannot be read (said once). */
const tdb_py_snapshot *tdb_session_stop_snapshot(tdb_session *s);
json_t *tdb_session_stack_frames(tdb_session *s, int thread, tdb_error *err);
int tdb_session_collect_view(tdb_session *s, int thread, tdb_stackview *v, tdb_error *err);
json_t *tdb_session_view_python(tdb_session *s, const tdb_stackview *v);
/* tdb_session_view_of() for frame INDEX alone: a partial stop's frame 0
 * (its Python line) without reading the rest of the stack. */
const tdb_stackview *tdb_session_frame_view(tdb_session *s, int thread, int index,
                                            tdb_stackview *tmp, int *own, tdb_error *err);
/* THREAD's view: the stop's (*OWN 0), or one read now into TMP (*OWN 1:
 * tdb_stackview_clear() it).  NULL with ERR set. */
const tdb_stackview *tdb_session_view_of(tdb_session *s, int thread, tdb_stackview *tmp, int *own,
                                         tdb_error *err);

/* session/threads.c */
/* THREAD's LWP (0: the current thread's), 0 when unknown. */
pid_t tdb_session_thread_lwp(tdb_session *s, int thread);

/* session/light.c */
/* Can S's options run light (tdb_session_new() then spawns gdb without
 * waiting)?  Garbage in TDEBUG_LIGHT is said as a warning, and light it is. */
int tdb_session_light_applies(tdb_session *s);
/* At the launch of a session that did not start light: do the breakpoints
 * a front-end placed since (all Python's) allow one now?  gdb is ready. */
int tdb_session_light_applies_at_launch(tdb_session *s);
/* Start the program and attach: 0 with it running, 1 when a light launch
 * cannot be made here (nothing was started; gdb is ready for the ordinary
 * launch), -1 with ERR set. */
int tdb_session_light_launch(tdb_session *s, char *const argv[], const char *script_dir,
                             tdb_error *err);
/* 'run' in a session that started light (the old program not running,
 * not one tdebug attached to): the program tdebug started is killed and
 * started again as a new light session, with the breakpoints S has now
 * (both kinds), its step-into policy and environment.  0 with it running,
 * 1 when those breakpoints need an ordinary session (nothing was done),
 * -1 with ERR set. */
int tdb_session_light_rerun(tdb_session *s, tdb_error *err);
/* What light.c shares with lightpy.c: the loader's names of the files
 * mapped (from its _r_debug list), the libraries of MAPS noted (the index
 * of the first new one returned), the load bias of PATH through E (0, or
 * -1), and a gdb breakpoint at ADDR (temporary when TEMP: its number, or 0
 * with ERR set). */
void tdb_light_read_link_map(tdb_session *s, const tdb_maps *maps);
size_t tdb_light_note_maps(tdb_session *s, const tdb_maps *maps);
struct tdb_elf;
int tdb_light_bias_of(struct tdb_elf *e, const tdb_maps *maps, const char *path, uint64_t *out);
int tdb_light_break_at(tdb_session *s, uint64_t addr, int temp, tdb_error *err);
/* session/lightpy.c: with Python breakpoints, the stop where the hook is
 * loaded (Py_RunMain, by address; an upgrade and the ordinary way when the
 * interpreter has none).  0, or -1 with ERR set. */
int tdb_light_arm_python(tdb_session *s, tdb_error *err);
/* A SIGTRAP stop: 1 when it was the preloaded library's trap (handled: the
 * program may go on), 0 when it is the program's own, -1 on error. */
int tdb_session_light_trap(tdb_session *s, tdb_error *err);
/* THREAD's frames unwound by tdebug, in -stack-list-frames' form (new
 * reference), or NULL: with *NEED_GDB set when a frame is in a library
 * with its own debug info (gdb must show it), else with ERR set. */
json_t *tdb_session_light_frames(tdb_session *s, int thread, int *need_gdb, tdb_error *err);
/* Make a light session an ordinary one (no-op otherwise): gdb reads the
 * libraries again, the held breakpoints and watched modules go to gdb. */
int tdb_session_light_upgrade(tdb_session *s, tdb_error *err);
/* EXPR, a gdb expression of the Python hook's (session/python.c: calls of
 * dlopen, mmap, CPython's and the hook's functions, the hook's control
 * block), as gdb can evaluate it in a light session: those names as
 * addresses, its strings copied into the process first (new string), or
 * NULL with ERR set (a name not found: the caller upgrades). */
char *tdb_session_light_expr(tdb_session *s, const char *expr, tdb_error *err);
/* "*0xADDR" for the function NAME in a light session, for -break-insert
 * (new string); NULL in an ordinary session or when it is not found. */
char *tdb_session_light_location(tdb_session *s, const char *name);
/* The program is gone or killed: reap it (a light session's child), or
 * leave it to tdb_session_light_reap() when gdb still holds it. */
void tdb_session_light_end(tdb_session *s);
/* After gdb is gone: reap what tdb_session_light_end() could not. */
void tdb_session_light_reap(tdb_session *s);

#endif
