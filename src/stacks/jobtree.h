/*
 * stacks/jobtree.h: the stacks of every rank of a distributed job merged
 * into one tree, each branch labelled with the ranks that took it, as
 * LLNL's STAT (the Stack Trace Analysis Tool) does for MPI: a hung job
 * reads as "ranks 0,1,3 wait in all_reduce; rank 2 is still in
 * load_batch".
 *
 * The input is what 'tdebug stacks --json' prints for each process (one
 * element of "processes": tdb_process_stacks_json()), from this host or
 * another, so the tree is built the same way whoever read the stacks.
 * Frames are merged from the outermost down.  Threads are merged by role:
 * each process's main thread with the other main threads, other threads
 * with the threads of the same name (threading's, else the OS's).  Two
 * frames are the same when they are:
 *   Python: the same file, function and line;
 *   native: the same function at the same offset in the same library (by
 *           file name), or, unnamed, the same library and the same
 *           address within a page (a library moves by whole pages from
 *           one process to the next).
 */
#ifndef TDB_JOBTREE_H
#define TDB_JOBTREE_H

#include "base/common.h"
#include "targets/ranks.h" /* rank sets: tdb_rank_set_label() */

#include <jansson.h>
#include <stddef.h>


typedef struct tdb_jobtree tdb_jobtree;

tdb_jobtree *tdb_jobtree_new(void);
void tdb_jobtree_free(tdb_jobtree *t); /* accepts NULL */

/* Add the threads of rank RANK: PROCESS as 'stacks --json' gives it
 * (borrowed; the tree keeps references to the frames it needs). */
void tdb_jobtree_add(tdb_jobtree *t, long rank, const json_t *process);

/* The tree as JSON (new reference): an array of thread groups, the main
 * threads first, then by name:
 *   {"thread": "main" or the threads' name, "main": bool,
 *    "ranks": [0, 1, ...], "rank_set": "0-3", "threads": N,
 *    "frames": [...], "ends": [ranks whose stack ends here],
 *    "children": [branches, each {"ranks", "rank_set", "threads",
 *                 "frames", "ends", "children"}]}
 * A branch holds the frames all its ranks share, outermost first (each
 * frame as 'stacks --json' gives it), then its children where they part;
 * children come largest set first.  "ends" only when not empty. */
json_t *tdb_jobtree_json(const tdb_jobtree *t);

/* The tree as text:
 *
 *   Main thread, ranks 0-3:
 *     File "train.py", line 52, in <module>
 *     File "train.py", line 45, in main
 *     [ranks 0,1,3]
 *       File "train.py", line 33, in step
 *       c10d::Work::wait(...)+0x63 (libtorch_cpu.so.1.13.0)
 *     [rank 2]
 *       File "train.py", line 27, in load_batch
 *
 * Native frames without their address (it differs from rank to rank). */
void tdb_jobtree_render(tdb_buf *b, const tdb_jobtree *t);

/* One process of 'stacks --json' as text, as 'tdebug stacks' prints it
 * (for ranks read on another host, which only sent JSON): its threads,
 * each with a heading and its frames, innermost first, every line
 * starting with INDENT. */
void tdb_process_json_render(tdb_buf *b, const json_t *process, const char *indent);

#endif
