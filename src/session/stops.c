/*
 * session/stops.c: gdb's records, and the stops a front-end presents (see
 * session/internal.h).  tdb_session_wait() reads gdb's records; a *stopped
 * record becomes a tdb_stop_info in tdb_session_handle_stopped() (one
 * branch a reason: a library the core watches, a breakpoint, the Python
 * hook's stop, a signal, a step), then tdb_session_record_stop() reads its
 * stack, and wait returns TDB_WAIT_STOPPED; stops the core handles itself
 * (a load it watches, a PLT stub, a throw of another class) never come out.
 */
#include "session/internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

const tdb_stop_words tdb_stop_reasons[TDB_STOP_N_REASONS] = {
    [TDB_STOP_IMPORT] = {"import", "entry"},
    [TDB_STOP_LOADED] = {"loaded", "entry"},
    [TDB_STOP_ATTACHED] = {"attached", "entry"},
    [TDB_STOP_BREAKPOINT] = {"breakpoint", "breakpoint"},
    [TDB_STOP_PYTHON_BREAKPOINT] = {"python-breakpoint", "breakpoint"},
    [TDB_STOP_THROW] = {"throw", "exception"},
    [TDB_STOP_PYTHON_EXCEPTION] = {"python-exception", "exception"},
    [TDB_STOP_SIGNAL] = {"signal", "exception"},
    [TDB_STOP_INTERRUPT] = {"interrupt", "pause"},
    [TDB_STOP_STEP] = {"step", "step"},
    [TDB_STOP_NEXT] = {"next", "step"},
    [TDB_STOP_FINISH] = {"finish", "step"},
    [TDB_STOP_STEPI] = {"stepi", "step"},
    [TDB_STOP_NEXTI] = {"nexti", "step"},
    [TDB_STOP_UNTIL] = {"until", "step"},
    [TDB_STOP_WATCHPOINT] = {"watchpoint", "data breakpoint"},
    [TDB_STOP_STOPPED] = {"stopped", "stopped"},
    [TDB_STOP_OTHER] = {NULL, NULL}, /* gdb's own word */
};

const char *tdb_stop_word(const tdb_stop_info *st)
{
    const char *w = tdb_stop_reasons[st->reason].word;
    return w ? w : st->gdb_reason ? st->gdb_reason : "stopped";
}

const char *tdb_stop_dap_reason(const tdb_stop_info *st)
{
    const char *w = tdb_stop_reasons[st->reason].dap;
    return w ? w : tdb_stop_word(st);
}

void tdb_session_note_library(tdb_session *s, const json_t *lib)
{
    const char *path = tdb_mi_str(lib, "target-name");
    if (!path)
        return;
    lib_info *l = tdb_session_note_lib(s, path);
    const char *loaded = tdb_mi_str(lib, "symbols-loaded");
    if (loaded && strcmp(loaded, "1") == 0)
        l->symbols = 1;
    json_t *ranges = json_object_get(lib, "ranges");
    json_t *first = json_array_get(ranges, 0);
    unsigned long lo = parse_addr(tdb_mi_str(first, "from"));
    unsigned long hi = parse_addr(tdb_mi_str(first, "to"));
    if (first && hi > lo) { /* none before gdb has read the file */
        l->lo = lo;
        l->hi = hi;
    }
}

void tdb_session_handle_notify(tdb_session *s, const tdb_mi_record *r)
{
    if (strcmp(r->klass, "library-loaded") == 0) {
        tdb_session_note_library(s, r->results);
    } else if (strcmp(r->klass, "breakpoint-created") == 0) {
        json_t *bkpt = json_object_get(r->results, "bkpt");
        const char *type = tdb_mi_str(bkpt, "catch-type");
        if (type && strcmp(type, "load") == 0 && tdb_mi_str(bkpt, "number"))
            s->catch_load_bp = atoi(tdb_mi_str(bkpt, "number"));
    } else if (strcmp(r->klass, "breakpoint-modified") == 0) {
        json_t *bkpt = json_object_get(r->results, "bkpt");
        if (json_is_object(bkpt))
            tdb_session_update_bp(s, bkpt);
    } else if (strcmp(r->klass, "thread-group-started") == 0) {
        const char *pid = tdb_mi_str(r->results, "pid");
        if (pid && !s->attached) {
            s->pid = (pid_t)atoi(pid);
            if (s->fe.program_started)
                s->fe.program_started(s->fe.data, s->pid);
        }
    } else if (strcmp(r->klass, "thread-group-exited") == 0) {
        const char *code = tdb_mi_str(r->results, "exit-code");
        if (code && !s->have_exit) {
            /* gdb prints the exit code in octal ("03", "012"). */
            s->exit_status = (int)strtol(code, NULL, 8);
            s->have_exit = 1;
        }
    }
}

