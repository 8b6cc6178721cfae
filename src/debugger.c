/*
 * debugger.c: a debugging session over gdb/MI (see debugger.h).
 *
 * The flow of 'tdebug run --stop-at-import torch._C':
 *   gdb starts with 'auto-solib-add off' (FIELD-NOTES: gdb's default reads
 *   ~300 libraries' symbols and takes 4.45 s to reach PyInit__C, against
 *   2.0 s this way), a load catchpoint on torch/_C's file, and runs the
 *   program through tdebug-exec (stdio, process group, death signal).
 *   When _C is mapped the catchpoint stops in ld.so; _C's own DT_NEEDED
 *   libraries are not mapped yet, but _C is: tdebug reads _C's symbols only
 *   and puts a temporary breakpoint on PyInit__C, keeping only the location
 *   inside _C, then continues.  The breakpoint fires before the module's
 *   init runs.  At every stop shown to the user, libc and ld.so symbols are
 *   loaded first (without their CFI backtraces are garbage), then any
 *   library on the stack whose symbols are not loaded, until the stack is
 *   stable.
 */
#include "debugger.h"

#include "mi_session.h"
#include "signals.h"
#include "stackview.h"
#include "preload.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <readline/history.h>
#include <readline/readline.h>
#include <regex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define CMD_TIMEOUT_MS 60000       /* ordinary MI commands */
#define SYMBOLS_TIMEOUT_MS 300000  /* reading symbols of big libraries */
#define DEFAULT_MAX_FRAMES 64
#define STACK_LOAD_ROUNDS 8

enum state { NOT_STARTED, RUNNING, STOPPED, EXITED };

typedef struct lib_info {
    char *path;
    int symbols; /* symbols read by gdb */
    unsigned long lo, hi; /* .text range, from =library-loaded */
} lib_info;

typedef struct bp_info {
    int number;
    char *location; /* as given (--break), or "PyInit_x" */
    char *module;   /* for import stops: the module; NULL otherwise */
    int pending;
    int hits;
} bp_info;

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

struct tdb_session {
    tdb_session_options opts;
    tdb_gdb *gdb;
    enum state state;
    int attached;
    pid_t pid;
    int exit_status;
    int have_exit;
    int signalled;       /* the program was killed by a signal */
    char *interest;     /* basic regex of libraries whose symbols we load */
    regex_t interest_re;
    int have_interest;
    lib_info *libs;
    size_t n_libs, cap_libs;
    bp_info *bps;
    size_t n_bps, cap_bps;
    module_watch *mods;
    size_t n_mods;
    int base_symbols;    /* libc and ld.so symbols loaded */
    int py_bt;           /* -1 unknown, 0 unavailable, 1 works */
    int interrupt_sent;  /* we sent -exec-interrupt for the user */
    int quit_requested;
    int fatal_signal;    /* SIGTERM/SIGHUP received: shut down */
    int saved_fds[3];
    char state_before;   /* attach: the process's state letter before (T: stopped) */
    /* attach_paused: a process waiting in the preloaded library or in
     * tdebug.wait_for_debugger() (see "a paused process" below) */
    json_t *paused;           /* its announcement; NULL when not paused */
    int paused_released;      /* the release was written, or it ran */
    module_watch *paused_load; /* --stop-at-load of the module it waits at */
    /* terminal */
    int tty;             /* fd of the controlling terminal, or -1 */
    pid_t our_pgrp;
    struct termios tty_modes;
    tdb_stop_hook hook;
    void *hook_data;
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
};

/* ---- signals ---- */

static int install_signals(tdb_error *err)
{
    if (tdb_signals_install(0, err) < 0)
        return -1;
    /* tdebug hands the terminal to the program and takes it back, as a
     * shell does, which a background process may only do with these
     * ignored.  gdb and the program get default dispositions back. */
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigaction(SIGTTOU, &ign, NULL);
    sigaction(SIGTTIN, &ign, NULL);
    return 0;
}

/* ---- small helpers ---- */

int tdb_valid_module_name(const char *name)
{
    int at_start = 1;
    if (!name || !*name)
        return 0;
    for (const char *p = name; *p; p++) {
        if (*p == '.') {
            if (at_start)
                return 0;
            at_start = 1;
        } else if (isalpha((unsigned char)*p) || *p == '_' || (!at_start && isdigit((unsigned char)*p))) {
            at_start = 0;
        } else {
            return 0;
        }
    }
    return !at_start;
}

/* Escape S for a POSIX basic regex. */
static void bre_escape(tdb_buf *b, const char *s)
{
    for (; *s; s++) {
        if (strchr(".[]*^$\\", *s))
            tdb_buf_addc(b, '\\');
        tdb_buf_addc(b, *s);
    }
}

char *tdb_module_file_regex(const char *name)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_addc(&b, '/');
    for (const char *p = name; *p; p++)
        tdb_buf_addc(&b, *p == '.' ? '/' : *p);
    /* _C.so, _C.abi3.so, _C.cpython-311-x86_64-linux-gnu.so */
    tdb_buf_adds(&b, "\\.\\([^/]*\\.\\)\\{0,1\\}so$");
    return tdb_buf_detach(&b);
}

static const char *module_init_name(const char *module, tdb_buf *b)
{
    const char *last = strrchr(module, '.');
    tdb_buf_reset(b);
    tdb_buf_addf(b, "PyInit_%s", last ? last + 1 : module);
    return tdb_buf_str(b);
}

static unsigned long parse_addr(const char *s)
{
    return s ? strtoul(s, NULL, 0) : 0;
}

static int signal_number(const char *name)
{
    if (!name)
        return 0;
    for (int sig = 1; sig < 65; sig++) {
        const char *abbrev = sigabbrev_np(sig);
        if (abbrev && strncmp(name, "SIG", 3) == 0 && strcmp(name + 3, abbrev) == 0)
            return sig;
    }
    return 0;
}

/* ---- libraries and breakpoints we track ---- */

static lib_info *find_lib(tdb_session *s, const char *path)
{
    for (size_t i = 0; i < s->n_libs; i++)
        if (strcmp(s->libs[i].path, path) == 0)
            return &s->libs[i];
    return NULL;
}

static lib_info *note_lib(tdb_session *s, const char *path)
{
    lib_info *l = find_lib(s, path);
    if (l)
        return l;
    if (s->n_libs == s->cap_libs) {
        s->cap_libs = s->cap_libs ? s->cap_libs * 2 : 64;
        s->libs = tdb_xrealloc(s->libs, s->cap_libs * sizeof(*s->libs));
    }
    l = &s->libs[s->n_libs++];
    memset(l, 0, sizeof(*l));
    l->path = tdb_xstrdup(path);
    return l;
}

static bp_info *find_bp(tdb_session *s, int number)
{
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].number == number)
            return &s->bps[i];
    return NULL;
}

