/*
 * dap/requests.c: the Debug Adapter Protocol's requests, one handler a
 * request (see dap/dap.h), found in one table: each maps the request onto
 * the session core (src/session/session.h) and its answer back, in a file
 * by topic: dap/lifecycle.c, dap/breakpoints.c, dap/stack.c,
 * dap/running.c.  What to do (which symbols, where a breakpoint binds, how
 * the stack merges, how a value is read) is the core's; a handler that
 * needs more than a call or two is asking for a query the core lacks.
 */
#include "dap/internal.h"

#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

typedef void (*handler_fn)(tdb_dap *d, int seq, const json_t *args);

enum { NEED_NOTHING, NEED_SESSION, NEED_STOP };
/* Answered even while a step runs; the rest wait for its stop (QUEUED). */
enum { QUEUED, ANYTIME };

static const struct request {
    const char *name;
    handler_fn fn;
    int needs;
    int when;
} requests[] = {
    {"initialize", tdb_dap_initialize, NEED_NOTHING, ANYTIME},
    {"launch", tdb_dap_launch, NEED_NOTHING, QUEUED},
    {"attach", tdb_dap_attach, NEED_NOTHING, QUEUED},
    {"configurationDone", tdb_dap_configuration_done, NEED_NOTHING, QUEUED},
    {"disconnect", tdb_dap_disconnect, NEED_NOTHING, ANYTIME},
    {"terminate", tdb_dap_terminate, NEED_SESSION, ANYTIME},
    {"setBreakpoints", tdb_dap_set_breakpoints, NEED_SESSION, QUEUED},
    {"setFunctionBreakpoints", tdb_dap_set_function_breakpoints, NEED_SESSION, QUEUED},
    {"setInstructionBreakpoints", tdb_dap_set_instruction_breakpoints, NEED_SESSION, QUEUED},
    {"dataBreakpointInfo", tdb_dap_data_breakpoint_info, NEED_STOP, QUEUED},
    {"setDataBreakpoints", tdb_dap_set_data_breakpoints, NEED_SESSION, QUEUED},
    {"setExceptionBreakpoints", tdb_dap_set_exception_breakpoints, NEED_SESSION, QUEUED},
    {"threads", tdb_dap_threads, NEED_SESSION, ANYTIME},
    {"stackTrace", tdb_dap_stack_trace, NEED_STOP, QUEUED},
    {"scopes", tdb_dap_scopes, NEED_STOP, QUEUED},
    {"variables", tdb_dap_variables, NEED_STOP, QUEUED},
    {"evaluate", tdb_dap_evaluate, NEED_SESSION, QUEUED},
    {"setVariable", tdb_dap_set_variable, NEED_STOP, QUEUED},
    {"setExpression", tdb_dap_set_expression, NEED_STOP, QUEUED},
    {"completions", tdb_dap_completions, NEED_STOP, QUEUED},
    {"exceptionInfo", tdb_dap_exception_info, NEED_STOP, QUEUED},
    {"continue", tdb_dap_continue, NEED_SESSION, QUEUED},
    {"next", tdb_dap_next, NEED_SESSION, QUEUED},
    {"stepIn", tdb_dap_step_in, NEED_SESSION, QUEUED},
    {"stepInTargets", tdb_dap_step_in_targets, NEED_STOP, QUEUED},
    {"stepOut", tdb_dap_step_out, NEED_SESSION, QUEUED},
    {"pause", tdb_dap_pause, NEED_SESSION, ANYTIME},
    {"disassemble", tdb_dap_disassemble, NEED_STOP, QUEUED},
    {"readMemory", tdb_dap_read_memory, NEED_STOP, QUEUED},
    {"writeMemory", tdb_dap_write_memory, NEED_STOP, QUEUED},
    {"source", tdb_dap_source, NEED_NOTHING, ANYTIME},
    {"modules", tdb_dap_modules, NEED_SESSION, ANYTIME},
    {"loadedSources", tdb_dap_loaded_sources, NEED_SESSION, QUEUED},
};