/* Read queued notifications (library list, breakpoints, thread groups)
 * after a command, keeping any exec record for the event loop. */
void tdb_session_drain(tdb_session *s)
{
    tdb_mi_record *r, *keep = NULL, **tail = &keep;
    while ((r = tdb_gdb_next_event(s->gdb, 0, NULL))) {
        if (r->kind == TDB_MI_NOTIFY) {
            tdb_session_handle_notify(s, r);
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

/* The fault address of the signal the current thread got, or NULL. */
static void fault_address(tdb_session *s, const char *sig, tdb_buf *out)
{
    static const char *const faults[] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP"};
    int is_fault = 0;
    for (size_t i = 0; sig && i < sizeof(faults) / sizeof(faults[0]); i++)
        is_fault |= strcmp(sig, faults[i]) == 0;
    json_t *res = NULL;
    if (is_fault &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL,
                    "-data-evaluate-expression \"(unsigned long)$_siginfo._sifields._sigfault.si_addr\"") == 0) {
        const char *v = tdb_mi_str(res, "value");
        if (v)
            tdb_buf_addf(out, "0x%lx", strtoul(v, NULL, 0));
    }
    json_decref(res);
}

/* A copy of STR that lives as long as the current stop. */
static const char *stop_keep(tdb_session *s, const char *str)
{
    if (!str)
        return NULL;
    char *copy = tdb_xstrdup(str);
    tdb_ptrs_push(&s->stop_strs, &s->n_stop_strs, copy);
    return copy;
}

/* Is the top of the stop's stack, as a user sees it, Python code: the
 * first Python frame above only the interpreter's own frames
 * (s->python_top, -1 when not). */
static void python_top(tdb_session *s)
{
    unsigned flags = tdb_session_stack_flags(s);
    size_t n = tdb_stackview_count(&s->stop_view, flags);
    s->python_top = -1;
    for (size_t i = 0; i < n; i++) {
        tdb_view_frame f;
        if (tdb_stackview_frame_at(&s->stop_view, flags, i, &f) < 0)
            break;
        if (f.kind == TDB_FRAME_PYTHON) {
            s->python_top = (int)i;
            break;
        }
        if (!f.native->in_interp)
            break;
    }
}

/* A copy of gdb's frame tuple FRAME with frame 0's arguments as gdb lists
 * them now.  New reference. */
static json_t *frame_with_args(tdb_session *s, const json_t *frame)
{
    json_t *res = NULL, *out = json_deep_copy(frame);
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-stack-list-arguments 2 0 0") == 0) {
        json_t *f0 = json_array_get(json_object_get(res, "stack-args"), 0);
        json_t *args = json_object_get(f0, "args");
        if (args)
            json_object_set(out, "args", args);
    }
    json_decref(res);
    return out;
}

/* Did gdb's printers show an argument of FRAME without the tensor layout
 * (lib/gdb/tdebug_printers.py's words)? */
static int lacks_layout(const json_t *frame)
{
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(frame, "args"), i, a)
    {
        const char *v = tdb_mi_str(a, "value");
        if (v && strstr(v, "no tensor layout yet"))
            return 1;
    }
    return 0;
}

/* The stop's whole stack: gdb's frames merged with the Python ones, and
 * the frame the stop reads as when its top is Python (s->python_top).
 * Returns 1 when the stop reads as a Python line, 0 when not, -1 on
 * error. */
static int read_stack(tdb_session *s, tdb_error *err)
{
    tdb_stop_info *out = &s->stop;
    if (tdb_session_collect_view(s, 0, &s->stop_view, err) < 0)
        return -1;
    s->have_stop_view = 1;
    out->view = &s->stop_view;
    python_top(s);
    if (s->python_top > 0 && (out->compact || s->hook.stop_is_hook)) {
        /* A step or finish back into CPython (slot_nb_add, PyNumber_Add
         * over the Python line): that machinery is plumbing too; the stop
         * is the Python line. */
        tdb_stackview_fold_above(&s->stop_view, tdb_session_stack_flags(s), (size_t)s->python_top);
        s->python_top = 0;
    }
    json_decref(out->frames);
    json_decref(out->python_frames);
    json_decref(out->stack);
    out->frames = tdb_stackview_native_json(&s->stop_view);
    out->python_frames = tdb_session_view_python(s, &s->stop_view);
    out->stack = tdb_stackview_json(&s->stop_view, tdb_session_stack_flags(s));
    out->partial = 0;
    if (s->python_top >= 0 && (out->compact || s->hook.stop_is_hook)) {
        /* A stop whose top is Python reads as a Python line. */
        out->python_top = s->python_top;
        s->selected = s->python_top;
        return 1;
    }
    out->python_top = -1; /* a partial stop said 0 */
    s->selected = 0;
    return 0;
}

