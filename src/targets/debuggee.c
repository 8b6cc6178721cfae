/*
 * targets/debuggee.c: from a debugpy process to the program it debugs:
 * the peers of an adapter's TCP connections, the debugpy server behind a
 * program, and which process a pid given for attaching really means
 * (contract in targets/proc.h).
 */
#include "targets/proc_internal.h"
#include "process/tcp.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- TCP connections: who is at the other end of an adapter's sockets */

/* Is A's local end B's remote end and the other way round: the two ends
 * of one loopback connection? */
static int other_end(const tdb_tcp_socket *a, const tdb_tcp_socket *b)
{
    size_t len = a->family == AF_INET ? 4 : 16;
    return a->family == b->family && a->local_port == b->remote_port &&
           a->remote_port == b->local_port && !memcmp(a->local, b->remote, len) &&
           !memcmp(a->remote, b->local, len);
}

static void add_pid(pid_t **v, size_t *n, pid_t pid)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i] == pid)
            return;
    *v = tdb_xrealloc(*v, (*n + 1) * sizeof(**v));
    (*v)[(*n)++] = pid;
}

ssize_t tdb_proc_tcp_peers(tdb_proc_table *t, pid_t pid, pid_t **out, tdb_error *err)
{
    unsigned long *mine = NULL, *peer_inodes = NULL;
    tdb_tcp_socket *tcp = NULL;
    pid_t *peers = NULL;
    size_t ntcp = 0, nmine = 0, npeer_inodes = 0, npeers = 0;
    ssize_t result = -1;

    if (tdb_tcp_inodes_of(t->root, pid, &mine, &nmine, NULL) < 0) {
        tdb_error_errno(err, "cannot read the sockets of pid %d", (int)pid);
        goto cleanup;
    }
    /* PID's own network namespace: a connection over loopback appears
     * twice, once from each end.  A table that cannot be read links
     * nobody. */
    if (tdb_tcp_sockets(t->root, pid, &tcp, &ntcp, NULL) < 0)
        ntcp = 0;
    for (size_t i = 0; i < ntcp; i++) {
        if (tcp[i].state != TDB_TCP_ESTABLISHED || !tdb_tcp_has_inode(mine, nmine, tcp[i].inode))
            continue;
        for (size_t j = 0; j < ntcp; j++) {
            if (j != i && tcp[j].inode && other_end(&tcp[j], &tcp[i]) &&
                !tdb_tcp_has_inode(mine, nmine, tcp[j].inode)) {
                peer_inodes = tdb_xrealloc(peer_inodes, (npeer_inodes + 1) * sizeof(*peer_inodes));
                peer_inodes[npeer_inodes++] = tcp[j].inode;
            }
        }
    }
    /* Who holds those inodes: only user processes can; skip what cannot
     * be read. */
    for (size_t i = 0; npeer_inodes && i < t->n; i++) {
        const tdb_proc *p = t->procs[i];
        unsigned long *theirs = NULL;
        size_t n = 0;
        if (p->pid == pid || p->kernel_thread || p->state == 'Z' ||
            tdb_tcp_inodes_of(t->root, p->pid, &theirs, &n, NULL) < 0)
            continue;
        for (size_t k = 0; k < n; k++)
            if (tdb_tcp_has_inode(peer_inodes, npeer_inodes, theirs[k]))
                add_pid(&peers, &npeers, p->pid);
        free(theirs);
    }
    *out = peers;
    peers = NULL;
    result = (ssize_t)npeers;
cleanup:
    free(peers);
    free(mine);
    free(peer_inodes);
    free(tcp);
    return result;
}

/* --- the debugpy server behind a program */

/* The port PID's adapter A (asked for port 0) got from the kernel: the
 * one of A's listening sockets that PID is not connected to (the other is
 * where pydevd in PID connected).  0 when it cannot be told. */
static int adapter_bound_port(const tdb_proc_table *t, pid_t adapter, pid_t pid)
{
    tdb_tcp_socket *tcp = NULL;
    unsigned long *theirs = NULL, *mine = NULL;
    size_t ntcp = 0, ntheirs = 0, nmine = 0;
    int port = 0;

    if (tdb_tcp_sockets(t->root, adapter, &tcp, &ntcp, NULL) < 0 ||
        tdb_tcp_inodes_of(t->root, adapter, &theirs, &ntheirs, NULL) < 0 ||
        tdb_tcp_inodes_of(t->root, pid, &mine, &nmine, NULL) < 0)
        goto cleanup;
    for (size_t i = 0; i < ntcp && !port; i++) {
        if (tcp[i].state != TDB_TCP_LISTEN || !tdb_tcp_has_inode(theirs, ntheirs, tcp[i].inode))
            continue;
        int pydevd = 0;
        for (size_t k = 0; k < ntcp && !pydevd; k++)
            pydevd = tcp[k].state == TDB_TCP_ESTABLISHED &&
                     tdb_tcp_has_inode(mine, nmine, tcp[k].inode) &&
                     tcp[k].remote_port == tcp[i].local_port;
        if (!pydevd)
            port = tcp[i].local_port;
    }
cleanup:
    free(tcp);
    free(theirs);
    free(mine);
    return port;
}

