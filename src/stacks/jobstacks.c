/* stacks/jobstacks.c: every rank of a job, read here and on other hosts,
 * merged (see stacks/jobstacks.h). */
#include "stacks/jobstacks.h"

#include "native/unwind.h"
#include "stacks/jobtree.h"
#include "targets/ranks.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void add_error(json_t *doc, const char *host, long rank, pid_t pid, const char *msg)
{
    json_t *e = json_object();
    tdb_json_set_str(e, "host", host);
    if (rank >= 0)
        json_object_set_new(e, "rank", json_integer(rank));
    if (pid > 0)
        json_object_set_new(e, "pid", json_integer(pid));
    tdb_json_set_str(e, "error", msg);
    json_array_append_new(json_object_get(doc, "errors"), e);
}

static json_t *new_doc(void)
{
    return json_pack("{s:n, s:[], s:[], s:[]}", "job", "hosts", "ranks", "errors");
}

static json_t *host_entry(const char *host, int local, const char *status, const char *error,
                          double ms)
{
    json_t *h = json_object();
    tdb_json_set_str(h, "host", host);
    json_object_set_new(h, "local", json_boolean(local));
    json_object_set_new(h, "status", json_string(status));
    json_object_set_new(h, "ranks", json_array());
    if (error)
        tdb_json_set_str(h, "error", error);
    json_object_set_new(h, "ms", json_real(ms));
    return h;
}

/* This machine's name, for the "host" of what is read here. */
static char *own_name(void)
{
    char name[256];
    if (gethostname(name, sizeof(name)) < 0 || !name[0])
        return tdb_xstrdup("localhost");
    name[sizeof(name) - 1] = '\0';
    return tdb_xstrdup(name);
}

