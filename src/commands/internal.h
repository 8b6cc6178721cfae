/*
 * commands/internal.h: what the files of the command language share, and
 * no one else (see commands/commands.h).
 */
#ifndef TDB_COMMANDS_INT_H
#define TDB_COMMANDS_INT_H

#include "commands/commands.h"

/* O[KEY] when it is a string, else NULL. */
static inline const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A command: ARGS after its name (spaces skipped), R to fill.  0, or -1
 * with ERR set when gdb failed. */
typedef int (*tdb_command_fn)(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);

/* Fail R for command CMD (R->error, the text and an "error" event);
 * returns 0: the session goes on. */
int tdb_command_fail(tdb_reply *r, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 1 when the program is at a stop, else 0 with R failed saying why. */
int tdb_command_need_stop(tdb_session *s, tdb_reply *r, const char *cmd);
/* The stop with its whole stack (tdb_session_stop_full()); when that
 * cannot be read, the stop as it is (a partial one's Python line).  NULL
 * when there is no stop. */
const tdb_stop_info *tdb_command_stop(tdb_session *s);
/* A data function failed with ERR: -1 when gdb is gone (ERR is the
 * command's), else 0 with R failed with ERR's words. */
int tdb_command_failed(tdb_session *s, tdb_reply *r, const char *cmd, tdb_error *local,
                       tdb_error *err);
/* The index of the Python frame nearest frame FROM of the stop's view going
 * DIR (+1: to callers), FROM included; -1 when none. */
int tdb_command_nearest_python(tdb_session *s, int from, int dir);
/* Select frame INDEX of the stop's view and show it (its line, its source
 * line), as 'frame', 'up', 'down' and 'thread' do. */
int tdb_command_select(tdb_session *s, long index, const char *cmd, tdb_reply *r,
                       tdb_error *err);
/* gdb's console command CMD as a reply (its output; "error", "running" or
 * "output" as the event). */
int tdb_command_gdb(tdb_session *s, const char *cmd, tdb_reply *r, tdb_error *err);

/* commands/stack.c */
int tdb_command_bt(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_frame(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_up(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_down(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_py_bt(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_py_up(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_py_down(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_py_list(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_info_threads(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_thread(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);

/* commands/breakpoints.c */
int tdb_command_break(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_tbreak(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_catch(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_info_breakpoints(tdb_session *s, const char *args, tdb_reply *r,
                                 tdb_error *err);
int tdb_command_delete(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_enable(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_disable(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_condition(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_ignore(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_log(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_dprintf(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);

/* commands/values.c */
int tdb_command_args(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_tensor(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_py_locals(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_py_print(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_py_eval(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);
int tdb_command_py_exec(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);

#endif