/* A step or next between Python lines, or a finish back to one, ended in
 * the hook: the stop is the Python line the hook reports, and the thread's
 * Python frames, read from memory, are all its text needs.  gdb's frames
 * (-stack-list-frames, about 5 ms at each such stop) are read when
 * something asks for the stack (tdb_session_stop_complete()).  1 when the
 * stop is that partial one, 0 when it needs the whole stack. */
static int python_line_stop(tdb_session *s)
{
    tdb_stop_info *out = &s->stop;
    pid_t lwp = tdb_session_python_stop_lwp(s);
    if (!s->hook.stop_is_hook || !out->compact || lwp <= 0)
        return 0;
    /* the Python frames alone: no memory map, no symbolizer (which reads
     * every library's headers) */
    if (!tdb_session_stop_snapshot(s))
        return 0;
    json_t *none = json_array();
    tdb_stackview_init(&s->stop_view, s->pid, lwp, none, s->have_maps ? &s->maps : NULL, NULL,
                       s->py, s->snap);
    json_decref(none);
    tdb_view_frame f;
    if (tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s), 0, &f) < 0 ||
        f.kind != TDB_FRAME_PYTHON || f.py->addr != tdb_session_python_stop_frame(s)) {
        /* not the frame the hook reports: gdb's view says what it is */
        tdb_stackview_clear(&s->stop_view);
        return 0;
    }
    s->have_stop_view = 1;
    out->view = &s->stop_view;
    out->python_frames = tdb_stackview_python_json(&s->stop_view);
    out->stack = tdb_stackview_json(&s->stop_view, tdb_session_stack_flags(s));
    out->partial = 1;
    out->python_top = s->python_top = 0;
    s->selected = 0;
    return 1;
}

int tdb_session_stop_complete(tdb_session *s, tdb_error *err)
{
    if (tdb_session_need_stop(s, err) < 0)
        return -1;
    if (!s->stop.partial)
        return 0;
    tdb_stackview_clear(&s->stop_view);
    s->have_stop_view = 0;
    s->stop.view = NULL;
    return read_stack(s, err) < 0 ? -1 : 0;
}

const tdb_stop_info *tdb_session_stop_full(tdb_session *s, tdb_error *err)
{
    if (tdb_session_stop_complete(s, err) < 0)
        return NULL;
    return &s->stop;
}

/* Record the stop described by ST (its strings are copied) and FRAME (the
 * *stopped record's frame, may be NULL): the stack, and the frame the stop
 * reads as (a Python line, or gdb's tuple for the top frame). */
int tdb_session_record_stop(tdb_session *s, const tdb_stop_info *st, const json_t *frame,
                            tdb_error *err)
{
    int hook_stop = s->hook.stop_is_hook;
    tdb_session_note_running(s); /* drop any earlier stop's state */
    s->hook.stop_is_hook = hook_stop;
    s->state = STOPPED;
    s->selected = 0;
    tdb_stop_info *out = &s->stop;
    memset(out, 0, sizeof(*out));
    out->reason = st->reason;
    out->gdb_reason = stop_keep(s, st->gdb_reason);
    out->module = stop_keep(s, st->module);
    out->library = stop_keep(s, st->library);
    out->signal_name = stop_keep(s, st->signal_name);
    out->signal_meaning = stop_keep(s, st->signal_meaning);
    out->fault_address = stop_keep(s, st->fault_address);
    out->bp_number = st->bp_number;
    out->bp_location = stop_keep(s, st->bp_location);
    out->condition_error = stop_keep(s, st->condition_error);
    out->thread = st->thread;
    out->pid = s->pid;
    out->paused = st->reason == TDB_STOP_LOADED && s->paused_load && st->module &&
                  strcmp(st->module, s->paused_load->name) == 0;
    out->native_what = s->hook.native_what[0] ? stop_keep(s, s->hook.native_what) : NULL;
    out->return_value = stop_keep(s, st->return_value);
    out->compact = st->compact;
    out->exception = json_incref(st->exception);
    out->python_top = -1;
    json_t *libs = json_array();
    for (size_t i = 0; i < s->n_libs; i++)
        json_array_append_new(libs, json_string(s->libs[i].path));
    out->libraries = libs;
    s->have_stop = 1;
    if (python_line_stop(s))
        return 0;
    /* A prompt or commands at a native stop need gdb's own view of the
     * libraries, and a crash's stack is worth its source lines (the
     * program is dying: speed no longer counts): a light session becomes
     * an ordinary one here.  At a Python line the prompt's commands are
     * the hook's and memory's; one that needs gdb's view upgrades then. */
    if (s->light.on &&
        ((s->opts.gdb_view_at_stops && !s->hook.stop_is_hook) || st->reason == TDB_STOP_SIGNAL) &&
        tdb_session_light_upgrade(s, err) < 0)
        goto failed;
    int rc = read_stack(s, err);
    if (rc < 0)
        goto failed;
    if (rc == 1)
        return 0;
    const json_t *top_mi = json_array_get(s->stop_view.mi, 0);
    if (frame && s->light.synth && top_mi)
        frame = top_mi; /* tdebug's own frame names the stop: gdb knows no library */
    if (frame && !tdb_mi_str(frame, "line") && top_mi && tdb_mi_str(top_mi, "line"))
        /* The library's symbols were read for the stack after gdb reported
         * the stop: its frame now has a source line, and arguments. */
        s->stop_frame = frame_with_args(s, top_mi);
    else if (frame)
        s->stop_frame = json_incref((json_t *)frame);
    if (s->stop_frame && lacks_layout(s->stop_frame) && tdb_session_printers_prepare(s) == 1) {
        /* gdb's printers had no tensor layout for an argument: now they
         * have (session/values.c). */
        json_t *again = frame_with_args(s, s->stop_frame);
        json_decref(s->stop_frame);
        s->stop_frame = again;
    }
    out->frame = s->stop_frame;
    return 0;
failed:
    /* no stop to present: what it holds goes now */
    json_decref(out->frames);
    json_decref(out->python_frames);
    json_decref(out->stack);
    json_decref(out->libraries);
    json_decref(out->exception);
    memset(out, 0, sizeof(*out));
    s->have_stop = 0;
    return -1;
}

