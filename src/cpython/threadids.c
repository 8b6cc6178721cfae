/* cpython/threadids.c: Python thread states matched to OS threads by their
 * thread pointer (see cpython/threadids.h). */
#include "cpython/threadids.h"

static int known(const pid_t *tids, size_t n, pid_t tid)
{
    for (size_t i = 0; i < n; i++)
        if (tids[i] == tid)
            return 1;
    return 0;
}

size_t tdb_py_snapshot_match_threads(tdb_py_snapshot *snap, const pid_t *tids,
                                     const uint64_t *thread_ptrs, size_t n)
{
    size_t matched = 0;
    for (size_t i = 0; snap && i < snap->n_threads; i++) {
        tdb_py_thread *t = &snap->threads[i];
        if ((t->tid > 0 && known(tids, n, t->tid)) || !t->thread_id)
            continue;
        for (size_t j = 0; j < n; j++) {
            if (thread_ptrs[j] && thread_ptrs[j] == (uint64_t)t->thread_id) {
                t->tid = tids[j];
                matched++;
                break;
            }
        }
    }
    return matched;
}