static bp_info *add_bp(tdb_session *s, int number, const char *location, const char *module)
{
    if (s->n_bps == s->cap_bps) {
        s->cap_bps = s->cap_bps ? s->cap_bps * 2 : 16;
        s->bps = tdb_xrealloc(s->bps, s->cap_bps * sizeof(*s->bps));
    }
    bp_info *b = &s->bps[s->n_bps++];
    memset(b, 0, sizeof(*b));
    b->number = number;
    b->location = tdb_xstrdup(location);
    b->module = module ? tdb_xstrdup(module) : NULL;
    return b;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = s ? strlen(s) : 0, t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* Update a breakpoint from a bkpt={...} tuple (MI3).  A function called
 * across libraries (at::_ops::add_Tensor::call from libtorch_python) gets
 * locations on its PLT stubs too, so every call would stop twice, first
 * in a stub; those locations are disabled while the function itself has a
 * location, unless the user asked for the stub. */
static void update_bp(tdb_session *s, const json_t *bkpt)
{
    const char *num = tdb_mi_str(bkpt, "number");
    bp_info *b = num ? find_bp(s, atoi(num)) : NULL;
    if (!b)
        return;
    const char *addr = tdb_mi_str(bkpt, "addr");
    b->pending = addr && strcmp(addr, "<PENDING>") == 0;
    const char *times = tdb_mi_str(bkpt, "times");
    if (times)
        b->hits = atoi(times);

    json_t *locations = json_object_get(bkpt, "locations");
    if (!json_is_array(locations) || b->module || strstr(b->location, "@plt"))
        return;
    size_t i, real = 0;
    json_t *loc;
    json_array_foreach(locations, i, loc)
        if (!ends_with(tdb_mi_str(loc, "at"), "@plt>"))
            real++;
    if (!real)
        return;
    tdb_buf cmd = TDB_BUF_INIT;
    json_array_foreach(locations, i, loc)
    {
        const char *enabled = tdb_mi_str(loc, "enabled"), *number = tdb_mi_str(loc, "number");
        if (number && enabled && strcmp(enabled, "y") == 0 &&
            ends_with(tdb_mi_str(loc, "at"), "@plt>"))
            tdb_buf_addf(&cmd, " %s", number);
    }
    if (cmd.len)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-disable%s", tdb_buf_str(&cmd));
    tdb_buf_free(&cmd);
}

/* ---- output ---- */

void tdb_event_json(json_t *event)
{
    char *text = json_dumps(event, JSON_COMPACT);
    if (text)
        printf("%s\n", text);
    fflush(stdout);
    free(text);
    json_decref(event);
}

void tdb_event(tdb_output output, const char *event, json_t *fields, const char *fmt, ...)
{
    tdb_buf b = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    if (output == TDB_OUTPUT_JSON) {
        json_t *e = json_pack("{s:s, s:s}", "event", event, "message", tdb_buf_str(&b));
        if (fields)
            json_object_update(e, fields);
        tdb_event_json(e);
    } else {
        int warning = strcmp(event, "warning") == 0;
        fprintf(warning ? stderr : stdout, "tdebug: %s%s\n", warning ? "warning: " : "",
                tdb_buf_str(&b));
        fflush(stdout);
    }
    json_decref(fields);
    tdb_buf_free(&b);
}

/* A status line: "tdebug: ..." in text modes, an event in JSON. */
#define say(s, event, ...) tdb_event((s)->opts.output, event, NULL, __VA_ARGS__)

void tdb_say_killed(tdb_output output, int sig)
{
    if (sig == SIGINT)
        tdb_event(output, "killed", NULL, "interrupted: the program was killed");
    else if (sig)
        tdb_event(output, "killed", NULL, "terminated by SIG%s: the program was killed",
                  sigabbrev_np(sig));
    else
        tdb_event(output, "killed", NULL, "quit: the program was killed");
}

void tdb_say_exited(tdb_output output, int status, int signalled)
{
    if (output == TDB_OUTPUT_JSON)
        tdb_event_json(json_pack("{s:s, s:i, s:b}", "event", "exited", "status", status,
                                 "signalled", signalled));
    else if (!signalled)
        tdb_event(output, "exited", NULL, "program exited with status %d", status);
}

/* ---- the terminal ---- */

static void terminal_init(tdb_session *s)
{
    s->tty = -1;
    s->our_pgrp = getpgrp();
    if (isatty(0) && tcgetpgrp(0) == s->our_pgrp) {
        s->tty = 0;
        tcgetattr(0, &s->tty_modes);
    }
}

/* Give the terminal to the program while it runs, like a shell running a
 * job, so it can read stdin and Ctrl-C reaches it (gdb then reports the
 * SIGINT).  Only for a program tdebug started: it has its own group. */
static void terminal_to_program(tdb_session *s)
{
    if (s->tty < 0 || s->attached || s->pid <= 0)
        return;
    tcsetpgrp(s->tty, s->pid);
}

static void terminal_to_us(tdb_session *s)
{
    if (s->tty < 0)
        return;
    tcsetpgrp(s->tty, s->our_pgrp);
    tcsetattr(s->tty, TCSADRAIN, &s->tty_modes);
}

/* ---- gdb commands ---- */

static int console(tdb_session *s, int timeout_ms, tdb_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int console(tdb_session *s, int timeout_ms, tdb_error *err, const char *fmt, ...)
{
    tdb_buf cli = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&cli, fmt, ap);
    va_end(ap);
    char *out = tdb_gdb_console(s->gdb, timeout_ms, err, tdb_buf_str(&cli));
    if (out && s->opts.verbose && *out)
        fputs(out, stderr);
    tdb_buf_free(&cli);
    int rc = out ? 0 : -1;
    free(out);
    return rc;
}

/* Read the symbols of every library matching the basic regex RE, and mark
 * them as read. */
static int load_symbols(tdb_session *s, const char *re, tdb_error *err)
{
    if (console(s, SYMBOLS_TIMEOUT_MS, err, "sharedlibrary %s", re) < 0)
        return -1;
    regex_t rx;
    if (regcomp(&rx, re, REG_NOSUB) == 0) {
        for (size_t i = 0; i < s->n_libs; i++)
            if (regexec(&rx, s->libs[i].path, 0, NULL, 0) == 0)
                s->libs[i].symbols = 1;
        regfree(&rx);
    }
    return 0;
}

static int load_library_symbols(tdb_session *s, const char *path, tdb_error *err)
{
    tdb_buf re = TDB_BUF_INIT;
    tdb_buf_addc(&re, '^');
    bre_escape(&re, path);
    tdb_buf_addc(&re, '$');
    int rc = load_symbols(s, tdb_buf_str(&re), err);
    tdb_buf_free(&re);
    return rc;
}

static int ensure_base_symbols(tdb_session *s, tdb_error *err)
{
    if (s->base_symbols || s->opts.all_symbols)
        return 0;
    if (load_symbols(s, "/ld-linux[^/]*$\\|/libc\\.so[^/]*$", err) < 0)
        return -1;
    s->base_symbols = 1;
    return 0;
}

/* The readers of a stop (memory map, symbolizer, Python snapshot) are
 * stale once the program runs again. */
static void drop_stop_readers(tdb_session *s)
{
    if (!s->stop_readers)
        return;
    tdb_symbolizer_free(s->sym);
    tdb_py_snapshot_free(s->snap);
    if (s->have_maps)
        tdb_maps_free(&s->maps);
    s->sym = NULL;
    s->snap = NULL;
    s->have_maps = 0;
    s->stop_readers = 0;
}

static int resume(tdb_session *s, const char *how, tdb_error *err)
{
    tdb_mi_response *r = tdb_gdb_send(s->gdb, CMD_TIMEOUT_MS, err, how);
    if (!r)
        return -1;
    int rc = 0;
    if (strcmp(r->result->klass, "error") == 0) {
        const char *msg = tdb_mi_str(r->result->results, "msg");
        tdb_error_set(err, 0, "%s", msg ? msg : "gdb cannot resume the program");
        rc = -1;
    } else {
        s->state = RUNNING;
        drop_stop_readers(s); /* what they read is about to change */
        if (s->paused)
            s->paused_released = 1; /* running lets even wait_for_debugger() go */
        terminal_to_program(s);
    }
    tdb_mi_response_free(r);
    return rc;
}

/* ---- backtraces ---- */

/* The frames of THREAD (0: the current one) as gdb sees them, reading the
 * symbols of libraries on the stack as needed.  New reference. */
static json_t *stack_frames(tdb_session *s, int thread, tdb_error *err)
{
    json_t *frames = NULL;
    int max = s->opts.max_frames > 0 ? s->opts.max_frames : DEFAULT_MAX_FRAMES;

    if (ensure_base_symbols(s, err) < 0)
        return NULL;
    for (int round = 0; round < STACK_LOAD_ROUNDS; round++) {
        json_t *res = NULL;
        int rc = thread > 0 ? tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err,
                                          "-stack-list-frames --thread %d 0 %d", thread, max - 1)
                            : tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err,
                                          "-stack-list-frames 0 %d", max - 1);
        if (rc < 0)
            return NULL;
        json_decref(frames);
        frames = json_incref(json_object_get(res, "stack"));
        json_decref(res);
        if (!frames)
            frames = json_array();
        if (s->opts.all_symbols)
            break;
        /* Libraries on the stack without symbols: without their CFI the
         * unwind may stop or go wrong right there, so read them and redo. */
        int loaded = 0;
        size_t i;
        json_t *f;
        json_array_foreach(frames, i, f)
        {
            const char *from = tdb_mi_str(f, "from");
            if (!from)
                continue;
            lib_info *l = note_lib(s, from);
            if (l->symbols)
                continue;
            if (load_library_symbols(s, from, err) < 0) {
                json_decref(frames);
                return NULL;
            }
            l->symbols = 1;
            loaded++;
        }
        if (!loaded)
            break;
    }
    return frames;
}

/* Python frames from gdb's py-bt (python3-dbg's helpers), innermost first,
 * as [{function, file, line}] or [{text}] for frames without a file.  NULL
 * when py-bt is unavailable.  New reference. */
static json_t *python_frames(tdb_session *s)
{
    if (s->py_bt == 0)
        return NULL;
    tdb_error err = {0};
    char *text = tdb_gdb_console(s->gdb, CMD_TIMEOUT_MS, &err, "py-bt");
    if (!text || strstr(text, "Unable to locate python frame") ||
        strstr(text, "Undefined command")) {
        if (!text && strstr(err.msg, "Undefined command") && s->py_bt < 0)
            say(s, "warning", "no Python frames: gdb has no 'py-bt' for this interpreter "
                              "(install its debug info, e.g. apt-get install python3-dbg)");
        if (!text)
            s->py_bt = 0;
        free(text);
        return NULL;
    }
    s->py_bt = 1;
    json_t *frames = json_array();
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ')
            line++;
        if (!*line || strncmp(line, "Traceback", 9) == 0)
            continue;
        char file[4096], func[1024], lineno[32];
        if (sscanf(line, "File \"%4095[^\"]\", line %31[^,], in %1023[^\n]", file, lineno, func) == 3) {
            json_t *fr = json_pack("{s:s, s:s}", "function", func, "file", file);
            long n;
            json_object_set_new(fr, "line", tdb_parse_long(lineno, 0, 1L << 30, &n) == 0
                                                ? json_integer(n) : json_null());
            json_array_append_new(frames, fr);
        } else {
            json_array_append_new(frames, json_pack("{s:s}", "text", line));
        }
    }
    free(text);
    return frames;
}

/* ---- stacks at a stop ---- */


/* The readers for this stop, made once: the memory map, the symbolizer,
 * and (the interpreter found once per session) the Python snapshot.  What
 * fails is said once and left out. */
static void make_stop_readers(tdb_session *s)
{
    if (s->stop_readers || s->pid <= 0)
        return;
    s->stop_readers = 1;
    tdb_error err = {0};
    s->have_maps = tdb_maps_read(s->pid, &s->maps, &err) == 0;
    if (!s->symcache)
        s->symcache = tdb_symcache_new();
    s->sym = tdb_symbolizer_new(s->pid, s->symcache, NULL);
    if (s->py_state == 0) {
        tdb_error_clear(&err);
        int rc = tdb_py_open(s->pid, s->have_maps ? &s->maps : NULL, &s->py, &err);
        s->py_state = rc == 0 ? 1 : -1;
        if (rc < 0)
            say(s, "warning", "no Python frames from pid %d's memory: %s", (int)s->pid, err.msg);
    }
    if (s->py_state == 1) {
        tdb_error_clear(&err);
        s->snap = tdb_py_read(s->py, &err);
        if (!s->snap)
            say(s, "warning", "cannot read pid %d's Python threads: %s", (int)s->pid, err.msg);
    }
}

/* The Linux thread id of gdb's thread THREAD (0: the current one), from
 * its target-id ("Thread 0x7f... (LWP 1234)", or "process 1234"); 0 when
 * gdb does not say. */
