/* targets/ranks.c: distributed jobs and ranks from the processes'
 * environments (see targets/ranks.h). */
#include "targets/ranks.h"

#include "process/pidns.h"
#include "targets/proc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bounds on what a (possibly hostile) /proc makes us read. */
#define MAX_PROCS 65536
#define MAX_DEPTH 64
#define ENV_MAX (4 << 20)

const char *tdb_job_role_name(tdb_job_role role)
{
    switch (role) {
    case TDB_JOB_RANK: return "rank";
    case TDB_JOB_WORKER: return "worker";
    case TDB_JOB_AGENT: return "agent";
    case TDB_JOB_NONE: break;
    }
    return "";
}

/* ---- the environment ---- */

static long env_number(const char *v)
{
    long n;
    return v && tdb_parse_long(v, 0, 1L << 30, &n) == 0 ? n : -1;
}

int tdb_rank_env_parse(const char *env, size_t len, tdb_rank_env *out)
{
    const char *rank = NULL, *local = NULL, *world = NULL, *group = NULL;
    const char *run = NULL, *slurm = NULL, *addr = NULL, *port = NULL;
    static const struct {
        const char *name;
        size_t off;
    } vars[] = {
        {"RANK=", 0}, {"LOCAL_RANK=", 1}, {"WORLD_SIZE=", 2}, {"GROUP_RANK=", 3},
        {"TORCHELASTIC_RUN_ID=", 4}, {"SLURM_JOB_ID=", 5}, {"MASTER_ADDR=", 6},
        {"MASTER_PORT=", 7},
    };
    const char **slot[] = {&rank, &local, &world, &group, &run, &slurm, &addr, &port};

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < len;) {
        const char *s = env + i;
        size_t n = strnlen(s, len - i);
        for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) {
            size_t nl = strlen(vars[k].name);
            /* The first one wins, as with getenv(). */
            if (n >= nl && !memcmp(s, vars[k].name, nl) && !*slot[vars[k].off])
                *slot[vars[k].off] = s + nl;
        }
        i += n + 1;
    }
    out->rank = env_number(rank);
    out->local_rank = env_number(local);
    out->world_size = env_number(world);
    out->group_rank = env_number(group);
    out->elastic = run != NULL;
    if (run && *run && strcmp(run, "none") != 0)
        out->run_id = tdb_xstrdup(run);
    if (slurm && *slurm)
        out->slurm_job = tdb_xstrdup(slurm);
    if (addr && *addr && port && *port)
        out->master = tdb_xasprintf("%s:%s", addr, port);
    return out->rank >= 0;
}

void tdb_rank_env_release(tdb_rank_env *e)
{
    free(e->run_id);
    free(e->slurm_job);
    free(e->master);
    memset(e, 0, sizeof(*e));
}

const char *tdb_rank_env_job(const tdb_rank_env *e, const char **from)
{
    const char *id = NULL, *src = NULL;
    if (e->run_id)
        id = e->run_id, src = "TORCHELASTIC_RUN_ID";
    else if (e->slurm_job)
        id = e->slurm_job, src = "SLURM_JOB_ID";
    else if (e->master)
        id = e->master, src = "MASTER_ADDR:MASTER_PORT";
    if (from)
        *from = src;
    return id;
}

/* ---- reading the processes ---- */

typedef struct proc_info {
    pid_t pid, ppid;
    int python;     /* an interpreter, by its executable's or argv[0]'s name */
    int agent_cmd;  /* torchrun's command line */
    int has_rank;
    tdb_rank_env env;
    char *command;
    /* filled while grouping */
    tdb_job_role role;
    pid_t rank_pid;
    char *job;      /* the job's id (owned) */
    const char *job_from;
} proc_info;

static char *read_root_file(const char *root, pid_t pid, const char *name, size_t *len)
{
    char *path = tdb_xasprintf("%s/%d/%s", root, (int)pid, name);
    char *text = tdb_read_file(path, len, NULL);
    free(path);
    return text;
}

