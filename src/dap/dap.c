/*
 * dap/dap.c: the DAP front-end's channel and event loop (see dap/dap.h): requests
 * in, responses and events out, and the core's stops, exits and notes
 * turned into DAP events.
 *
 * One loop serves the client, the program's output and signals at once:
 * they are all in one epoll set, whose fd is what tdb_session_wait()
 * watches while the program runs (its "FD readable"), and what poll()
 * watches beside gdb's output while the program is stopped.
 */
#include "dap/internal.h"

#include "base/signals.h"
#include "commands/commands.h"
#include "process/paused.h"
#include "targets/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- sending ---- */

static void log_message(tdb_dap *d, const char *dir, const json_t *msg)
{
    if (d->log < 0)
        return;
    char *text = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_addf(&b, "%s %s\n", dir, text ? text : "?");
    ssize_t n = write(d->log, b.s, b.len);
    (void)n; /* a transcript that cannot be written costs nothing else */
    tdb_buf_free(&b);
    free(text);
}

static void write_all(tdb_dap *d, const char *p, size_t n)
{
    while (n && !d->done) {
        ssize_t w = write(d->out, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            struct pollfd pfd = {d->out, POLLOUT, 0};
            poll(&pfd, 1, 1000);
            continue;
        }
        if (w <= 0) {
            /* The client is gone: the session ends as 'quit' would. */
            d->done = 1;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

void tdb_dap_send(tdb_dap *d, json_t *msg)
{
    json_object_set_new(msg, "seq", json_integer(++d->seq));
    log_message(d, "<-", msg);
    tdb_buf b = TDB_BUF_INIT;
    tdb_dap_frame(msg, &b);
    write_all(d, b.s, b.len);
    tdb_buf_free(&b);
    json_decref(msg);
}

void tdb_dap_ok(tdb_dap *d, int seq, const char *command, json_t *body)
{
    tdb_dap_send(d, tdb_dap_response(seq, command, body));
}

void tdb_dap_fail(tdb_dap *d, int seq, const char *command, const char *fmt, ...)
{
    tdb_buf b = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    tdb_dap_send(d, tdb_dap_error_response(seq, command, "%s", tdb_buf_str(&b)));
    tdb_buf_free(&b);
}

void tdb_dap_output(tdb_dap *d, const char *category, const char *fmt, ...)
{
    tdb_buf b = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    tdb_dap_send(d, tdb_dap_event("output", json_pack("{s:s, s:o}", "category", category, "output",
                                                      tdb_dap_string(b.s ? b.s : "", b.len))));
    tdb_buf_free(&b);
}

/* ---- breakpoints ---- */

json_t *tdb_dap_breakpoint(tdb_dap *d, const json_t *bp)
{
    json_t *o = json_pack("{s:b}", "verified", json_is_true(json_object_get(bp, "verified")));
    json_t *id = json_object_get(bp, "id"), *line = json_object_get(bp, "line");
    const char *file = json_string_value(json_object_get(bp, "file"));
    const char *msg = json_string_value(json_object_get(bp, "message"));
    if (json_integer_value(id) > 0)
        json_object_set(o, "id", id);
    if (msg)
        json_object_set_new(o, "message", tdb_dap_string(msg, strlen(msg)));
    if (file && *file == '/')
        json_object_set_new(o, "source",
                            json_pack("{s:o, s:o}", "name", tdb_dap_string(tdb_base_name(file),
                                                                         strlen(tdb_base_name(file))),
                                      "path", tdb_dap_string(file, strlen(file))));
    if (json_is_integer(line))
        json_object_set_new(o, "line", json_integer(json_integer_value(line) + d->line_base));
    return o;
}

void tdb_dap_told(tdb_dap *d, const json_t *dap_bp)
{
    json_t *id = json_object_get(dap_bp, "id");
    if (!json_is_integer(id))
        return;
    char key[32];
    snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(id));
    json_object_set_new(d->told, key, json_deep_copy(dap_bp));
}

/* A breakpoint the client knows bound, or moved: tell it. */
static void on_breakpoint_changed(void *data, const json_t *bp)
{
    tdb_dap *d = data;
    char key[32];
    snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(json_object_get(bp, "id")));
    json_t *before = json_object_get(d->told, key);
    if (!before)
        return; /* not handed to the client yet: its response will say */
    json_t *now = tdb_dap_breakpoint(d, bp);
    if (json_equal(before, now)) {
        json_decref(now);
        return;
    }
    tdb_dap_told(d, now);
    tdb_dap_send(d, tdb_dap_event("breakpoint", json_pack("{s:s, s:o}", "reason", "changed",
                                                          "breakpoint", now)));
}

/* ---- the core's events ---- */

static void on_event(void *data, const json_t *e)
{
    tdb_dap *d = data;
    const char *event = json_string_value(json_object_get(e, "event"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (!msg)
        return;
    if (event && strcmp(event, "log") == 0) { /* a log point's line, as it is */
        tdb_dap_output(d, "console", "%s\n", msg);
        return;
    }
    if (!*msg)
        return;
    const char *layout = json_string_value(json_object_get(e, "layout"));
    if (layout && !strcmp(layout, "cache")) {
        /* Routine, every session (the tensor layout read from its cache):
         * not for the Debug Console, where 'console' reads as a warning
         * (orange); the adapter's stderr, as gdb's own lines. */
        fprintf(stderr, "tdebug: %s\n", msg);
        return;
    }
    tdb_dap_output(d, "console", "tdebug: %s%s\n",
                   event && !strcmp(event, "warning") ? "warning: " : "", msg);
}

/* gdb's lines that are not MI: stderr, as the terminal front-end's
 * (opts.verbose is never set here: the client's channel is the protocol). */
static void on_gdb_output(void *data, const char *text, size_t len)
{
    (void)data;
    fwrite(text, 1, len, stderr);
}

static void on_program_started(void *data, pid_t pid)
{
    tdb_dap *d = data;
    tdb_dap_send(d, tdb_dap_event("process",
                                  json_pack("{s:o, s:i, s:b, s:s}", "name",
                                            tdb_dap_string(d->program ? d->program : "python",
                                                           strlen(d->program ? d->program
                                                                             : "python")),
                                            "systemProcessId", (int)pid, "isLocalProcess", 1,
                                            "startMethod", "launch")));
}

/* The program forked child PID (gdb let it go): once it runs Python (it
 * exec'd one, or is a fork of the program's), offer it to the client as a
 * child session to attach to, as debugpy's subProcess does.  A fork that
 * execs something else is no Python child. */
static void on_child_started(void *data, pid_t pid)
{
    tdb_dap *d = data;
    if (!d->sub_process || tdb_python_child(tdb_session_pid(d->s), pid, 500, NULL) != 1)
        return;
    static const char *const inherited[] = {"symbols",  "allSymbols", "cpythonSymbols",
                                            "stepInto", "myCode",     "raw",
                                            "catchThrow", "stopAtImport", "subProcess"};
    char *name = tdb_xasprintf("tdebug: child process %d (Python + C++)", (int)pid);
    json_t *conf = json_pack("{s:s, s:s, s:s, s:i}", "type", "tdebug", "request", "attach", "name",
                             name, "processId", (int)pid);
    free(name);
    for (size_t i = 0; i < sizeof(inherited) / sizeof(inherited[0]); i++) {
        json_t *v = json_object_get(d->start_args, inherited[i]);
        if (v)
            json_object_set(conf, inherited[i], v);
    }
    tdb_dap_send(d, json_pack("{s:s, s:s, s:{s:s, s:o}}", "type", "request", "command",
                              "startDebugging", "arguments", "request", "attach", "configuration",
                              conf));
}

void tdb_dap_frontend(tdb_dap *d, tdb_frontend *fe)
{
    memset(fe, 0, sizeof(*fe));
    fe->child_started = on_child_started;
    fe->event = on_event;
    fe->program_started = on_program_started;
    fe->breakpoint_changed = on_breakpoint_changed;
    fe->gdb_output = on_gdb_output;
    fe->data = d;
}

/* ---- the program's output ---- */

/* Read what FD holds and send it as CATEGORY; -1 at its end. */
static int pump(tdb_dap *d, int *fd, tdb_buf *tail, const char *category)
{
    char buf[65536];
    if (*fd < 0)
        return -1;
    ssize_t n = read(*fd, buf, sizeof(buf));
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (n == 0) {
        if (tail->len)
            tdb_dap_send(d, tdb_dap_event("output", json_pack("{s:s, s:o}", "category", category,
                                                              "output",
                                                              tdb_dap_string(tail->s, tail->len))));
        tdb_buf_reset(tail);
        epoll_ctl(d->epfd, EPOLL_CTL_DEL, *fd, NULL);
        close(*fd);
        *fd = -1;
        return -1;
    }
    tdb_buf_add(tail, buf, (size_t)n);
    size_t whole = tdb_dap_utf8_whole(tail->s, tail->len);
    if (whole) {
        tdb_dap_send(d, tdb_dap_event("output", json_pack("{s:s, s:o}", "category", category,
                                                          "output",
                                                          tdb_dap_string(tail->s, whole))));
        memmove(tail->s, tail->s + whole, tail->len - whole);
        tail->len -= whole;
        tail->s[tail->len] = '\0';
    }
    return 1;
}

void tdb_dap_drain_output(tdb_dap *d)
{
    while (pump(d, &d->out_fd, &d->out_tail, "stdout") > 0)
        ;
    while (pump(d, &d->err_fd, &d->err_tail, "stderr") > 0)
        ;
}

/* ---- stops and ends ---- */

int tdb_dap_resume(tdb_dap *d, tdb_resume how, tdb_error *err)
{
    /* The last stop's threads answer 'threads' while it runs. */
    tdb_values_reset(d->vals);
    return tdb_session_resume(d->s, how, err);
}

/* The DAP reason of a stop (the core's table), made more precise by what
 * only the client's breakpoints say: stopOnEntry's, a function
 * breakpoint's, an instruction breakpoint's (VS Code then shows its
 * disassembly view). */
static const char *stop_reason(tdb_dap *d, const tdb_stop_info *st)
{
    if (st->reason == TDB_STOP_BREAKPOINT || st->reason == TDB_STOP_PYTHON_BREAKPOINT) {
        if (d->entry_bp && st->bp_number == d->entry_bp)
            return "entry";
        const char *key;
        json_t *id;
        json_object_foreach(d->fn_bps, key, id)
            if (json_integer_value(id) == st->bp_number)
                return "function breakpoint";
        json_object_foreach(d->ins_bps, key, id)
            if (json_integer_value(id) == st->bp_number)
                return "instruction breakpoint";
    }
    return tdb_stop_dap_reason(st);
}

void tdb_dap_present_stop(tdb_dap *d)
{
    const tdb_stop_info *st = tdb_session_stop(d->s);
    if (!st)
        return;
    tdb_dap_drain_output(d);
    tdb_values_reset(d->vals);
    json_decref(d->step_targets);
    d->step_targets = NULL;
    json_decref(d->threads);
    tdb_error err = {0};
    d->threads = tdb_session_threads(d->s, &err);
    const char *reason = stop_reason(d, st);
    tdb_stop_text t;
    tdb_stop_text_make(d->s, st, &t);
    /* The note of a stop inside the garbage collector, as the terminal's
     * stack opens with it: in the description VS Code shows by the
     * paused thread, and as the text when no exception says more. */
    char *description = t.note ? tdb_xasprintf("%s (note: %s)", t.message, t.note)
                               : tdb_xstrdup(t.message);
    json_t *body = json_pack("{s:s, s:o, s:i, s:b}", "reason", reason, "description",
                             tdb_dap_string(description, strlen(description)), "threadId",
                             tdb_session_stop_thread(d->s), "allThreadsStopped", 1);
    free(description);
    if (st->bp_number && strcmp(reason, "entry") != 0)
        json_object_set_new(body, "hitBreakpointIds", json_pack("[i]", st->bp_number));
    const char *what = json_string_value(json_object_get(st->exception, "message"));
    const char *type = json_string_value(json_object_get(st->exception, "type"));
    if ((st->reason == TDB_STOP_THROW || st->reason == TDB_STOP_PYTHON_EXCEPTION) && what) {
        /* What the exception says (a c10::Error's what(): torch's
         * message), which VS Code's exception widget shows; not the frame
         * line of __cxa_throw. */
        char *text = tdb_xasprintf("%s%s%s", type ? type : "", type ? ": " : "", what);
        json_object_set_new(body, "text", tdb_dap_string(text, strlen(text)));
        free(text);
    } else if ((st->reason == TDB_STOP_THROW || st->reason == TDB_STOP_SIGNAL) && t.where) {
        json_object_set_new(body, "text", tdb_dap_string(t.where, strlen(t.where)));
    } else if (t.note) {
        json_object_set_new(body, "text", tdb_dap_string(t.note, strlen(t.note)));
    }
    tdb_stop_text_clear(&t);
    tdb_dap_send(d, tdb_dap_event("stopped", body));
    tdb_dap_tell_new_sources(d);
}

static void present_exit(tdb_dap *d)
{
    int signalled;
    int status = tdb_session_exit_status(d->s, &signalled);
    tdb_dap_drain_output(d);
    if (d->ended)
        return;
    tdb_dap_send(d, tdb_dap_event("exited", json_pack("{s:i}", "exitCode", status)));
    tdb_dap_send(d, tdb_dap_event("terminated", NULL));
    d->ended = 1;
}

void tdb_dap_end_session(tdb_dap *d)
{
    if (d->s)
        tdb_session_end(d->s, TDB_END_AUTO);
    tdb_dap_drain_output(d);
    if (!d->ended && d->s) {
        tdb_dap_send(d, tdb_dap_event("terminated", NULL));
        d->ended = 1;
    }
}

static void gdb_died(tdb_dap *d, const tdb_error *err)
{
    tdb_dap_output(d, "important", "tdebug: gdb died: %s; the session ended\n",
                   err->set ? err->msg : "no reason given");
    tdb_dap_end_session(d);
}

/* ---- the client, signals, announcements ---- */

static void read_client(tdb_dap *d)
{
    char buf[65536];
    ssize_t n = read(d->in, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        /* The client went away: as 'quit'. */
        d->done = 1;
        return;
    }
    tdb_dap_reader_push(d->rd, buf, (size_t)n);
    for (;;) {
        json_t *msg = NULL;
        tdb_error err = {0};
        int rc = tdb_dap_reader_next(d->rd, &msg, &err);
        if (rc == 0)
            break;
        if (rc < 0) {
            json_t *what = json_string(err.msg);
            log_message(d, "->!", what);
            json_decref(what);
            tdb_dap_output(d, "important", "tdebug: %s; the message was ignored\n", err.msg);
            continue;
        }
        log_message(d, "->", msg);
        tdb_dap_handle(d, msg);
        json_decref(msg);
        if (d->done)
            break;
    }
}

static void take_announcement(tdb_dap *d)
{
    json_t *ann = NULL;
    tdb_error err = {0};
    int rc = tdb_announce_next(d->announce, 0, -1, &ann, &err);
    if (rc == 1 && tdb_announce_is_waiting(ann, d->wait_pid, 0)) {
        epoll_ctl(d->epfd, EPOLL_CTL_DEL, tdb_announce_listener_fd(d->announce), NULL);
        tdb_announce_listener_free(d->announce);
        d->announce = NULL;
        tdb_dap_attach_now(d, (pid_t)json_integer_value(json_object_get(ann, "pid")), ann);
    } else if (rc < 0) {
        tdb_dap_output(d, "important", "tdebug: %s\n", err.msg);
    }
    json_decref(ann);
}

void tdb_dap_forget_terminal_dir(tdb_dap *d)
{
    if (!d->tty_dir)
        return;
    char *fifo = tdb_xasprintf("%s/tty", d->tty_dir);
    unlink(fifo);
    rmdir(d->tty_dir);
    free(fifo);
    free(d->tty_dir);
    d->tty_dir = NULL;
}

int tdb_dap_listen_announce(tdb_dap *d, tdb_error *err)
{
    d->announce = tdb_announce_listen(NULL, err);
    if (!d->announce)
        return -1;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = tdb_announce_listener_fd(d->announce)};
    epoll_ctl(d->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
    return 0;
}

/* Everything readable in the epoll set. */
static void service(tdb_dap *d)
{
    struct epoll_event evs[8];
    int n = epoll_wait(d->epfd, evs, 8, 0);
    for (int i = 0; i < n && !d->done; i++) {
        int fd = evs[i].data.fd;
        if (fd == d->in)
            read_client(d);
        else if (fd == d->out_fd)
            pump(d, &d->out_fd, &d->out_tail, "stdout");
        else if (fd == d->err_fd)
            pump(d, &d->err_fd, &d->err_tail, "stderr");
        else if (fd == d->tty_fifo)
            tdb_dap_terminal_ready(d);
        else if (fd == d->sigfd) {
            int sig = tdb_signals_take();
            if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
                d->end_signal = sig;
                d->done = 1;
            }
        } else if (d->announce && fd == tdb_announce_listener_fd(d->announce))
            take_announcement(d);
    }
}

int tdb_dap_hold(tdb_dap *d, int *held)
{
    *held = 0;
    if (!tdb_session_running(d->s))
        return 0;
    tdb_error err = {0};
    if (tdb_session_interrupt(d->s, &err) < 0) {
        gdb_died(d, &err);
        return -1;
    }
    for (;;) {
        int rc = tdb_session_wait(d->s, 60000, -1, &err);
        if (rc == TDB_WAIT_STOPPED) {
            *held = 1;
            return 0;
        }
        if (rc == TDB_WAIT_EXITED) {
            present_exit(d);
            return -1;
        }
        if (rc == TDB_WAIT_TIMEOUT)
            continue;
        gdb_died(d, &err);
        return -1;
    }
}

void tdb_dap_release(tdb_dap *d, int held)
{
    const tdb_stop_info *st = tdb_session_stop(d->s);
    if (!held || !st)
        return;
    if (st->reason != TDB_STOP_INTERRUPT) {
        tdb_dap_present_stop(d); /* a real stop came first: the client sees it */
        return;
    }
    tdb_error err = {0};
    if (tdb_dap_resume(d, TDB_RESUME_CONTINUE, &err) < 0)
        tdb_dap_output(d, "important", "tdebug: cannot let the program go on: %s\n", err.msg);
}

/* One step of the loop while the program runs. */
static void wait_running(tdb_dap *d)
{
    tdb_error err = {0};
    int rc = tdb_session_wait(d->s, -1, d->epfd, &err);
    switch (rc) {
    case TDB_WAIT_STOPPED:
        tdb_dap_present_stop(d);
        break;
    case TDB_WAIT_EXITED:
        present_exit(d);
        break;
    case TDB_WAIT_FD:
        service(d);
        break;
    case TDB_WAIT_TIMEOUT:
        break;
    default:
        gdb_died(d, &err);
        break;
    }
}

/* One step of the loop while the program is stopped, not started or gone. */
static void wait_idle(tdb_dap *d)
{
    struct pollfd p[2] = {{d->epfd, POLLIN, 0}, {-1, POLLIN, 0}};
    if (d->s && !d->ended)
        p[1].fd = tdb_session_gdb_fd(d->s);
    if (poll(p, 2, -1) < 0)
        return;
    if (p[1].revents & (POLLIN | POLLHUP)) {
        tdb_error err = {0};
        int rc = tdb_session_poll_gdb(d->s, &err);
        if (rc == TDB_WAIT_EXITED)
            present_exit(d);
        else if (rc == TDB_WAIT_GDB_DIED || rc < 0)
            gdb_died(d, &err);
    }
    if (p[0].revents & POLLIN)
        service(d);
}

void tdb_dap_watch(tdb_dap *d, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (fd >= 0)
        epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int tdb_dap_serve(int in, int out, const tdb_dap_options *o, tdb_error *err)
{
    tdb_dap d = {.o = o, .in = in, .out = out, .log = -1, .cwd_fd = -1, .out_fd = -1,
                 .err_fd = -1, .start_seq = -1, .tty_fifo = -1};
    int rc = -1;

    d.rd = tdb_dap_reader_new(0);
    d.src_bps = json_object();
    d.fn_bps = json_object();
    d.ins_bps = json_object();
    d.data_bps = json_object();
    d.exc_bps = json_object();
    d.told = json_object();
    d.queued = json_array();
    d.listings = json_array();
    d.listing_of = json_object();
    d.modules = json_object();
    /* The transcript holds what the client sends (paths, values, a
     * listening adapter's token): never through a link, never into a file
     * another user owns. */
    if (o->log &&
        (d.log = open(o->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
        tdb_error_errno(err, "cannot open the DAP log '%s'%s", o->log,
                        errno == ELOOP ? " (it is a symbolic link)" : "");
        goto cleanup;
    }
    struct stat lst;
    if (d.log >= 0 && (fstat(d.log, &lst) < 0 || lst.st_uid != geteuid() || !S_ISREG(lst.st_mode))) {
        tdb_error_set(err, EPERM, "cannot use '%s' as the DAP log: not a file of uid %u (remove it "
                                  "or pick another path)", o->log, (unsigned)geteuid());
        goto cleanup;
    }
    if ((d.sigfd = tdb_signals_install(0, err)) < 0)
        goto cleanup;
    d.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (d.epfd < 0) {
        tdb_error_errno(err, "epoll_create1");
        goto cleanup;
    }
    tdb_dap_watch(&d, d.in);
    tdb_dap_watch(&d, d.sigfd);
    while (!d.done) {
        tdb_dap_run_queued(&d);
        if (d.done)
            break;
        if (d.s && !d.ended && tdb_session_running(d.s))
            wait_running(&d);
        else
            wait_idle(&d);
    }
    /* Whatever ended it, the target ends as 'quit' ends it. */
    if (d.s)
        tdb_session_end(d.s, TDB_END_AUTO);
    rc = d.end_signal;
cleanup:
    tdb_values_free(d.vals);
    tdb_session_free(d.s);
    if (d.cwd_fd >= 0) {
        if (fchdir(d.cwd_fd) < 0)
            rc = rc ? rc : 0; /* the next session starts where it says */
        close(d.cwd_fd);
    }
    tdb_session_options_release(&d.opts);
    tdb_announce_listener_free(d.announce);
    /* The terminal's helper goes when the FIFO closes. */
    if (d.tty_fifo >= 0)
        close(d.tty_fifo);
    tdb_dap_forget_terminal_dir(&d);
    if (d.out_fd >= 0)
        close(d.out_fd);
    if (d.err_fd >= 0)
        close(d.err_fd);
    if (d.epfd > 0)
        close(d.epfd);
    if (d.log >= 0)
        close(d.log);
    tdb_buf_free(&d.out_tail);
    tdb_buf_free(&d.err_tail);
    free(d.argv);
    free(d.python);
    free(d.program);
    json_decref(d.start_args);
    json_decref(d.src_bps);
    json_decref(d.fn_bps);
    json_decref(d.ins_bps);
    json_decref(d.data_bps);
    json_decref(d.exc_bps);
    json_decref(d.told);
    json_decref(d.threads);
    json_decref(d.queued);
    json_decref(d.listings);
    json_decref(d.listing_of);
    json_decref(d.modules);
    json_decref(d.sources_told);
    json_decref(d.step_targets);
    tdb_dap_reader_free(d.rd);
    return rc;
}
