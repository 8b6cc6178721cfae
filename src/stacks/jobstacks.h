/*
 * stacks/jobstacks.h: 'tdebug stacks --job': where every rank of a
 * distributed job is, on this host or on several.
 *
 * Each rank is read as 'tdebug stacks PID' reads one process
 * (stacks/stacks.h), then all are merged into one tree labelled with rank
 * sets (stacks/jobtree.h).  Other hosts are asked through ssh
 * (targets/remote.h) to run 'tdebug stacks --job --json' themselves, all
 * at once, and their ranks join the tree; a host named localhost or this
 * machine's own name is read here, directly.  The result is one JSON
 * document, which the text output is rendered from, so a host's answer
 * and the final one have the same shape:
 *
 *   {"job": {"id", "id_from", "world_size"} or null,
 *    "hosts": [{"host", "local": bool, "status": "ok" or why not
 *               (tdb_host_status_name(), or "no-job", "other-job"),
 *               "ranks": [...], "error" (when not ok), "ms"}],
 *    "ranks": [{"rank", "host", "pid", "ns_pid" (in a container),
 *               "local_rank", "group_rank", "world_size", "command",
 *               "stacks": one process of 'stacks --json'}],
 *    "missing_ranks": [ranks below the world size that no host showed],
 *    "tree": tdb_jobtree_json(),
 *    "errors": [{"host", "rank", "pid", "error"}: what could not be read]}
 */
#ifndef TDB_JOBSTACKS_H
#define TDB_JOBSTACKS_H

#include "base/common.h"
#include "stacks/stacks.h"
#include "targets/remote.h"

#include <jansson.h>
#include <stddef.h>

typedef struct tdb_jobstacks_opts {
    const char *job;           /* --job ID; NULL: the only job (on each host) */
    tdb_stacks_options stacks; /* what to read of each rank; its symbols are
                                * shared by the ranks read here */
    char *const *hosts;        /* --hosts/--hostfile; NULL: this host alone */
    size_t n_hosts;
    tdb_remote_opts remote;    /* how to reach the others */
    int cancel_fd;             /* the signal pipe, or -1 */
} tdb_jobstacks_opts;

/* Read the job's ranks (this host's, or every host's of O->hosts) and
 * merge them: the document above (new reference; never NULL).
 * *OUT_FAILED (if given) is set to 1 when something could not be read: a
 * host, a rank, or no job at all; 0 when every rank asked for was read. */
json_t *tdb_jobstacks_read(const tdb_jobstacks_opts *o, int *out_failed);

/* The document as text: a heading with the job and each host's ranks,
 * then the tree (tdb_jobtree_render()), then with FULL each rank's whole
 * stacks as 'tdebug stacks' prints them. */
void tdb_jobstacks_render(tdb_buf *b, const json_t *doc, int full);

/* Hosts from a host file: one a line, its first word (MPI's "host
 * slots=4" and slurm's hostfiles work), '#' starting a comment.  0 and a
 * new strv in *OUT (*N hosts), or -1 with ERR set: unreadable, no host,
 * or a name ssh would take for an option (starting with '-'). */
int tdb_hostfile_read(const char *path, char ***out, size_t *n, tdb_error *err);

/* Check a list of hosts ("a,b,c" of --hosts) and split it: as
 * tdb_hostfile_read(). */
int tdb_hosts_parse(const char *list, char ***out, size_t *n, tdb_error *err);

#endif