static pid_t read_ppid(const char *root, pid_t pid)
{
    char *stat = read_root_file(root, pid, "stat", NULL);
    int ppid = 0;
    /* "pid (comm) S ppid ...": comm may hold spaces and parentheses. */
    char *paren = stat ? strrchr(stat, ')') : NULL;
    if (!paren || sscanf(paren + 1, " %*c %d", &ppid) != 1)
        ppid = 0;
    free(stat);
    return (pid_t)ppid;
}

/* torchrun, python -m torch.distributed.run, python -m torch.distributed.launch */
static int is_agent_command(char *const *argv, size_t argc)
{
    for (size_t i = 0; i < argc && i < 3; i++) {
        if (!strcmp(tdb_base_name(argv[i]), "torchrun"))
            return 1;
        if (!strcmp(argv[i], "-m") && i + 1 < argc &&
            (!strcmp(argv[i + 1], "torch.distributed.run") ||
             !strcmp(argv[i + 1], "torch.distributed.launch")))
            return 1;
    }
    return 0;
}

/* The inode of PID's network namespace ("self" for ours), 0 when
 * unreadable. */
static unsigned long long netns_of(const char *root, const char *pid)
{
    char buf[64];
    char *link = tdb_xasprintf("%s/%s/ns/net", root, pid);
    ssize_t n = readlink(link, buf, sizeof(buf) - 1);
    free(link);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *open = strchr(buf, '[');
    return open ? strtoull(open + 1, NULL, 10) : 0;
}

/* Is MASTER ("ADDR:PORT") on the loopback, which each network namespace
 * has its own of? */
static int loopback_master(const char *master)
{
    return !strncmp(master, "127.", 4) || !strncmp(master, "localhost:", 10) ||
           !strncmp(master, "::1:", 4) || !strncmp(master, "ip6-localhost:", 14);
}

static int read_proc(const char *root, pid_t pid, proc_info *p)
{
    char *cmd = NULL;
    char *argv[4] = {NULL, NULL, NULL, NULL};
    size_t argc = 0, clen = 0;

    memset(p, 0, sizeof(*p));
    p->pid = pid;
    cmd = read_root_file(root, pid, "cmdline", &clen);
    if (!cmd || clen == 0) {
        free(cmd);
        return -1; /* a kernel thread or a zombie */
    }
    p->ppid = read_ppid(root, pid);
    for (size_t i = 0; i < clen && argc < 4; i += strlen(cmd + i) + 1)
        argv[argc++] = cmd + i;
    char exe[4096];
    char *link = tdb_xasprintf("%s/%d/exe", root, (int)pid);
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    free(link);
    exe[n > 0 ? n : 0] = '\0';
    p->python = (n > 0 && tdb_is_python_name(tdb_base_name(exe))) ||
                tdb_is_python_name(tdb_base_name(argv[0]));
    p->agent_cmd = is_agent_command(argv, argc);
    for (size_t i = 0; i + 1 < clen; i++)
        if (!cmd[i])
            cmd[i] = ' ';
    p->command = cmd;
    if (!p->python)
        return 0; /* only Python processes are ranks: their environment alone is read */
    size_t len = 0;
    char *env = read_root_file(root, pid, "environ", &len);
    if (env && len <= ENV_MAX)
        p->has_rank = tdb_rank_env_parse(env, len, &p->env);
    free(env);
    /* Two containers' jobs that both meet on their own loopback are two
     * jobs: the address names the network namespace's job. */
    if (p->has_rank && p->env.master && !p->env.run_id && !p->env.slurm_job &&
        loopback_master(p->env.master)) {
        char spid[16];
        snprintf(spid, sizeof(spid), "%d", (int)pid);
        unsigned long long mine = netns_of(root, "self"), theirs = netns_of(root, spid);
        if (mine && theirs && mine != theirs) {
            char *qualified = tdb_xasprintf("%s@netns:%llu", p->env.master, theirs);
            free(p->env.master);
            p->env.master = qualified;
        }
    }
    return 0;
}