static json_t *number_or_null(long v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

/* The job's ranks on this machine, as the document of one host. */
static json_t *local_doc(const tdb_jobstacks_opts *o, const char *host)
{
    json_t *doc = new_doc();
    int64_t t0 = tdb_now_ms();
    tdb_jobs jobs = {NULL, 0};
    tdb_error err = {0};
    const tdb_job *job = NULL;
    json_t *h = NULL;

    if (tdb_jobs_read(NULL, &jobs, &err) < 0 || !(job = tdb_jobs_pick(&jobs, o->job, &err))) {
        add_error(doc, host, -1, 0, err.msg);
        json_array_append_new(json_object_get(doc, "hosts"),
                              host_entry(host, 1, err.code == ENOENT || err.code == EEXIST
                                                      ? "no-job" : "failed",
                                         err.msg, (double)(tdb_now_ms() - t0)));
        tdb_jobs_release(&jobs);
        return doc;
    }
    json_t *j = json_object();
    tdb_json_set_str(j, "id", job->id);
    json_object_set_new(j, "id_from", json_string(job->id_from));
    json_object_set_new(j, "world_size", number_or_null(job->world_size));
    json_object_set_new(doc, "job", j);
    h = host_entry(host, 1, "ok", NULL, 0);

    /* One rank after the other, sharing the symbols of their libraries.
     * (Forked workers reading them in parallel measured no faster on a
     * loaded 2-core machine: most of each rank's time is libdw's own work
     * for each process, and the kernel's.) */
    tdb_stacks_options so = o->stacks;
    if (!so.symbols)
        so.symbols = tdb_symcache_new();
    for (size_t k = 0; k < job->n; k++) {
        const tdb_job_member *m = &job->members[k];
        tdb_process_stacks *s = NULL;
        if (m->role != TDB_JOB_RANK)
            continue;
        tdb_error_clear(&err);
        if (tdb_stacks_take(m->pid, &so, &s, &err) < 0) {
            add_error(doc, host, m->rank, m->pid, err.msg);
            continue;
        }
        json_t *r = json_object();
        json_object_set_new(r, "rank", json_integer(m->rank));
        tdb_json_set_str(r, "host", host);
        json_object_set_new(r, "pid", json_integer(m->pid));
        if (m->ns_pid)
            json_object_set_new(r, "ns_pid", json_integer(m->ns_pid));
        json_object_set_new(r, "local_rank", number_or_null(m->local_rank));
        json_object_set_new(r, "group_rank", number_or_null(m->group_rank));
        json_object_set_new(r, "world_size", number_or_null(m->world_size));
        tdb_json_set_str(r, "command", m->command);
        json_object_set_new(r, "stacks", tdb_process_stacks_json(s, so.flags));
        json_array_append_new(json_object_get(doc, "ranks"), r);
        json_array_append_new(json_object_get(h, "ranks"), json_integer(m->rank));
        tdb_process_stacks_free(s);
    }
    if (so.symbols != o->stacks.symbols)
        tdb_symcache_free(so.symbols);
    json_object_set_new(h, "ms", json_real((double)(tdb_now_ms() - t0)));
    json_array_append_new(json_object_get(doc, "hosts"), h);
    tdb_jobs_release(&jobs);
    return doc;
}

/* Add what HOST answered (A) to DOC: its ranks and errors, under the name
 * we know it by.  Returns 0 when it gave ranks of DOC's job. */
static int merge_answer(json_t *doc, const tdb_host_answer *a, int local)
{
    json_t *hosts = json_object_get(doc, "hosts");
    if (a->status != TDB_HOST_OK) {
        add_error(doc, a->host, -1, 0, a->reason);
        json_array_append_new(hosts, host_entry(a->host, local, tdb_host_status_name(a->status),
                                                a->reason, a->ms));
        return -1;
    }
    json_t *job = json_object_get(a->doc, "job"), *mine = json_object_get(doc, "job");
    size_t i;
    json_t *v;
    if (!json_is_object(job)) {
        /* No job there: the host says why (none, or several). */
        json_t *first = json_array_get(json_object_get(a->doc, "errors"), 0);
        const char *why = json_string_value(json_object_get(first, "error"));
        add_error(doc, a->host, -1, 0, why ? why : "no job there");
        json_array_append_new(hosts, host_entry(a->host, local, "no-job",
                                                why ? why : "no job there", a->ms));
        return -1;
    }
    const char *id = json_string_value(json_object_get(job, "id"));
    const char *want = json_string_value(json_object_get(mine, "id"));
    if (json_is_object(mine) && id && want && strcmp(id, want) != 0) {
        char *why = tdb_xasprintf("it runs job '%s', not '%s' (name the job with --job ID)", id,
                                  want);
        add_error(doc, a->host, -1, 0, why);
        json_array_append_new(hosts, host_entry(a->host, local, "other-job", why, a->ms));
        free(why);
        return -1;
    }
    if (!json_is_object(mine))
        json_object_set(doc, "job", job);
    json_t *h = host_entry(a->host, local, "ok", NULL, a->ms);
    json_array_foreach(json_object_get(a->doc, "ranks"), i, v) {
        json_t *r = json_deep_copy(v);
        tdb_json_set_str(r, "host", a->host);
        json_array_append_new(json_object_get(h, "ranks"),
                              json_integer(json_integer_value(json_object_get(r, "rank"))));
        json_array_append_new(json_object_get(doc, "ranks"), r);
    }
    json_array_foreach(json_object_get(a->doc, "errors"), i, v) {
        json_t *e = json_deep_copy(v);
        tdb_json_set_str(e, "host", a->host);
        json_array_append_new(json_object_get(doc, "errors"), e);
    }
    json_array_append_new(hosts, h);
    return 0;
}

static int cmp_rank_entry(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "rank"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "rank"));
    return x < y ? -1 : x > y;
}

