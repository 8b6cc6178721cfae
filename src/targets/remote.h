/*
 * targets/remote.h: tdebug run on other hosts through the user's own ssh,
 * or what stands for it on a cluster (srun --jobid, kubectl exec, ssh over
 * a jump host): the command line for each host, every host at once with
 * one deadline, and why a host gave no answer, said so the user can act on
 * it.  No daemon of our own: a host answers by running 'tdebug' once.
 *
 * ssh runs in batch mode (-o BatchMode=yes: it never asks for a password
 * or a passphrase, it fails) with a connection timeout, in a session
 * without a terminal (process/spawn.h), so no transport can stop and wait
 * for someone to type.  What it reads (keys, ~/.ssh/config, known_hosts,
 * an agent) is the user's own.
 */
#ifndef TDB_REMOTE_H
#define TDB_REMOTE_H

#include "base/common.h"
#include "process/spawn.h"

#include <jansson.h>
#include <stddef.h>

typedef struct tdb_remote_opts {
    const char *ssh;    /* the command that reaches a host (--ssh); NULL: "ssh".
                         * "%h" in it stands for the host, else the host
                         * follows it; an ssh in it runs in batch mode */
    const char *tdebug; /* tdebug on the hosts (--remote-tdebug); NULL: "tdebug" */
    int timeout_ms;     /* for every host's answer */
} tdb_remote_opts;

typedef enum tdb_host_status {
    TDB_HOST_OK = 0,      /* it answered with a JSON document */
    TDB_HOST_TIMEOUT,     /* no answer within the timeout */
    TDB_HOST_UNREACHABLE, /* down, no route, no ssh server */
    TDB_HOST_UNKNOWN,     /* the name does not resolve */
    TDB_HOST_REFUSED,     /* ssh wants a password or key it was not given, or
                           * the host key is not known */
    TDB_HOST_NO_TDEBUG,   /* no tdebug there (or not executable) */
    TDB_HOST_FAILED,      /* tdebug (or the transport) failed otherwise */
    TDB_HOST_BAD_ANSWER   /* what it printed is not tdebug's JSON */
} tdb_host_status;

/* "ok", "timeout", "unreachable", "unknown-host", "refused", "no-tdebug",
 * "failed", "bad-answer". */
const char *tdb_host_status_name(tdb_host_status s);

/* Is HOST this machine: "localhost", a loopback address, or this
 * machine's own name (with or without its domain)? */
int tdb_host_is_local(const char *host);

/* Split CMD into words as a POSIX shell would for a simple command:
 * blanks separate, '...' and "..." quote, a backslash escapes (no
 * expansions).  0 and *OUT (a new NULL-terminated strv), or -1 with ERR
 * set (an open quote, no word at all). */
int tdb_shell_words(const char *cmd, char ***out, tdb_error *err);

/* The command line that runs tdebug with the arguments ARGS (NULL-
 * terminated, after the word "tdebug") on HOST, by O's rules: a new strv.
 * -1 with ERR set when O->ssh cannot be split. */
int tdb_remote_argv(const tdb_remote_opts *o, const char *host, char *const *args, char ***out,
                    tdb_error *err);

/* What a host said, judged. */
typedef struct tdb_host_answer {
    char *host;
    tdb_host_status status;
    json_t *doc;   /* the JSON document it printed (owned), or NULL */
    char *reason;  /* why there is no document, ready to follow "host 'H': ",
                    * or NULL */
    double ms;     /* how long it took */
} tdb_host_answer;

/* Judge what running tdebug on HOST through TRANSPORT (the command's
 * name: "ssh", "srun", ...) gave: R, with ERR set when it could not even
 * be started.  TIMEOUT_MS is the deadline R ran under (for the message).
 * Fills *OUT (release with tdb_host_answer_release). */
void tdb_remote_judge(const char *host, const char *transport, const tdb_spawn_result *r,
                      const tdb_error *err, int timeout_ms, tdb_host_answer *out);

/* Run tdebug ARGS on the N HOSTS at once (by tdb_remote_argv()), each
 * answer judged into ANSWERS[i].  LOCAL_ARGV, when not NULL, is one more
 * command run beside them on this machine (its answer is ANSWERS[N]).
 * CANCEL_FD (>= 0) becoming readable stops them all.  Returns 0, or -1
 * with ERR set: cancelled (code ECANCELED), or O->ssh is not a command. */
int tdb_remote_run(const tdb_remote_opts *o, char *const *hosts, size_t n, char *const *args,
                   char *const *local_argv, int cancel_fd, tdb_host_answer *answers,
                   tdb_error *err);

void tdb_host_answer_release(tdb_host_answer *a); /* accepts NULL */

#endif
