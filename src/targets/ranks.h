/*
 * targets/ranks.h: the distributed jobs running here, and each process's
 * part in one: a rank, a worker of a rank, or the launcher (torchrun's
 * elastic agent).
 *
 * A launcher (torchrun, srun, mpirun, a shell script, Kubernetes) tells
 * each rank who it is through its environment: RANK, LOCAL_RANK,
 * WORLD_SIZE, GROUP_RANK (the node's rank), and where to meet the others
 * (MASTER_ADDR, MASTER_PORT).  That is read from /proc/PID/environ, the
 * environment the process started with (a rank that changes os.environ
 * later is not seen changing), which only its owner (or root) may read.
 *
 * The job a rank belongs to is named by, in this order:
 *   TORCHELASTIC_RUN_ID  torchrun's --rdzv-id (its default "none" names no
 *                        job and is passed over),
 *   SLURM_JOB_ID         slurm's job,
 *   MASTER_ADDR:MASTER_PORT  where the ranks meet: the same on every host
 *                        of the job and different for two jobs of one host
 *                        (a loopback address in another network namespace,
 *                        a container's, is that namespace's: "@netns:N" is
 *                        added),
 *   pid:N                the launcher's pid (the ranks' parent), when the
 *                        environment names none of the above.
 *
 * Only Python processes count (an interpreter by its executable's or
 * argv[0]'s name): a shell that a launcher gives RANK to is not a rank.  A
 * Python process whose ancestor is a rank of the same job with the same
 * RANK (a DataLoader worker, a compile worker) is that rank's worker.
 * The agent is recognised by its command line (torchrun, python -m
 * torch.distributed.run or .launch), or as the parent of ranks that have
 * TORCHELASTIC_RUN_ID.
 *
 * Every function takes the proc root ("/proc" on a live system, NULL for
 * it) so unit tests read a recorded tree (tests/fixtures/ranks/): per pid,
 * environ, cmdline, stat, status and an exe symlink; a file left out reads
 * as not readable.
 */
#ifndef TDB_RANKS_H
#define TDB_RANKS_H

#include "base/common.h"

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

typedef enum tdb_job_role {
    TDB_JOB_NONE = 0,
    TDB_JOB_RANK,   /* a rank */
    TDB_JOB_WORKER, /* a child (or further descendant) of a rank, with its RANK */
    TDB_JOB_AGENT   /* the launcher: torchrun's elastic agent */
} tdb_job_role;

/* "rank", "worker", "agent" ("" for NONE). */
const char *tdb_job_role_name(tdb_job_role role);

/* What a process's environment says about its part in a job: numbers -1
 * when unset or not a number, strings NULL when unset. */
typedef struct tdb_rank_env {
    long rank, local_rank, world_size, group_rank;
    char *run_id;    /* TORCHELASTIC_RUN_ID, unless empty or "none" */
    char *slurm_job; /* SLURM_JOB_ID */
    char *master;    /* "MASTER_ADDR:MASTER_PORT" when both are set */
    int elastic;     /* TORCHELASTIC_RUN_ID is set, whatever its value:
                      * torchelastic (torchrun) started the process */
} tdb_rank_env;

/* Parse the environment block ENV (LEN bytes of NUL-terminated
 * NAME=VALUE strings, as /proc/PID/environ holds them) into *OUT, which
 * owns its strings (release with tdb_rank_env_release).  Returns 1 when
 * RANK is set to a number, else 0. */
int tdb_rank_env_parse(const char *env, size_t len, tdb_rank_env *out);
void tdb_rank_env_release(tdb_rank_env *e);

/* The job's name from E by the rule above, NULL when only the launcher
 * can name it; *FROM (if given) gets where it came from
 * ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "MASTER_ADDR:MASTER_PORT").
 * Borrowed from E. */
const char *tdb_rank_env_job(const tdb_rank_env *e, const char **from);