static void proc_info_release(proc_info *p)
{
    tdb_rank_env_release(&p->env);
    free(p->command);
    free(p->job);
}

static proc_info *find(proc_info *v, size_t n, pid_t pid)
{
    /* V is sorted by pid. */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid].pid == pid)
            return &v[mid];
        if (v[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int same_key(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Is P a rank (not a worker)?  Else *RANK_PID gets the topmost ancestor
 * that is the same rank of the same job. */
static int is_rank(proc_info *v, size_t n, const proc_info *p, pid_t *rank_pid)
{
    const char *key = tdb_rank_env_job(&p->env, NULL);
    pid_t top = 0;
    pid_t at = p->ppid;
    for (int depth = 0; at > 1 && depth < MAX_DEPTH; depth++) {
        proc_info *a = find(v, n, at);
        if (!a)
            break;
        if (a->python && a->has_rank && a->env.rank == p->env.rank &&
            same_key(tdb_rank_env_job(&a->env, NULL), key))
            top = a->pid;
        at = a->ppid;
    }
    *rank_pid = top;
    return top == 0;
}

/* ---- grouping ---- */

static tdb_job *job_for(tdb_jobs *j, const char *id, const char *from)
{
    for (size_t i = 0; i < j->n; i++)
        if (!strcmp(j->v[i].id, id))
            return &j->v[i];
    j->v = tdb_xrealloc(j->v, (j->n + 1) * sizeof(*j->v));
    tdb_job *job = &j->v[j->n++];
    memset(job, 0, sizeof(*job));
    job->id = tdb_xstrdup(id);
    job->id_from = from;
    job->world_size = -1;
    return job;
}

static void add_member(tdb_job *job, const proc_info *p, const char *root)
{
    job->members = tdb_xrealloc(job->members, (job->n + 1) * sizeof(*job->members));
    tdb_job_member *m = &job->members[job->n++];
    memset(m, 0, sizeof(*m));
    m->pid = p->pid;
    m->ppid = p->ppid;
    pid_t inner = tdb_pidns_inner_pid(root, p->pid);
    m->ns_pid = inner && inner != p->pid ? inner : 0;
    m->role = p->role;
    m->rank = p->role == TDB_JOB_AGENT ? -1 : p->env.rank;
    m->local_rank = p->role == TDB_JOB_AGENT ? -1 : p->env.local_rank;
    m->world_size = p->role == TDB_JOB_AGENT ? -1 : p->env.world_size;
    m->group_rank = p->role == TDB_JOB_AGENT ? -1 : p->env.group_rank;
    m->rank_pid = p->rank_pid;
    m->command = tdb_xstrdup(p->command);
    if (p->role == TDB_JOB_RANK) {
        job->n_ranks++;
        if (job->world_size < 0)
            job->world_size = p->env.world_size;
    }
}

static int cmp_member(const void *a, const void *b)
{
    const tdb_job_member *x = a, *y = b;
    static const int order[] = {[TDB_JOB_AGENT] = 0, [TDB_JOB_RANK] = 1, [TDB_JOB_WORKER] = 2,
                                [TDB_JOB_NONE] = 3};
    if (order[x->role] != order[y->role])
        return order[x->role] - order[y->role];
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int cmp_job(const void *a, const void *b)
{
    return strcmp(((const tdb_job *)a)->id, ((const tdb_job *)b)->id);
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = ((const proc_info *)a)->pid, y = ((const proc_info *)b)->pid;
    return x < y ? -1 : x > y;
}

int tdb_jobs_read(const char *root, tdb_jobs *out, tdb_error *err)
{
    const char *r = root ? root : "/proc";
    DIR *d = opendir(r);
    proc_info *v = NULL;
    size_t n = 0, cap = 0;
    tdb_jobs j = {NULL, 0};

    if (!d) {
        tdb_error_errno(err, "cannot list the processes in '%s'", r);
        return -1;
    }
    struct dirent *e;
    pid_t self = getpid();
    while ((e = readdir(d)) && n < MAX_PROCS) {
        long pid;
        if (tdb_parse_long(e->d_name, 1, INT32_MAX, &pid) < 0 || (root == NULL && pid == self))
            continue;
        TDB_GROW(v, n, cap);
        if (read_proc(r, (pid_t)pid, &v[n]) == 0)
            n++;
    }
    closedir(d);
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_pid);

    /* Ranks and workers, by their job. */
    for (size_t i = 0; i < n; i++) {
        proc_info *p = &v[i];
        if (!p->python || !p->has_rank)
            continue;
        p->role = is_rank(v, n, p, &p->rank_pid) ? TDB_JOB_RANK : TDB_JOB_WORKER;
        const char *id = tdb_rank_env_job(&p->env, &p->job_from);
        /* Named by nothing but its launcher: a worker's job is its rank's. */
        if (!id) {
            proc_info *rank = p->role == TDB_JOB_WORKER ? find(v, n, p->rank_pid) : p;
            p->job = tdb_xasprintf("pid:%d", (int)(rank ? rank->ppid : p->ppid));
            p->job_from = "launcher";
        } else {
            p->job = tdb_xstrdup(id);
        }
    }
    /* The agent: torchrun's command line, or the parent of ranks that
     * torchelastic started; it joins its ranks' job. */
    for (size_t i = 0; i < n; i++) {
        proc_info *p = &v[i];
        if (p->role != TDB_JOB_NONE)
            continue;
        const proc_info *child = NULL;
        for (size_t k = 0; k < n && !child; k++)
            if (v[k].ppid == p->pid && v[k].role == TDB_JOB_RANK)
                child = &v[k];
        if (!p->agent_cmd && !(child && child->env.elastic))
            continue;
        p->role = TDB_JOB_AGENT;
        if (child) {
            p->job = tdb_xstrdup(child->job);
            p->job_from = child->job_from;
        } else {
            p->job = tdb_xasprintf("pid:%d", (int)p->pid);
            p->job_from = "launcher";
        }
    }
    for (size_t i = 0; i < n; i++)
        if (v[i].role != TDB_JOB_NONE)
            add_member(job_for(&j, v[i].job, v[i].job_from), &v[i], r);
    for (size_t i = 0; i < j.n; i++) {
        tdb_job *job = &j.v[i];
        qsort(job->members, job->n, sizeof(*job->members), cmp_member);
        /* The launcher: the ranks' one parent, when they have one. */
        for (size_t k = 0; k < job->n; k++) {
            const tdb_job_member *m = &job->members[k];
            if (m->role == TDB_JOB_AGENT) {
                job->launcher = m->pid;
                break;
            }
            if (m->role != TDB_JOB_RANK)
                continue;
            if (m->ppid <= 1) { /* orphans: their launcher is gone */
                job->launcher = 0;
                break;
            }
            if (!job->launcher)
                job->launcher = m->ppid;
            else if (job->launcher != m->ppid) {
                job->launcher = 0;
                break;
            }
        }
    }
    if (j.n > 1)
        qsort(j.v, j.n, sizeof(*j.v), cmp_job);
    for (size_t i = 0; i < n; i++)
        proc_info_release(&v[i]);
    free(v);
    *out = j;
    return 0;
}

void tdb_jobs_release(tdb_jobs *j)
{
    for (size_t i = 0; i < j->n; i++) {
        for (size_t k = 0; k < j->v[i].n; k++)
            free(j->v[i].members[k].command);
        free(j->v[i].members);
        free(j->v[i].id);
    }
    free(j->v);
    j->v = NULL;
    j->n = 0;
}

const tdb_job_member *tdb_jobs_find_pid(const tdb_jobs *j, pid_t pid, const tdb_job **out_job)
{
    for (size_t i = 0; i < j->n; i++)
        for (size_t k = 0; k < j->v[i].n; k++)
            if (j->v[i].members[k].pid == pid) {
                if (out_job)
                    *out_job = &j->v[i];
                return &j->v[i].members[k];
            }
    return NULL;
}

long *tdb_job_rank_numbers(const tdb_job *job, size_t *n)
{
    long *v = NULL;
    *n = 0;
    for (size_t k = 0; k < job->n; k++)
        if (job->members[k].role == TDB_JOB_RANK) {
            v = tdb_xrealloc(v, (*n + 1) * sizeof(*v));
            v[(*n)++] = job->members[k].rank;
        }
    return v;
}

/* "ID (ranks 0-3 of 4, launcher 1234)" */
static void describe_job(tdb_buf *b, const tdb_job *job)
{
    size_t n = 0;
    long *ranks = tdb_job_rank_numbers(job, &n);
    tdb_buf_addf(b, "'%s' (", job->id);
    if (n) {
        tdb_rank_set_label(b, ranks, n);
        if (job->world_size > 0)
            tdb_buf_addf(b, " of %ld", job->world_size);
    } else {
        tdb_buf_adds(b, "no rank yet");
    }
    if (job->launcher)
        tdb_buf_addf(b, ", launcher %d", (int)job->launcher);
    tdb_buf_addc(b, ')');
    free(ranks);
}

const tdb_job *tdb_jobs_pick(const tdb_jobs *j, const char *id, tdb_error *err)
{
    if (id) {
        long pid = 0;
        int numeric = tdb_parse_long(id, 1, INT32_MAX, &pid) == 0;
        for (size_t i = 0; i < j->n; i++)
            if (!strcmp(j->v[i].id, id))
                return &j->v[i];
        for (size_t i = 0; numeric && i < j->n; i++) {
            if (j->v[i].launcher == (pid_t)pid)
                return &j->v[i];
            for (size_t k = 0; k < j->v[i].n; k++)
                if (j->v[i].members[k].pid == (pid_t)pid)
                    return &j->v[i];
        }
    }
    if (!id && j->n == 1)
        return &j->v[0];
    if (j->n == 0) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, ENOENT,
                           "%s%s%sno distributed job runs here: no Python process has RANK in "
                           "its environment (or none that tdebug may read: another user's "
                           "needs root)", id ? "no job '" : "", id ? id : "", id ? "': " : "");
        return NULL;
    }
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < j->n; i++) {
        tdb_buf_adds(&b, i ? ", " : "");
        describe_job(&b, &j->v[i]);
    }
    if (id)
        tdb_error_set_exit(err, TDB_EXIT_FAIL, ENOENT,
                           "no job '%s' runs here: %s %s (give %s with --job ID, or a "
                           "launcher's pid)", id, j->n == 1 ? "the one here is" : "those here are",
                           tdb_buf_str(&b), j->n == 1 ? "its id" : "one of their ids");
    else
        tdb_error_set_exit(err, TDB_EXIT_FAIL, EEXIST,
                           "%zu distributed jobs run here: %s (say which with --job ID)", j->n,
                           tdb_buf_str(&b));
    tdb_buf_free(&b);
    return NULL;
}

