/*
 * process/paused.h: getting hold of a process the preloaded library (lib/) paused
 * at torch._C, for 'tdebug attach --wait' and 'tdebug run --preload':
 * signals while waiting for its announcement, which announcements to take,
 * and starting a program with the library so that tdebug's gdb may attach
 * to it even under Yama.  Handing the process to a debugging session is
 * the front-end's (tdb_cli_attach_paused(), cli/cli.h).
 *
 *     fd = tdb_signals_install(0, &err);                  // Ctrl-C cancels the wait
 *     l = tdb_announce_listen(NULL, &err);
 *     while (tdb_announce_next(l, ms, fd, &ann, &err) == 1)
 *         if (tdb_announce_is_waiting(ann, pid, 0)) break; ...
 *     status = tdb_cli_attach_paused(&opts, ann, &err);   // cli/cli.h: stops in PyInit__C
 */
#ifndef TDB_PAUSED_H
#define TDB_PAUSED_H

#include "base/common.h"
#include "base/signals.h"

#include <jansson.h>
#include <sys/types.h>

/* Nonzero when ANNOUNCEMENT is of a process that waits for a debugger
 * ("event": "waiting") and, when PID > 0, is PID itself or, with
 * DESCENDANTS, one of PID's descendants. */
int tdb_announce_is_waiting(const json_t *announcement, pid_t pid, int descendants);

/* Nonzero when PID exists and has not ended (a zombie has). */
int tdb_pid_running(pid_t pid);

/* Nonzero when PID is ANCESTOR or one of its descendants (/proc). */
int tdb_pid_descends_from(pid_t pid, pid_t ancestor);

/* ---- Yama: who may attach to a program tdebug starts ----
 *
 * gdb is tdebug's child and so is the program: gdb is not the program's
 * ancestor, which Yama's ptrace_scope 1 (Ubuntu's default) requires.  A
 * process may name an exception with prctl(PR_SET_PTRACER, PID), which
 * also admits PID's descendants: the program names tdebug before exec
 * (the exception survives exec), and tdebug's gdb may attach. */
typedef enum tdb_ptracer_plan {
    TDB_PTRACER_NONE,       /* no Yama, or scope 0: any same-uid gdb may attach */
    TDB_PTRACER_DECLARE,    /* scope 1: the program declares tdebug its ptracer */
    TDB_PTRACER_PRIVILEGED, /* scope 2 and we have CAP_SYS_PTRACE: nothing to do */
    TDB_PTRACER_REFUSED     /* scope 2 without CAP_SYS_PTRACE, or scope 3 */
} tdb_ptracer_plan;

/* Yama's ptrace_scope (0-3), or -1 when the kernel has no Yama. */
int tdb_yama_ptrace_scope(void);
/* The plan for SCOPE (as tdb_yama_ptrace_scope()) when tdebug does or does
 * not have CAP_SYS_PTRACE. */
tdb_ptracer_plan tdb_ptracer_plan_for(int scope, int cap_sys_ptrace);
/* Does this process have CAP_SYS_PTRACE in its effective set? */
int tdb_have_cap_sys_ptrace(void);

/* Start ARGV (ARGV[0] found on PATH) as tdebug's child with the variables
 * of ENV (tdb_preload_env()) applied, tdebug's stdio (stdout to stderr
 * when STDOUT_TO_STDERR), in tdebug's process group, killed when tdebug
 * dies (PR_SET_PDEATHSIG), and declaring tdebug its ptracer when PLAN says
 * so.  Returns its pid, or -1 with ERR set (exit status
 * TDB_EXIT_NOTFOUND/TDB_EXIT_NOEXEC when it cannot be executed; it was
 * reaped). */
pid_t tdb_paused_spawn(char *const argv[], const json_t *env, int stdout_to_stderr,
                       tdb_ptracer_plan plan, tdb_error *err);

/* How tdb_paused_spawn_with() starts a program. */
typedef struct tdb_spawn_how {
    const int *fds;        /* its stdin, stdout and stderr (NULL: tdebug's own) */
    int stdout_to_stderr;  /* FDS NULL: its stdout is tdebug's stderr */
    int own_pgrp;          /* a process group of its own, as a shell gives a job */
    const char *pid_var;   /* NULL, or a variable set to the program's own pid */
    tdb_ptracer_plan plan;
} tdb_spawn_how;
/* tdb_paused_spawn() with the stdio, process group and variables of HOW. */
pid_t tdb_paused_spawn_with(char *const argv[], const json_t *env, const tdb_spawn_how *how,
                            tdb_error *err);

#endif