static pid_t thread_lwp(tdb_session *s, int thread)
{
    json_t *res = NULL;
    pid_t lwp = 0;
    int rc = thread > 0 ? tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-thread-info %d", thread)
                        : tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-thread-info");
    if (rc < 0)
        return 0;
    const char *want = thread > 0 ? NULL : tdb_mi_str(res, "current-thread-id");
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(res, "threads"), i, t)
    {
        if (want && (!tdb_mi_str(t, "id") || strcmp(tdb_mi_str(t, "id"), want) != 0))
            continue;
        const char *target = tdb_mi_str(t, "target-id");
        const char *p = target ? strstr(target, "LWP ") : NULL;
        if (p)
            lwp = (pid_t)atoi(p + 4);
        else if (target && strncmp(target, "process ", 8) == 0)
            lwp = (pid_t)atoi(target + 8);
        break;
    }
    json_decref(res);
    return lwp;
}

/* THREAD's stack (0: the current thread's) as this stop shows it. */
static int collect_view(tdb_session *s, int thread, tdb_stackview *v, tdb_error *err)
{
    json_t *raw = stack_frames(s, thread, err);
    if (!raw)
        return -1;
    make_stop_readers(s);
    tdb_stackview_init(v, s->pid, thread_lwp(s, thread), raw, s->have_maps ? &s->maps : NULL,
                       s->sym, s->py, s->snap);
    json_decref(raw);
    return 0;
}

static unsigned stack_flags(const tdb_session *s)
{
    return s->opts.raw ? TDB_STACK_RAW : 0;
}

/* Python frames for V's thread: from memory, else (an interpreter tdebug
 * cannot read) from gdb's py-bt when CPython's debug info is loaded.  New
 * reference or NULL. */
static json_t *view_python_frames(tdb_session *s, const tdb_stackview *v)
{
    json_t *py = tdb_stackview_python_json(v);
    if (!py && s->py_state < 0 && s->opts.cpython_symbols)
        py = python_frames(s);
    return py;
}

static void print_view(tdb_session *s, const tdb_stackview *v, const json_t *gdb_py)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_stackview_render(&b, v, stack_flags(s));
    fputs(tdb_buf_str(&b), stdout);
    tdb_buf_free(&b);
    if (!v->t.py && gdb_py && json_array_size(gdb_py)) {
        /* gdb's py-bt, for an interpreter tdebug does not read itself. */
        size_t i;
        json_t *f;
        fprintf(stdout, "Python stack (gdb's py-bt, most recent call first):\n");
        json_array_foreach(gdb_py, i, f)
        {
            json_t *line = json_object_get(f, "line");
            if (tdb_mi_str(f, "text"))
                fprintf(stdout, "    %s\n", tdb_mi_str(f, "text"));
            else if (json_is_integer(line))
                fprintf(stdout, "    File \"%s\", line %lld, in %s\n", tdb_mi_str(f, "file"),
                        (long long)json_integer_value(line), tdb_mi_str(f, "function"));
            else
                fprintf(stdout, "    File \"%s\", line ?, in %s\n", tdb_mi_str(f, "file"),
                        tdb_mi_str(f, "function"));
        }
    }
    fflush(stdout);
}

/* 'bt' at the prompt. */
static int show_backtrace(tdb_session *s, tdb_error *err)
{
    tdb_stackview v;
    if (collect_view(s, 0, &v, err) < 0)
        return -1;
    json_t *py = v.t.py ? NULL : view_python_frames(s, &v);
    print_view(s, &v, py);
    json_decref(py);
    tdb_stackview_clear(&v);
    return 0;
}

/* ---- events ---- */

static void handle_notify(tdb_session *s, const tdb_mi_record *r)
{
    if (strcmp(r->klass, "library-loaded") == 0) {
        const char *path = tdb_mi_str(r->results, "target-name");
        if (!path)
            return;
        lib_info *l = note_lib(s, path);
        const char *loaded = tdb_mi_str(r->results, "symbols-loaded");
        if (loaded && strcmp(loaded, "1") == 0)
            l->symbols = 1;
        json_t *ranges = json_object_get(r->results, "ranges");
        json_t *first = json_array_get(ranges, 0);
        if (first) {
            l->lo = parse_addr(tdb_mi_str(first, "from"));
            l->hi = parse_addr(tdb_mi_str(first, "to"));
        }
    } else if (strcmp(r->klass, "breakpoint-modified") == 0) {
        json_t *bkpt = json_object_get(r->results, "bkpt");
        if (json_is_object(bkpt))
            update_bp(s, bkpt);
    } else if (strcmp(r->klass, "thread-group-started") == 0) {
        const char *pid = tdb_mi_str(r->results, "pid");
        if (pid)
            s->pid = (pid_t)atoi(pid);
        if (s->state == RUNNING)
            terminal_to_program(s); /* the first run: now its pid is known */
    } else if (strcmp(r->klass, "thread-group-exited") == 0) {
        const char *code = tdb_mi_str(r->results, "exit-code");
        if (code && !s->have_exit) {
            /* gdb prints the exit code in octal ("03", "012"). */
            s->exit_status = (int)strtol(code, NULL, 8);
            s->have_exit = 1;
        }
    }
}

/* Place the breakpoint on module M's PyInit function inside library LIB,
 * just mapped: read LIB's symbols (it is small; its dependencies are not
 * even mapped yet), insert a temporary breakpoint and keep only the
 * location inside LIB, so another module's PyInit of the same name
 * (functorch._C also has PyInit__C) cannot fire it. */
static int arm_import_stop(tdb_session *s, module_watch *m, const char *lib, tdb_error *err)
{
    tdb_buf name = TDB_BUF_INIT;
    tdb_buf cmd = TDB_BUF_INIT;
    json_t *res = NULL;
    int rc = -1;

    if (load_library_symbols(s, lib, err) < 0)
        goto cleanup;
    module_init_name(m->name, &name);
    tdb_buf_adds(&cmd, "-break-insert -t ");
    tdb_mi_quote(&cmd, tdb_buf_str(&name));
    tdb_error local = {0};
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, &local, "%s", tdb_buf_str(&cmd)) < 0) {
        say(s, "warning", "'%s' has no %s: cannot stop before its init (%s)", lib,
            tdb_buf_str(&name), local.msg);
        rc = 0;
        goto cleanup;
    }
    json_t *bkpt = json_object_get(res, "bkpt");
    const char *num = tdb_mi_str(bkpt, "number");
    if (!num) {
        tdb_error_set(err, 0, "gdb gave no breakpoint number for %s", tdb_buf_str(&name));
        goto cleanup;
    }
    lib_info *l = find_lib(s, lib);
    json_t *locations = json_object_get(bkpt, "locations");
    if (json_is_array(locations) && l && l->hi > l->lo) {
        size_t i;
        json_t *loc;
        json_array_foreach(locations, i, loc)
        {
            unsigned long a = parse_addr(tdb_mi_str(loc, "addr"));
            const char *locno = tdb_mi_str(loc, "number");
            if (locno && (a < l->lo || a >= l->hi))
                tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-disable %s", locno);
        }
    }
    add_bp(s, atoi(num), tdb_buf_str(&name), m->name);
    rc = 0;
cleanup:
    json_decref(res);
    tdb_buf_free(&name);
    tdb_buf_free(&cmd);
    return rc;
}

/* The load catchpoint fired: arm import stops for watched modules and read
 * the symbols of interesting libraries so pending breakpoints bind. */
