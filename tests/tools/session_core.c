/*
 * session_core.c: a front-end of the session core alone (src/session/),
 * linked without the CLI, the DAP or the command language (the Makefile
 * links it with the session and reader archives only), to show that the
 * core runs a whole session through its data API and prints nothing
 * itself: every line this program writes starts with "tool: ".
 *
 *   session_core PYTHON SCRIPT LINE NAME OUTPUT [rerun-light]
 *
 * Launches PYTHON SCRIPT with a breakpoint on SCRIPT:LINE (the program's
 * stdout and stderr go to the file OUTPUT), waits for the stop, prints its
 * reason, the innermost frames of its stack and the Python variable NAME
 * as the core reads them, lets the program run to its end and prints its
 * exit status.  The core's events and gdb's own words reach the callbacks
 * below, which print them with the same prefix.  Exit status: 0 when all
 * of that happened, 1 otherwise.  tdb_companion_path() finds tdebug-exec
 * and the Python hook beside this binary (the test links them there).
 */
#include "session/session.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tool: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    va_end(ap);
}

static void on_event(void *data, const json_t *e)
{
    (void)data;
    say("event %s: %s", json_string_value(json_object_get(e, "event")),
        json_string_value(json_object_get(e, "message")));
}

static void on_gdb_output(void *data, const char *text, size_t len)
{
    (void)data;
    /* One "tool: gdb:" line for each of gdb's lines. */
    while (len) {
        const char *nl = memchr(text, '\n', len);
        size_t n = nl ? (size_t)(nl - text) : len;
        say("gdb: %.*s", (int)n, text);
        text += n + (nl ? 1 : 0);
        len -= n + (nl ? 1 : 0);
    }
}

static void on_program_started(void *data, pid_t pid)
{
    (void)data;
    say("program started: pid %d", (int)pid);
}

/* Wait for the next stop or the end: TDB_WAIT_STOPPED or TDB_WAIT_EXITED,
 * else -1 after saying why. */
static int next_event(tdb_session *s)
{
    tdb_error err = {0};
    int rc = tdb_session_wait(s, 120000, -1, &err);
    if (rc == TDB_WAIT_STOPPED || rc == TDB_WAIT_EXITED)
        return rc;
    say("wait failed (%d): %s", rc, err.set ? err.msg : "timed out");
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 6 && !(argc == 7 && strcmp(argv[6], "rerun-light") == 0)) {
        say("usage: session_core PYTHON SCRIPT LINE NAME OUTPUT [rerun-light]");
        return 2;
    }
    int rerun = argc == 7;
    const char *python = argv[1], *script = argv[2], *line = argv[3], *name = argv[4];
    int out = open(argv[5], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || in < 0) {
        say("cannot open the program's stdio: %s", argv[5]);
        return 1;
    }
    char *location = NULL;
    if (asprintf(&location, "%s:%s", script, line) < 0)
        return 1;
    int stdio[3] = {in, out, out};
    tdb_session_options opts = {.program_stdio = stdio, .light = rerun};
    tdb_error err = {0};
    if (tdb_session_options_add(&opts, TDB_OPTS_BREAK, location, &err) < 0) {
        say("refused: %s", err.msg);
        return 1;
    }
    tdb_frontend fe = {.event = on_event, .program_started = on_program_started,
                       .gdb_output = on_gdb_output};
    tdb_session *s = tdb_session_new(&opts, &fe, &err);
    close(out);
    close(in);
    int status = 1;
    char *args[] = {(char *)python, (char *)script, NULL};
    if (!s || tdb_session_launch(s, args, &err) < 0) {
        say("cannot start: %s", err.msg);
        goto done;
    }
again:
    if (next_event(s) != TDB_WAIT_STOPPED) {
        say("the program never stopped");
        goto done;
    }

    /* The stop, as data. */
    const tdb_stop_info *st = tdb_session_stop(s);
    say("stopped: %s (dap: %s) at breakpoint %d", tdb_stop_word(st), tdb_stop_dap_reason(st),
        st->bp_number);
    json_t *stack = tdb_session_thread_stack(s, 0, &err);
    if (!stack) {
        say("no stack: %s", err.msg);
        goto done;
    }
    for (size_t i = 0; i < json_array_size(stack) && i < 3; i++) {
        json_t *f = json_array_get(stack, i);
        say("frame %zu: %s %s %s:%lld", i, json_string_value(json_object_get(f, "kind")),
            json_string_value(json_object_get(f, "function")),
            json_string_value(json_object_get(f, "file")),
            (long long)json_integer_value(json_object_get(f, "line")));
    }
    json_decref(stack);
    json_t *value = tdb_session_py_value(s, 0, tdb_session_selected(s), name, &err);
    if (!value) {
        say("no value of %s: %s", name, err.msg);
        goto done;
    }
    say("value: %s = %s", name, json_string_value(json_object_get(value, "value")));
    json_decref(value);

    /* To the end. */
    if (tdb_session_resume(s, TDB_RESUME_CONTINUE, &err) < 0) {
        say("cannot resume: %s", err.msg);
        goto done;
    }
    if (next_event(s) != TDB_WAIT_EXITED) {
        say("the program stopped again");
        goto done;
    }
    int signalled;
    say("exited: status %d%s", tdb_session_exit_status(s, &signalled),
        signalled ? " (signalled)" : "");
    if (rerun) {
        rerun = 0;
        if (tdb_session_rerun(s, &err) < 0) {
            say("cannot run it again: %s", err.msg);
            goto done;
        }
        say("run again");
        goto again;
    }
    status = tdb_session_end(s, TDB_END_AUTO) ? 1 : 0;
done:
    tdb_session_free(s);
    tdb_session_options_release(&opts);
    free(location);
    return status;
}