const tdb_job_member *tdb_job_rank(const tdb_job *job, long rank, tdb_error *err)
{
    const tdb_job_member *found = NULL;
    for (size_t k = 0; k < job->n; k++) {
        const tdb_job_member *m = &job->members[k];
        if (m->role != TDB_JOB_RANK || m->rank != rank)
            continue;
        if (found) {
            tdb_error_set_exit(err, TDB_EXIT_FAIL, EEXIST,
                               "rank %ld of job '%s' is two processes here, pids %d and %d "
                               "(give the pid instead)", rank, job->id, (int)found->pid,
                               (int)m->pid);
            return NULL;
        }
        found = m;
    }
    if (!found) {
        size_t n = 0;
        long *ranks = tdb_job_rank_numbers(job, &n);
        tdb_buf b = TDB_BUF_INIT;
        if (n)
            tdb_rank_set_label(&b, ranks, n);
        else
            tdb_buf_adds(&b, "none");
        tdb_error_set_exit(err, TDB_EXIT_FAIL, ENOENT,
                           "rank %ld of job '%s' does not run here (ranks here: %s)%s", rank,
                           job->id, tdb_buf_str(&b),
                           job->world_size > 0 && rank >= job->world_size
                               ? "; the job's WORLD_SIZE is smaller"
                               : "");
        tdb_buf_free(&b);
        free(ranks);
    }
    return found;
}