static int handle_library_event(tdb_session *s, const json_t *added, module_watch **out_load,
                                tdb_error *err)
{
    size_t i;
    json_t *v;
    json_array_foreach(added, i, v)
    {
        const char *lib = json_is_string(v) ? json_string_value(v) : tdb_mi_str(v, "library");
        if (!lib)
            continue;
        note_lib(s, lib);
        for (size_t k = 0; k < s->n_mods; k++) {
            module_watch *m = &s->mods[k];
            if (!m->seen && regexec(&m->re, lib, 0, NULL, 0) == 0) {
                m->seen = 1;
                m->library = tdb_xstrdup(lib);
                if (m->at_import && arm_import_stop(s, m, lib, err) < 0)
                    return -1;
                if (m->at_load && !*out_load)
                    *out_load = m;
                if (!m->at_import)
                    m->stopped = 1; /* a load stop is all that was asked */
            }
        }
        if (s->have_interest && regexec(&s->interest_re, lib, 0, NULL, 0) == 0) {
            lib_info *l = find_lib(s, lib);
            if (l && !l->symbols && load_library_symbols(s, lib, err) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- presenting a stop ---- */


static void describe_stop(tdb_session *s, const tdb_stop_info *st, tdb_buf *b)
{
    if (strcmp(st->reason, "import") == 0)
        tdb_buf_addf(b, "stopped at the import of %s: in its init function, before it runs (%s)",
                     st->module, st->library ? st->library : "?");
    else if (strcmp(st->reason, "breakpoint") == 0)
        tdb_buf_addf(b, "stopped at breakpoint %d (%s)", st->bp_number,
                     st->bp_location ? st->bp_location : "?");
    else if (strcmp(st->reason, "signal") == 0)
        tdb_buf_addf(b, "program received %s (%s)", st->signal_name ? st->signal_name : "a signal",
                     st->signal_meaning ? st->signal_meaning : "?");
    else if (strcmp(st->reason, "interrupt") == 0)
        tdb_buf_adds(b, "interrupted");
    else if (strcmp(st->reason, "loaded") == 0 && s->paused_load &&
             st->module == s->paused_load->name)
        tdb_buf_addf(b, "%s is loaded: the preloaded library paused pid %d right after the "
                        "dynamic loader mapped %s and its dependencies, before any of their "
                        "code ran",
                     st->module, (int)s->pid, st->library ? st->library : "?");
    else if (strcmp(st->reason, "loaded") == 0)
        tdb_buf_addf(b, "%s is loaded: the dynamic loader mapped %s; %zu libraries are mapped so "
                        "far, its own dependencies not yet",
                     st->module, st->library ? st->library : "?", s->n_libs);
    else if (strcmp(st->reason, "attached") == 0)
        tdb_buf_addf(b, "attached to pid %d", (int)s->pid);
    else
        tdb_buf_addf(b, "stopped (%s)", st->reason);
}

/* Show a stop: the line saying what happened, the native and Python
 * stacks, around the stop hook's two calls.  *ACTION gets the hook's
 * choice. */
static int present_stop(tdb_session *s, tdb_stop_info *st, tdb_hook_action *action,
                        tdb_error *err)
{
    tdb_buf what = TDB_BUF_INIT;
    json_t *libs = json_array();

    tdb_stackview v;
    *action = TDB_HOOK_DEFAULT;
    if (collect_view(s, 0, &v, err) < 0) {
        json_decref(libs);
        return -1;
    }
    st->frames = tdb_stackview_native_json(&v);
    st->python_frames = view_python_frames(s, &v);
    st->stack = tdb_stackview_json(&v, stack_flags(s));
    for (size_t i = 0; i < s->n_libs; i++)
        json_array_append_new(libs, json_string(s->libs[i].path));
    st->libraries = libs;
    describe_stop(s, st, &what);
    st->message = tdb_buf_str(&what);
    if (s->hook) {
        /* The hook may pass the stop by (a tour skips PLT stubs and
         * repeated hits): nothing is shown. */
        *action = s->hook(s, TDB_HOOK_BEFORE, st, s->hook_data);
        if (*action != TDB_HOOK_DEFAULT)
            goto done;
    }
    if (s->opts.output == TDB_OUTPUT_JSON) {
        json_t *e = json_pack("{s:s, s:s, s:s, s:i}", "event", "stopped", "reason", st->reason,
                              "message", st->message, "pid", (int)s->pid);
        if (st->module)
            json_object_set_new(e, "module", json_string(st->module));
        if (st->library)
            json_object_set_new(e, "library", json_string(st->library));
        if (st->signal_name)
            json_object_set_new(e, "signal", json_string(st->signal_name));
        if (st->bp_number)
            json_object_set_new(e, "breakpoint", json_pack("{s:i, s:s}", "number", st->bp_number,
                                                           "location", st->bp_location ? st->bp_location : ""));
        if (st->thread)
            json_object_set_new(e, "thread", json_integer(st->thread));
        if (strcmp(st->reason, "loaded") == 0)
            json_object_set_new(e, "libraries_mapped", json_integer((json_int_t)s->n_libs));
        json_object_set(e, "frames", st->frames);
        json_object_set_new(e, "python_frames", st->python_frames ? json_incref(st->python_frames)
                                                                  : json_null());
        json_object_set(e, "stack", st->stack);
        json_object_set_new(e, "merge", json_string(tdb_stackview_merge_name(&v)));
        tdb_event_json(e);
    } else {
        fprintf(stdout, "tdebug: %s\n", st->message);
        print_view(s, &v, st->python_frames);
    }
    if (s->hook)
        *action = s->hook(s, TDB_HOOK_AFTER, st, s->hook_data);
done:
    json_decref(st->frames);
    json_decref(st->python_frames);
    json_decref(st->stack);
    json_decref(st->libraries);
    st->frames = st->python_frames = st->stack = st->libraries = NULL;
    tdb_stackview_clear(&v);
    st->message = NULL;
    tdb_buf_free(&what);
    return 0;
}

/* ---- the interactive prompt ---- */

static char *prompt_line;
static int prompt_done;

static void on_line(char *line)
{
    prompt_line = line;
    prompt_done = 1;
    rl_callback_handler_remove();
}

/* Read one command.  Returns a new string, or NULL at end of input or when
 * a terminating signal arrived (s->fatal_signal set). */
static char *read_command(tdb_session *s)
{
    const char *prompt = s->opts.prompt ? s->opts.prompt : "(tdebug) ";
    if (!isatty(0)) {
        /* Not a terminal: plain lines, still interruptible. */
        fputs(prompt, stdout);
        fflush(stdout);
        tdb_buf line = TDB_BUF_INIT;
        for (;;) {
            struct pollfd fds[2] = {{0, POLLIN, 0}, {tdb_signals_fd(), POLLIN, 0}};
            if (poll(fds, 2, -1) < 0 && errno != EINTR)
                return NULL;
            if (fds[1].revents & POLLIN) {
                int sig = tdb_signals_take();
                if (sig == SIGTERM || sig == SIGHUP) {
                    s->fatal_signal = sig;
                    tdb_buf_free(&line);
                    return NULL;
                }
                continue;
            }
            if (!(fds[0].revents & (POLLIN | POLLHUP)))
                continue;
            char c;
            ssize_t n = read(0, &c, 1);
            if (n <= 0) {
                if (line.len)
                    return tdb_buf_detach(&line);
                tdb_buf_free(&line);
                return NULL;
            }
            if (c == '\n')
                return tdb_buf_detach(&line);
            tdb_buf_addc(&line, c);
        }
    }
    rl_catch_signals = 0;
    rl_catch_sigwinch = 1;
    prompt_line = NULL;
    prompt_done = 0;
    rl_callback_handler_install(prompt, on_line);
    while (!prompt_done) {
        struct pollfd fds[2] = {{0, POLLIN, 0}, {tdb_signals_fd(), POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[1].revents & POLLIN) {
            int sig = tdb_signals_take();
            if (sig == SIGINT) {
                /* Ctrl-C at the prompt drops the line, as in gdb. */
                rl_free_line_state();
                rl_callback_sigcleanup();
                rl_replace_line("", 0);
                fputs("^C\n", stdout);
                rl_on_new_line();
                rl_redisplay();
            } else if (sig == SIGTERM || sig == SIGHUP) {
                s->fatal_signal = sig;
                rl_callback_handler_remove();
                return NULL;
            }
            continue;
        }
        if (fds[0].revents & (POLLIN | POLLHUP))
            rl_callback_read_char();
    }
    if (!prompt_done)
        rl_callback_handler_remove();
    if (prompt_line && *prompt_line)
        add_history(prompt_line);
    return prompt_line;
}

static const char prompt_help[] =
    "tdebug commands (anything else goes to gdb as a console command):\n"
    "  continue, c          let the program run to the next stop\n"
    "  step, s / next, n    one source line, into / over calls (gdb's meaning)\n"
    "  finish               run until the current function returns\n"
    "  bt [all]             this thread's stack (all: every thread's), native and Python\n"
    "                       frames merged, CPython's own plumbing folded\n"
    "  bt raw               the same with CPython's plumbing frames kept\n"
    "  symbols REGEX        read the symbols of matching libraries (basic regex)\n"
    "  quit, q              end: kill a program tdebug started, detach from one it attached to\n";

static int is_word(const char *cmd, const char *a, const char *b)
{
    return strcmp(cmd, a) == 0 || (b && strcmp(cmd, b) == 0);
}

static int show_all_threads(tdb_session *s, tdb_error *err);

/* Handle commands at a stop until one resumes the program (returns 1),
 * the user quits (returns 0), or gdb fails (-1). */
static int prompt_loop(tdb_session *s, tdb_error *err)
{
    terminal_to_us(s);
    for (;;) {
        char *line = read_command(s);
        if (!line) {
            if (!s->fatal_signal)
                fputc('\n', stdout);
            s->quit_requested = 1;
            return 0;
        }
        char *cmd = line;
        while (isspace((unsigned char)*cmd))
            cmd++;
        char *end = cmd + strlen(cmd);
        while (end > cmd && isspace((unsigned char)end[-1]))
            *--end = '\0';
        int rc = 2; /* 2: stay at the prompt */
        if (!*cmd) {
            if (s->opts.empty_continues)
                rc = resume(s, "-exec-continue", err) < 0 ? -1 : 1;
        } else if (is_word(cmd, "quit", "q")) {
            s->quit_requested = 1;
            rc = 0;
        } else if (is_word(cmd, "continue", "c")) {
            rc = resume(s, "-exec-continue", err) < 0 ? -1 : 1;
        } else if (is_word(cmd, "help", "h")) {
            fputs(prompt_help, stdout);
        } else if (is_word(cmd, "bt", "backtrace") || is_word(cmd, "where", NULL)) {
            if (show_backtrace(s, err) < 0)
                rc = -1;
        } else if (is_word(cmd, "bt raw", "backtrace raw")) {
            int raw = s->opts.raw;
            s->opts.raw = 1;
            if (show_backtrace(s, err) < 0)
                rc = -1;
            s->opts.raw = raw;
        } else if (is_word(cmd, "bt all", "backtrace all") || is_word(cmd, "thread apply all bt", NULL)) {
            if (show_all_threads(s, err) < 0)
                rc = -1;
        } else if (strncmp(cmd, "symbols ", 8) == 0) {
            tdb_error local = {0};
            if (load_symbols(s, cmd + 8, &local) < 0)
                fprintf(stdout, "tdebug: cannot read symbols for '%s': %s\n", cmd + 8, local.msg);
        } else {
            /* Everything else is gdb's: step, next, finish, print, info... */
            tdb_error local = {0};
            tdb_mi_response *r;
            tdb_buf mi = TDB_BUF_INIT;
            tdb_buf_adds(&mi, "-interpreter-exec console ");
            tdb_mi_quote(&mi, cmd);
            r = tdb_gdb_send(s->gdb, SYMBOLS_TIMEOUT_MS, &local, tdb_buf_str(&mi));
            tdb_buf_free(&mi);
            if (!r) {
                tdb_error_set(err, local.code, "%s", local.msg);
                rc = -1;
            } else {
                fputs(tdb_buf_str(&r->console), stdout);
                if (strcmp(r->result->klass, "error") == 0) {
                    const char *msg = tdb_mi_str(r->result->results, "msg");
                    fprintf(stdout, "%s\n", msg ? msg : "error");
                } else if (strcmp(r->result->klass, "running") == 0) {
                    s->state = RUNNING;
                    drop_stop_readers(s);
                    terminal_to_program(s);
                    rc = 1;
                }
                tdb_mi_response_free(r);
            }
        }
        fflush(stdout);
        free(line);
        if (rc != 2)
            return rc;
    }
}

static const char *gil_word(const tdb_stackview *v)
{
    if (!v->t.py)
        return NULL;
    return v->t.py->gil == TDB_GIL_HELD ? "held" : v->t.py->gil == TDB_GIL_WAITING ? "waiting" : NULL;
}

/* Every thread's merged stack, printed or as one JSON "threads" event;
 * the thread holding the GIL (and those waiting for it) marked. */
static int show_all_threads(tdb_session *s, tdb_error *err)
{
    json_t *res = NULL, *threads = json_array();
    int rc = 0, json = s->opts.output == TDB_OUTPUT_JSON;
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "-thread-info") < 0) {
        json_decref(threads);
        return -1;
    }
    const char *current = tdb_mi_str(res, "current-thread-id");
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(res, "threads"), i, t)
    {
        const char *id = tdb_mi_str(t, "id");
        const char *target = tdb_mi_str(t, "target-id"), *name = tdb_mi_str(t, "name");
        tdb_stackview v;
        /* gdb's py-bt, the fallback, reads the selected thread. */
        if (!id || tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-thread-select %s", id) < 0 ||
            collect_view(s, atoi(id), &v, err) < 0) {
            rc = -1;
            break;
        }
        json_t *py = view_python_frames(s, &v);
        const char *gil = gil_word(&v);
        if (json) {
            json_t *o = json_pack("{s:i, s:s?, s:s?, s:o, s:o, s:o, s:s, s:s?}", "id", atoi(id),
                                  "target_id", target, "name", name, "frames",
                                  tdb_stackview_native_json(&v), "python_frames",
                                  py ? json_incref(py) : json_null(), "stack",
                                  tdb_stackview_json(&v, stack_flags(s)), "merge",
                                  tdb_stackview_merge_name(&v), "gil", gil);
            json_array_append_new(threads, o);
        } else {
            fprintf(stdout, "\nThread %s (%s%s%s)%s:\n", id, target ? target : "?",
                    name ? ", " : "", name ? name : "",
                    !gil ? "" : strcmp(gil, "held") == 0 ? " holds the GIL" : " waits for the GIL");
            print_view(s, &v, py);
        }
        json_decref(py);
        tdb_stackview_clear(&v);
    }
    if (current)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-thread-select %s", current);
    json_decref(res);
    if (rc == 0 && json)
        tdb_event_json(json_pack("{s:s, s:i, s:o}", "event", "threads", "pid", (int)s->pid, "threads",
                              threads));
    else
        json_decref(threads);
    fflush(stdout);
    return rc;
}

/* ---- the event loop ---- */

/* After a stop: present it and decide what happens next.  Returns 1 to
 * keep going (the program was resumed), 0 to end the session, -1 on error. */
static int after_stop(tdb_session *s, tdb_stop_info *st, tdb_error *err)
{
    tdb_hook_action action;
    s->state = STOPPED;
    terminal_to_us(s);
    if (present_stop(s, st, &action, err) < 0)
        return -1;
    if (action == TDB_HOOK_QUIT) {
        s->quit_requested = 1;
        return 0;
    }
    if (action == TDB_HOOK_CONTINUE)
        return resume(s, "-exec-continue", err) < 0 ? -1 : 1;
    if (s->opts.output == TDB_OUTPUT_INTERACTIVE)
        return prompt_loop(s, err);
    if (strcmp(st->reason, "interrupt") == 0) {
        /* In batch modes an interrupt ends the session. */
        s->quit_requested = 1;
        return 0;
    }
    return resume(s, "-exec-continue", err) < 0 ? -1 : 1;
}

static int handle_stopped(tdb_session *s, const tdb_mi_record *r, tdb_error *err)
{
    const json_t *res = r->results;
    const char *reason = tdb_mi_str(res, "reason");
    json_t *frame = json_object_get(res, "frame");
    const char *thread = tdb_mi_str(res, "thread-id");
    tdb_stop_info st = {.reason = "stopped", .thread = thread ? atoi(thread) : 0};

    s->state = STOPPED;
    if (!reason) {
        st.reason = "stopped";
    } else if (strcmp(reason, "exited-normally") == 0 || strcmp(reason, "exited") == 0) {
        const char *code = tdb_mi_str(res, "exit-code");
        s->exit_status = code ? (int)strtol(code, NULL, 8) : 0;
        s->have_exit = 1;
        s->state = EXITED;
        return 0;
    } else if (strcmp(reason, "exited-signalled") == 0) {
        const char *sig = tdb_mi_str(res, "signal-name");
        int n = signal_number(sig);
        s->exit_status = 128 + (n ? n : 0);
        s->have_exit = 1;
        s->signalled = 1;
        s->state = EXITED;
        say(s, "signalled", "program was killed by %s (%s)", sig ? sig : "a signal",
            tdb_mi_str(res, "signal-meaning") ? tdb_mi_str(res, "signal-meaning") : "?");
        return 0;
    } else if (strcmp(reason, "solib-event") == 0) {
        module_watch *loaded = NULL;
        if (handle_library_event(s, json_object_get(res, "added"), &loaded, err) < 0)
            return -1;
        if (!loaded)
            return resume(s, "-exec-continue", err) < 0 ? -1 : 1;
        st.reason = "loaded";
        st.module = loaded->name;
        st.library = loaded->library;
    } else if (strcmp(reason, "breakpoint-hit") == 0) {
        const char *num = tdb_mi_str(res, "bkptno");
        bp_info *b = num ? find_bp(s, atoi(num)) : NULL;
        if (b && b->module) {
            st.reason = "import";
            st.module = b->module;
            st.library = frame ? tdb_mi_str(frame, "from") : NULL;
            for (size_t k = 0; k < s->n_mods; k++)
                if (strcmp(s->mods[k].name, b->module) == 0) {
                    s->mods[k].stopped = 1;
                    if (!st.library) /* a frame with a source line has no from= */
                        st.library = s->mods[k].library;
                }
        } else {
            st.reason = "breakpoint";
            st.bp_number = num ? atoi(num) : 0;
            st.bp_location = b ? b->location : NULL;
        }
        if (b)
            b->hits++;
    } else if (strcmp(reason, "signal-received") == 0) {
        const char *sig = tdb_mi_str(res, "signal-name");
        if (sig && strcmp(sig, "SIGINT") == 0 && s->interrupt_sent) {
            st.reason = "interrupt";
        } else {
            st.reason = "signal";
            st.signal_name = sig;
            st.signal_meaning = tdb_mi_str(res, "signal-meaning");
        }
    } else if (strcmp(reason, "end-stepping-range") == 0 || strcmp(reason, "function-finished") == 0 ||
               strcmp(reason, "location-reached") == 0) {
        st.reason = "step";
    } else {
        st.reason = reason;
    }
    s->interrupt_sent = 0;
    return after_stop(s, &st, err);
}

/* Wait for events while the program runs and react to them.  Returns when
 * the program exited or the session should end (0), or on error (-1). */
static int event_loop(tdb_session *s, tdb_error *err)
{
    tdb_gdb_set_cancel_fd(s->gdb, tdb_signals_fd());
    while (s->state != EXITED && !s->quit_requested) {
        tdb_error local = {0};
        tdb_mi_record *r = tdb_gdb_next_event(s->gdb, -1, &local);
        if (!r) {
            if (local.code == ECANCELED) {
                int sig = tdb_signals_take();
                if (sig == SIGINT && s->state == RUNNING && !s->interrupt_sent) {
                    /* Ctrl-C while tdebug holds the terminal: stop the program. */
                    s->interrupt_sent = 1;
                    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-exec-interrupt") < 0)
                        return -1;
                } else if (sig == SIGTERM || sig == SIGHUP || (sig == SIGINT && s->interrupt_sent)) {
                    s->fatal_signal = sig;
                    return 0;
                }
                continue;
            }
            tdb_error_set(err, local.code, "%s", local.msg);
            return -1;
        }
        int rc = 0;
        switch (r->kind) {
        case TDB_MI_EXEC:
            if (strcmp(r->klass, "stopped") == 0)
                rc = handle_stopped(s, r, err);
            else if (strcmp(r->klass, "running") == 0) {
                s->state = RUNNING;
                terminal_to_program(s);
            }
            break;
        case TDB_MI_NOTIFY:
            handle_notify(s, r);
            break;
        case TDB_MI_CONSOLE:
        case TDB_MI_LOG:
        case TDB_MI_TARGET:
            if (s->opts.verbose)
                fwrite(r->text, 1, r->text_len, stderr);
            break;
        case TDB_MI_ERROR:
            /* Not MI: something wrote on gdb's stdout. Pass it on. */
            fprintf(stderr, "%s\n", r->line);
            break;
        default:
            break;
        }
        tdb_mi_record_free(r);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---- setting up ---- */

tdb_session *tdb_session_new(const tdb_session_options *opts, tdb_error *err)
{
    tdb_session *s = tdb_xcalloc(1, sizeof(*s));
    s->opts = *opts;
    s->py_bt = -1;
    s->saved_fds[0] = s->saved_fds[1] = s->saved_fds[2] = -1;
    terminal_init(s);
    if (install_signals(err) < 0)
        goto fail;

    s->mods = tdb_xcalloc(opts->n_stop_at_import + opts->n_stop_at_load + 1, sizeof(*s->mods));
    for (size_t i = 0; i < opts->n_stop_at_import + opts->n_stop_at_load; i++) {
        int import = i < opts->n_stop_at_import;
        const char *name = import ? opts->stop_at_import[i]
                                  : opts->stop_at_load[i - opts->n_stop_at_import];
        module_watch *m = NULL;
        for (size_t k = 0; k < s->n_mods; k++)
            if (strcmp(s->mods[k].name, name) == 0)
                m = &s->mods[k];
        if (!m) {
            m = &s->mods[s->n_mods];
            m->name = name;
            m->regex = tdb_module_file_regex(name);
            if (regcomp(&m->re, m->regex, REG_NOSUB) != 0) {
                tdb_error_set(err, 0, "cannot compile the file pattern for module '%s'", name);
                free(m->regex);
                goto fail;
            }
            s->n_mods++;
        }
        if (import)
            m->at_import = 1;
        else
            m->at_load = 1;
    }

    /* Keep the program's stdio ours: gdb's stdin/stdout are MI pipes. */
    for (int i = 0; i < 3; i++) {
        int src = i;
        if (opts->output == TDB_OUTPUT_JSON && i == 1)
            src = 2; /* stdout carries only JSON; the program writes to stderr */
        s->saved_fds[i] = fcntl(src, F_DUPFD_CLOEXEC, 10);
        if (s->saved_fds[i] < 0) {
            /* A closed stdio fd: give the program /dev/null there. */
            s->saved_fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (s->saved_fds[i] < 0) {
                tdb_error_errno(err, "cannot open /dev/null");
                goto fail;
            }
        }
    }
    tdb_gdb_options gopts = {
        .stderr_fd = -1,
        .keep_fds = s->saved_fds,
        .n_keep_fds = 3,
        .own_pgrp = 1,
    };
    s->gdb = tdb_gdb_start(&gopts, err);
    if (!s->gdb)
        goto fail;
    tdb_gdb_set_cancel_fd(s->gdb, tdb_signals_fd());
    return s;
fail:
    tdb_session_free(s);
    return NULL;
}

/* The basic regex of libraries whose symbols a --break may need, plus
 * --symbols; NULL when nothing beyond the watched modules is wanted. */
static char *interest_regex(tdb_session *s, const char *script_dir)
{
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < s->opts.n_symbols; i++) {
        if (b.len)
            tdb_buf_adds(&b, "\\|");
        tdb_buf_adds(&b, s->opts.symbols[i]);
    }
    if (s->opts.n_breaks) {
        /* A breakpoint may be in torch/c10 or in the user's own extensions,
         * which live under the working directory or beside the script. */
        if (b.len)
            tdb_buf_adds(&b, "\\|");
        tdb_buf_adds(&b, "torch\\|c10");
        char cwd[4096];
        if (getcwd(cwd, sizeof(cwd)) && strcmp(cwd, "/") != 0) {
            tdb_buf_adds(&b, "\\|^");
            bre_escape(&b, cwd);
            tdb_buf_addc(&b, '/');
        }
        if (script_dir && strcmp(script_dir, "/") != 0) {
            tdb_buf_adds(&b, "\\|^");
            bre_escape(&b, script_dir);
            tdb_buf_addc(&b, '/');
        }
    }
    if (!b.len) {
        tdb_buf_free(&b);
        return NULL;
    }
    return tdb_buf_detach(&b);
}

/* Set up catchpoints and breakpoints before the program runs (or right
 * after attaching). */
static int arm(tdb_session *s, const char *script_dir, tdb_error *err)
{
    tdb_buf re = TDB_BUF_INIT;
    int rc = -1;

    if (!s->opts.all_symbols) {
        s->interest = interest_regex(s, script_dir);
        if (s->interest) {
            if (regcomp(&s->interest_re, s->interest, REG_NOSUB) != 0) {
                tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "invalid --symbols regex in '%s'",
                                   s->interest);
                goto cleanup;
            }
            s->have_interest = 1;
        }
    }
    for (size_t i = 0; i < s->n_mods; i++) {
        if (re.len)
            tdb_buf_adds(&re, "\\|");
        tdb_buf_adds(&re, s->mods[i].regex);
    }
    if (s->have_interest) {
        if (re.len)
            tdb_buf_adds(&re, "\\|");
        tdb_buf_adds(&re, s->interest);
    }
    if (re.len) {
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "catch load %s", tdb_buf_str(&re));
        char *out = tdb_gdb_console(s->gdb, CMD_TIMEOUT_MS, err, tdb_buf_str(&cmd));
        tdb_buf_free(&cmd);
        if (!out)
            goto cleanup;
        free(out);
    }
    for (size_t i = 0; i < s->opts.n_breaks; i++) {
        tdb_buf cmd = TDB_BUF_INIT;
        json_t *res = NULL;
        tdb_buf_adds(&cmd, "-break-insert -f ");
        tdb_mi_quote(&cmd, s->opts.breaks[i]);
        int ok = tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "%s", tdb_buf_str(&cmd));
        tdb_buf_free(&cmd);
        if (ok < 0) {
            tdb_error local = *err;
            tdb_error_clear(err);
            tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "gdb rejects --break '%s': %s",
                               s->opts.breaks[i], local.msg);
            json_decref(res);
            goto cleanup;
        }
        json_t *bkpt = json_object_get(res, "bkpt");
        const char *num = tdb_mi_str(bkpt, "number");
        if (num) {
            add_bp(s, atoi(num), s->opts.breaks[i], NULL);
            update_bp(s, bkpt);
        }
        json_decref(res);
    }
    rc = 0;
