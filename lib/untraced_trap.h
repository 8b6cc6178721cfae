/*
 * untraced_trap.h: a debugger's breakpoint that outlives the debugger is
 * never fatal (lib/untraced_trap.c).  Shared by the two libraries tdebug
 * puts into a program: the preloaded one (lib/preload.c) and the Python
 * breakpoint hook (lib/pyhook/); plain C, async-signal-safe where it says so.
 */
#ifndef TDB_UNTRACED_TRAP_H
#define TDB_UNTRACED_TRAP_H

/* Install the SIGTRAP handler (once; a second call only sets ON_RESCUE).
 * ON_RESCUE, when not NULL, is called from the handler (so it must be
 * async-signal-safe) each time it took out a breakpoint no debugger caught.
 * Leaves a SIGTRAP disposition the program set itself alone.  Returns 1
 * when the handler is in place, 0 when not (the program has its own, or
 * the architecture is not one whose breakpoint instruction it knows). */
int tdb_untraced_trap_install(void (*on_rescue)(void));

/* Raise SIGTRAP for the debugger that traces this thread: with no debugger
 * left to catch it (it died after the caller checked), the signal is
 * ignored instead of killing the process.  Returns what raise() returns. */
int tdb_untraced_trap_raise(void);

#endif
