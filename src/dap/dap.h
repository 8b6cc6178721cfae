/*
 * dap/dap.h: the Debug Adapter Protocol front-end of a debugging session
 * ('tdebug dap'): one mixed-mode adapter, Python and C/C++, over the same
 * session core as 'tdebug run' and 'tdebug attach' (src/session/session.h), the way
 * lldb-dap and gdb's DAP sit over their debuggers.
 *
 * It maps each request onto the core (one small handler a request, found
 * in src/dap/requests.c's table, in a file by topic: lifecycle.c,
 * breakpoints.c, stack.c, running.c) and each of the core's events onto
 * DAP events
 * (stopped, exited, terminated, output, breakpoint, process; a Python
 * child process forked: the startDebugging reverse request); the wire
 * format is src/dap/proto.h.  The program's stdout and stderr become
 * 'output' events: the client's channel never carries anything else.
 *
 * How a session ends: the client's disconnect (or terminate), or the
 * client going away (end of input, a broken pipe) end it the way 'quit'
 * does: a program the adapter launched is killed, a process it attached to
 * is detached and left running, never killed.
 *
 * Contract: a thin layer (lldb-dap's shape): a handler maps a request
 * onto the core's data functions and shapes the answer; it never asks gdb
 * and decides nothing the core or the command language (src/commands/, for
 * the Debug Console's '-exec') does not.  Its files: dap/internal.h.
 * May include: base, process, targets, session, commands
 */
#ifndef TDB_DAP_H
#define TDB_DAP_H

#include "base/common.h"

typedef struct tdb_dap_options {
    const char *log;   /* append every message, each way, to this file; or NULL */
    const char *token; /* a client must give it ("tdebugToken" in the arguments
                        * of initialize, launch or attach) before anything but
                        * initialize and disconnect; NULL: every client is its
                        * owner (stdio, a Unix socket checked by the kernel) */
} tdb_dap_options;

/* Serve one client reading requests from IN and writing to OUT until it
 * disconnects or goes away; the debugging session it asked for ends with
 * it.  SIGINT, SIGTERM and SIGHUP end it the same way.  Returns 0, or the
 * signal number that ended it, or -1 with ERR set when the channel itself
 * failed. */
int tdb_dap_serve(int in, int out, const tdb_dap_options *o, tdb_error *err);

#endif