int tdb_proc_debugpy_server(tdb_proc_table *t, pid_t pid, char **out_host, int *out_port)
{
    tdb_proc *p = tdb_proc_table_lookup(t, pid, NULL);
    char *host = NULL;
    int port = 0;

    if (!p || p->role == TDB_ROLE_DEBUGGEE)
        return 0;
    if (p->role == TDB_ROLE_SERVER && p->endpoint &&
        tdb_tcp_parse_endpoint(p->endpoint, &host, &port, NULL) == 0) {
        *out_host = host;
        *out_port = port;
        return 1;
    }
    /* debugpy.listen() (and '--listen' with port 0) leaves the address on
     * the command line of the adapter it spawns ('.../debugpy/adapter
     * --for-server P --host H --port P2'), double-forked away from the
     * program: the program's connection to it is the link. */
    for (size_t i = 0; i < t->n; i++) {
        const tdb_proc *a = t->procs[i];
        const char *a_host;
        long a_port;
        pid_t *peers = NULL;
        int linked = 0;
        if (a->role != TDB_ROLE_ADAPTER || tdb_proc_adapter_address(a, &a_host, &a_port) < 0)
            continue;
        ssize_t n = tdb_proc_tcp_peers(t, a->pid, &peers, NULL);
        for (ssize_t k = 0; k < n; k++)
            linked |= peers[k] == pid;
        free(peers);
        if (!linked)
            continue;
        if (a_port == 0)
            a_port = adapter_bound_port(t, a->pid, pid);
        if (a_port == 0)
            continue;
        *out_host = tdb_xstrdup(a_host);
        *out_port = (int)a_port;
        return 1;
    }
    return 0;
}

/* --- resolution */

static void resolution_set(tdb_resolution *out, pid_t pid, char *note)
{
    memset(out, 0, sizeof(*out));
    out->pid = pid;
    out->note = note;
}

static char *pid_list(const pid_t *v, size_t n)
{
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < n; i++)
        tdb_buf_addf(&b, "%s%d", i ? ", " : "", (int)v[i]);
    return tdb_buf_detach(&b);
}

/* The processes running user code under a launcher: its children that do,
 * looking one level further through a wrapper (a shell, sudo). */
static void launcher_programs(const tdb_proc_table *t, pid_t launcher, pid_t **v, size_t *n)
{
    size_t nk;
    tdb_proc **kids = tdb_proc_children(t, launcher, &nk);
    for (size_t i = 0; i < nk; i++) {
        if (tdb_role_runs_user_code(kids[i]->role)) {
            add_pid(v, n, kids[i]->pid);
        } else if (kids[i]->role == TDB_ROLE_NONE) {
            size_t ng;
            tdb_proc **grand = tdb_proc_children(t, kids[i]->pid, &ng);
            for (size_t j = 0; j < ng; j++)
                if (tdb_role_runs_user_code(grand[j]->role))
                    add_pid(v, n, grand[j]->pid);
            free(grand);
        }
    }
    free(kids);
}

static int ambiguous(tdb_resolution *out, const tdb_proc *p, pid_t *v, size_t n, const char *what,
                     tdb_error *err)
{
    char *list = pid_list(v, n);
    tdb_error_set_exit(err, TDB_EXIT_FAIL, 0,
                       "cannot choose the process behind pid %d (%s): %zu %s: %s "
                       "(attach to one of them by pid; 'tdebug ps' shows which is which)",
                       (int)p->pid, tdb_role_describe(p->role), n, what, list);
    free(list);
    memset(out, 0, sizeof(*out));
    out->candidates = v;
    out->ncandidates = n;
    return 1;
}

