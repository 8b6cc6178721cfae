/*
 * spawn.h: run a helper program (python, gdb, dpkg) to completion and
 * capture what it says, with a deadline.
 */
#ifndef TDB_SPAWN_H
#define TDB_SPAWN_H

#include "common.h"

typedef struct tdb_spawn_result {
    int status;    /* exit status; 128+N when killed by signal N */
    int timed_out; /* nonzero when the deadline killed it */
    char *out;     /* stdout, NUL-terminated (never NULL after success) */
    char *err;     /* stderr, NUL-terminated (never NULL after success) */
} tdb_spawn_result;

#define TDB_SPAWN_RESULT_INIT {0, 0, NULL, NULL}

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

/* The first line of S (without its newline) as a new string. */
char *tdb_first_line(const char *s);

#endif
