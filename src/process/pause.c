/*
 * process/pause.c: seize, interrupt and release a whole thread group.
 *
 * Kernel facts this relies on (ptrace(2), kernel/ptrace.c):
 * - PTRACE_SEIZE does not stop the tracee; PTRACE_INTERRUPT makes it
 *   report a PTRACE_EVENT_STOP.  A tracee already in a job-control stop
 *   reports one at once (the kernel re-traps it on seize).
 * - PTRACE_DETACH of a tracee in group-stop puts it back in TASK_STOPPED;
 *   of any other, resumes it.  A pending trap is discarded at detach.
 * - A system call interrupted by the trap is restarted transparently after
 *   detach (-ERESTART*), as for a debugger's attach.
 * - When the tracer dies, the kernel detaches its tracees: even a crash
 *   of tdebug cannot leave the target stopped by us.
 */
#include "process/pause.h"

#include "process/procfs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 16          /* re-list the threads at most this often */
#define STOP_TIMEOUT_NS 1000000000LL

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static tdb_pause_thread *add_thread(tdb_pause *p, size_t *cap, pid_t tid)
{
    TDB_GROW(p->threads, p->n, *cap);
    tdb_pause_thread *t = &p->threads[p->n++];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    return t;
}

tdb_pause_thread *tdb_pause_find(tdb_pause *p, pid_t tid)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->threads[i].tid == tid)
            return &p->threads[i];
    return NULL;
}

/* Record what waitpid said about T. */
static void note_status(tdb_pause_thread *t, int status)
{
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        t->gone = 1;
        t->stopped = 0;
        return;
    }
    if (!WIFSTOPPED(status))
        return;
    t->stopped = 1;
    int sig = WSTOPSIG(status);
    if ((status >> 16) == PTRACE_EVENT_STOP) {
        /* SIGTRAP: our interrupt; a stop signal: a group-stop. */
        if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
            t->job_stopped = 1;
    } else {
        /* A signal was being delivered: hand it back at detach. */
        t->pending_sig = sig;
    }
}

/* Wait (bounded) for every seized thread to report its stop. */
static void wait_stops(tdb_pause *p, size_t from)
{
    int64_t deadline = now_ns() + STOP_TIMEOUT_NS;
    for (;;) {
        size_t waiting = 0;
        for (size_t i = from; i < p->n; i++) {
            tdb_pause_thread *t = &p->threads[i];
            if (t->stopped || t->gone)
                continue;
            int status;
            pid_t r = waitpid(t->tid, &status, __WALL | WNOHANG);
            if (r == t->tid)
                note_status(t, status);
            else if (r < 0 && errno == ECHILD)
                t->gone = 1; /* not our tracee any more: it exited */
            else
                waiting++;
        }
        if (!waiting || now_ns() > deadline)
            return;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

int tdb_pause_start(pid_t pid, tdb_pause **out, tdb_error *err)
{
    tdb_pause *p = tdb_xcalloc(1, sizeof(*p));
    size_t cap = 0;
    p->pid = pid;
    p->start_ns = now_ns();

    for (int round = 0; round < ROUNDS; round++) {
        pid_t *tids = NULL;
        size_t ntids = 0;
        if (tdb_proc_tasks(pid, &tids, &ntids, round == 0 ? err : NULL) < 0)
            break; /* gone: handled below */
        size_t before = p->n;
        for (size_t i = 0; i < ntids; i++) {
            if (tdb_pause_find(p, tids[i]))
                continue;
            if (ptrace(PTRACE_SEIZE, tids[i], NULL, NULL) < 0) {
                /* ESRCH: that thread just exited.  EPERM once other threads
                 * are ours: the process is exiting (the kernel refuses to
                 * attach to a task that is). */
                if (errno == ESRCH || (errno == EPERM && p->n > 0))
                    continue;
                int e = errno;
                if (p->n == 0 && (e == EPERM || e == EACCES)) {
                    /* Why is tdb_ptrace_explain_for()'s to say. */
                    tdb_error_set(err, tdb_proc_tracer(pid) > 0 ? EBUSY : EPERM,
                                  "cannot pause pid %d: %s", (int)pid, strerror(e));
                } else {
                    tdb_error_set(err, e, "cannot pause thread %d of pid %d: ptrace(SEIZE): %s",
                                  (int)tids[i], (int)pid, strerror(e));
                }
                free(tids);
                tdb_pause_free(p);
                return -1;
            }
            tdb_pause_thread *t = add_thread(p, &cap, tids[i]);
            if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) < 0)
                t->gone = 1;
        }
        free(tids);
        if (p->n == before)
            break; /* nothing new: every thread is seized */
        wait_stops(p, before);
    }
    /* The leader first, for readers that list threads. */
    for (size_t i = 1; i < p->n; i++) {
        if (p->threads[i].tid == pid) {
            tdb_pause_thread t = p->threads[i];
            memmove(p->threads + 1, p->threads, i * sizeof(*p->threads));
            p->threads[0] = t;
            break;
        }
    }
    size_t alive = 0;
    for (size_t i = 0; i < p->n; i++)
        alive += p->threads[i].stopped;
    if (alive == 0) {
        tdb_error_set(err, ESRCH, "cannot pause pid %d: it exited", (int)pid);
        tdb_pause_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void tdb_pause_end(tdb_pause *p)
{
    if (!p || p->ended)
        return;
    for (size_t i = 0; i < p->n; i++) {
        tdb_pause_thread *t = &p->threads[i];
        if (t->gone)
            continue;
        /* A thread that never reported its stop (stuck in uninterruptible
         * sleep) cannot be detached: the kernel wants a stopped tracee.
         * Waiting could take forever; the kernel detaches it when tdebug
         * exits, a moment from now. */
        if (!t->stopped) {
            int status;
            if (waitpid(t->tid, &status, __WALL | WNOHANG) == t->tid)
                note_status(t, status);
            if (t->gone || !t->stopped)
                continue;
        }
        ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(intptr_t)t->pending_sig);
    }
    p->end_ns = now_ns();
    p->ended = 1;
}

double tdb_pause_ms(const tdb_pause *p)
{
    int64_t end = p->ended ? p->end_ns : now_ns();
    return (double)(end - p->start_ns) / 1e6;
}

void tdb_pause_free(tdb_pause *p)
{
    if (!p)
        return;
    tdb_pause_end(p);
    free(p->threads);
    free(p);
}
