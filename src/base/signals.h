/*
 * base/signals.h: the one self-pipe tdebug's signal handlers write to.  Every
 * wait (gdb's output, the prompt, an announcement) polls its read end, so
 * Ctrl-C, SIGTERM and SIGHUP (and SIGCHLD when asked) interrupt any of
 * them and are handled in order by ordinary code, never in a handler.
 */
#ifndef TDB_SIGNALS_H
#define TDB_SIGNALS_H

#include "base/common.h"

/* Route SIGINT, SIGTERM, SIGHUP (and SIGCHLD, for stops and exits of
 * children, when WITH_SIGCHLD) to the pipe; may be called again.  Returns
 * the pipe's read end (non-blocking), or -1 with ERR set. */
int tdb_signals_install(int with_sigchld, tdb_error *err);
/* The next signal that arrived, or 0 when none is pending. */
int tdb_signals_take(void);
/* Give SIGCHLD its default disposition back. */
void tdb_signals_sigchld_off(void);

#endif
