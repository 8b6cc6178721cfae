/*
 * cli/cli.h: the terminal front-end of a debugging session ('tdebug run',
 * 'tdebug attach', 'tdebug tour'): a (tdebug) prompt at each stop, or
 * --batch text, or --json lines, or the commands of a file (-x) then
 * --batch.  It presents what the session core (src/session/session.h) emits and
 * passes it commands; it owns the terminal (the program tdebug started
 * gets it while it runs), the prompt (readline, history, completion,
 * Enter repeating a step) and what Ctrl-C and the exit status mean:
 *
 *   Ctrl-C while the program runs: at a prompt, the program stops and the
 *   prompt comes back; in --batch/--json the session ends (a program
 *   tdebug started is killed, an attached one detached), status 130.
 *   SIGTERM/SIGHUP end the session the same way, status 143/129.
 *
 * Contract: the printers of sessions live here (tdb_event(),
 * tdb_say_*()); a stop's and a command's text come from src/commands/,
 * its data from the core; the CLI never asks gdb.  Only cli/cli.c links
 * readline.
 * May include: base, process, targets, session, commands
 */
#ifndef TDB_CLI_H
#define TDB_CLI_H

#include "base/common.h"
#include "session/session.h"

#include <jansson.h>
#include <sys/types.h>

/* A stop hook is called twice at each stop: BEFORE the stop line and
 * stacks are printed and AFTER.  The BEFORE call may filter: CONTINUE
 * resumes the program without showing the stop (and without an AFTER
 * call), QUIT ends the session, DEFAULT shows it.  The AFTER call's answer
 * decides what happens next: STEP, NEXT and FINISH are DEFAULT with that
 * resumption in place of continuing (what --batch does at once, and an
 * empty line at a prompt with empty_continues: a tour's Enter steps). */
typedef enum tdb_hook_phase { TDB_HOOK_BEFORE, TDB_HOOK_AFTER } tdb_hook_phase;
typedef enum tdb_hook_action {
    TDB_HOOK_DEFAULT,  /* BEFORE: show the stop; AFTER: what the output mode
                        * does (prompt, or continue) */
    TDB_HOOK_CONTINUE, /* resume the program */
    TDB_HOOK_QUIT,     /* end the session */
    TDB_HOOK_STEP,     /* AFTER only: as DEFAULT, going on with a step */
    TDB_HOOK_NEXT,     /* ... with a next */
    TDB_HOOK_FINISH    /* ... with a finish */
} tdb_hook_action;
typedef tdb_hook_action (*tdb_stop_hook)(tdb_session *s, tdb_hook_phase phase,
                                         const tdb_stop_info *st, void *data);

/* How stops and events are presented. */
typedef enum tdb_output {
    TDB_OUTPUT_INTERACTIVE, /* a (tdebug) prompt at each stop */
    TDB_OUTPUT_BATCH,       /* print each stop with its backtrace, continue */
    TDB_OUTPUT_JSON         /* the same as one JSON object per line; the
                             * program's own stdout goes to stderr */
} tdb_output;

/* The terminal front-end's options, around the session core's. */
typedef struct tdb_cli_options {
    tdb_session_options session; /* the core's (its strings borrowed) */
    tdb_output output;
    const char *commands;  /* -x FILE: commands run at stops, one a line */
    const char *prompt;    /* interactive prompt (NULL: "(tdebug) ") */
    int empty_continues;   /* interactive: an empty line resumes the program
                            * (tours: Enter goes to the next stop) */
} tdb_cli_options;

/* ---- Printing events: the CLI's, and the core's through on_event() ---- */

/* Print one event: with TDB_OUTPUT_JSON, one line {"event": EVENT,
 * "message": MSG, ...FIELDS} on stdout; otherwise "tdebug: MSG" on
 * stdout, or "tdebug: warning: MSG" on stderr when EVENT is "warning".
 * FIELDS (stolen, may be NULL) adds keys to the JSON form. */
void tdb_event(tdb_output output, const char *event, json_t *fields, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Print an event object (borrowed) as tdb_event() would. */
void tdb_event_print(tdb_output output, const json_t *event);
/* Print EVENT (stolen) as one compact JSON line on stdout. */
void tdb_event_json(json_t *event);
/* "the program was killed" because tdebug got signal SIG (0: the user
 * quit), as a "killed" event. */
void tdb_say_killed(tdb_output output, int sig);
/* The program's end: an "exited" event {status, signalled}, or in text
 * "tdebug: program exited with status N" (nothing when SIGNALLED: that
 * was said when it happened). */
void tdb_say_exited(tdb_output output, int status, int signalled);

typedef struct tdb_cli tdb_cli;

/* A front-end with its session (gdb started).  NULL with ERR set when gdb
 * cannot start.  OPTS->session as tdb_session_new(); the front-end sets
 * the core's policies its mode needs (gdb's whole view at stops when a
 * prompt or commands follow, the program's stdout on stderr for --json). */
tdb_cli *tdb_cli_new(const tdb_cli_options *opts, tdb_error *err);
void tdb_cli_free(tdb_cli *c); /* ends the session; accepts NULL */

/* Call HOOK (with DATA) at every stop presented; NULL removes it. */
void tdb_cli_set_stop_hook(tdb_cli *c, tdb_stop_hook hook, void *data);

/* Run ARGV under gdb until the program ends or the user ends the session.
 * Returns the status tdebug should exit with: the program's own (128+N
 * when killed by signal N), 1 when a requested stop never happened, 0
 * when the user quit (the program killed), 130/143/129 when interrupted
 * or terminated (the program killed), TDB_EXIT_TOOL with ERR set when gdb
 * failed or died. */
int tdb_cli_run(tdb_cli *c, char *const argv[], tdb_error *err);

/* Attach to PID (ANNOUNCEMENT: of a process paused by the preloaded
 * library, or NULL; see tdb_session_attach()) and handle events until the
 * user quits or the process exits; with --batch/--json and no stops asked
 * for, print every thread's stack and detach at once.  Always detaches,
 * never kills; leaves a process that was stopped before stopped, and says
 * so.  Returns tdebug's exit status: 0, 1 (refused, or a requested stop
 * cannot or did not happen), 130/143/129 when interrupted or terminated,
 * TDB_EXIT_TOOL with ERR set when gdb failed. */
int tdb_cli_attach(tdb_cli *c, pid_t pid, const json_t *announcement, tdb_error *err);

/* 1 once the program ended by itself. */
int tdb_cli_program_ended(const tdb_cli *c);

/* Attach a session to the process that sent ANNOUNCEMENT (borrowed: a
 * process paused by the preloaded library, process/paused.h), stop where
 * OPTS says, release it and handle its stops (tdb_cli_attach()).  When
 * OPTS asks for no stop at all (--stop-at-import, --stop-at-load, --break,
 * --catch-throw) and the announcement names the module the process waits
 * at, the stop is that module's import: its PyInit.  Says first which
 * process it attaches to.  Returns the session's exit status, with ERR
 * set on failure (a refused attach has code EPERM or ESRCH:
 * tdb_announce_note_unreleased() says what becomes of the process). */
int tdb_cli_attach_paused(tdb_cli_options *opts, const json_t *announcement, tdb_error *err);

#endif
