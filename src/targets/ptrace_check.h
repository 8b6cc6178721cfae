/*
 * targets/ptrace_check.h: will the kernel let gdb (or tdebug itself) trace this
 * process, and if not, why and what to do.
 *
 * Predicts the kernel's refusals before gdb is started (the rules of
 * kernel/ptrace.c's __ptrace_may_access, commoncap's capability subset
 * rule and Yama), and explains a refusal after the fact.  Every refusal is
 * a tdb_error a command prints as it is: "cannot attach to pid 1234: WHY
 * (WHAT TO DO)", with exit code TDB_EXIT_FAIL and code ESRCH or EPERM.
 *
 * The words and the tracer come from a tdb_trace_purpose: 'tdebug attach'
 * (the tdb_attach_* calls) has "the debugger tdebug starts" trace, gdb,
 * exec'd by tdebug with tdebug's credentials plus whatever file
 * capabilities the gdb binary carries ('setcap cap_sys_ptrace+ep
 * /usr/bin/gdb'); 'tdebug stacks' traces and reads memory itself, with its
 * own capabilities, and says "cannot read the stacks of pid 1234: ...".
 */
#ifndef TDB_PTRACE_CHECK_H
#define TDB_PTRACE_CHECK_H

#include "base/common.h"
#include "targets/proc.h"

#include <stdint.h>
#include <sys/types.h>

typedef enum tdb_refusal {
    TDB_REFUSAL_NONE = 0,        /* attaching should work */
    TDB_REFUSAL_NO_PROCESS,      /* no such pid */
    TDB_REFUSAL_SELF,            /* tdebug itself */
    TDB_REFUSAL_KERNEL_THREAD,
    TDB_REFUSAL_ZOMBIE,          /* exited, not reaped */
    TDB_REFUSAL_NOT_PYTHON,
    TDB_REFUSAL_PTRACE_DISABLED, /* Yama ptrace_scope 3 */
    TDB_REFUSAL_PTRACE_BLOCKED,  /* even tracing our own child fails (seccomp, LSM) */
    TDB_REFUSAL_OTHER_USER,      /* uids differ and no CAP_SYS_PTRACE */
    TDB_REFUSAL_OTHER_GROUP,     /* gids differ (set-group-ID) and no CAP_SYS_PTRACE */
    TDB_REFUSAL_YAMA,            /* Yama ptrace_scope 1 or 2 and no CAP_SYS_PTRACE */
    TDB_REFUSAL_NOT_DUMPABLE,    /* PR_SET_DUMPABLE 0 or set-id exec */
    TDB_REFUSAL_CAPABILITIES,    /* the target holds capabilities the tracer lacks */
    TDB_REFUSAL_ACCESS_DENIED,   /* the kernel already denies reading its exe/maps */
    TDB_REFUSAL_TRACED,          /* already has a tracer */
    TDB_REFUSAL_UNKNOWN,         /* after the fact: refused, no visible reason */
    TDB_REFUSAL_AMBIGUOUS,       /* an adapter or launcher with several debuggees */
    TDB_REFUSAL_NO_DEBUGGEE      /* an adapter or launcher with no debuggee (yet) */
} tdb_refusal;

/* The refusal's name for --json output ("other-user", "traced", ...; "" for
 * NONE). */
const char *tdb_refusal_name(tdb_refusal r);

#define TDB_CAP_SYS_PTRACE 19

/* Who would trace: tdebug's credentials and the system's ptrace policy. */
typedef struct tdb_tracer {
    pid_t pid;              /* tdebug's own pid (SELF) */
    uid_t uid;              /* real ids: ptrace compares these */
    gid_t gid;
    char *user;             /* name of uid */
    uint64_t cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb; /* tdebug's own sets */
    char *gdb;              /* the gdb binary found, for messages ("/usr/bin/gdb") */
    uint32_t gdb_file_prm;  /* gdb's file capabilities (security.capability) */
    uint32_t gdb_file_inh;
    int gdb_file_eff;
    uint64_t debugger_prm;  /* the permitted set gdb will run with */
    int cap_sys_ptrace;     /* gdb will hold CAP_SYS_PTRACE (effective) */
    int yama_scope;         /* 0..3, or -1 without Yama */
    int probe_errno;        /* -1 not probed; 0 PTRACE_SEIZE of our own child worked;
                             * else its errno */
} tdb_tracer;

/* Fill *OUT for tdebug itself from ROOT (NULL: "/proc"): ROOT/self/status,
 * ROOT/sys/kernel/yama/ptrace_scope, and the file capabilities of GDB (NULL:
 * $TDEBUG_GDB, else "gdb" on PATH; a gdb that is not found has none).
 * Returns 0, or -1 with ERR set when ROOT/self/status is unreadable.
 * Release with tdb_tracer_release(). */
int tdb_tracer_read(tdb_tracer *out, const char *root, const char *gdb, tdb_error *err);
void tdb_tracer_release(tdb_tracer *t);

/* T as it would be with the debugger started through sudo or pkexec, as
 * VS Code's C/C++ extension starts gdb to attach when ptrace_scope is not
 * 0: root, with the capabilities a set-user-ID-root program gets (T's
 * bounding set, so CAP_SYS_PTRACE unless the bounding set lacks it). */