/* A stop the core handles itself (a library it watches, a breakpoint's
 * PLT stub, a throw of a class nobody asked for): the program goes on,
 * unless the front-end interrupted it meanwhile, which makes this stop
 * that interrupt.  0 (it runs), 1 (ST is the interrupt), -1 on error. */
static int go_on(tdb_session *s, tdb_stop_info *st, tdb_error *err)
{
    if (!s->interrupt_sent)
        return tdb_session_resume_mi(s, "-exec-continue", err) < 0 ? -1 : 0;
    st->reason = TDB_STOP_INTERRUPT;
    return 1;
}

/* The program ended: 0. */
static int ended(tdb_session *s, const json_t *res, const char *reason)
{
    s->have_exit = 1;
    s->state = EXITED;
    s->interrupt_sent = 0;
    if (strcmp(reason, "exited-signalled") != 0) {
        const char *code = tdb_mi_str(res, "exit-code");
        s->exit_status = code ? (int)strtol(code, NULL, 8) : 0;
        return 0;
    }
    const char *sig = tdb_mi_str(res, "signal-name");
    int n = signal_number(sig);
    s->exit_status = 128 + (n ? n : 0);
    s->signalled = 1;
    say(s, "signalled", "program was killed by %s (%s)", sig ? sig : "a signal",
        tdb_mi_str(res, "signal-meaning") ? tdb_mi_str(res, "signal-meaning") : "?");
    return 0;
}

/* The load catchpoint: a --stop-at-load module's stop, or on. */
static int library_stop(tdb_session *s, const json_t *res, tdb_stop_info *st, tdb_error *err)
{
    module_watch *loaded = NULL;
    if (tdb_session_library_event(s, json_object_get(res, "added"), &loaded, err) < 0)
        return -1;
    if (!loaded)
        return go_on(s, st, err);
    st->reason = TDB_STOP_LOADED;
    st->module = loaded->name;
    st->library = loaded->library;
    return 1;
}

/* A breakpoint of tdebug's (not the hook's): an import stop, a
 * catchpoint's throw, or the user's breakpoint. */
static int breakpoint_stop(tdb_session *s, int bkptno, const json_t *frame, tdb_stop_info *st,
                           tdb_error *err)
{
    bp_info *b = bkptno ? tdb_session_find_bp(s, bkptno) : NULL;
    if (b && b->kind == BP_IMPORT) {
        st->reason = TDB_STOP_IMPORT;
        st->module = b->module;
        st->library = frame ? tdb_mi_str(frame, "from") : NULL;
        for (size_t k = 0; k < s->n_mods; k++)
            if (strcmp(s->mods[k].name, b->module) == 0) {
                s->mods[k].stopped = 1;
                if (!st->library) /* a frame with a source line has no from= */
                    st->library = s->mods[k].library;
            }
        return 1;
    }
    /* Hits are counted by gdb (=breakpoint-modified times="N"); those of
     * each location by tdebug. */
    unsigned long pc = parse_addr(frame ? tdb_mi_str(frame, "addr") : NULL);
    for (size_t k = 0; b && k < b->n_locs; k++)
        if (b->locs[k].addr == pc)
            b->locs[k].hits++;
    if (b && b->kind == BP_NATIVE && !tdb_session_native_hit_stops(s, b))
        return go_on(s, st, err);
    if (b && b->silent) {
        /* gdb names one catchpoint of those on __cxa_throw: the user's
         * own, when there is one, decides (session/pyexc.c) */
        for (size_t k = 0; k < s->n_bps; k++)
            if (s->bps[k].kind == BP_CATCH && !s->bps[k].silent && s->bps[k].enabled) {
                b = &s->bps[k];
                break;
            }
    }
    st->reason = b && b->kind == BP_CATCH ? TDB_STOP_THROW : TDB_STOP_BREAKPOINT;
    st->bp_number = b ? b->id : bkptno;
    st->bp_location = b ? b->location : NULL;
    if (st->reason != TDB_STOP_THROW)
        return 1;
    /* The exception; a class the catchpoint does not want goes on. */
    int keep = tdb_session_throw_stop(s, b, &st->exception, err);
    if (keep == 1 && b->silent) {
        tdb_session_c10_throw_seen(s, st->exception);
        st->exception = NULL;
        return go_on(s, st, err);
    }
    if (keep != 0)
        return keep;
    b->passed++;
    return go_on(s, st, err);
}

