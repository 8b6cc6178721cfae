/*
 * process/pause.h: hold every thread of a process still for a moment, then let it
 * go exactly as it was.
 *
 * PTRACE_SEIZE + PTRACE_INTERRUPT, never a SIGSTOP-based attach: a process
 * that was running keeps running after tdb_pause_end(), one that was in a
 * job-control stop (SIGSTOP, Ctrl-Z) stays stopped, and a signal that
 * arrived during the pause is delivered at the end of it.  Threads created
 * while we seize are caught by listing /proc/PID/task again until nothing
 * new appears.  A thread that will not stop (uninterruptible sleep) within
 * a second is left running and marked.
 */
#ifndef TDB_PAUSE_H
#define TDB_PAUSE_H

#include "base/common.h"

#include <stdint.h>
#include <sys/types.h>

typedef struct tdb_pause_thread {
    pid_t tid;
    int stopped;     /* in a ptrace stop we own: registers are readable */
    int gone;        /* exited during the pause */
    int job_stopped; /* in (or entering) a job-control stop */
    int pending_sig; /* signal it stopped for, delivered again at the end */
} tdb_pause_thread;

typedef struct tdb_pause {
    pid_t pid;
    tdb_pause_thread *threads; /* the thread group leader first */
    size_t n;
    int64_t start_ns, end_ns;  /* CLOCK_MONOTONIC: first seize, last detach */
    int ended;
} tdb_pause;

/* Seize and stop every thread of PID.  0 and *OUT on success (some threads
 * may be gone or not stopped: see their flags); -1 with ERR set when the
 * process cannot be paused: code ESRCH (no such process / exited), EBUSY
 * when another process traces it, EPERM when ptrace was refused for
 * another reason (tdb_ptrace_explain_for() says which). */
int tdb_pause_start(pid_t pid, tdb_pause **out, tdb_error *err);

/* Let every thread go (PTRACE_DETACH, re-delivering pending signals) and
 * record the end time.  Idempotent. */
void tdb_pause_end(tdb_pause *p);

/* How long the process was held, in milliseconds (so far, if not ended). */
double tdb_pause_ms(const tdb_pause *p);

/* The thread TID, or NULL.  Borrowed. */
tdb_pause_thread *tdb_pause_find(tdb_pause *p, pid_t tid);

/* Ends the pause if needed, then frees.  Accepts NULL. */
void tdb_pause_free(tdb_pause *p);

#endif
