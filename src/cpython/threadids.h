/*
 * cpython/threadids.h: which OS thread runs each Python thread state, when
 * the thread ids CPython recorded are not the ones the reader sees.
 *
 * A core of a process in a container, written from outside it (gcore run
 * on the host), numbers threads as the host does, while CPython recorded
 * its namespace's numbers (process/pidns.h maps them for a live process,
 * from /proc; a core has no /proc).  What both agree on is the thread
 * pointer: on x86-64 Linux a thread's fs_base is glibc's struct pthread,
 * whose address is pthread_self(), which is what CPython records as the
 * thread state's thread_id (threading.get_ident()).
 */
#ifndef TDB_PY_THREADIDS_H
#define TDB_PY_THREADIDS_H

#include "cpython/frames.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Give each Python thread of SNAP whose tid is none of the N TIDS the tid
 * of the thread whose thread pointer (THREAD_PTRS[i], 0 when unknown)
 * equals its thread_id.  Returns how many were given one. */
size_t tdb_py_snapshot_match_threads(tdb_py_snapshot *snap, const pid_t *tids,
                                     const uint64_t *thread_ptrs, size_t n);

#endif