/* Equal strings, in a time that does not tell how much of A matched. */
static int same_secret(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    unsigned char diff = na != nb;
    for (size_t i = 0; i < na; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
    return diff == 0;
}

/* A listening adapter admits only the client that knows its token: it
 * says so in initialize, launch or attach ("tdebugToken", which VS Code
 * passes from a launch configuration with "debugServer").  Before that
 * only initialize (capabilities) and disconnect are answered; a launch or
 * attach without it, or any other request, is refused and the connection
 * closed.  Nonzero when the request may go on. */
static int admit(tdb_dap *d, int seq, const char *command, const json_t *args)
{
    if (d->admitted || !d->o->token)
        return 1;
    const char *given = json_string_value(json_object_get(args, "tdebugToken"));
    if (given && same_secret(given, d->o->token)) {
        d->admitted = 1;
        return 1;
    }
    if (!given && (!strcmp(command, "initialize") || !strcmp(command, "disconnect")))
        return 1;
    tdb_dap_fail(d, seq, command,
                 "%s: this adapter admits only the client that gives its token (\"tdebugToken\" "
                 "in the arguments of launch or attach, as 'tdebug dap --port' said when it started)",
                 given ? "wrong tdebugToken" : "no tdebugToken");
    d->done = 1;
    return 0;
}

void tdb_dap_handle(tdb_dap *d, const json_t *msg)
{
    int seq;
    const char *command;
    const json_t *args;
    tdb_error err = {0};
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (type && !strcmp(type, "response")) {
        json_t *rs = json_object_get(msg, "request_seq");
        if (d->rit_seq && json_integer_value(rs) == d->rit_seq) {
            d->rit_seq = 0;
            if (!json_is_true(json_object_get(msg, "success")) && d->tty_fifo >= 0) {
                /* The client would not run the terminal: pipes, then. */
                const char *why = json_string_value(json_object_get(msg, "message"));
                tdb_dap_output(d, "console", "tdebug: the client ran no terminal for the program "
                                             "(%s): its output comes here\n",
                               why ? why : "no reason given");
                epoll_ctl(d->epfd, EPOLL_CTL_DEL, d->tty_fifo, NULL);
                close(d->tty_fifo);
                d->tty_fifo = -1;
                tdb_dap_forget_terminal_dir(d);
                tdb_dap_launch_with_pipes(d);
            }
            return;
        }
        const char *cmd = json_string_value(json_object_get(msg, "command"));
        if (cmd && !strcmp(cmd, "startDebugging")) {
            /* The client's answer to a child session offered: a refusal
             * is said, the program goes on either way. */
            if (!json_is_true(json_object_get(msg, "success"))) {
                const char *why = json_string_value(json_object_get(msg, "message"));
                int waits = d->start_debugging && d->sub_process;
                tdb_dap_output(d, "console", "tdebug: the client started no session for a child "
                                             "process (%s)%s\n", why ? why : "no reason given",
                               waits ? "; it waits a while for one, then goes on" : "");
            }
            return;
        }
    }
    if (tdb_dap_request_parts(msg, &seq, &command, &args, &err) < 0) {
        if (seq >= 0)
            tdb_dap_fail(d, seq, command ? command : "unknown", "%s", err.msg);
        else
            tdb_dap_output(d, "important", "tdebug: %s; the message was ignored\n", err.msg);
        return;
    }
    if (!admit(d, seq, command, args))
        return;
    for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
        const struct request *r = &requests[i];
        if (strcmp(r->name, command) != 0)
            continue;
        if (r->when == QUEUED && tdb_dap_stepping(d)) {
            /* gdb takes no command while it steps, and interrupting the
             * step would end it where it is: the request waits for the
             * step's stop (tdb_dap_run_queued()). */
            json_array_append(d->queued, (json_t *)msg);
            return;
        }
        if (r->needs >= NEED_SESSION && (!d->s || d->ended)) {
            tdb_dap_fail(d, seq, command, d->ended ? "the debugging session is over"
                                                   : "no program yet: send 'launch' or 'attach' first");
            return;
        }
        if (r->needs == NEED_STOP && !tdb_session_stop(d->s)) {
            tdb_dap_fail(d, seq, command, "the program is %s", tdb_session_running(d->s)
                                                                   ? "running: pause it first"
                                                                   : "not stopped");
            return;
        }
        r->fn(d, seq, args);
        return;
    }
    tdb_dap_fail(d, seq, command, "tdebug does not support the request '%s'", command);
}

int tdb_dap_stepping(const tdb_dap *d)
{
    return d->s && !d->ended && tdb_session_stepping(d->s);
}

void tdb_dap_run_queued(tdb_dap *d)
{
    while (json_array_size(d->queued) && !tdb_dap_stepping(d) && !d->done) {
        json_t *msg = json_incref(json_array_get(d->queued, 0));
        json_array_remove(d->queued, 0);
        tdb_dap_handle(d, msg);
        json_decref(msg);
    }
}