cleanup:
    tdb_buf_free(&re);
    return rc;
}

/* What the user asked for and did not get, said once the program ended.
 * Returns 1 when something is missing. */
static int report_missed(tdb_session *s)
{
    int missed = 0;
    for (size_t i = 0; i < s->n_mods; i++) {
        if (s->mods[i].stopped)
            continue;
        missed = 1;
        if (!s->mods[i].seen)
            say(s, "warning", "the program never imported '%s' (--stop-at-import): no library "
                              "matching '%s' was loaded",
                s->mods[i].name, s->mods[i].regex);
        else
            say(s, "warning", "'%s' was loaded but its init never ran before the program ended",
                s->mods[i].name);
    }
    for (size_t i = 0; i < s->n_bps; i++) {
        bp_info *b = &s->bps[i];
        if (b->module || !b->pending)
            continue;
        missed = 1;
        say(s, "warning", "breakpoint '%s' never bound: no library the program loaded defines "
                          "it among those tdebug read symbols for (add --symbols REGEX naming "
                          "its library, or --all-symbols)",
            b->location);
    }
    return missed;
}

/* Kill a program we started, or detach from one we attached to. */
static void finish_target(tdb_session *s)
{
    if (!s->gdb || !tdb_gdb_alive(s->gdb) || s->state == EXITED || s->state == NOT_STARTED)
        return;
    tdb_error err = {0};
    if (s->state == RUNNING) {
        s->interrupt_sent = 1;
        if (tdb_gdb_cmd(s->gdb, 10000, NULL, &err, "-exec-interrupt") == 0) {
            /* Wait for the stop, so kill/detach acts on a stopped target. */
            int64_t deadline = tdb_now_ms() + 10000;
            while (tdb_now_ms() < deadline) {
                tdb_mi_record *r = tdb_gdb_next_event(s->gdb, 1000, &err);
                if (!r)
                    break;
                int stopped = r->kind == TDB_MI_EXEC && strcmp(r->klass, "stopped") == 0;
                tdb_mi_record_free(r);
                if (stopped)
                    break;
            }
        }
    }
    if (s->attached)
        tdb_gdb_cmd(s->gdb, 30000, NULL, &err, "-target-detach");
    else
        tdb_gdb_console(s->gdb, 30000, &err, "kill");
    s->state = EXITED;
}