static int resolve_launcher(tdb_proc_table *t, const tdb_proc *p, tdb_resolution *out,
                            tdb_error *err)
{
    pid_t *v = NULL;
    size_t n = 0;

    launcher_programs(t, p->pid, &v, &n);
    if (n == 1) {
        resolution_set(out, v[0],
                       tdb_xasprintf("pid %d is the debugpy launcher; attaching to its child %d",
                                     (int)p->pid, (int)v[0]));
        free(v);
        return 0;
    }
    if (n > 1)
        return ambiguous(out, p, v, n, "Python children", err);
    tdb_error_set_exit(err, TDB_EXIT_FAIL, 0,
                       "cannot find the program behind pid %d (the debugpy launcher): it has no "
                       "Python child (the program has not started yet, or has exited; "
                       "'tdebug ps' lists Python processes)",
                       (int)p->pid);
    return -1;
}

static int resolve_adapter(tdb_proc_table *t, const tdb_proc *p, tdb_resolution *out,
                           tdb_error *err)
{
    pid_t *v = NULL, *peers = NULL;
    size_t n = 0, nk = 0;
    tdb_error sock_err = {0};
    int result = -1;

    /* VS Code's layout: the adapter spawned the launcher ("console":
     * "internalConsole"), whose child runs the program. */
    tdb_proc **kids = tdb_proc_children(t, p->pid, &nk);
    for (size_t i = 0; i < nk; i++)
        if (kids[i]->role == TDB_ROLE_LAUNCHER)
            launcher_programs(t, kids[i]->pid, &v, &n);
    free(kids);
    /* The program (and a launcher started in a terminal) connects to the
     * adapter over TCP: a '--listen' server's adapter is double-forked
     * (parent 1) and that connection is the only link to it. */
    ssize_t np = tdb_proc_tcp_peers(t, p->pid, &peers, &sock_err);
    for (ssize_t i = 0; i < np; i++) {
        tdb_proc *q = tdb_proc_table_lookup(t, peers[i], NULL);
        if (!q)
            continue;
        if (tdb_role_runs_user_code(q->role) && q->role != TDB_ROLE_PLAIN)
            add_pid(&v, &n, q->pid);
        else if (q->role == TDB_ROLE_LAUNCHER)
            launcher_programs(t, q->pid, &v, &n);
    }
    if (n == 1) {
        resolution_set(out, v[0],
                       tdb_xasprintf("pid %d is the debugpy adapter; attaching to %d, the "
                                     "program it debugs",
                                     (int)p->pid, (int)v[0]));
        result = 0;
    } else if (n > 1) {
        result = ambiguous(out, p, v, n, "programs are connected to it", err);
        v = NULL;
    } else if (np < 0) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, sock_err.code,
                           "cannot find the program behind pid %d (the debugpy adapter): %s "
                           "(run tdebug as the adapter's user '%s', or attach to the program's "
                           "own pid: 'tdebug ps' lists it)",
                           (int)p->pid, sock_err.msg, p->user);
    } else {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, 0,
                           "cannot find the program behind pid %d (the debugpy adapter): no "
                           "program is connected to it (the debug session has not started or "
                           "has ended; 'tdebug ps' lists Python processes)",
                           (int)p->pid);
    }
    free(v);
    free(peers);
    return result;
}

int tdb_proc_resolve_debuggee(tdb_proc_table *t, pid_t pid, tdb_resolution *out, tdb_error *err)
{
    tdb_error local = {0};
    tdb_proc *p = tdb_proc_table_lookup(t, pid, &local);

    if (!p) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, ESRCH,
                           "cannot attach to pid %d: no such process ('tdebug ps' lists the "
                           "Python processes you can attach to)",
                           (int)pid);
        return -1;
    }
    if (p->tgid != p->pid && p->tgid > 0) {
        resolution_set(out, p->tgid,
                       tdb_xasprintf("pid %d is a thread of process %d; attaching to %d",
                                     (int)p->pid, (int)p->tgid, (int)p->tgid));
        return 0;
    }
    switch (p->role) {
    case TDB_ROLE_LAUNCHER:
        return resolve_launcher(t, p, out, err);
    case TDB_ROLE_ADAPTER:
        return resolve_adapter(t, p, out, err);
    case TDB_ROLE_INJECTOR:
        resolution_set(out, p->role_pid,
                       tdb_xasprintf("pid %d is debugpy injecting itself into pid %d; "
                                     "attaching to %d",
                                     (int)p->pid, (int)p->role_pid, (int)p->role_pid));
        return 0;
    default:
        resolution_set(out, p->pid, NULL);
        return 0;
    }
}

void tdb_resolution_release(tdb_resolution *r)
{
    if (!r)
        return;
    free(r->note);
    free(r->candidates);
    memset(r, 0, sizeof(*r));
}
