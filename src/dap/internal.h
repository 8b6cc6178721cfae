/*
 * dap/internal.h: the DAP front-end's state, shared by its files and no one
 * else:
 *   dap/dap.c          the channel, the event loop, the core's events as DAP
 *                      events (stopped, exited, output, breakpoint...)
 *   dap/requests.c     the table of requests and their dispatch
 *   dap/lifecycle.c    initialize, launch, attach, configurationDone,
 *                      disconnect, terminate
 *   dap/breakpoints.c  setBreakpoints, setFunctionBreakpoints,
 *                      setInstructionBreakpoints, dataBreakpointInfo,
 *                      setDataBreakpoints,
 *                      setExceptionBreakpoints
 *   dap/stack.c        threads, stackTrace, scopes, variables, evaluate
 *   dap/running.c      continue, next, stepIn, stepInTargets, stepOut, pause
 *   dap/native.c       disassemble, readMemory, writeMemory, modules,
 *                      loadedSources, source (the
 *                      machine code listing of a frame without a source)
 *   dap/proto.c        the wire format (dap/proto.h)
 */
#ifndef TDB_DAP_INT_H
#define TDB_DAP_INT_H

#include "dap/dap.h"
#include "dap/proto.h"
#include "process/preload.h"
#include "session/session.h"

#include <jansson.h>
#include <sys/types.h>

typedef struct tdb_dap {
    const tdb_dap_options *o;
    int in, out;          /* the client */
    int log;              /* the transcript, or -1 */
    tdb_dap_reader *rd;
    int seq;              /* of the last message sent */
    int done;             /* the client disconnected or went away */
    int admitted;         /* it gave the token (or none is needed) */
    int end_signal;       /* a signal ended the session */
    int epfd;             /* readable when the client, the program's output,
                           * a signal or an announcement is */
    int sigfd;
    /* what the client said in initialize */
    int line_base;        /* 0 when its lines start at 1, else -1 */
    int column_base;      /* 1 when its columns start at 1 (the default), else 0 */
    int run_in_terminal;  /* it can run a command in a terminal (runInTerminal) */
    int initialized;
    /* the session */
    tdb_session *s;
    tdb_values *vals;
    tdb_session_options opts; /* its lists are ours, strings borrowed from start_args */
    json_t *start_args;   /* the launch or attach arguments */
    int start_seq;        /* the launch/attach request answered at configurationDone */
    const char *start_cmd;/* "launch" or "attach"; NULL when none waits */
    int attach;           /* attach, not launch */
    tdb_attach_start astart;
    char **argv;          /* launch: the program's command line */
    size_t argc;
    char *program;        /* for the 'process' event */
    char *python;         /* argv[0] */
    int stop_on_entry;
    int sub_process;      /* offer the program's Python children as child
                           * sessions (startDebugging); "subProcess" */
    int start_debugging;  /* the client said supportsStartDebuggingRequest */
    int entry_bp;         /* stopOnEntry's breakpoint */
    int configured;       /* configurationDone came */
    int ended;            /* exited/terminated sent */
    int py_locals_said;   /* the note that Python locals are unreadable */
    int cwd_fd;           /* the directory to go back to, or -1 */
    /* the program's output */
    int out_fd, err_fd;
    tdb_buf out_tail, err_tail; /* a UTF-8 sequence cut by a read */
    /* the program's terminal (runInTerminal) */
    int rit_seq;          /* our runInTerminal request, until answered */
    int tty_fifo;         /* where the terminal's helper says its tty, or -1;
                           * open until the session ends, which lets it go */
    char *tty_dir;        /* the FIFO's directory, until both ends opened it */
    /* attach --wait */
    tdb_announce_listener *announce;
    pid_t wait_pid;
    /* breakpoints the client set, and what it was told about them */
    json_t *src_bps;      /* {path: [{"line": N, "id": N}]} */
    json_t *fn_bps;       /* {name: id} */
    json_t *ins_bps;      /* {"*0xADDRESS": id} */
    json_t *data_bps;     /* {"ACCESS THREAD INDEX EXPR": id} */
    json_t *exc_bps;      /* {filter: id} */
    json_t *told;         /* {"id": the last 'breakpoint' sent} */
    json_t *threads;      /* the last stop's threads, answered while it runs */
    json_t *queued;       /* requests that came while a step ran, in order */
    json_t *listings;     /* sourceReference N: listings[N - 1], a function's
                           * machine code ({"ref", "text", "lines"}) */
    json_t *listing_of;   /* {"0xADDRESS": N} for each instruction listed */
    json_t *modules;      /* {path: the core's library with its debug info} */
    json_t *sources_told; /* {path: true} of the sources the client knows
                           * (NULL until it asked loadedSources): a new one
                           * at a stop is a 'loadedSource' event */
    json_t *step_targets; /* this stop's stepInTargets: target N is [N - 1],
                           * the core's {"name", "label"...} */
} tdb_dap;