/* Symbol loading policy, before any symbol file is read: no library's
 * symbols unless asked, and gdb's index cache in tdebug's cache directory
 * (later starts on the same interpreter skip rebuilding its index). */
static int setup_symbols(tdb_session *s, tdb_error *err)
{
    if (!s->opts.all_symbols &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-gdb-set auto-solib-add off") < 0)
        return -1;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char *dir = xdg && *xdg ? tdb_xasprintf("%s/tdebug/gdb-index", xdg)
                : home && *home ? tdb_xasprintf("%s/.cache/tdebug/gdb-index", home) : NULL;
    if (dir) {
        /* Best effort: an unwritable cache only costs time. */
        for (char *p = dir + 1; *p; p++)
            if (*p == '/') {
                *p = '\0';
                mkdir(dir, 0700);
                *p = '/';
            }
        if (mkdir(dir, 0700) == 0 || errno == EEXIST) {
            tdb_buf cmd = TDB_BUF_INIT;
            tdb_buf_adds(&cmd, "set index-cache directory ");
            tdb_buf_adds(&cmd, dir);
            if (console(s, CMD_TIMEOUT_MS, NULL, "%s", tdb_buf_str(&cmd)) == 0)
                console(s, CMD_TIMEOUT_MS, NULL, "set index-cache enabled on");
            tdb_buf_free(&cmd);
        }
        free(dir);
    }
    return 0;
}

/* gdb reads CPython's debug info (python3-dbg: 11 MB without an index)
 * when it loads the interpreter, and its first backtrace expands ceval.c's
 * compile unit: 0.8 s and 1 s measured here, most of a session's cost.
 * tdebug reads Python frames from memory and names the interpreter's
 * functions from its symbol table instead, so unless --cpython-symbols
 * (or --all-symbols) the debug file is hidden from gdb while it loads the
 * interpreter, and shown again for every other library. */
static void hide_cpython_debuginfo(tdb_session *s)
{
    json_t *res = NULL;
    if (s->opts.cpython_symbols || s->opts.all_symbols ||
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-gdb-show debug-file-directory") < 0)
        return;
    const char *dir = tdb_mi_str(res, "value");
    if (dir && console(s, CMD_TIMEOUT_MS, NULL,
                       "set debug-file-directory /nonexistent/tdebug-hides-cpython-debug-info") == 0)
        s->hidden_debug_dir = tdb_xstrdup(dir);
    json_decref(res);
}

static void restore_debuginfo(tdb_session *s)
{
    if (!s->hidden_debug_dir)
        return;
    console(s, CMD_TIMEOUT_MS, NULL, "set debug-file-directory %s", s->hidden_debug_dir);
    free(s->hidden_debug_dir);
    s->hidden_debug_dir = NULL;
}

static char *dir_of(const char *path)
{
    char *copy = realpath(path, NULL);
    if (!copy)
        return NULL;
    char *slash = strrchr(copy, '/');
    if (slash && slash != copy)
        *slash = '\0';
    else if (slash)
        slash[1] = '\0';
    return copy;
}

int tdb_session_run(tdb_session *s, char *const argv[], tdb_error *err)
{
    tdb_buf cmd = TDB_BUF_INIT;
    char *wrapper = NULL, *script_dir = NULL;
    int status = TDB_EXIT_TOOL;

    wrapper = tdb_companion_path("tdebug-exec");
    if (!wrapper) {
        tdb_error_set(err, ENOENT, "cannot find tdebug-exec beside tdebug or in %s (reinstall tdebug)",
                      TDB_LIBDIR);
        goto cleanup;
    }
    /* The script's directory, where the user's own extensions often are. */
    for (int i = 1; argv[i]; i++) {
        if (argv[i][0] != '-') {
            script_dir = dir_of(argv[i]);
            break;
        }
        if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "-m"))
            break;
        if (!strcmp(argv[i], "-X") || !strcmp(argv[i], "-W"))
            i++;
    }

    if (setup_symbols(s, err) < 0)
        goto cleanup;
    /* gdb starts the program through the shell (the only way it keeps
     * arguments with spaces intact) and our wrapper: the program gets
     * tdebug's stdio, its own process group, and dies with gdb. */
    tdb_buf_adds(&cmd, "set exec-wrapper ");
    tdb_shell_quote(&cmd, wrapper);
    tdb_buf_addf(&cmd, " --fds %d,%d,%d --pgrp --pdeathsig --", s->saved_fds[0], s->saved_fds[1],
                 s->saved_fds[2]);
    if (console(s, CMD_TIMEOUT_MS, err, "%s", tdb_buf_str(&cmd)) < 0 ||
        console(s, CMD_TIMEOUT_MS, err, "set startup-with-shell on") < 0)
        goto cleanup;
    tdb_buf_reset(&cmd);
    tdb_buf_adds(&cmd, "-file-exec-and-symbols ");
    tdb_mi_quote(&cmd, argv[0]);
    hide_cpython_debuginfo(s);
    int loaded = tdb_gdb_cmd(s->gdb, SYMBOLS_TIMEOUT_MS, NULL, err, "%s", tdb_buf_str(&cmd));
    restore_debuginfo(s);
    if (loaded < 0)
        goto cleanup;
    tdb_buf_reset(&cmd);
    tdb_buf_adds(&cmd, "set args");
    for (int i = 1; argv[i]; i++) {
        tdb_buf_addc(&cmd, ' ');
        tdb_shell_quote(&cmd, argv[i]);
    }
    if (console(s, CMD_TIMEOUT_MS, err, "%s", tdb_buf_str(&cmd)) < 0)
        goto cleanup;
    if (arm(s, script_dir, err) < 0) {
        status = err->exit_code ? err->exit_code : TDB_EXIT_TOOL;
        goto cleanup;
    }
    if (resume(s, "-exec-run", err) < 0)
        goto cleanup;
    if (event_loop(s, err) < 0)
        goto cleanup;

    if (s->fatal_signal || (s->quit_requested && s->state != EXITED)) {
        finish_target(s);
        status = s->fatal_signal ? 128 + s->fatal_signal
                                 : (s->opts.output == TDB_OUTPUT_INTERACTIVE ? TDB_EXIT_OK : 130);
        tdb_say_killed(s->opts.output,
                       s->fatal_signal ? s->fatal_signal
                       : s->opts.output != TDB_OUTPUT_INTERACTIVE ? SIGINT : 0);
        goto cleanup;
    }
    status = s->exit_status;
    tdb_say_exited(s->opts.output, status, s->signalled);
    if (report_missed(s) && status == 0)
        status = TDB_EXIT_FAIL;
cleanup:
    if (err->set && status == TDB_EXIT_TOOL && err->exit_code)
        status = err->exit_code;
    if (err->set && status == TDB_EXIT_TOOL && s->gdb && !tdb_gdb_alive(s->gdb) && s->pid > 0)
        /* gdb died under us; the program dies with it (tdebug-exec's
         * death signal), but make sure. */
        kill(s->pid, SIGKILL);
    terminal_to_us(s);
    free(wrapper);
    free(script_dir);
    tdb_buf_free(&cmd);
    return status;
}


