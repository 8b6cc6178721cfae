/*
 * process/pidns.h: processes in another PID namespace: a container's seen
 * from the host, or from a sibling container that shares the host's /proc.
 *
 * /proc/PID/status has a line "NSpid:" with one number per PID namespace,
 * from the namespace of that /proc down to the process's own:
 * "NSpid: 4321 7" is pid 4321 here and pid 7 inside its container.  What a
 * process records about itself (CPython's PyThreadState.native_thread_id,
 * threading's native_id, glibc's struct pthread tid) is in its own
 * namespace's numbers, which name other threads here, or none.  This maps
 * them to ours.
 *
 * Every function takes the proc root ("/proc" on a live system, NULL for
 * it) so unit tests read a fake tree: ROOT/PID/status and
 * ROOT/PID/task/TID/status, each with its NSpid line.
 */
#ifndef TDB_PIDNS_H
#define TDB_PIDNS_H

#include "base/common.h"

#include <sys/types.h>

/* The numbers of PID's "NSpid:" line (ours first, its own namespace's
 * last) in *OUT (up to MAX), their count as the result; 0 when the line
 * is missing or unreadable (a kernel before 4.1 has none: PID is then
 * taken to be in our namespace). */
size_t tdb_pidns_ids(const char *root, pid_t pid, pid_t *out, size_t max);

/* PID as its own namespace numbers it (the last NSpid number): PID itself
 * when it is in our namespace, 0 when unknown (it exited). */
pid_t tdb_pidns_inner_pid(const char *root, pid_t pid);

/* The threads of one process in another PID namespace, by both numbers. */
typedef struct tdb_pidns_map tdb_pidns_map;

/* The map of PID's threads when PID is in a namespace nested in ours
 * (NSpid has more than one number); NULL when it is in ours (nothing to
 * map) or cannot be read.  Free with tdb_pidns_map_free(). */
tdb_pidns_map *tdb_pidns_map_new(const char *root, pid_t pid);
void tdb_pidns_map_free(tdb_pidns_map *m); /* accepts NULL */

/* The pid of the mapped process in its own namespace. */
pid_t tdb_pidns_map_inner_pid(const tdb_pidns_map *m);

/* Our number for the thread its namespace calls NS_TID; the task list is
 * read again once when NS_TID is not known (a thread started since).  0
 * when no thread of the process has that number (it exited), never a
 * number that names another thread here.  M NULL: NS_TID itself. */
pid_t tdb_pidns_host_tid(tdb_pidns_map *m, pid_t ns_tid);

/* Its namespace's number for our thread HOST_TID, or 0.  M NULL:
 * HOST_TID itself. */
pid_t tdb_pidns_ns_tid(const tdb_pidns_map *m, pid_t host_tid);

#endif
