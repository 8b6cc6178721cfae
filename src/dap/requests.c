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

static const struct request {
    const char *name;
    handler_fn fn;
    int needs;
} requests[] = {
    {"initialize", tdb_dap_initialize, NEED_NOTHING},
    {"launch", tdb_dap_launch, NEED_NOTHING},
    {"attach", tdb_dap_attach, NEED_NOTHING},
    {"configurationDone", tdb_dap_configuration_done, NEED_NOTHING},
    {"disconnect", tdb_dap_disconnect, NEED_NOTHING},
    {"terminate", tdb_dap_terminate, NEED_SESSION},
    {"setBreakpoints", tdb_dap_set_breakpoints, NEED_SESSION},
    {"setFunctionBreakpoints", tdb_dap_set_function_breakpoints, NEED_SESSION},
    {"setExceptionBreakpoints", tdb_dap_set_exception_breakpoints, NEED_SESSION},
    {"threads", tdb_dap_threads, NEED_SESSION},
    {"stackTrace", tdb_dap_stack_trace, NEED_STOP},
    {"scopes", tdb_dap_scopes, NEED_STOP},
    {"variables", tdb_dap_variables, NEED_STOP},
    {"evaluate", tdb_dap_evaluate, NEED_SESSION},
    {"setVariable", tdb_dap_set_variable, NEED_STOP},
    {"completions", tdb_dap_completions, NEED_STOP},
    {"exceptionInfo", tdb_dap_exception_info, NEED_STOP},
    {"setExpression", tdb_dap_set_expression, NEED_STOP},
    {"continue", tdb_dap_continue, NEED_SESSION},
    {"next", tdb_dap_next, NEED_SESSION},
    {"stepIn", tdb_dap_step_in, NEED_SESSION},
    {"stepOut", tdb_dap_step_out, NEED_SESSION},
    {"pause", tdb_dap_pause, NEED_SESSION},
};

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
    }
    if (tdb_dap_request_parts(msg, &seq, &command, &args, &err) < 0) {
        if (seq >= 0)
            tdb_dap_fail(d, seq, command ? command : "unknown", "%s", err.msg);
        else
            tdb_dap_output(d, "important", "tdebug: %s; the message was ignored\n", err.msg);
        return;
    }
    for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
        const struct request *r = &requests[i];
        if (strcmp(r->name, command) != 0)
            continue;
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