/* The one-letter state of PID ('R', 'S', 'T', 't', 'Z'...), or 0. */
static char process_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* Read queued notifications (library list, thread groups) after a
 * command, keeping any exec record for the event loop. */
static void drain_notifications(tdb_session *s)
{
    tdb_mi_record *r, *keep = NULL, **tail = &keep;
    while ((r = tdb_gdb_next_event(s->gdb, 0, NULL))) {
        if (r->kind == TDB_MI_NOTIFY) {
            handle_notify(s, r);
            tdb_mi_record_free(r);
        } else if (r->kind == TDB_MI_EXEC) {
            *tail = r;
            tail = &r->next;
        } else {
            tdb_mi_record_free(r);
        }
    }
    /* Put the exec records back, oldest first. */
    tdb_mi_record *rev = NULL;
    while (keep) {
        tdb_mi_record *next = keep->next;
        keep->next = rev;
        rev = keep;
        keep = next;
    }
    while (rev) {
        tdb_mi_record *next = rev->next;
        rev->next = NULL;
        tdb_gdb_unget_event(s->gdb, rev);
        rev = next;
    }
}

/* Wait for the *stopped that follows -target-attach. */
static int wait_attach_stop(tdb_session *s, tdb_error *err)
{
    int64_t deadline = tdb_now_ms() + CMD_TIMEOUT_MS;
    while (tdb_now_ms() < deadline) {
        tdb_error local = {0};
        tdb_mi_record *r = tdb_gdb_next_event(s->gdb, 1000, &local);
        if (!r) {
            if (local.set && local.code != ECANCELED) {
                tdb_error_set(err, local.code, "%s", local.msg);
                return -1;
            }
            if (local.code == ECANCELED) {
                int sig = tdb_signals_take();
                if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
                    s->quit_requested = 1; /* finish attaching, then detach */
            }
            continue;
        }
        int stopped = r->kind == TDB_MI_EXEC && strcmp(r->klass, "stopped") == 0;
        if (r->kind == TDB_MI_NOTIFY)
            handle_notify(s, r);
        tdb_mi_record_free(r);
        if (stopped) {
            s->state = STOPPED;
            return 0;
        }
    }
    tdb_error_set(err, ETIMEDOUT, "gdb attached to pid %d but never reported it stopped",
                  (int)s->pid);
    return -1;
}

/* Put the process back the way it was before tdebug came: stopped if it was
 * stopped (and say so), running otherwise. */
static void restore_process_state(tdb_session *s)
{
    char now = process_state(s->pid);
    if (!now || now == 'Z' || now == 'X')
        return;
    if (s->state_before == 'T') {
        if (now != 'T')
            kill(s->pid, SIGSTOP);
        say(s, "note", "pid %d was stopped (SIGSTOP) before tdebug attached; it is left stopped: "
                       "'kill -CONT %d' resumes it",
            (int)s->pid, (int)s->pid);
    } else if (now == 'T') {
        kill(s->pid, SIGCONT);
    }
}

/* ---- a paused process (tdb_session_attach_paused) ----
 *
 * The preloaded library (lib/) pauses a process at the first point where
 * the loader's list is consistent after mapping torch._C: _C and all its
 * dependencies are mapped, nothing is relocated, no constructor and no
 * PyInit__C has run.  So unlike a plain attach, the module it waits at is
 * mapped but NOT imported: its import stop is armed in the mapped library
 * exactly as arm_import_stop() does when a load catchpoint reports it,
 * then the process is released (a variable write, while gdb holds it
 * stopped) and continued.  The waiting thread holds the loader's lock, so
 * nothing here may make the process call the loader (no gdb 'call').
 */

/* The announced file the process waits at, or NULL. */
static const char *paused_path(tdb_session *s)
{
    return s->paused ? json_string_value(json_object_get(s->paused, "path")) : NULL;
}

/* Is PATH (as gdb names it) the file the process waits at?  gdb and the
 * library both take the name from the link map; compare files too. */
static int paused_at(tdb_session *s, const char *path)
{
    const char *at = paused_path(s);
    struct stat a, b;

    if (!at || !path)
        return 0;
    return strcmp(at, path) == 0 || (stat(at, &a) == 0 && stat(path, &b) == 0 &&
                                     a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

/* The announcement may be a second old: a process whose wait timed out
 * meanwhile went on with its import (its module's init has run, or runs
 * in a moment: either way there is nothing to wait at), and is attached
 * to as any other.  The library's state says (tdebug_preload.h); when it
 * cannot be read (no symbols), trust the announcement.  The cast: gdb
 * finds the symbol but not its debug info in the audit namespace. */
static void check_still_paused(tdb_session *s)
{
    json_t *res = NULL;
    long state;

    if (!json_is_string(json_object_get(s->paused, "release_symbol")))
        return; /* wait_for_debugger(): it waits until it runs under us */
    console(s, SYMBOLS_TIMEOUT_MS, NULL, "sharedlibrary libtdebug-preload");
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL,
                    "-data-evaluate-expression \"*(int *)&%s\"", TDEBUG_PRELOAD_SYM_STATE) == 0 &&
        tdb_parse_long(tdb_mi_str(res, "value"), -1000, 1000, &state) == 0 &&
        state != TDEBUG_STATE_WAITING) {
        say(s, "warning", "pid %d stopped waiting before tdebug attached (%s): its import of "
                          "%s went on without tdebug",
            (int)s->pid,
            state == TDEBUG_STATE_TIMED_OUT ? "its wait timed out" : "something else released it",
            paused_path(s) ? paused_path(s) : "the module");
        json_decref(s->paused);
        s->paused = NULL;
    }
    json_decref(res);
}