/* A watchpoint's stop: which one, and the value before and after (in
 * ST's return_value's place); one whose frame returned is gone. */
static void watch_stop(tdb_session *s, const json_t *res, const char *reason, tdb_stop_info *st)
{
    const json_t *wpt = json_object_get(res, "wpt");
    const char *num = tdb_mi_str(wpt, "number") ?: tdb_mi_str(res, "wpnum");
    bp_info *b = num ? tdb_session_find_bp(s, atoi(num)) : NULL;
    st->reason = TDB_STOP_WATCHPOINT;
    st->bp_number = b ? b->id : num ? atoi(num) : 0;
    st->bp_location = b ? b->location : NULL;
    if (b)
        b->hits++;
    if (strcmp(reason, "watchpoint-scope") == 0 && b) {
        b->number = 0; /* gdb deleted it */
        tdb_session_bp_delete(s, b);
        st->bp_location = NULL;
    }
}

/* A signal: the preloaded library's trap in a light session (on), the
 * front-end's interrupt, or the program's. */
static int signal_stop(tdb_session *s, const json_t *res, tdb_stop_info *st, tdb_error *err)
{
    const char *sig = tdb_mi_str(res, "signal-name");
    int trap = sig && strcmp(sig, "SIGTRAP") == 0 ? tdb_session_light_trap(s, err) : 0;
    if (trap < 0)
        return -1;
    if (trap)
        return go_on(s, st, err);
    if (sig && strcmp(sig, "SIGINT") == 0 && s->interrupt_sent) {
        st->reason = TDB_STOP_INTERRUPT;
        return 1;
    }
    st->reason = TDB_STOP_SIGNAL;
    st->signal_name = sig;
    st->signal_meaning = tdb_mi_str(res, "signal-meaning");
    return 1;
}

/* Handle a *stopped record.  Returns 1 when it is a stop to present
 * (s->stop), 0 when the core dealt with it (the program runs again or
 * ended), -1 on error. */