typedef struct tdb_job_member {
    pid_t pid, ppid;
    pid_t ns_pid;         /* its pid in its own PID namespace when that is not
                           * ours (a container's), else 0 */
    tdb_job_role role;
    long rank, local_rank, world_size, group_rank; /* -1 unknown (the agent's) */
    pid_t rank_pid;       /* a worker's rank process, else 0 */
    char *command;        /* the command line, arguments joined by spaces */
} tdb_job_member;

typedef struct tdb_job {
    char *id;             /* by the rule above */
    const char *id_from;  /* "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID",
                           * "MASTER_ADDR:MASTER_PORT" or "launcher" */
    pid_t launcher;       /* the ranks' parent when they have one parent here
                           * (the agent, a shell, srun's step), else 0 */
    long world_size;      /* from the ranks' WORLD_SIZE, -1 when unknown */
    tdb_job_member *members; /* the agent first, then the ranks by rank, then
                              * the workers by rank */
    size_t n;
    size_t n_ranks;
} tdb_job;

typedef struct tdb_jobs {
    tdb_job *v; /* by id */
    size_t n;
} tdb_jobs;

/* Read every process under ROOT (NULL: /proc) and group the jobs.
 * Processes whose environment cannot be read (another user's, without
 * root) are not seen.  0 and *OUT (release with tdb_jobs_release), or -1
 * with ERR set when ROOT cannot be listed. */
int tdb_jobs_read(const char *root, tdb_jobs *out, tdb_error *err);
void tdb_jobs_release(tdb_jobs *j); /* accepts an emptied one */

/* The member that is process PID, or NULL; its job in *OUT_JOB (if given).
 * Borrowed. */
const tdb_job_member *tdb_jobs_find_pid(const tdb_jobs *j, pid_t pid, const tdb_job **out_job);

/* The job ID names: its id, or when ID is a number the pid of its
 * launcher or of one of its members; the only job when ID is NULL.
 * Borrowed, or NULL with ERR set (exit status TDB_EXIT_FAIL): no job here,
 * no job ID, or several jobs and no ID (the message lists them, with their
 * ranks and launchers, and says to pick one with --job ID). */
const tdb_job *tdb_jobs_pick(const tdb_jobs *j, const char *id, tdb_error *err);

/* The process of JOB that is rank RANK (role rank, not a worker).
 * Borrowed, or NULL with ERR set: no such rank in the job (the message
 * says which ranks run here), or two processes claim it. */
const tdb_job_member *tdb_job_rank(const tdb_job *job, long rank, tdb_error *err);

/* The pid of rank RANK of the job JOB_ID names (NULL: the only one
 * running here; as tdb_jobs_pick()), read from /proc now: 0 with *OUT_PID
 * and, when OUT_JOB is given, the job's id (a new string); -1 with ERR set
 * as tdb_jobs_pick() and tdb_job_rank() set it. */
int tdb_rank_pid(long rank, const char *job_id, pid_t *out_pid, char **out_job, tdb_error *err);

/* The ranks of JOB (role rank) in order, as a new array of N numbers
 * (NULL when none). */
long *tdb_job_rank_numbers(const tdb_job *job, size_t *n);

/* M's part in JOB as JSON (new reference): {"id", "id_from", "role",
 * "rank", "local_rank", "world_size", "group_rank", "launcher", and for
 * a worker "rank_pid"}; unknown numbers are null. */
json_t *tdb_job_member_json(const tdb_job *job, const tdb_job_member *m);

/* ---- rank sets ---- */

/* Append the set of the N RANKS (any order, repeats allowed) to B as
 * "0-2,5,7,8": runs of three or more as FIRST-LAST, others one by one. */
void tdb_rank_set_format(tdb_buf *b, const long *ranks, size_t n);
/* The same with its noun: "rank 5", "ranks 0-2,5" ("no rank" for none). */
void tdb_rank_set_label(tdb_buf *b, const long *ranks, size_t n);

#endif
