/*
 * process/preload.h: the tdebug side of the preloaded library (lib/): where it is,
 * the environment that puts it into programs started anywhere, the
 * rendezvous socket waiting processes announce themselves on, and the gdb
 * commands that release one.  The contract itself (symbols, states, the
 * JSON announcement, the socket path rule) is lib/tdebug_preload.h.
 *
 * Used by 'tdebug env', and by 'tdebug attach --wait' and 'tdebug run
 * --preload':
 *
 *     listener = tdb_announce_listen(NULL, &err);      // before the program starts
 *     ... start the program with tdb_preload_env() / tdb_preload_setenv() ...
 *     tdb_announce_next(listener, timeout_ms, cancel_fd, &ann, &err);
 *     ... gdb: attach json_integer_value(pid), set breakpoints ...
 *     cmds = tdb_preload_release_commands(ann, 0);     // then continue
 */
#ifndef TDB_PRELOAD_H
#define TDB_PRELOAD_H

#include "base/common.h"
#include "tdebug_preload.h"

#include <jansson.h>
#include <sys/types.h>

/* Where libtdebug-preload.so is (the build tree beside the tdebug binary,
 * else the install's lib/tdebug): a new string, or NULL with ERR set. */
char *tdb_preload_library(tdb_error *err);

/* What the library should do; each field is the value of the TDEBUG_*
 * variable of the same name (tdebug_preload.h), NULL to leave it out (the
 * library's default applies). */
typedef struct tdb_preload_settings {
    const char *watch;       /* TDEBUG_WATCH */
    const char *watch_files; /* TDEBUG_WATCH_FILES */
    const char *action;      /* TDEBUG_ACTION */
    const char *timeout;     /* TDEBUG_TIMEOUT */
    const char *verbose;     /* TDEBUG_VERBOSE */
    const char *notify;      /* TDEBUG_NOTIFY */
    const char *notify_ack;  /* TDEBUG_NOTIFY_ACK */
    const char *announce;    /* TDEBUG_ANNOUNCE */
    const char *workers;     /* TDEBUG_WORKERS */
    const char *trap_pid;    /* TDEBUG_TRAP_PID */
    const char *trap_startup; /* TDEBUG_TRAP_STARTUP */
    const char *trap_wait;   /* TDEBUG_TRAP_WAIT */
    const char *rank;        /* TDEBUG_RANK */
} tdb_preload_settings;

/* Check S with the library's own rules (lib/preload_config.c).  Returns 0,
 * or -1 with ERR saying which value is wrong and why (exit status
 * TDB_EXIT_USAGE). */
int tdb_preload_check(const tdb_preload_settings *s, tdb_error *err);
/* Check one VALUE of the TDEBUG_* VARIABLE; ERR then says only why it is
 * refused ("not a number of seconds or 'never'"), for a caller that names
 * the option itself. */
int tdb_preload_check_one(const char *variable, const char *value, tdb_error *err);

/* Append to B (comma-separated) the TDEBUG_WATCH_FILES patterns of the
 * file of extension module NAME: "torch._C" gives "* /torch/_C.so,
 * * /torch/_C.*.so" (without the spaces), which the library matches
 * against whole paths. */
void tdb_preload_add_module_files(tdb_buf *b, const char *name);
/* Append to B (comma-separated) a TDEBUG_WATCH_FILES pattern matching every
 * file under directory DIR (absolute; its fnmatch characters escaped). */
void tdb_preload_add_dir_files(tdb_buf *b, const char *dir);

/* The variables to set, in the order to export them, as a new JSON object
 * NAME -> VALUE (new reference): LD_AUDIT first (LIBRARY, followed by
 * what CURRENT_LD_AUDIT already lists unless it lists LIBRARY), then each
 * TDEBUG_* setting given in S plus TDEBUG_ACTION and TDEBUG_TIMEOUT with
 * their defaults, so the configuration is visible.  S may be NULL.  The
 * values are the bytes the environment gets, kept whole even when they are
 * not UTF-8 (json_string_nocheck): jansson cannot dump such a value, so
 * JSON output goes through tdb_json_set_str(). */
json_t *tdb_preload_env(const char *library, const tdb_preload_settings *s,
                        const char *current_ld_audit);

/* The library's TDEBUG_* variables that are set in ENVP (NULL: environ)
 * but absent from ENV (as returned by tdb_preload_env()): stale values to
 * unset so the result is exactly ENV.  A new JSON array of names. */
json_t *tdb_preload_stale(const json_t *env, char *const *envp);

/* setenv() each variable of ENV (unsetenv() one whose value is JSON null)
 * and unsetenv() each of tdb_preload_stale() in this process, e.g. just
 * before exec of a program. */
void tdb_preload_apply(const json_t *env);

/* ---- announcements (format: tdebug_preload.h) ---- */

typedef struct tdb_announce_listener tdb_announce_listener;

/* Bind the rendezvous socket: PATH, or NULL for the rule of
 * tdebug_announce_path() ($TDEBUG_ANNOUNCE, else /tmp/tdebug-UID/announce),
 * creating its directory mode 0700.  Refuses a directory owned by another
 * user, and a socket another live listener holds ("another 'tdebug attach
 * --wait' is listening"); a stale socket file is replaced.  NULL with ERR
 * set on failure. */
tdb_announce_listener *tdb_announce_listen(const char *path, tdb_error *err);
/* The socket's path (borrowed) and fd (for poll()). */
const char *tdb_announce_listener_path(const tdb_announce_listener *l);
int tdb_announce_listener_fd(const tdb_announce_listener *l);

/* Wait up to TIMEOUT_MS (-1: forever) for the next valid announcement.  A
 * waiting process repeats its announcement every second: callers that want
 * each process once de-duplicate by "pid".  Datagrams that are not valid
 * announcements, or whose "pid" is not the sender's (checked with the
 * kernel's SCM_CREDENTIALS), are dropped.  Returns 1 and *OUT (new
 * reference), 0 on timeout, -1 with ERR set (code ECANCELED when CANCEL_FD,
 * if >= 0, became readable). */
int tdb_announce_next(tdb_announce_listener *l, int timeout_ms, int cancel_fd, json_t **out,
                      tdb_error *err);

/* Append to ERR's message (when set) what becomes of the process that made
 * ANNOUNCEMENT when no debugger releases it: "...; pid 1234 stays paused
 * until its own timeout (60 s) passes, then goes on by itself". */
void tdb_announce_note_unreleased(const json_t *announcement, tdb_error *err);

/* Close and unlink the socket.  Accepts NULL. */
void tdb_announce_listener_free(tdb_announce_listener *l);

/* Parse one announcement (a JSON object with "tdebug" == TDEBUG_PRELOAD_ABI
 * and an integer "pid" > 0).  New reference, or NULL with ERR set. */
json_t *tdb_announce_parse(const char *data, size_t len, tdb_error *err);

/* The gdb CLI commands that release the process that made ANNOUNCEMENT
 * (NULL: whatever process gdb is attached to, by symbol after loading the
 * library's symbols: "sharedlibrary libtdebug-preload", "set var
 * tdebug_preload_release = 1"), to be
 * sent after attaching and placing breakpoints and followed by 'continue'
 * or 'detach'.  By address when the announcement has "release_addr" (no
 * symbols needed, works with auto-solib-add off), else by symbol.  DISARM
 * also stops the process from pausing again.  An announcement without
 * "release_symbol" (Python's tdebug.wait_for_debugger()) needs no command:
 * the result is then empty.  A new NULL-terminated array of new strings;
 * free with tdb_strv_free(). */
char **tdb_preload_release_commands(const json_t *announcement, int disarm);

#endif
