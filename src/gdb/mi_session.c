/*
 * gdb/mi_session.c: spawn gdb on pipes and talk MI3 to it (see gdb/mi_session.h).
 */
#include "gdb/mi_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIN_GDB_VERSION 1000 /* 10.0: mi3, mi-async, catch load, debuginfod */
#define START_TIMEOUT_MS 60000

struct tdb_gdb {
    pid_t pid;
    int to_gdb;   /* gdb's stdin */
    int from_gdb; /* gdb's stdout, non-blocking */
    int cancel_fd;
    int version;
    long next_token;
    int status;  /* wait status once reaped */
    int reaped;
    char *death; /* why gdb went away */
    tdb_mi_parser *parser;
    tdb_mi_record *events_head, *events_tail; /* async records, oldest first */
    FILE *trace;
    int64_t started_ms; /* for the trace's timestamps */
    char *name;         /* the gdb run, for messages */
};

static void trace(tdb_gdb *g, const char *dir, const char *s, size_t n)
{
    if (!g->trace)
        return;
    fprintf(g->trace, "%8.3f %s %.*s%s", (double)(tdb_now_ms() - g->started_ms) / 1000, dir, (int)n,
            s, n && s[n - 1] == '\n' ? "" : "\n");
    fflush(g->trace);
}

static void queue_event(tdb_gdb *g, tdb_mi_record *r)
{
    r->next = NULL;
    if (g->events_tail)
        g->events_tail->next = r;
    else
        g->events_head = r;
    g->events_tail = r;
}

void tdb_gdb_unget_event(tdb_gdb *g, tdb_mi_record *r)
{
    r->next = g->events_head;
    g->events_head = r;
    if (!g->events_tail)
        g->events_tail = r;
}

static tdb_mi_record *pop_event(tdb_gdb *g)
{
    tdb_mi_record *r = g->events_head;
    if (r) {
        g->events_head = r->next;
        if (!g->events_head)
            g->events_tail = NULL;
        r->next = NULL;
    }
    return r;
}