/* dap/dap.c */
void tdb_dap_send(tdb_dap *d, json_t *msg); /* steals MSG, numbers it */
void tdb_dap_ok(tdb_dap *d, int seq, const char *command, json_t *body);
void tdb_dap_fail(tdb_dap *d, int seq, const char *command, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An 'output' event: CATEGORY "console", "important", "stdout", "stderr". */
void tdb_dap_output(tdb_dap *d, const char *category, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The core's breakpoint JSON as a DAP Breakpoint (new reference). */
json_t *tdb_dap_breakpoint(tdb_dap *d, const json_t *bp);
/* Remember what the client was told about BP (its 'breakpoint' events
 * then say only changes). */
void tdb_dap_told(tdb_dap *d, const json_t *dap_bp);
/* The session's frontend callbacks. */
void tdb_dap_frontend(tdb_dap *d, tdb_frontend *fe);
/* The program runs again (values forgotten, then resumed): 0 or -1 with
 * ERR. */
int tdb_dap_resume(tdb_dap *d, tdb_resume how, tdb_error *err);
/* Stop a running program for a request that needs gdb (gdb takes no
 * command while it runs): 0 with *HELD set when it was running, -1 when it
 * ended meanwhile (said).  tdb_dap_release() afterwards lets it go on, or
 * presents the stop that came before the interrupt did. */
int tdb_dap_hold(tdb_dap *d, int *held);
void tdb_dap_release(tdb_dap *d, int held);
/* Present the stop the program is at. */
void tdb_dap_present_stop(tdb_dap *d);
/* dap/native.c: after a stop, once the client asked loadedSources, a
 * 'loadedSource' event (reason new) for each source file it does not know. */
void tdb_dap_tell_new_sources(tdb_dap *d);
/* The session is over: end the target ('quit'), say terminated once. */
void tdb_dap_end_session(tdb_dap *d);
/* Read and send what the program wrote so far. */
void tdb_dap_drain_output(tdb_dap *d);
/* Add FD to the set the loop waits on. */
void tdb_dap_watch(tdb_dap *d, int fd);
/* Start listening for a paused process (attach with "wait"). */
int tdb_dap_listen_announce(tdb_dap *d, tdb_error *err);

/* dap/requests.c */
/* Handle one message from the client: now, or, when it needs gdb while a
 * step runs, once the step has stopped (tdb_dap_run_queued()). */
void tdb_dap_handle(tdb_dap *d, const json_t *msg);
/* 1 while the program runs a step. */
int tdb_dap_stepping(const tdb_dap *d);
/* Handle the requests that waited for a step's stop, until one makes the
 * program step again. */
void tdb_dap_run_queued(tdb_dap *d);

/* The handlers: SEQ is the request's, ARGS its arguments (borrowed; may be
 * NULL); each answers it (tdb_dap_ok(), tdb_dap_fail()). */
#define TDB_DAP_HANDLER(name) void tdb_dap_##name(tdb_dap *d, int seq, const json_t *args)
/* dap/lifecycle.c */
TDB_DAP_HANDLER(initialize);
TDB_DAP_HANDLER(launch);
TDB_DAP_HANDLER(attach);
TDB_DAP_HANDLER(configuration_done);
TDB_DAP_HANDLER(disconnect);
TDB_DAP_HANDLER(terminate);
/* dap/breakpoints.c */
TDB_DAP_HANDLER(set_breakpoints);
TDB_DAP_HANDLER(set_function_breakpoints);
TDB_DAP_HANDLER(set_instruction_breakpoints);
TDB_DAP_HANDLER(data_breakpoint_info);
TDB_DAP_HANDLER(set_data_breakpoints);
TDB_DAP_HANDLER(set_exception_breakpoints);
/* dap/stack.c */
/* Frames are named by thread and index at this stop. */
#define FRAME_ID(thread, index) ((json_int_t)(thread) * 65536 + (index) + 1)
#define FRAME_THREAD(id) ((int)(((id) - 1) / 65536))
#define FRAME_INDEX(id) ((int)(((id) - 1) % 65536))
/* ARGS' frameId: 0 with the frame's THREAD and INDEX (0, 0 when absent:
 * the stop's), or -1 after failing request SEQ (CMD). */
int tdb_dap_frame_arg(tdb_dap *d, int seq, const char *cmd, const json_t *args, int *thread,
                      int *index);
TDB_DAP_HANDLER(threads);
TDB_DAP_HANDLER(stack_trace);
TDB_DAP_HANDLER(scopes);
TDB_DAP_HANDLER(variables);
TDB_DAP_HANDLER(evaluate);
TDB_DAP_HANDLER(set_variable);
TDB_DAP_HANDLER(set_expression);
TDB_DAP_HANDLER(completions);
TDB_DAP_HANDLER(exception_info);
/* dap/running.c */
TDB_DAP_HANDLER(continue);
TDB_DAP_HANDLER(next);
TDB_DAP_HANDLER(step_in);
TDB_DAP_HANDLER(step_in_targets);
TDB_DAP_HANDLER(step_out);
TDB_DAP_HANDLER(pause);
/* dap/native.c */
TDB_DAP_HANDLER(disassemble);
TDB_DAP_HANDLER(read_memory);
TDB_DAP_HANDLER(write_memory);
TDB_DAP_HANDLER(source);
TDB_DAP_HANDLER(modules);
TDB_DAP_HANDLER(loaded_sources);
/* Add to CAPS (initialize's answer) what dap/native.c answers. */
void tdb_dap_native_capabilities(json_t *caps);
/* A Source (new reference) for the frame at ADDRESS (named NAME) that has
 * no source file: its function's machine code, served by 'source'; with
 * *OUT_LINE the line of ADDRESS in it.  NULL when nothing can be decoded
 * there. */
json_t *tdb_dap_listing_source(tdb_dap *d, const char *address, const char *name, int *out_line);

/* dap/lifecycle.c */
/* launch: the program's output through pipes (the default). */
void tdb_dap_launch_with_pipes(tdb_dap *d);
/* The terminal's helper said its tty: launch on it. */
void tdb_dap_terminal_ready(tdb_dap *d);
/* Remove the FIFO of runInTerminal and its directory. */
void tdb_dap_forget_terminal_dir(tdb_dap *d);
/* attach: take the process that ANNOUNCEMENT names (NULL: d->wait_pid is a
 * plain pid); answers the attach on failure. */
int tdb_dap_attach_now(tdb_dap *d, pid_t pid, const json_t *announcement);

/* How long a launched program's Python child waits for its child session
 * (tdb_session_options.children_wait). */
#define TDB_DAP_CHILDREN_WAIT_S 30

#endif