int tdb_session_handle_stopped(tdb_session *s, const tdb_mi_record *r, tdb_error *err)
{
    const json_t *res = r->results;
    const char *reason = tdb_mi_str(res, "reason");
    json_t *frame = json_object_get(res, "frame");
    const char *thread = tdb_mi_str(res, "thread-id"), *num = tdb_mi_str(res, "bkptno");
    tdb_stop_info st = {.reason = TDB_STOP_STOPPED, .thread = thread ? atoi(thread) : 0};
    int last = s->last_resume, rc = 1;

    if (s->stale_sigint) {
        s->stale_sigint = 0;
        const char *sig = tdb_mi_str(res, "signal-name");
        if (reason && !strcmp(reason, "signal-received") && sig && !strcmp(sig, "SIGINT") &&
            !s->interrupt_sent && s->last_mi[0]) {
            /* The SIGINT of an interrupt that another stop overtook (a
             * front-end stopped the program to set a breakpoint, and a
             * breakpoint came first): it arrives as the program resumes,
             * before it ran an instruction, so the resume is sent again
             * (a step stays that step). */
            char again[sizeof(s->last_mi)];
            memcpy(again, s->last_mi, sizeof(again));
            if (tdb_session_resume_mi(s, again, err) < 0)
                return -1;
            return 0;
        }
    }
    s->state = STOPPED;
    s->last_resume = -1;
    tdb_session_python_drain_log(s); /* what log points wrote comes first */
    if (s->step.finish_rest && last == TDB_RESUME_FINISH &&
        (!reason || strcmp(reason, "function-finished") == 0)) {
        /* The selected frame returned into the glue (gdb 13 gives no
         * reason when that is a function it has no symbol for): keep its
         * value, then out through the glue to the Python line. */
        int level = s->step.finish_rest - 1;
        const char *var = tdb_mi_str(res, "gdb-result-var"), *val = tdb_mi_str(res, "return-value");
        s->step.finish_rest = 0;
        free(s->step.finish_value);
        s->step.finish_value = val ? tdb_xasprintf("%s = %s", var ? var : "Value returned", val)
                                   : NULL;
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-exec-finish --thread %d --frame %d",
                        st.thread, level) < 0)
            return -1;
        tdb_session_note_running(s);
        s->last_resume = TDB_RESUME_FINISH;
        return 0;
    }
    if (!reason) {
        /* A stop with no reason ends a step gdb started for a console
         * command, or an interrupt: name it by what was asked. */
        st.reason = s->interrupt_sent ? TDB_STOP_INTERRUPT
                    : last == TDB_RESUME_STEP ? TDB_STOP_STEP
                    : last == TDB_RESUME_NEXT ? TDB_STOP_NEXT
                    : last == TDB_RESUME_FINISH ? TDB_STOP_FINISH : TDB_STOP_STOPPED;
        /* gdb 13 gives a finish no reason when it returns into a function
         * it has no symbol for (a static one of the stripped interpreter). */
        st.compact = !s->interrupt_sent && last >= TDB_RESUME_STEP;
    } else if (strncmp(reason, "exited", 6) == 0) {
        return ended(s, res, reason);
    } else if (strcmp(reason, "solib-event") == 0) {
        rc = library_stop(s, res, &st, err);
    } else if (strcmp(reason, "breakpoint-hit") == 0) {
        /* The Python hook's breakpoints are its own, and a step's landing
         * past the glue (session/stepinto.c): one branch. */
        int hook = tdb_session_step_landed(s, num ? atoi(num) : 0, res, &st, err);
        if (hook == TDB_HOOK_NOT_OURS)
            hook = tdb_session_python_stopped(s, num ? atoi(num) : 0, res, &st, err);
        switch (hook) {
        case TDB_HOOK_NOT_OURS:
            rc = breakpoint_stop(s, num ? atoi(num) : 0, frame, &st, err);
            break;
        case TDB_HOOK_GO_ON:
            rc = go_on(s, &st, err);
            break;
        case TDB_HOOK_RUNNING:
            return 0;
        case TDB_HOOK_STOP:
            break; /* a Python line, the hook's report filled ST */
        default:
            return -1;
        }
    } else if (strcmp(reason, "signal-received") == 0) {
        rc = signal_stop(s, res, &st, err);
    } else if (strcmp(reason, "end-stepping-range") == 0) {
        st.reason = last == TDB_RESUME_NEXT ? TDB_STOP_NEXT : last == TDB_RESUME_STEPI ? TDB_STOP_STEPI
                    : last == TDB_RESUME_NEXTI ? TDB_STOP_NEXTI : TDB_STOP_STEP;
        if (s->hook.native_prologue) {
            s->hook.native_prologue = 0; /* a Python step into native code */
            st.reason = TDB_STOP_STEP;
        } else if (last == TDB_RESUME_STEP || last == TDB_RESUME_NEXT) {
            int off = tdb_session_step_off_end(s, frame, st.thread, err);
            if (off != 0)
                return off < 0 ? -1 : 0;
        }
        st.compact = 1;
    } else if (strcmp(reason, "function-finished") == 0) {
        st.reason = TDB_STOP_FINISH;
        st.compact = 1;
    } else if (strstr(reason, "watchpoint-trigger") || strcmp(reason, "watchpoint-scope") == 0) {
        watch_stop(s, res, reason, &st);
    } else if (strcmp(reason, "location-reached") == 0) {
        st.reason = TDB_STOP_UNTIL;
        st.compact = 1;
    } else {
        st.reason = TDB_STOP_OTHER;
        st.gdb_reason = reason;
    }
    if (rc <= 0) {
        json_decref(st.exception);
        return rc;
    }
    if (s->interrupt_sent && reason && strcmp(reason, "signal-received") != 0)
        s->stale_sigint = 1; /* the interrupt's SIGINT comes at the next resume */
    s->interrupt_sent = 0;
    tdb_session_step_landing_end(s); /* any stop ends a step's landing */
    s->step.finish_rest = 0;         /* and a finish through the glue */
    int at_operator = s->step.args_at_stop;
    s->step.args_at_stop = 0;

    tdb_buf ret = TDB_BUF_INIT, fault = TDB_BUF_INIT;
    const char *gdbvar = tdb_mi_str(res, "gdb-result-var"), *value = tdb_mi_str(res, "return-value");
    if (s->step.finish_value && st.reason == TDB_STOP_FINISH)
        tdb_buf_adds(&ret, s->step.finish_value); /* the frame finished through the glue */
    else if (value)
        tdb_buf_addf(&ret, "%s = %s", gdbvar ? gdbvar : "Value returned", value);
    free(s->step.finish_value);
    s->step.finish_value = NULL;
    if (st.signal_name)
        fault_address(s, st.signal_name, &fault);
    st.return_value = ret.len ? tdb_buf_str(&ret) : NULL;
    st.fault_address = fault.len ? tdb_buf_str(&fault) : NULL;
    rc = tdb_session_record_stop(s, &st, frame, err);
    json_decref(st.exception);
    if (rc == 0 && (s->stop.reason == TDB_STOP_BREAKPOINT || at_operator))
        s->stop.args = tdb_session_stop_args(s);
    tdb_buf_free(&ret);
    tdb_buf_free(&fault);
    if (rc == 0 && s->stop.reason == TDB_STOP_PYTHON_BREAKPOINT) {
        bp_info *pb = tdb_session_find_bp_id(s, s->stop.bp_number);
        if (pb && pb->temporary)
            tdb_session_bp_delete(s, pb); /* tbreak: once */
    }
    if (strcmp(reason ? reason : "", "breakpoint-hit") == 0) {
        /* gdb deleted a temporary breakpoint it hit: so do we, except the
         * import stops, whose hit is how a missed stop is told. */
        const char *disp = tdb_mi_str(res, "disp");
        bp_info *b = num ? tdb_session_find_bp(s, atoi(num)) : NULL;
        if (b && b->kind == BP_NATIVE && disp && strcmp(disp, "del") == 0) {
            b->number = 0;
            tdb_session_bp_delete(s, b);
        }
    }
    if (rc == 0 && s->repeat > 0) {
        /* 'next N': a stop of the kind asked for goes on; any other ends it */
        static const tdb_stop_reason want[] = {
            [TDB_RESUME_STEP] = TDB_STOP_STEP, [TDB_RESUME_NEXT] = TDB_STOP_NEXT,
            [TDB_RESUME_STEPI] = TDB_STOP_STEPI, [TDB_RESUME_NEXTI] = TDB_STOP_NEXTI};
        /* a step off the end of a function ends as a finish would */
        int same = s->repeat_how >= TDB_RESUME_STEP && s->repeat_how <= TDB_RESUME_NEXTI &&
                   s->repeat_how != TDB_RESUME_FINISH &&
                   (s->stop.reason == want[s->repeat_how] || s->stop.reason == TDB_STOP_FINISH);
        if (!same) {
            s->repeat = 0;
        } else {
            s->repeat--;
            return tdb_session_resume(s, (tdb_resume)s->repeat_how, err) < 0 ? -1 : 0;
        }
    }
    return rc < 0 ? -1 : 1;
}