static void describe_status(tdb_buf *b, int status)
{
    if (WIFEXITED(status))
        tdb_buf_addf(b, "gdb exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        tdb_buf_addf(b, "gdb was killed by signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
    else
        tdb_buf_adds(b, "gdb stopped answering");
}

/* gdb closed its output: reap it and remember why. */
static void note_death(tdb_gdb *g)
{
    if (g->death)
        return;
    close(g->from_gdb);
    g->from_gdb = -1;
    if (!g->reaped) {
        /* Its output is closed; give it a moment to finish exiting. */
        for (int i = 0; i < 200; i++) {
            pid_t r = waitpid(g->pid, &g->status, WNOHANG);
            if (r == g->pid || (r < 0 && errno != EINTR)) {
                g->reaped = r == g->pid;
                break;
            }
            usleep(5000);
        }
    }
    tdb_buf b = TDB_BUF_INIT;
    if (g->reaped)
        describe_status(&b, g->status);
    else
        tdb_buf_adds(&b, "gdb closed its output");
    g->death = tdb_buf_detach(&b);
}

/* Read what gdb printed, waiting up to TIMEOUT_MS for the first byte.
 * Returns 1 when something was read, 0 on timeout, -1 with ERR set when
 * gdb died or the wait was cancelled. */
static int pump(tdb_gdb *g, int timeout_ms, tdb_error *err)
{
    char chunk[65536];

    if (g->from_gdb < 0) {
        tdb_error_set(err, EPIPE, "%s", g->death ? g->death : "gdb is not running");
        return -1;
    }
    struct pollfd fds[2] = {{g->from_gdb, POLLIN, 0}, {g->cancel_fd, POLLIN, 0}};
    int nfds = g->cancel_fd >= 0 ? 2 : 1;
    int64_t deadline = timeout_ms >= 0 ? tdb_now_ms() + timeout_ms : -1;
    for (;;) {
        int wait = deadline < 0 ? -1 : (int)(deadline - tdb_now_ms());
        if (deadline >= 0 && wait < 0)
            wait = 0;
        int n = poll(fds, (nfds_t)nfds, wait);
        if (n < 0 && errno == EINTR) {
            /* A signal; its handler may have written the cancel fd. */
            if (nfds == 2 && poll(&fds[1], 1, 0) > 0) {
                tdb_error_set(err, ECANCELED, "interrupted");
                return -1;
            }
            continue;
        }
        if (n < 0) {
            tdb_error_errno(err, "cannot poll gdb's output");
            return -1;
        }
        if (n == 0)
            return 0;
        if (nfds == 2 && (fds[1].revents & POLLIN)) {
            tdb_error_set(err, ECANCELED, "interrupted");
            return -1;
        }
        if (fds[0].revents)
            break;
    }
    ssize_t got = read(g->from_gdb, chunk, sizeof(chunk));
    if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return 1;
    if (got <= 0) {
        tdb_mi_parser_finish(g->parser);
        note_death(g);
        /* Keep whatever gdb printed last: it may say why it died. */
        return 1;
    }
    trace(g, "<-", chunk, (size_t)got);
    tdb_mi_parser_push(g->parser, chunk, (size_t)got);
    return 1;
}

/* Sort parsed records: the result for WANT_TOKEN goes to *OUT (returns 1);
 * stream output goes to RESP while a command is outstanding; everything
 * else asynchronous is queued.  Stale results of cancelled commands and
 * prompts are dropped. */
static int sort_records(tdb_gdb *g, long want_token, tdb_mi_response *resp)
{
    tdb_mi_record *r;
    while ((r = tdb_mi_parser_pop(g->parser))) {
        switch (r->kind) {
        case TDB_MI_RESULT:
            if (resp && r->token == want_token) {
                resp->result = r;
                return 1;
            }
            tdb_mi_record_free(r); /* answer to a command nobody waits for */
            break;
        case TDB_MI_PROMPT:
            tdb_mi_record_free(r);
            break;
        case TDB_MI_CONSOLE:
        case TDB_MI_LOG:
            if (resp) {
                tdb_buf_add(r->kind == TDB_MI_CONSOLE ? &resp->console : &resp->log, r->text,
                            r->text_len);
                tdb_mi_record_free(r);
            } else {
                queue_event(g, r);
            }
            break;
        default:
            queue_event(g, r);
        }
    }
    return 0;
}

static int write_all(tdb_gdb *g, const char *s, size_t n, tdb_error *err)
{
    if (g->to_gdb < 0 || g->from_gdb < 0) {
        tdb_error_set(err, EPIPE, "%s", g->death ? g->death : "gdb is not running");
        return -1;
    }
    trace(g, "->", s, n);
    while (n) {
        ssize_t w = write(g->to_gdb, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            if (errno == EPIPE) {
                note_death(g);
                tdb_error_set(err, EPIPE, "%s", g->death);
            } else {
                tdb_error_errno(err, "cannot write to gdb");
            }
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

void tdb_mi_response_free(tdb_mi_response *r)
{
    if (!r)
        return;
    tdb_mi_record_free(r->result);
    tdb_buf_free(&r->console);
    tdb_buf_free(&r->log);
    free(r);
}

tdb_mi_response *tdb_gdb_send(tdb_gdb *g, int timeout_ms, tdb_error *err, const char *cmd)
{
    long token = g->next_token++;
    tdb_buf line = TDB_BUF_INIT;
    tdb_buf_addf(&line, "%ld%s\n", token, cmd);
    int rc = write_all(g, line.s, line.len, err);
    tdb_buf_free(&line);
    if (rc < 0)
        return NULL;

    tdb_mi_response *resp = tdb_xcalloc(1, sizeof(*resp));
    int64_t deadline = timeout_ms >= 0 ? tdb_now_ms() + timeout_ms : -1;
    for (;;) {
        if (sort_records(g, token, resp))
            return resp;
        if (g->from_gdb < 0) {
            tdb_error_set(err, EPIPE, "%s while running '%s'", g->death, cmd);
            break;
        }
        int left = deadline < 0 ? -1 : (int)(deadline - tdb_now_ms());
        if (deadline >= 0 && left <= 0) {
            tdb_error_set(err, ETIMEDOUT, "gdb did not answer '%s' within %d s", cmd,
                          timeout_ms / 1000);
            break;
        }
        if (pump(g, left, err) < 0)
            break;
    }
    tdb_mi_response_free(resp);
    return NULL;
}

/* tdb_gdb_send(), with a ^error result turned into ERR (gdb's message):
 * the response, or NULL. */
static tdb_mi_response *send_ok(tdb_gdb *g, int timeout_ms, tdb_error *err, const char *cmd)
{
    tdb_mi_response *resp = tdb_gdb_send(g, timeout_ms, err, cmd);
    if (resp && strcmp(resp->result->klass, "error") == 0) {
        const char *msg = tdb_mi_str(resp->result->results, "msg");
        tdb_error_set(err, 0, "%s", msg ? msg : "gdb reported an error");
        tdb_mi_response_free(resp);
        return NULL;
    }
    return resp;
}

int tdb_gdb_cmd(tdb_gdb *g, int timeout_ms, json_t **out_results, tdb_error *err,
                const char *fmt, ...)
{
    tdb_buf cmd = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&cmd, fmt, ap);
    va_end(ap);

    int rc = -1;
    tdb_mi_response *resp = send_ok(g, timeout_ms, err, tdb_buf_str(&cmd));
    if (!resp)
        goto cleanup;
    if (out_results)
        *out_results = json_incref(resp->result->results);
    rc = 0;
cleanup:
    tdb_mi_response_free(resp);
    tdb_buf_free(&cmd);
    return rc;
}

char *tdb_gdb_console(tdb_gdb *g, int timeout_ms, tdb_error *err, const char *cli)
{
    tdb_buf cmd = TDB_BUF_INIT;
    char *out = NULL;

    tdb_buf_adds(&cmd, "-interpreter-exec console ");
    tdb_mi_quote(&cmd, cli);
    tdb_mi_response *resp = send_ok(g, timeout_ms, err, tdb_buf_str(&cmd));
    if (!resp)
        goto cleanup;
    out = tdb_buf_detach(&resp->console);
cleanup:
    tdb_mi_response_free(resp);
    tdb_buf_free(&cmd);
    return out;
}

int tdb_gdb_eval_int(tdb_gdb *g, int timeout_ms, const char *expr, int64_t *out, tdb_error *err)
{
    tdb_buf cmd = TDB_BUF_INIT;
    json_t *res = NULL;
    tdb_buf_adds(&cmd, "-data-evaluate-expression ");
    tdb_mi_quote(&cmd, expr);
    int rc = tdb_gdb_cmd(g, timeout_ms, &res, err, "%s", tdb_buf_str(&cmd));
    if (rc == 0) {
        const char *v = tdb_mi_str(res, "value"), *p = v;
        if (p && *p == '(') {
            /* "(type) value": skip the type, nested parentheses and all */
            int depth = 0;
            do {
                depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
                p++;
            } while (*p && depth > 0);
            while (*p == ' ')
                p++;
        }
        char *end = NULL;
        errno = 0;
        int64_t x = p && *p == '-' ? (int64_t)strtoll(p, &end, 0) : (int64_t)strtoull(p ? p : "", &end, 0);
        if (!p || end == p || errno || (*end && *end != ' ')) {
            tdb_error_set(err, 0, "'%s' is not a number: gdb says %s", expr, v ? v : "nothing");
            rc = -1;
        } else {
            *out = x;
        }
    }
    json_decref(res);
    tdb_buf_free(&cmd);
    return rc;
}

int tdb_gdb_symbol_offset(tdb_gdb *g, int timeout_ms, uint64_t addr, uint64_t *out_offset,
                          tdb_error *err)
{
    char cli[64];
    snprintf(cli, sizeof(cli), "info symbol 0x%llx", (unsigned long long)addr);
    char *out = tdb_gdb_console(g, timeout_ms, err, cli);
    if (!out)
        return -1;
    /* The name may hold " + " itself (operator+ does not, but a template
     * argument might): the offset is the last one before " in section ". */
    char *in = strstr(out, " in section ");
    char *plus = NULL;
    for (char *p = out; in && (p = strstr(p, " + ")) && p < in; p += 3)
        plus = p;
    int rc = -1;
    if (!in) {
        out[strcspn(out, "\n")] = '\0';
        tdb_error_set(err, 0, "no symbol holds 0x%llx (gdb: %s)", (unsigned long long)addr, out);
    } else {
        *out_offset = plus ? strtoull(plus + 3, NULL, 10) : 0;
        rc = 0;
    }
    free(out);
    return rc;
}

tdb_mi_record *tdb_gdb_next_event(tdb_gdb *g, int timeout_ms, tdb_error *err)
{
    int64_t deadline = timeout_ms >= 0 ? tdb_now_ms() + timeout_ms : -1;
    for (;;) {
        sort_records(g, -1, NULL);
        tdb_mi_record *r = pop_event(g);
        if (r)
            return r;
        if (g->from_gdb < 0) {
            tdb_error_set(err, EPIPE, "%s", g->death);
            return NULL;
        }
        int left = deadline < 0 ? -1 : (int)(deadline - tdb_now_ms());
        if (deadline >= 0 && left < 0)
            left = 0;
        int n = pump(g, left, err);
        if (n < 0)
            return NULL;
        if (n == 0) {
            sort_records(g, -1, NULL);
            return pop_event(g);
        }
    }
}

int tdb_gdb_version(const tdb_gdb *g)
{
    return g->version;
}

int tdb_gdb_fd(const tdb_gdb *g)
{
    return g->from_gdb;
}

int tdb_gdb_alive(const tdb_gdb *g)
{
    return g && g->from_gdb >= 0;
}

const char *tdb_gdb_death(const tdb_gdb *g)
{
    return g->death;
}

void tdb_gdb_set_cancel_fd(tdb_gdb *g, int fd)
{
    g->cancel_fd = fd;
}

/* "GNU gdb (Debian 13.1-3) 13.1" -> 1301: the last "N.M" on the line. */
static int parse_version(const char *text)
{
    const char *eol = strchr(text, '\n');
    size_t n = eol ? (size_t)(eol - text) : strlen(text);
    int best = 0;
    for (size_t i = 0; i < n; i++) {
        int major, minor, used;
        if ((i == 0 || text[i - 1] == ' ') &&
            sscanf(text + i, "%d.%d%n", &major, &minor, &used) == 2 && major > 0 && major < 1000)
            best = major * 100 + (minor < 100 ? minor : 99);
    }
    return best;
}

static int spawn(tdb_gdb *g, const tdb_gdb_options *opts, const char *gdb, tdb_error *err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, report[2] = {-1, -1};
    const char *argv[32];
    int argc = 0;

    argv[argc++] = gdb;
    argv[argc++] = "--interpreter=mi3";
    argv[argc++] = "-nx";
    argv[argc++] = "-q";
    /* Scripts gdb runs by itself as libraries load (LIB-gdb.py beside a
     * library, .debug_gdb_scripts) only from the system's directories,
     * whatever this gdb was built or set up with: tdebug as root on another
     * user's process must not run their scripts.  This is gdb's own
     * default; -nx already keeps every gdbinit out. */
    argv[argc++] = "-iex";
    argv[argc++] = "set auto-load safe-path $debugdir:$datadir/auto-load";
    for (int i = 0; opts->extra_args && opts->extra_args[i] && argc < 30; i++)
        argv[argc++] = opts->extra_args[i];
    argv[argc] = NULL;

    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC) < 0) {
        tdb_error_errno(err, "cannot create pipes for gdb");
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        tdb_error_errno(err, "cannot fork to start gdb");
        goto fail;
    }
    if (pid == 0) {
        /* Child: only async-signal-safe calls from here to exec. */
        if (opts->own_pgrp)
            setpgid(0, 0);
        /* If tdebug dies, gdb quits cleanly: it kills a program it started
         * and detaches from one it attached to. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigaction(SIGINT, &dfl, NULL);
        sigaction(SIGPIPE, &dfl, NULL);
        sigaction(SIGTERM, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
            goto child_fail;
        if (opts->stderr_fd >= 0 && opts->stderr_fd != 2 && dup2(opts->stderr_fd, 2) < 0)
            goto child_fail;
        for (int i = 0; i < opts->n_keep_fds; i++) {
            int fl = fcntl(opts->keep_fds[i], F_GETFD);
            if (fl >= 0)
                fcntl(opts->keep_fds[i], F_SETFD, fl & ~FD_CLOEXEC);
        }
        execvp(gdb, (char *const *)argv);
    child_fail:;
        int e = errno;
        ssize_t ignored = write(report[1], &e, sizeof(e));
        (void)ignored;
        _exit(127);
    }
    if (opts->own_pgrp)
        setpgid(pid, pid); /* also here, so there is no race with the child */
    close(in[0]);
    close(out[1]);
    close(report[1]);
    in[0] = out[1] = report[1] = -1;

    int child_errno = 0;
    ssize_t n;
    do
        n = read(report[0], &child_errno, sizeof(child_errno));
    while (n < 0 && errno == EINTR);
    close(report[0]);
    report[0] = -1;
    if (n == (ssize_t)sizeof(child_errno)) {
        waitpid(pid, NULL, 0);
        close(in[1]);
        close(out[0]);
        errno = child_errno;
        if (child_errno == ENOENT)
            tdb_error_set(err, ENOENT,
                          "gdb not found ('%s'): install it (apt-get install gdb) or set "
                          "TDEBUG_GDB to its path",
                          gdb);
        else
            tdb_error_errno(err, "cannot run gdb ('%s')", gdb);
        return -1;
    }
    g->pid = pid;
    g->to_gdb = in[1];
    g->from_gdb = out[0];
    fcntl(g->from_gdb, F_SETFL, fcntl(g->from_gdb, F_GETFL) | O_NONBLOCK);
    return 0;

fail:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
        if (report[i] >= 0)
            close(report[i]);
    }
    return -1;
}

tdb_gdb *tdb_gdb_spawn(const tdb_gdb_options *opts, tdb_error *err)
{
    static const tdb_gdb_options defaults = {.stderr_fd = -1};
    const char *gdb;

    if (!opts)
        opts = &defaults;
    gdb = opts->gdb ? opts->gdb : getenv("TDEBUG_GDB");
    if (!gdb || !*gdb)
        gdb = "gdb";

    tdb_gdb *g = tdb_xcalloc(1, sizeof(*g));
    g->to_gdb = g->from_gdb = g->cancel_fd = -1;
    g->next_token = 1;
    g->started_ms = tdb_now_ms();
    g->parser = tdb_mi_parser_new();
    g->name = tdb_xstrdup(gdb);
    const char *trace_path = getenv("TDEBUG_TRACE_MI");
    if (trace_path && *trace_path)
        g->trace = fopen(trace_path, "ae");
    if (spawn(g, opts, gdb, err) < 0) {
        tdb_gdb_close(g, 2000);
        return NULL;
    }
    return g;
}

int tdb_gdb_handshake(tdb_gdb *g, tdb_error *err)
{
    const char *gdb = g->name;
    char *text = NULL;
    tdb_error local = {0};

    text = tdb_gdb_console(g, START_TIMEOUT_MS, &local, "show version");
    if (!text) {
        if (!tdb_gdb_alive(g) && g->reaped && WIFSIGNALED(g->status))
            /* killed (SIGKILL, the OOM killer): not a gdb that cannot do MI3 */
            tdb_error_set(err, local.code, "gdb ('%s') died as it started (%s)", gdb,
                          g->death ? g->death : "killed");
        else if (!tdb_gdb_alive(g))
            tdb_error_set(err, local.code,
                          "'%s' does not speak gdb's MI3 (%s): gdb 10 or newer is needed; "
                          "install it (apt-get install gdb) or set TDEBUG_GDB",
                          gdb, g->death ? g->death : "it exited");
        else
            tdb_error_set(err, local.code, "gdb ('%s') did not start: %s", gdb, local.msg);
        return -1;
    }
    g->version = parse_version(text);
    free(text);
    if (g->version < MIN_GDB_VERSION) {
        tdb_error_set(err, 0,
                      "gdb ('%s') is too old (%d.%d): gdb 10 or newer is needed; set TDEBUG_GDB "
                      "to a newer gdb",
                      gdb, g->version / 100, g->version % 100);
        return -1;
    }
    /* Settings every tdebug session wants: answers while the target runs
     * (so Ctrl-C can interrupt it), no questions, no paging, and no network
     * lookups for debug info behind the user's back. */
    static const char *const setup[] = {
        "-gdb-set mi-async on",  "-gdb-set confirm off",      "-gdb-set pagination off",
        "-gdb-set width 0",      "-gdb-set height 0",         "-gdb-set print demangle on",
        "-gdb-set print asm-demangle on",
    };
    for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++)
        if (tdb_gdb_cmd(g, START_TIMEOUT_MS, NULL, err, "%s", setup[i]) < 0)
            return -1;
    /* Not every gdb has debuginfod support; that is fine. */
    tdb_gdb_cmd(g, START_TIMEOUT_MS, NULL, NULL, "-gdb-set debuginfod enabled off");
    return 0;
}