void tdb_tracer_as_root(tdb_tracer *t);

/* The real test of a container or sandbox: fork a child that waits, try
 * PTRACE_SEIZE on it, kill and reap it.  Sets T->probe_errno (0 when ptrace
 * works at all) and returns it. */
int tdb_tracer_probe(tdb_tracer *t);

/* Try PTRACE_SEIZE on PID from a child of tdebug's, which then exits (the
 * kernel lets go of a tracee whose tracer exits; a seize does not stop
 * it): 0 when the kernel allowed it, else its errno.  What Yama decides
 * only at attach time (a prctl(PR_SET_PTRACER) exception) shows here. */
int tdb_trace_try(pid_t pid);

/* What tracing is for, and by whom: the words of the refusals. */
typedef struct tdb_trace_purpose {
    const char *verb;    /* "cannot VERB pid N: ..."; NULL: messages give the
                          * reason alone ("it is already traced by ...") */
    const char *command; /* the advice's command: "sudo tdebug COMMAND N" */
    int python_only;     /* a process that runs no Python is refused */
    int by_tdebug;       /* tdebug traces itself (ptrace, process_vm_readv):
                          * its own capabilities count, not gdb's */
} tdb_trace_purpose;

/* 'tdebug attach': gdb attaches, to Python processes only. */
extern const tdb_trace_purpose tdb_purpose_attach;
/* 'tdebug stacks': tdebug pauses and reads any process itself. */
extern const tdb_trace_purpose tdb_purpose_stacks;

/* Would tracing PID for WHY be refused?  Returns TDB_REFUSAL_NONE, or the
 * first reason found with ERR set to the message to print (exit code
 * TDB_EXIT_FAIL).  Reads PID into T if needed; does not resolve adapters or
 * launchers (see tdb_proc_resolve_debuggee). */
tdb_refusal tdb_trace_check(tdb_proc_table *t, const tdb_tracer *tr, const tdb_trace_purpose *why,
                            pid_t pid, tdb_error *err);
/* tdb_trace_check() for 'tdebug attach' (tdb_purpose_attach). */
tdb_refusal tdb_attach_check(tdb_proc_table *t, const tdb_tracer *tr, pid_t pid, tdb_error *err);

/* After tracing PID for WHY failed with ERRNUM (EPERM, ESRCH, EBUSY when
 * the caller saw another tracer, ...): the reason, re-checked now, with ERR
 * set.  When no reason is visible (any more), TDB_REFUSAL_UNKNOWN with the
 * system's words and where to look. */
tdb_refusal tdb_trace_explain(tdb_proc_table *t, const tdb_tracer *tr,
                              const tdb_trace_purpose *why, pid_t pid, int errnum, tdb_error *err);
/* tdb_trace_explain() for 'tdebug attach' (tdb_purpose_attach). */
tdb_refusal tdb_attach_explain(tdb_proc_table *t, const tdb_tracer *tr, pid_t pid, int errnum,
                               tdb_error *err);

/* Everything 'tdebug attach PID' does before starting gdb: resolve PID to
 * the process running user code (an adapter or a launcher to its debuggee,
 * a thread to its process; tdb_proc_resolve_debuggee) and check that
 * process can be attached.  Refusals about PID itself (no such process, a
 * zombie, a kernel thread, not Python) come before resolving it.
 * Returns 0 when attaching should work: OUT->pid is the process to attach
 * to, OUT->note (when set) says why it is not PID, ready to print.
 * Returns 1 when PID is an adapter or launcher with several debuggees:
 * OUT->candidates lists them, ERR says so (list them and stop).
 * Returns -1 with ERR set (exit code TDB_EXIT_FAIL) otherwise; when the
 * resolved process is the one refused, OUT->pid and OUT->note are filled
 * too, else OUT is zeroed.  *OUT_REFUSAL (may be NULL) gets the reason
 * (TDB_REFUSAL_AMBIGUOUS for 1).  Release OUT with tdb_resolution_release()
 * in every case. */
int tdb_attach_resolve(tdb_proc_table *t, const tdb_tracer *tr, pid_t pid, tdb_resolution *out,
                       tdb_refusal *out_refusal, tdb_error *err);

/* tdb_attach_resolve() on the live system, for 'tdebug attach': reads
 * /proc, tdebug's credentials and GDB's file capabilities (GDB NULL as in
 * tdb_tracer_read), and tries ptrace on a child of its own first. */
int tdb_attach_prepare(pid_t pid, const char *gdb, tdb_resolution *out, tdb_refusal *out_refusal,
                       tdb_error *err);

/* tdb_trace_explain() on the live system, after tracing PID for WHY failed
 * with ERRNUM ("ptrace: Operation not permitted." is EPERM): reads PID in
 * /proc and tdebug's credentials (GDB as in tdb_tracer_read; unused when
 * WHY->by_tdebug), tries ptrace on a child of its own, and sets ERR to the
 * reason, ready to print. */
tdb_refusal tdb_ptrace_explain_for(const tdb_trace_purpose *why, pid_t pid, const char *gdb,
                                   int errnum, tdb_error *err);
/* tdb_ptrace_explain_for() for 'tdebug attach', after gdb failed. */
tdb_refusal tdb_ptrace_explain(pid_t pid, const char *gdb, int errnum, tdb_error *err);

#endif