/* The ranks in order, the tree, the ranks missing. */
static void finish(json_t *doc)
{
    json_t *ranks = json_object_get(doc, "ranks");
    size_t n = json_array_size(ranks), i;
    json_t **v = tdb_xmalloc((n ? n : 1) * sizeof(*v));
    for (i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(ranks, i));
    qsort(v, n, sizeof(*v), cmp_rank_entry);
    json_array_clear(ranks);
    tdb_jobtree *tree = tdb_jobtree_new();
    for (i = 0; i < n; i++) {
        json_int_t r = json_integer_value(json_object_get(v[i], "rank"));
        if (i && r == json_integer_value(json_object_get(v[i - 1], "rank"))) {
            char *why = tdb_xasprintf("rank %lld is two processes: pid %lld on %s and pid %lld "
                                      "on %s (two jobs with one id?)", (long long)r,
                                      (long long)json_integer_value(json_object_get(v[i - 1], "pid")),
                                      json_string_value(json_object_get(v[i - 1], "host")),
                                      (long long)json_integer_value(json_object_get(v[i], "pid")),
                                      json_string_value(json_object_get(v[i], "host")));
            add_error(doc, json_string_value(json_object_get(v[i], "host")), (long)r, 0, why);
            free(why);
        }
        tdb_jobtree_add(tree, (long)r, json_object_get(v[i], "stacks"));
        json_array_append_new(ranks, v[i]);
    }
    json_object_set_new(doc, "tree", tdb_jobtree_json(tree));
    tdb_jobtree_free(tree);
    json_int_t world = json_integer_value(json_object_get(json_object_get(doc, "job"),
                                                          "world_size"));
    json_t *missing = json_array();
    for (json_int_t r = 0, k = 0; r < world && r < (1 << 20); r++) {
        while (k < (json_int_t)n &&
               json_integer_value(json_object_get(json_array_get(ranks, (size_t)k), "rank")) < r)
            k++;
        if (k >= (json_int_t)n ||
            json_integer_value(json_object_get(json_array_get(ranks, (size_t)k), "rank")) != r)
            json_array_append_new(missing, json_integer(r));
    }
    json_object_set_new(doc, "missing_ranks", missing);
    free(v);
}

/* The arguments of 'stacks --job' that make another tdebug read as we do. */
static char **remote_args(const tdb_jobstacks_opts *o)
{
    char **args = NULL;
    size_t n = 0;
    tdb_ptrs_push(&args, &n, tdb_xstrdup("stacks"));
    tdb_ptrs_push(&args, &n, o->job ? tdb_xasprintf("--job=%s", o->job) : tdb_xstrdup("--job"));
    tdb_ptrs_push(&args, &n, tdb_xstrdup("--json"));
    if (o->stacks.flags & TDB_STACK_PYTHON_ONLY)
        tdb_ptrs_push(&args, &n, tdb_xstrdup("--python"));
    if (o->stacks.flags & TDB_STACK_NATIVE_ONLY)
        tdb_ptrs_push(&args, &n, tdb_xstrdup("--native"));
    if (o->stacks.flags & TDB_STACK_RAW)
        tdb_ptrs_push(&args, &n, tdb_xstrdup("--raw"));
    if (o->stacks.flags & TDB_STACK_LOCALS)
        tdb_ptrs_push(&args, &n, tdb_xstrdup("--locals"));
    return args;
}

json_t *tdb_jobstacks_read(const tdb_jobstacks_opts *o, int *out_failed)
{
    json_t *doc = new_doc();
    char *self = own_name();

    if (!o->n_hosts) {
        json_t *d = local_doc(o, self);
        json_decref(doc);
        doc = d;
    } else {
        /* This machine is read once, whatever names it goes by, under the
         * first one given; the others through ssh, all at once. */
        char **remote = tdb_xcalloc(o->n_hosts + 1, sizeof(*remote));
        size_t n_remote = 0, local_at = (size_t)-1;
        for (size_t i = 0; i < o->n_hosts; i++) {
            if (tdb_host_is_local(o->hosts[i])) {
                if (local_at == (size_t)-1)
                    local_at = i;
                continue;
            }
            int dup = 0;
            for (size_t k = 0; k < n_remote && !dup; k++)
                dup = !strcmp(remote[k], o->hosts[i]);
            if (!dup)
                remote[n_remote++] = o->hosts[i];
        }
        tdb_host_answer *answers = tdb_xcalloc(n_remote + 1, sizeof(*answers));
        tdb_host_answer here = {0};
        char **args = remote_args(o), **local_argv = NULL;
        size_t n_local_argv = 0;
        int remote_ok = 1;
        if (local_at != (size_t)-1 && n_remote) {
            /* Read here beside the others, by this very tdebug: the hosts'
             * wait is then the slowest host's, not a sum. */
            char exe[PATH_MAX];
            ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
            exe[len > 0 ? len : 0] = '\0';
            tdb_ptrs_push(&local_argv, &n_local_argv, tdb_xstrdup(len > 0 ? exe : "tdebug"));
            for (size_t k = 0; args[k]; k++)
                tdb_ptrs_push(&local_argv, &n_local_argv, tdb_xstrdup(args[k]));
        }
        if (n_remote) {
            tdb_error err = {0};
            if (tdb_remote_run(&o->remote, remote, n_remote, args, local_argv, o->cancel_fd,
                               answers, &err) < 0) {
                /* Interrupted: the hosts' answers so far are kept. */
                add_error(doc, NULL, -1, 0, err.msg);
                remote_ok = err.code == ECANCELED;
            }
        }
        if (local_at != (size_t)-1 && !n_remote) {
            here.host = tdb_xstrdup(o->hosts[local_at]);
            here.doc = local_doc(o, o->hosts[local_at]);
        } else if (local_at != (size_t)-1) {
            here = answers[n_remote];
            free(here.host);
            here.host = tdb_xstrdup(o->hosts[local_at]);
            memset(&answers[n_remote], 0, sizeof(answers[n_remote]));
        }
        /* In the order the user gave them. */
        for (size_t i = 0, r = 0; i < o->n_hosts && remote_ok; i++) {
            if (i == local_at)
                merge_answer(doc, &here, 1);
            else if (r < n_remote && !strcmp(remote[r], o->hosts[i]))
                merge_answer(doc, &answers[r++], 0);
        }
        for (size_t i = 0; i <= n_remote; i++)
            tdb_host_answer_release(&answers[i]);
        tdb_host_answer_release(&here);
        free(answers);
        free(remote);
        tdb_strv_free(args);
        tdb_strv_free(local_argv);
    }
    finish(doc);
    if (out_failed)
        *out_failed = json_array_size(json_object_get(doc, "errors")) > 0 ||
                      !json_is_object(json_object_get(doc, "job"));
    free(self);
    return doc;
}

