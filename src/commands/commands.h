/*
 * commands/commands.h: the command language typed at a stop ('bt', 'frame
 * 3', 'py-locals', 'break x.c:3', any gdb command...) and the text
 * rendering of stops and stacks, over the session core's data functions
 * (session/session.h).  The terminal front-end (cli/) and the DAP's Debug
 * Console ('-exec COMMAND', dap/) both run commands here, so a command
 * reads the same wherever it is typed.
 *
 * Contract: this layer asks the core, never gdb (no gdb/ include), prints
 * nothing (a command's answer is a reply: text for a terminal and an event
 * for --json; a stop's text is built into a buffer), reads no terminal,
 * and keeps no state of its own beyond a call: what a stop is, which frame
 * is selected, which breakpoints exist is the core's.
 * May include: base, process, native, cpython, torch, stacks, session
 *
 *   commands/commands.c     the table, dispatch, help, completion, running,
 *                           symbols, listing source, gdb's console
 *   commands/stack.c        bt, frame, up, down, the py-* frame commands,
 *                           threads
 *   commands/breakpoints.c  break, tbreak, catch, info breakpoints,
 *                           delete, enable, disable
 *   commands/values.c       args, tensor, py-locals, py-print
 *   commands/render.c       a stop, a stack, a breakpoint, source lines as
 *                           text
 */
#ifndef TDB_COMMANDS_H
#define TDB_COMMANDS_H

#include "base/common.h"
#include "session/session.h"

#include <jansson.h>

/* The result of a command. */
typedef struct tdb_reply {
    int resumed;   /* the program runs again: wait for the next stop */
    int quit;      /* the user asked to end the session */
    int error;     /* the command failed (TEXT/EVENT say why) */
    json_t *event; /* the result as an event ({"event": ..., ...}) or NULL */
    tdb_buf text;  /* the result as a terminal shows it */
} tdb_reply;
void tdb_reply_clear(tdb_reply *r); /* frees and zeroes; accepts zeroed */

/* Run one command typed at a stop ("bt", "step", "frame 3", "info
 * breakpoints", "break x.c:3", any gdb command...) and fill R (zeroed
 * first).  A light session becomes an ordinary one first: commands see
 * gdb's whole view.  Returns 0, or -1 with ERR set when gdb failed (not
 * when the command did: that is R->error).  "help" lists the commands. */
int tdb_command_exec(tdb_session *s, const char *line, tdb_reply *r, tdb_error *err);

/* Every thread's merged stack as one "threads" event and its text. */
int tdb_command_all_threads(tdb_session *s, tdb_reply *r, tdb_error *err);

/* Names for completion at a prompt: commands, then symbols gdb knows that
 * start with PREFIX.  New NULL-terminated list (tdb_strv_free). */
char **tdb_command_complete(tdb_session *s, const char *prefix);

/* ---- text (commands/render.c) ---- */

/* A stop in words: MESSAGE, the line a terminal prints after "tdebug: "
 * ("stopped at breakpoint 1 (f)"); WHERE, the frame it reads as, gdb's way
 * ("f (a=1) at x.c:3", 'File "t.py", line 4, in g') or NULL; SOURCE_LINE,
 * that line of source ("3\tx = y + 1") or NULL when unreadable; NOTE,
 * what the stack's first line says of the stopped thread (inside the
 * garbage collector) or NULL (static, not freed). */
typedef struct tdb_stop_text {
    char *message, *where, *source_line;
    const char *note;
} tdb_stop_text;
void tdb_stop_text_make(tdb_session *s, const tdb_stop_info *st, tdb_stop_text *t);
void tdb_stop_text_clear(tdb_stop_text *t); /* accepts zeroed */

/* A stop as a terminal shows it: the "tdebug: MESSAGE" line, the frame
 * and its source line, the value returned, the breakpoint's arguments,
 * and the stack unless the stop is a step's. */
void tdb_render_stop(tdb_session *s, const tdb_stop_info *st, tdb_buf *out);
/* The merged stack V as text with FLAGS (stacks/merge.h), then GDB_PY
 * (gdb's py-bt frames, for an interpreter tdebug does not read itself;
 * may be NULL) when V has no Python frames. */
void tdb_render_stack(const tdb_stackview *v, unsigned flags, const json_t *gdb_py,
                      tdb_buf *out);
/* Lines FROM..TO of FILE as gdb lists them ("42\ttext\n"), line MARK
 * marked ">": the one reader of source lines (a stop's line, 'frame',
 * 'list', 'py-list').  0, or -1 with errno set when FILE cannot be read. */
int tdb_list_source(const char *file, long from, long to, long mark, tdb_buf *out);
/* Where breakpoint BP (tdb_session_breakpoint()'s JSON) is, as 'break'
 * and 'info breakpoints' say it: "f at x.c:3", "t.py:12", "f in t.py",
 * "g (pending: ...)". */
void tdb_render_breakpoint(const json_t *bp, tdb_buf *out);

#endif