static json_t *number_or_null(long v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

json_t *tdb_job_member_json(const tdb_job *job, const tdb_job_member *m)
{
    json_t *o = json_object();
    tdb_json_set_str(o, "id", job->id);
    json_object_set_new(o, "id_from", json_string(job->id_from));
    json_object_set_new(o, "role", json_string(tdb_job_role_name(m->role)));
    json_object_set_new(o, "rank", number_or_null(m->rank));
    json_object_set_new(o, "local_rank", number_or_null(m->local_rank));
    json_object_set_new(o, "world_size", number_or_null(m->world_size));
    json_object_set_new(o, "group_rank", number_or_null(m->group_rank));
    json_object_set_new(o, "launcher", job->launcher ? json_integer(job->launcher) : json_null());
    if (m->role == TDB_JOB_WORKER)
        json_object_set_new(o, "rank_pid", json_integer(m->rank_pid));
    return o;
}

/* ---- rank sets ---- */

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

void tdb_rank_set_format(tdb_buf *b, const long *ranks, size_t n)
{
    long *v = tdb_xmalloc((n ? n : 1) * sizeof(*v));
    size_t m = 0;
    if (n)
        memcpy(v, ranks, n * sizeof(*v));
    qsort(v, n, sizeof(*v), cmp_long);
    for (size_t i = 0; i < n; i++)
        if (!m || v[m - 1] != v[i])
            v[m++] = v[i];
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j + 1 < m && v[j + 1] == v[j] + 1)
            j++;
        tdb_buf_adds(b, i ? "," : "");
        if (j - i >= 2)
            tdb_buf_addf(b, "%ld-%ld", v[i], v[j]);
        else if (j > i)
            tdb_buf_addf(b, "%ld,%ld", v[i], v[j]);
        else
            tdb_buf_addf(b, "%ld", v[i]);
        i = j + 1;
    }
    free(v);
}

void tdb_rank_set_label(tdb_buf *b, const long *ranks, size_t n)
{
    int several = 0;
    for (size_t i = 1; i < n && !several; i++)
        several = ranks[i] != ranks[0];
    if (!n) {
        tdb_buf_adds(b, "no rank");
        return;
    }
    tdb_buf_adds(b, several ? "ranks " : "rank ");
    tdb_rank_set_format(b, ranks, n);
}

int tdb_rank_pid(long rank, const char *job_id, pid_t *out_pid, char **out_job, tdb_error *err)
{
    tdb_jobs jobs = {NULL, 0};
    const tdb_job *job = NULL;
    const tdb_job_member *m = NULL;
    if (tdb_jobs_read(NULL, &jobs, err) == 0 && (job = tdb_jobs_pick(&jobs, job_id, err)))
        m = tdb_job_rank(job, rank, err);
    if (m) {
        *out_pid = m->pid;
        if (out_job)
            *out_job = tdb_xstrdup(job->id);
    }
    tdb_jobs_release(&jobs);
    return m ? 0 : -1;
}