/* "ranks 0,1 (pids 1201, 1202)" for a host's ranks in DOC. */
static void host_ranks(tdb_buf *b, const json_t *doc, const char *host)
{
    long *v = NULL;
    size_t n = 0, i;
    json_t *r;
    tdb_buf pids = TDB_BUF_INIT;
    json_array_foreach(json_object_get(doc, "ranks"), i, r) {
        const char *h = json_string_value(json_object_get(r, "host"));
        if (!h || strcmp(h, host) != 0)
            continue;
        v = tdb_xrealloc(v, (n + 1) * sizeof(*v));
        v[n++] = (long)json_integer_value(json_object_get(r, "rank"));
        tdb_buf_addf(&pids, "%s%lld", pids.len ? ", " : "",
                     (long long)json_integer_value(json_object_get(r, "pid")));
    }
    tdb_rank_set_label(b, v, n);
    if (n)
        tdb_buf_addf(b, " (pid%s %s)", n > 1 ? "s" : "", tdb_buf_str(&pids));
    tdb_buf_free(&pids);
    free(v);
}

static long *int_array(const json_t *a, size_t *n)
{
    *n = json_array_size(a);
    long *v = tdb_xmalloc((*n ? *n : 1) * sizeof(*v));
    for (size_t i = 0; i < *n; i++)
        v[i] = (long)json_integer_value(json_array_get(a, i));
    return v;
}

