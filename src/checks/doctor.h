/*
 * checks/doctor.h: the checks behind 'tdebug doctor': can this user, on this
 * machine, debug a Python program down into torch's C++ and back?
 *
 * Each check really tries what it reports on where it can (starts gdb,
 * ptraces a child it forks, runs py-bt, loads the preloaded library into
 * Python) rather than guessing from configuration.
 */
#ifndef TDB_DOCTOR_H
#define TDB_DOCTOR_H

#include "base/common.h"

#include <jansson.h>
#include <sys/types.h>

typedef enum tdb_check_status {
    TDB_CHECK_OK,
    TDB_CHECK_WARN, /* works in part, or could not be checked */
    TDB_CHECK_FAIL  /* blocks mixed debugging */
} tdb_check_status;

typedef struct tdb_check {
    const char *id;  /* stable: "gdb", "gdb-python", "ptrace-policy", ... */
    tdb_check_status status;
    char *summary;   /* what was found, one line */
    char *remedy;    /* what to do about it; NULL when ok */
} tdb_check;

typedef struct tdb_doctor_options {
    const char *python; /* the target interpreter; NULL: default */
    const char *gdb;    /* NULL: $TDEBUG_GDB, else gdb on PATH */
    pid_t pid;          /* a process to be attached to, or 0 */
    const char *root;   /* prefix for /proc/sys and /proc/self reads ("" normally;
                         * a fake tree in tests) */
} tdb_doctor_options;

typedef struct tdb_doctor {
    tdb_check *checks;
    size_t n;
} tdb_doctor;

/* Run every check, in the order they are printed. */
void tdb_doctor_run(const tdb_doctor_options *opt, tdb_doctor *out);
void tdb_doctor_free(tdb_doctor *d);

/* Counts of warnings and failures. */
void tdb_doctor_counts(const tdb_doctor *d, size_t *out_warnings, size_t *out_failures);

/* {"version":1, "checks":[{"id","status","summary","remedy"}...],
 *  "warnings":N, "failures":N, "ok":bool}: a new reference. */
json_t *tdb_doctor_json(const tdb_doctor *d);

/* "ok", "warning", "failure". */
const char *tdb_check_status_name(tdb_check_status s);

/* The ptrace policy as configured: Yama's ptrace_scope (when ROOT/proc/sys/
 * kernel/yama exists) and CAP_SYS_PTRACE as gdb (GDB: NULL as in
 * tdb_gdb_start) would hold it, from ROOT/proc/self/status.  Fills OUT (id
 * "ptrace-policy"); ROOT is "" normally, a fake tree in tests. */
void tdb_doctor_ptrace_policy(const char *root, const char *gdb, tdb_check *out);

/* Whether 'tdebug attach PID' would work, checked without attaching
 * (targets/ptrace_check.h: the kernel's rules, Yama, a tracer already there,
 * adapters resolved to their debuggee).  Fills OUT (id "ptrace-pid"). */
void tdb_doctor_ptrace_pid(pid_t pid, const char *gdb, tdb_check *out);

#endif