int tdb_session_poll_gdb(tdb_session *s, tdb_error *err)
{
    for (;;) {
        tdb_error local = {0};
        tdb_mi_record *r = tdb_gdb_next_event(s->gdb, 0, &local);
        if (!r) {
            if (local.set && local.code != ECANCELED) {
                tdb_error_set(err, local.code, "%s", local.msg);
                return TDB_WAIT_GDB_DIED;
            }
            if (!tdb_gdb_alive(s->gdb)) {
                tdb_error_set(err, EPIPE, "%s", tdb_gdb_death(s->gdb) ? tdb_gdb_death(s->gdb)
                                                                      : "gdb exited");
                return TDB_WAIT_GDB_DIED;
            }
            return 0;
        }
        int ended = 0;
        if (r->kind == TDB_MI_NOTIFY)
            tdb_session_handle_notify(s, r);
        else if (r->kind == TDB_MI_EXEC && strcmp(r->klass, "stopped") == 0) {
            const char *reason = tdb_mi_str(r->results, "reason");
            if (reason && strncmp(reason, "exited", 6) == 0) {
                tdb_session_handle_stopped(s, r, err);
                ended = s->state == EXITED;
            }
        }
        tdb_mi_record_free(r);
        if (ended)
            return TDB_WAIT_EXITED;
    }
}

/* gdb says each fork of the program it detaches from ('print
 * inferior-events', on by default): "[Detaching after fork from child
 * process N]" (vfork the same); the front-end hears of child N. */
static void child_started(tdb_session *s, const char *text)
{
    static const char *const forms[] = {"[Detaching after fork from child process ",
                                        "[Detaching after vfork from child process "};
    for (size_t i = 0; text && i < 2; i++) {
        size_t n = strlen(forms[i]);
        long pid;
        char *end;
        if (strncmp(text, forms[i], n) != 0)
            continue;
        pid = strtol(text + n, &end, 10);
        if (pid <= 0 || *end != ']')
            continue;
        s->children = tdb_xrealloc(s->children, (s->n_children + 1) * sizeof(*s->children));
        s->children[s->n_children++] = (pid_t)pid;
        if (s->fe.child_started)
            s->fe.child_started(s->fe.data, (pid_t)pid);
    }
}

size_t tdb_session_children(const tdb_session *s, const pid_t **out)
{
    *out = s->children;
    return s->n_children;
}