void tdb_jobstacks_render(tdb_buf *b, const json_t *doc, int full)
{
    const json_t *job = json_object_get(doc, "job");
    const json_t *hosts = json_object_get(doc, "hosts");
    size_t n, i;
    json_t *v;
    if (!json_is_object(job))
        return; /* nothing to show: the errors say why */
    long *ranks = NULL;
    size_t nr = 0;
    json_array_foreach(json_object_get(doc, "ranks"), i, v) {
        ranks = tdb_xrealloc(ranks, (nr + 1) * sizeof(*ranks));
        ranks[nr++] = (long)json_integer_value(json_object_get(v, "rank"));
    }
    tdb_buf_addf(b, "Job '%s' (%s): ", json_string_value(json_object_get(job, "id")),
                 json_string_value(json_object_get(job, "id_from")));
    tdb_rank_set_label(b, ranks, nr);
    if (json_is_integer(json_object_get(job, "world_size")))
        tdb_buf_addf(b, " of %lld",
                     (long long)json_integer_value(json_object_get(job, "world_size")));
    n = json_array_size(hosts);
    tdb_buf_addf(b, ", %zu host%s\n", n, n == 1 ? "" : "s");
    json_array_foreach(hosts, i, v) {
        const char *host = json_string_value(json_object_get(v, "host"));
        const char *status = json_string_value(json_object_get(v, "status"));
        tdb_buf_addf(b, "  %s: ", host);
        if (status && !strcmp(status, "ok"))
            host_ranks(b, doc, host);
        else
            tdb_buf_addf(b, "not read (%s)", status);
        tdb_buf_addc(b, '\n');
    }
    long *missing = int_array(json_object_get(doc, "missing_ranks"), &n);
    if (n) {
        tdb_buf_adds(b, "note: ");
        tdb_rank_set_label(b, missing, n);
        tdb_buf_addf(b, " of the job %s not found on %s\n", n == 1 ? "was" : "were",
                     json_array_size(hosts) == 1 ? "this host" : "the hosts read");
    }
    free(missing);
    free(ranks);

    tdb_jobtree *tree = tdb_jobtree_new();
    json_array_foreach(json_object_get(doc, "ranks"), i, v)
        tdb_jobtree_add(tree, (long)json_integer_value(json_object_get(v, "rank")),
                        json_object_get(v, "stacks"));
    tdb_buf_addc(b, '\n');
    tdb_jobtree_render(b, tree);
    tdb_jobtree_free(tree);
    if (!full)
        return;
    json_array_foreach(json_object_get(doc, "ranks"), i, v) {
        const json_t *s = json_object_get(v, "stacks");
        tdb_buf_addf(b, "\nRank %lld on %s, pid %lld",
                     (long long)json_integer_value(json_object_get(v, "rank")),
                     json_string_value(json_object_get(v, "host")),
                     (long long)json_integer_value(json_object_get(v, "pid")));
        if (json_is_integer(json_object_get(v, "ns_pid")))
            tdb_buf_addf(b, " (pid %lld in its PID namespace)",
                         (long long)json_integer_value(json_object_get(v, "ns_pid")));
        if (json_is_string(json_object_get(s, "python")))
            tdb_buf_addf(b, " (Python %s)", json_string_value(json_object_get(s, "python")));
        const char *cmd = json_string_value(json_object_get(v, "command"));
        tdb_buf_addf(b, ": %s\n", cmd ? cmd : "?");
        tdb_process_json_render(b, s, "  ");
    }
}

/* Is NAME a host name tdebug may hand to ssh? */
static int check_host(const char *name, const char *where, tdb_error *err)
{
    if (name[0] == '-') {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, EINVAL,
                           "'%s'%s is not a host name: ssh would take it for an option", name,
                           where);
        return -1;
    }
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '\'' || *p == '"' || *p == '\\') {
            tdb_error_set_exit(err, TDB_EXIT_USAGE, EINVAL,
                               "'%s'%s is not a host name: it holds a blank or a quote", name,
                               where);
            return -1;
        }
    return 0;
}

int tdb_hosts_parse(const char *list, char ***out, size_t *n, tdb_error *err)
{
    char **v = NULL;
    size_t count = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len) {
            char *h = tdb_xstrndup(p, len);
            if (check_host(h, " (in --hosts)", err) < 0) {
                free(h);
                tdb_strv_free(v);
                return -1;
            }
            tdb_ptrs_push(&v, &count, h);
        }
        p += len + (p[len] == ',');
    }
    if (!count) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, EINVAL, "--hosts '%s' names no host", list);
        return -1;
    }
    *out = v;
    *n = count;
    return 0;
}

int tdb_hostfile_read(const char *path, char ***out, size_t *n, tdb_error *err)
{
    tdb_error e = {0};
    char *text = tdb_read_regular_file(path, NULL, NULL, &e);
    char **v = NULL;
    size_t count = 0;
    if (!text) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, e.code, "cannot read the host file '%s': %s", path,
                           e.code ? strerror(e.code) : e.msg);
        return -1;
    }
    for (char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        char *next = line + len + (line[len] == '\n');
        line[len] = '\0';
        line[strcspn(line, "#")] = '\0';
        char *w = line + strspn(line, " \t\r");
        size_t wl = strcspn(w, " \t\r");
        if (wl) {
            char *h = tdb_xstrndup(w, wl);
            char *where = tdb_xasprintf(" (in the host file '%s')", path);
            int bad = check_host(h, where, err) < 0;
            free(where);
            if (bad) {
                free(h);
                tdb_strv_free(v);
                free(text);
                return -1;
            }
            tdb_ptrs_push(&v, &count, h);
        }
        line = next;
    }
    free(text);
    if (!count) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, EINVAL, "the host file '%s' names no host", path);
        return -1;
    }
    *out = v;
    *n = count;
    return 0;
}