tdb_gdb *tdb_gdb_start(const tdb_gdb_options *opts, tdb_error *err)
{
    tdb_gdb *g = tdb_gdb_spawn(opts, err);
    if (g && tdb_gdb_handshake(g, err) < 0) {
        tdb_gdb_close(g, 2000);
        return NULL;
    }
    return g;
}

static int reap(tdb_gdb *g, int timeout_ms)
{
    int64_t deadline = tdb_now_ms() + timeout_ms;
    while (!g->reaped) {
        pid_t r = waitpid(g->pid, &g->status, WNOHANG);
        if (r == g->pid) {
            g->reaped = 1;
            break;
        }
        if (r < 0 && errno != EINTR)
            return -1;
        if (tdb_now_ms() >= deadline)
            return 0;
        usleep(10000);
    }
    return 1;
}

int tdb_gdb_close(tdb_gdb *g, int grace_ms)
{
    if (!g)
        return -1;
    if (g->pid > 0 && !g->reaped) {
        if (g->to_gdb >= 0 && g->from_gdb >= 0) {
            static const char quit[] = "-gdb-exit\n";
            trace(g, "->", quit, sizeof(quit) - 1);
            ssize_t w = write(g->to_gdb, quit, sizeof(quit) - 1);
            (void)w;
        }
        if (g->to_gdb >= 0) {
            close(g->to_gdb); /* EOF on stdin also makes gdb quit */
            g->to_gdb = -1;
        }
        /* Drain gdb's output so it never blocks on a full pipe while quitting. */
        int64_t deadline = tdb_now_ms() + grace_ms;
        while (g->from_gdb >= 0 && tdb_now_ms() < deadline) {
            char chunk[4096];
            struct pollfd pfd = {g->from_gdb, POLLIN, 0};
            if (poll(&pfd, 1, 50) > 0 && read(g->from_gdb, chunk, sizeof(chunk)) <= 0)
                break;
            if (reap(g, 0) == 1)
                break;
        }
        int left = (int)(deadline - tdb_now_ms());
        if (reap(g, left > 0 ? left : 0) == 0) {
            kill(g->pid, SIGTERM);
            if (reap(g, 1000) == 0) {
                kill(g->pid, SIGKILL);
                reap(g, 5000);
            }
        }
    }
    int status = g->reaped ? g->status : -1;
    if (g->to_gdb >= 0)
        close(g->to_gdb);
    if (g->from_gdb >= 0)
        close(g->from_gdb);
    tdb_mi_record *r;
    while ((r = pop_event(g)))
        tdb_mi_record_free(r);
    tdb_mi_parser_free(g->parser);
    if (g->trace)
        fclose(g->trace);
    free(g->death);
    free(g->name);
    free(g);
    return status;
}
