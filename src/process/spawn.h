/*
 * process/spawn.h: run a helper program (python, gdb, dpkg) to completion and
 * capture what it says, with a deadline.
 */
#ifndef TDB_SPAWN_H
#define TDB_SPAWN_H

#include "base/common.h"

#include <sys/types.h>

typedef struct tdb_spawn_result {
    int status;    /* exit status; 128+N when killed by signal N */
    int timed_out; /* nonzero when the deadline killed it */
    char *out;     /* stdout, NUL-terminated (never NULL after success) */
    char *err;     /* stderr, NUL-terminated (never NULL after success) */
    double ms;     /* how long it ran */
} tdb_spawn_result;

#define TDB_SPAWN_RESULT_INIT {0, 0, NULL, NULL, 0}

/* Run ARGV (argv[0] looked up on PATH) in a process group of its own with
 * stdin from /dev/null, capturing stdout and stderr (up to 16 MiB each;
 * more is read and dropped).  ENV, when not NULL, is a NULL-terminated list
 * of changes to our environment: "NAME=value" sets, "NAME" unsets.  After
 * TIMEOUT_MS (0: no limit) the group is killed and *OUT says timed_out.
 *
 * Returns 0 when the program ran, whatever its status; -1 with ERR set
 * when it could not be started ("cannot run 'gdb': No such file or
 * directory", exit code TDB_EXIT_NOTFOUND or TDB_EXIT_NOEXEC). */
int tdb_spawn_capture(char *const argv[], char *const env[], int timeout_ms,
                      tdb_spawn_result *out, tdb_error *err);
void tdb_spawn_result_free(tdb_spawn_result *r);

/* Run the N programs ARGVS[i] at once (one per host: ssh, srun, kubectl
 * exec), each as tdb_spawn_capture() runs one but in a session of its own,
 * without a controlling terminal, so a program that would ask for a
 * password there fails at once rather than wait; one deadline, TIMEOUT_MS
 * (0: none), for all: what still runs then is killed (its process group)
 * and its OUT says timed_out.  CANCEL_FD (>= 0: the signal pipe) becoming
 * readable kills them all.  OUT[i] gets each result (free each with
 * tdb_spawn_result_free()), or ERRS[i] (zeroed by the caller) says why
 * ARGVS[i] could not be started.  Returns 0, or -1 when cancelled (every
 * program was killed and reaped; the results hold what they said). */
int tdb_spawn_capture_many(char *const *const argvs[], size_t n, int timeout_ms, int cancel_fd,
                           tdb_spawn_result *out, tdb_error *errs);

/* A helper program left running while the caller talks to it (and reads
 * its memory: it is our child, which ptrace rules let us read). */
typedef struct tdb_child {
    pid_t pid;   /* -1 once reaped */
    int in;      /* its stdin (our end), -1 once closed */
    int out;     /* its stdout and stderr together (our end), -1 at EOF */
    tdb_buf got; /* read and not yet consumed */
} tdb_child;

/* Start ARGV (looked up on PATH; ENV as for tdb_spawn_capture) in a process
 * group of its own, with pipes for stdin and for stdout+stderr; it is
 * killed if tdebug dies.  0 and *OUT, or -1 with ERR set as
 * tdb_spawn_capture() does. */
int tdb_child_start(char *const argv[], char *const env[], tdb_child *out, tdb_error *err);

/* Another user a child runs as: that uid and gid, no supplementary group,
 * in "/" (tdb_child_start_as()). */
typedef struct tdb_child_user {
    uid_t uid;
    gid_t gid;
} tdb_child_user;

/* tdb_child_start() with, when AS is not NULL, AS's rights (which takes
 * root, or CAP_SETUID and CAP_SETGID) and ENV as the child's whole
 * environment, nothing of ours.  AS NULL: tdb_child_start(). */
int tdb_child_start_as(char *const argv[], char *const env[], const tdb_child_user *as,
                       tdb_child *out, tdb_error *err);
/* Read what it prints until a line starting with PREFIX: the rest of that
 * line as a new string (without the newline).  NULL with ERR set when it
 * ends first (ERR ends with the last lines it printed) or TIMEOUT_MS pass. */
char *tdb_child_wait_line(tdb_child *c, const char *prefix, int timeout_ms, tdb_error *err);
/* Close its stdin, let it exit for up to GRACE_MS, then kill its process
 * group; reap it and release everything.  Returns its exit status (128+N
 * when killed by signal N), or -1 when it was not running. */
int tdb_child_finish(tdb_child *c, int grace_ms);

/* The first line of S (without its newline) as a new string. */
char *tdb_first_line(const char *s);

#endif