/* Module M's file is the one the process waits at: stop in its PyInit
 * (--stop-at-import) or right here (--stop-at-load). */
static int arm_paused_module(tdb_session *s, module_watch *m, tdb_error *err)
{
    if (m->at_import && arm_import_stop(s, m, m->library, err) < 0)
        return -1;
    if (m->at_load && !s->paused_load)
        s->paused_load = m;
    if (!m->at_import)
        m->stopped = 1;
    return 0;
}

/* Write the release (tdb_preload_release_commands()); the process goes on
 * when gdb continues or detaches.  A process paused by
 * tdebug.wait_for_debugger() has nothing to write: running under gdb
 * releases it. */
static int release_paused(tdb_session *s, tdb_error *err)
{
    char **cmds = tdb_preload_release_commands(s->paused, 0);
    int rc = 0;

    for (char **c = cmds; *c && rc == 0; c++)
        if (console(s, CMD_TIMEOUT_MS, err, "%s", *c) < 0)
            rc = -1;
    if (rc == 0 && cmds[0])
        s->paused_released = 1;
    tdb_strv_free(cmds);
    return rc;
}

/* Before gdb detaches, whatever ended the session: a paused process is
 * never left waiting on tdebug.  Its release is written if it was not
 * yet; one from wait_for_debugger() that never ran under gdb is let run
 * for a moment, long enough for its 20 ms poll to see the tracer. */
static void release_before_detach(tdb_session *s)
{
    if (s->paused_released || !s->gdb || !tdb_gdb_alive(s->gdb) || s->state != STOPPED)
        return;
    if (release_paused(s, NULL) < 0 || s->paused_released)
        return;
    if (resume(s, "-exec-continue", NULL) < 0)
        return;
    int64_t deadline = tdb_now_ms() + 500;
    while (s->state == RUNNING) {
        int64_t left = deadline - tdb_now_ms();
        tdb_mi_record *r = left > 0 ? tdb_gdb_next_event(s->gdb, (int)left, NULL) : NULL;
        if (!r)
            break; /* finish_target() interrupts it */
        if (r->kind == TDB_MI_EXEC && strcmp(r->klass, "stopped") == 0) {
            const char *why = tdb_mi_str(r->results, "reason");
            s->state = why && strncmp(why, "exited", 6) == 0 ? EXITED : STOPPED;
        }
        tdb_mi_record_free(r);
    }
}

int tdb_session_attach(tdb_session *s, pid_t pid, tdb_error *err)
{
    int status = TDB_EXIT_TOOL;
    int have_stops = s->n_mods || s->opts.n_breaks;
    int already = 0;

    s->attached = 1;
    s->pid = pid;
    s->state_before = process_state(pid);
    if (setup_symbols(s, err) < 0)
        goto cleanup;
    hide_cpython_debuginfo(s);
    int attached = tdb_gdb_cmd(s->gdb, SYMBOLS_TIMEOUT_MS, NULL, err, "-target-attach %d", (int)pid);
    restore_debuginfo(s);
    if (attached < 0) {
        tdb_error local = *err;
        tdb_error_clear(err);
        /* gdb may say it in two lines ("warning: ... already traced by
         * ...", "ptrace: Operation not permitted."): one line. */
        for (char *nl; (nl = strchr(local.msg, '\n'));)
            *nl = nl[1] ? ' ' : '\0';
        /* gdb says "ptrace: Operation not permitted." / "No such process." */
        int code = strstr(local.msg, "not permitted") ? EPERM
                   : strstr(local.msg, "No such process") ? ESRCH : local.code;
        tdb_error_set_exit(err, TDB_EXIT_FAIL, code,
                           "cannot attach to pid %d: %s (see 'tdebug doctor')", (int)pid, local.msg);
        goto cleanup;
    }
    s->state = STOPPED;
    if (wait_attach_stop(s, err) < 0)
        goto cleanup;
    drain_notifications(s);
    if (s->paused)
        check_still_paused(s);
    /* Which requested modules are already initialised: their PyInit ran
     * long ago, so a breakpoint on it would resolve and never fire. */
    for (size_t i = 0; i < s->n_mods; i++) {
        module_watch *m = &s->mods[i];
        for (size_t k = 0; k < s->n_libs; k++) {
            if (regexec(&m->re, s->libs[k].path, 0, NULL, 0) == 0) {
                m->seen = 1;
                m->library = tdb_xstrdup(s->libs[k].path);
                if (paused_at(s, s->libs[k].path)) {
                    if (arm_paused_module(s, m, err) < 0)
                        goto cleanup;
                    break;
                }
                already++;
                say(s, "warning", "'%s' is already %s in pid %d (%s): %s before tdebug attached, "
                                  "so there is nothing to stop at; use --break on a function it "
                                  "runs, or start the program with 'tdebug run'",
                    m->name, m->at_import ? "imported" : "loaded", (int)pid, s->libs[k].path,
                    m->at_import ? "its init ran" : "it was mapped");
                break;
            }
        }
    }
    if (arm(s, NULL, err) < 0) {
        status = err->exit_code ? err->exit_code : TDB_EXIT_TOOL;
        goto cleanup;
    }
    if (s->have_interest && load_symbols(s, s->interest, err) < 0)
        goto cleanup;
    if (s->paused && release_paused(s, err) < 0)
        goto cleanup;

    if (s->quit_requested) {
        status = 130;
        goto cleanup;
    }
    if (have_stops && (size_t)already == s->n_mods && s->opts.n_breaks == 0) {
        status = TDB_EXIT_FAIL; /* nothing left that could stop */
        goto cleanup;
    }
    if (!have_stops && s->opts.output != TDB_OUTPUT_INTERACTIVE) {
        /* A snapshot: every thread's stack, then detach. */
        if (s->opts.output == TDB_OUTPUT_BATCH)
            fprintf(stdout, "tdebug: attached to pid %d\n", (int)pid);
        status = show_all_threads(s, err) < 0 ? TDB_EXIT_TOOL : TDB_EXIT_OK;
        goto cleanup;
    }
    if (s->paused_load) {
        /* Where it waits is the --stop-at-load stop itself. */
        tdb_stop_info st = {.reason = "loaded", .module = s->paused_load->name,
                            .library = s->paused_load->library};
        if (after_stop(s, &st, err) < 0)
            goto cleanup;
    } else if (s->opts.output == TDB_OUTPUT_INTERACTIVE && !(s->paused && have_stops)) {
        tdb_stop_info st = {.reason = "attached"};
        if (after_stop(s, &st, err) < 0)
            goto cleanup;
    } else if (resume(s, "-exec-continue", err) < 0) {
        goto cleanup;
    }
    if (event_loop(s, err) < 0)
        goto cleanup;
    if (s->state == EXITED) {
        if (!s->opts.started_by_tdebug)
            say(s, "exited", "pid %d exited with status %d", (int)pid, s->exit_status);
        status = report_missed(s) ? TDB_EXIT_FAIL : TDB_EXIT_OK;
    } else if (s->fatal_signal) {
        status = 128 + s->fatal_signal;
    } else {
        status = s->quit_requested && s->opts.output != TDB_OUTPUT_INTERACTIVE ? 130 : TDB_EXIT_OK;
    }
cleanup:
    if (s->paused)
        release_before_detach(s);
    if (s->gdb && tdb_gdb_alive(s->gdb) && s->state != NOT_STARTED && s->state != EXITED) {
        finish_target(s); /* detaches */
        say(s, "detached", "detached from pid %d", (int)pid);
    }
    if (s->state != NOT_STARTED)
        restore_process_state(s);
    if (err->set && status == TDB_EXIT_TOOL && err->exit_code)
        status = err->exit_code;
    return status;
}

int tdb_session_attach_paused(tdb_session *s, pid_t pid, const json_t *announcement,
                              tdb_error *err)
{
    json_decref(s->paused);
    s->paused = json_deep_copy(announcement);
    return tdb_session_attach(s, pid, err);
}

void tdb_session_set_stop_hook(tdb_session *s, tdb_stop_hook hook, void *data)
{
    s->hook = hook;
    s->hook_data = data;
}

int tdb_session_program_ended(const tdb_session *s)
{
    return s->have_exit;
}

void tdb_session_free(tdb_session *s)
{
    if (!s)
        return;
    finish_target(s);
    drop_stop_readers(s);
    tdb_py_close(s->py);
    tdb_symcache_free(s->symcache);
    free(s->hidden_debug_dir);
    tdb_gdb_close(s->gdb, 5000);
    for (size_t i = 0; i < s->n_libs; i++)
        free(s->libs[i].path);
    free(s->libs);
    for (size_t i = 0; i < s->n_bps; i++) {
        free(s->bps[i].location);
        free(s->bps[i].module);
    }
    free(s->bps);
    for (size_t i = 0; i < s->n_mods; i++) {
        free(s->mods[i].regex);
        free(s->mods[i].library);
        regfree(&s->mods[i].re);
    }
    free(s->mods);
    if (s->have_interest)
        regfree(&s->interest_re);
    free(s->interest);
    json_decref(s->paused);
    for (int i = 0; i < 3; i++)
        if (s->saved_fds[i] >= 0)
            close(s->saved_fds[i]);
    free(s);
}