/* tdb_session_wait() without the log points' FIFO. */
enum { WAIT_AGAIN = -100 }; /* wait_records(): the log FIFO appeared */

static int wait_records(tdb_session *s, int timeout_ms, int fd, tdb_error *err)
{
    int64_t deadline = timeout_ms >= 0 ? tdb_now_ms() + timeout_ms : -1;
    int had_log = tdb_session_python_log_fd(s) >= 0;
    for (;;) {
        if (s->state == EXITED)
            return TDB_WAIT_EXITED;
        if (s->state == STOPPED && s->have_stop)
            return TDB_WAIT_STOPPED;
        int left = -1;
        if (deadline >= 0) {
            int64_t l = deadline - tdb_now_ms();
            if (l <= 0)
                return TDB_WAIT_TIMEOUT;
            left = (int)l;
        }
        tdb_error local = {0};
        /* FD cancels the wait for an event only: the gdb commands that
         * handling one runs (a Python step's hook, a library's symbols)
         * are the core's own, and a front-end's request arriving meanwhile
         * must not cut them in half (it waits for the next wait). */
        tdb_gdb_set_cancel_fd(s->gdb, fd);
        tdb_mi_record *r = tdb_gdb_next_event(s->gdb, left, &local);
        tdb_gdb_set_cancel_fd(s->gdb, s->cancel_fd);
        if (!r) {
            if (local.code == ECANCELED)
                return TDB_WAIT_FD;
            if (local.set) {
                tdb_error_set(err, local.code, "%s", local.msg);
                return tdb_gdb_alive(s->gdb) ? -1 : TDB_WAIT_GDB_DIED;
            }
            continue; /* the deadline is checked above */
        }
        int rc = 0;
        switch (r->kind) {
        case TDB_MI_EXEC:
            if (strcmp(r->klass, "stopped") == 0)
                rc = tdb_session_handle_stopped(s, r, err);
            else if (strcmp(r->klass, "running") == 0 && s->state != RUNNING)
                tdb_session_note_running(s);
            break;
        case TDB_MI_NOTIFY:
            tdb_session_handle_notify(s, r);
            break;
        case TDB_MI_CONSOLE:
            child_started(s, r->text);
            /* fall through */
        case TDB_MI_LOG:
        case TDB_MI_TARGET:
            if (s->opts.verbose && s->fe.gdb_output)
                s->fe.gdb_output(s->fe.data, r->text, r->text_len);
            break;
        case TDB_MI_ERROR:
            /* Not MI: something wrote on gdb's stdout.  Pass it on. */
            if (s->fe.gdb_output) {
                char *line = tdb_xasprintf("%s\n", r->line);
                s->fe.gdb_output(s->fe.data, line, strlen(line));
                free(line);
            }
            break;
        default:
            break;
        }
        tdb_mi_record_free(r);
        if (rc < 0)
            return -1;
        if (!had_log && tdb_session_python_log_fd(s) >= 0 && s->state == RUNNING)
            return WAIT_AGAIN; /* the hook was loaded: watch its log too */
    }
}

int tdb_session_wait(tdb_session *s, int timeout_ms, int fd, tdb_error *err)
{
    int logfd = tdb_session_python_log_fd(s);
    if (logfd < 0) {
        int rc = wait_records(s, timeout_ms, fd, err);
        return rc == WAIT_AGAIN ? tdb_session_wait(s, timeout_ms, fd, err) : rc;
    }
    /* Log points write while the program runs: their FIFO and the
     * caller's FD in one set, which cancels gdb's wait. */
    int64_t deadline = timeout_ms >= 0 ? tdb_now_ms() + timeout_ms : -1;
    int ep = epoll_create1(EPOLL_CLOEXEC), rc;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = logfd};
    if (ep < 0)
        return wait_records(s, timeout_ms, fd, err);
    epoll_ctl(ep, EPOLL_CTL_ADD, logfd, &ev);
    ev.data.fd = fd;
    if (fd >= 0)
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    for (;;) {
        int left = -1;
        if (deadline >= 0) {
            int64_t l = deadline - tdb_now_ms();
            left = l > 0 ? (int)l : 0;
        }
        rc = wait_records(s, left, ep, err);
        if (rc != TDB_WAIT_FD)
            break;
        tdb_session_python_drain_log(s);
        struct pollfd p = {fd, POLLIN, 0};
        if (fd >= 0 && poll(&p, 1, 0) == 1)
            break;
        if (deadline >= 0 && tdb_now_ms() >= deadline) {
            rc = TDB_WAIT_TIMEOUT;
            break;
        }
    }
    tdb_gdb_set_cancel_fd(s->gdb, s->cancel_fd);
    close(ep);
    return rc;
}

const tdb_stop_info *tdb_session_stop(const tdb_session *s)
{
    return s->state == STOPPED && s->have_stop ? &s->stop : NULL;
}
