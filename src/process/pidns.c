/* process/pidns.c: thread ids across PID namespaces, from /proc's NSpid
 * lines (see process/pidns.h). */
#include "process/pidns.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting deeper than this is not something a container runtime makes. */
#define MAX_LEVELS 32
/* Bound on what a (possibly hostile) /proc makes us allocate. */
#define MAX_THREADS 65536

struct tdb_pidns_map {
    char *root;
    pid_t pid;   /* ours */
    pid_t inner; /* its own namespace's */
    pid_t *host; /* our tids ... */
    pid_t *ns;   /* ... and theirs, pairwise */
    size_t n;
};

static const char *root_or_proc(const char *root)
{
    return root ? root : "/proc";
}

/* The NSpid numbers of the status file PATH. */
static size_t read_nspid(const char *path, pid_t *out, size_t max)
{
    char *text = tdb_read_file(path, NULL, NULL);
    size_t n = 0;

    if (!text)
        return 0;
    char *line = strstr(text, "\nNSpid:");
    if (line) {
        char *p = line + 7;
        while (n < max) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v <= 0 || v > INT32_MAX)
                break;
            out[n++] = (pid_t)v;
            p = end;
        }
    }
    free(text);
    return n;
}

size_t tdb_pidns_ids(const char *root, pid_t pid, pid_t *out, size_t max)
{
    char *path = tdb_xasprintf("%s/%d/status", root_or_proc(root), (int)pid);
    size_t n = read_nspid(path, out, max);
    free(path);
    return n;
}

pid_t tdb_pidns_inner_pid(const char *root, pid_t pid)
{
    pid_t ids[MAX_LEVELS];
    size_t n = tdb_pidns_ids(root, pid, ids, MAX_LEVELS);
    if (n == 0) {
        /* No NSpid line: an old kernel (one namespace as far as we can
         * tell), or the process is gone. */
        char *path = tdb_xasprintf("%s/%d/status", root_or_proc(root), (int)pid);
        char *text = tdb_read_file(path, NULL, NULL);
        free(path);
        free(text);
        return text ? pid : 0;
    }
    return ids[n - 1];
}

/* (Re)read the task list of M's process: each thread's first and last
 * NSpid numbers. */
static void read_tasks(tdb_pidns_map *m)
{
    char *dir = tdb_xasprintf("%s/%d/task", m->root, (int)m->pid);
    DIR *d = opendir(dir);
    size_t cap = 0;

    m->n = 0;
    if (!d) {
        free(dir);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && m->n < MAX_THREADS) {
        long tid;
        pid_t ids[MAX_LEVELS];
        if (tdb_parse_long(e->d_name, 1, INT32_MAX, &tid) < 0)
            continue;
        char *path = tdb_xasprintf("%s/%s/status", dir, e->d_name);
        size_t n = read_nspid(path, ids, MAX_LEVELS);
        free(path);
        if (n < 2 || ids[0] != (pid_t)tid)
            continue;
        if (m->n >= cap) {
            cap = cap ? 2 * cap : 16;
            m->host = tdb_xrealloc(m->host, cap * sizeof(*m->host));
            m->ns = tdb_xrealloc(m->ns, cap * sizeof(*m->ns));
        }
        m->host[m->n] = (pid_t)tid;
        m->ns[m->n++] = ids[n - 1];
    }
    closedir(d);
    free(dir);
}

tdb_pidns_map *tdb_pidns_map_new(const char *root, pid_t pid)
{
    pid_t ids[MAX_LEVELS];
    size_t n = tdb_pidns_ids(root, pid, ids, MAX_LEVELS);
    if (n < 2)
        return NULL;
    tdb_pidns_map *m = tdb_xcalloc(1, sizeof(*m));
    m->root = tdb_xstrdup(root_or_proc(root));
    m->pid = pid;
    m->inner = ids[n - 1];
    read_tasks(m);
    return m;
}

void tdb_pidns_map_free(tdb_pidns_map *m)
{
    if (!m)
        return;
    free(m->root);
    free(m->host);
    free(m->ns);
    free(m);
}

pid_t tdb_pidns_map_inner_pid(const tdb_pidns_map *m)
{
    return m ? m->inner : 0;
}

static pid_t lookup(const pid_t *from, const pid_t *to, size_t n, pid_t id)
{
    for (size_t i = 0; i < n; i++)
        if (from[i] == id)
            return to[i];
    return 0;
}

pid_t tdb_pidns_host_tid(tdb_pidns_map *m, pid_t ns_tid)
{
    if (!m)
        return ns_tid;
    if (ns_tid <= 0)
        return 0;
    pid_t t = lookup(m->ns, m->host, m->n, ns_tid);
    /* A thread started since the map was made: read the list again (a
     * miss is rare: a thread state whose thread just exited). */
    if (!t) {
        read_tasks(m);
        t = lookup(m->ns, m->host, m->n, ns_tid);
    }
    return t;
}

pid_t tdb_pidns_ns_tid(const tdb_pidns_map *m, pid_t host_tid)
{
    if (!m)
        return host_tid;
    return host_tid > 0 ? lookup(m->host, m->ns, m->n, host_tid) : 0;
}
