/*
 * Folder gdb/: gdb and nothing else: the pure MI parser (bytes in, records
 * out, no I/O; a line it cannot parse is an error record) and the driver of
 * one gdb process (fork, pipes, tokens, timeouts).  It knows nothing of
 * Python, torch or terminals, never prints (a trace goes only to a stream
 * the caller gives) and never exits.
 * May include: base
 *
 * gdb/mi_session.h: one running gdb, driven over MI3 on pipes.
 *
 * The session owns the gdb process (fork + exec, never a shell), writes
 * tokened commands, matches each result record to its command by token,
 * queues every asynchronous record (exec, status, notify, and stream output
 * that arrives outside a command) for the caller, enforces timeouts and
 * notices gdb dying.  It knows nothing of Python, torch or the terminal:
 * the session core (src/session/) builds the debugging policy on top.
 *
 * Commands are synchronous (one outstanding at a time); with 'mi-async on'
 * gdb answers commands while the target runs, so the caller can interrupt.
 */
#ifndef TDB_MI_SESSION_H
#define TDB_MI_SESSION_H

#include "base/common.h"
#include "gdb/mi_parser.h"

#include <stdio.h>
#include <sys/types.h>

typedef struct tdb_gdb tdb_gdb;

typedef struct tdb_gdb_options {
    const char *gdb;      /* gdb to run; NULL: $TDEBUG_GDB, else "gdb" on PATH */
    int stderr_fd;        /* gdb's stderr; -1 keeps ours */
    const int *keep_fds;  /* fds gdb (and so the program it starts) inherits */
    int n_keep_fds;
    int own_pgrp;         /* run gdb in its own process group, so a Ctrl-C at
                           * the terminal reaches tdebug, not gdb */
    const char *const *extra_args; /* more gdb arguments, NULL-terminated */
} tdb_gdb_options;

/* Start gdb --interpreter=mi3 -nx -q and check it answers and is at least
 * gdb 10.  NULL with ERR set when gdb is missing, too old or dies; the
 * message says what to do.  $TDEBUG_TRACE_MI=FILE logs all MI traffic. */
tdb_gdb *tdb_gdb_start(const tdb_gdb_options *opts, tdb_error *err);
/* tdb_gdb_start() in two halves, for a caller with work to do while gdb
 * starts (0.07 s): tdb_gdb_spawn() only runs it (NULL with ERR set when it
 * cannot be run: not found); tdb_gdb_handshake() waits for it, checks it
 * and sets it up (-1 with ERR set, as tdb_gdb_start() says; close G
 * then). */
tdb_gdb *tdb_gdb_spawn(const tdb_gdb_options *opts, tdb_error *err);
int tdb_gdb_handshake(tdb_gdb *g, tdb_error *err);

/* gdb's version as major*100+minor (1301 for 13.1). */
int tdb_gdb_version(const tdb_gdb *g);
/* The fd to poll(): readable when gdb may have printed something. */
int tdb_gdb_fd(const tdb_gdb *g);
/* Nonzero while gdb runs and its pipes are open. */
int tdb_gdb_alive(const tdb_gdb *g);
/* Why gdb went away, e.g. "gdb was killed by signal 11 (Segmentation fault)";
 * NULL while it runs. Borrowed. */
const char *tdb_gdb_death(const tdb_gdb *g);

/* An fd which, when readable, makes every wait return early with ERR code
 * ECANCELED (a self-pipe written by a SIGINT handler).  -1 disables. */
void tdb_gdb_set_cancel_fd(tdb_gdb *g, int fd);

/* The answer to one command. */
typedef struct tdb_mi_response {
    tdb_mi_record *result; /* the ^done/^running/^error/... record (owned) */
    tdb_buf console;       /* ~ text printed while the command ran */
    tdb_buf log;           /* & text printed while the command ran */
} tdb_mi_response;
void tdb_mi_response_free(tdb_mi_response *r); /* accepts NULL */

/* Send one MI command (a token is prepended) and wait up to TIMEOUT_MS
 * (-1: forever) for its result record.  Async records that arrive meanwhile
 * are queued for tdb_gdb_next_event().  Returns the response (which may be
 * ^error: see its class) or NULL with ERR set on timeout, cancel (code
 * ECANCELED) or gdb's death.  CMD is sent as is: quote arguments with
 * tdb_mi_quote(). */
tdb_mi_response *tdb_gdb_send(tdb_gdb *g, int timeout_ms, tdb_error *err, const char *cmd);
/* printf-style tdb_gdb_send() that also treats ^error as failure (ERR gets
 * gdb's message) and returns 0/-1.  *OUT_RESULTS, when given, gets a new
 * reference to the result's values on success. */
int tdb_gdb_cmd(tdb_gdb *g, int timeout_ms, json_t **out_results, tdb_error *err,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Run a CLI command through -interpreter-exec console; returns its console
 * output as a new string, or NULL with ERR set (gdb's error message for a
 * failing command). */
char *tdb_gdb_console(tdb_gdb *g, int timeout_ms, tdb_error *err, const char *cli);

/* Evaluate EXPR (-data-evaluate-expression) to an integer: 0 and *OUT, or
 * -1 with ERR set (gdb's message, or that the value is no number).  A
 * value gdb prints with its type first ("(void *) 0x1234", "(PyObject *)
 * 0x7f... <_Py_NoneStruct>") reads as the number after the type.
 * Cast in EXPR ("(long)(x)") to have a plain number. */
int tdb_gdb_eval_int(tdb_gdb *g, int timeout_ms, const char *expr, int64_t *out, tdb_error *err);

/* How far ADDR is into the function (or other symbol) holding it, as
 * gdb's 'info symbol' says ("f(int) + 4 in section .text of /lib/x.so"):
 * 0 and *OUT_OFFSET, or -1 with ERR set when no symbol holds it. */
int tdb_gdb_symbol_offset(tdb_gdb *g, int timeout_ms, uint64_t addr, uint64_t *out_offset,
                          tdb_error *err);

/* The next queued async record, reading from gdb as needed for up to
 * TIMEOUT_MS (0: only what is already here; -1: forever).  NULL with ERR
 * clear on timeout; NULL with ERR set when gdb died or the wait was
 * cancelled (code ECANCELED).  The caller owns the record. */
tdb_mi_record *tdb_gdb_next_event(tdb_gdb *g, int timeout_ms, tdb_error *err);
/* Put a record back at the front of the queue (the caller gives it up). */
void tdb_gdb_unget_event(tdb_gdb *g, tdb_mi_record *r);

/* Ask gdb to quit (-gdb-exit) and reap it; after GRACE_MS send SIGTERM,
 * then SIGKILL.  gdb itself kills a program it started and detaches from
 * one it attached to, so the caller must detach first when that matters.
 * Frees G.  Returns gdb's wait status, or -1.  Accepts NULL. */
int tdb_gdb_close(tdb_gdb *g, int grace_ms);

#endif
