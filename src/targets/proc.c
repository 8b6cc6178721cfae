/*
 * targets/proc.c: reading processes from /proc (or a recorded tree of it)
 * into a table; what part each plays in a debugpy session is read from its
 * command line by targets/cmdline.c.
 *
 * Kernel facts this relies on:
 * - /proc/PID/exe, maps and fd/ need ptrace-read access: for another
 *   user's process they fail with EACCES, so those facts become "unknown";
 *   stat, status and cmdline stay readable.
 * - A zombie keeps stat and status but has no exe, no maps, no cmdline.
 * - A process that is not dumpable (prctl(PR_SET_DUMPABLE, 0), or a
 *   set-user-ID exec) has its /proc/PID/ files owned by root instead of
 *   its euid.
 * - TracerPid is the tracing task's id in our pid namespace, 0 when the
 *   tracer is not visible.
 */
#include "targets/proc_internal.h"
#include "native/elf.h"
#include "process/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PF_KTHREAD_FLAG 0x00200000UL /* include/linux/sched.h */

/* --- small helpers */

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int tdb_is_python_name(const char *name)
{
    /* python, python3, python3.11, python3.11d; not python-config,
     * pythonw.exe or python3.11-gdb.py. */
    if (!starts_with(name, "python"))
        return 0;
    const char *p = name + 6;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9'))
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    /* ABI flags of old and debug builds: d, m, u. */
    while (*p == 'd' || *p == 'm' || *p == 'u')
        p++;
    return *p == '\0';
}

static char *proc_path(const char *root, pid_t pid, const char *name)
{
    return tdb_xasprintf("%s/%d/%s", root, (int)pid, name);
}

static char *read_proc_file(const char *root, pid_t pid, const char *name, size_t *out_len)
{
    char *path = proc_path(root, pid, name);
    char *text = tdb_read_file(path, out_len, NULL);
    free(path);
    return text;
}

static char *read_link(const char *path)
{
    size_t cap = 256;
    for (;;) {
        char *buf = tdb_xmalloc(cap);
        ssize_t n = readlink(path, buf, cap);
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if ((size_t)n < cap) {
            buf[n] = '\0';
            return buf;
        }
        free(buf);
        cap *= 2;
    }
}

/* --- users */

typedef struct user_cache {
    uid_t *uids;
    char **names;
    size_t n;
} user_cache;

char *tdb_user_name(uid_t uid)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
        return tdb_xstrdup(res->pw_name);
    return tdb_xasprintf("%u", (unsigned)uid);
}

static const char *user_name(user_cache *c, uid_t uid)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->uids[i] == uid)
            return c->names[i];
    char *name = tdb_user_name(uid);
    c->uids = tdb_xrealloc(c->uids, (c->n + 1) * sizeof(*c->uids));
    c->names = tdb_xrealloc(c->names, (c->n + 1) * sizeof(*c->names));
    c->uids[c->n] = uid;
    c->names[c->n] = name;
    return c->names[c->n++];
}

static void user_cache_release(user_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->names[i]);
    free(c->names);
    free(c->uids);
}

/* --- is this executable a CPython interpreter?  A renamed copy of
 * python3.11 maps no libpython and no extension module before it imports
 * one; its dynamic symbol table still exports _PyRuntime.  Asked once per
 * file (device and inode). */

typedef struct elf_cache {
    dev_t *devs;
    ino_t *inos;
    int *answers;
    size_t n;
} elf_cache;

static int exe_is_cpython(elf_cache *c, const char *root, pid_t pid)
{
    char *path = proc_path(root, pid, "exe");
    struct stat st;
    int answer = TDB_UNKNOWN;

    if (stat(path, &st) < 0) {
        free(path);
        return TDB_UNKNOWN;
    }
    for (size_t i = 0; i < c->n; i++) {
        if (c->devs[i] == st.st_dev && c->inos[i] == st.st_ino) {
            free(path);
            return c->answers[i];
        }
    }
    tdb_elf *e = tdb_elf_open_tables(path, NULL);
    if (e) {
        tdb_error err = {0};
        uint64_t value;
        if (tdb_elf_find_symbol(e, "_PyRuntime", &value, NULL, &err) == 0)
            answer = TDB_YES;
        else if (err.exit_code == TDB_EXIT_FAIL) /* not there, rather than unreadable */
            answer = TDB_NO;
        tdb_elf_free(e);
    }
    free(path);
    c->devs = tdb_xrealloc(c->devs, (c->n + 1) * sizeof(*c->devs));
    c->inos = tdb_xrealloc(c->inos, (c->n + 1) * sizeof(*c->inos));
    c->answers = tdb_xrealloc(c->answers, (c->n + 1) * sizeof(*c->answers));
    c->devs[c->n] = st.st_dev;
    c->inos[c->n] = st.st_ino;
    c->answers[c->n++] = answer;
    return answer;
}

static void elf_cache_release(elf_cache *c)
{
    free(c->devs);
    free(c->inos);
    free(c->answers);
}

/* --- one process */

typedef struct read_ctx {
    const char *root;
    int live;          /* ROOT is the kernel's /proc */
    user_cache users;
    elf_cache elves;
} read_ctx;

static void proc_free(tdb_proc *p)
{
    if (!p)
        return;
    free(p->user);
    free(p->comm);
    free(p->exe);
    if (p->argv)
        for (size_t i = 0; i < p->argc; i++)
            free(p->argv[i]);
    free(p->argv);
    free(p->tracer_comm);
    free(p->endpoint);
    free(p);
}

/* "pid (comm) S ppid pgrp session tty tpgid flags ...". */
static int parse_stat(tdb_proc *p, const char *text)
{
    const char *comm;
    size_t comm_len;
    const char *fields = tdb_stat_fields(text, &comm, &comm_len);
    unsigned long flags = 0;
    int ppid = 0, pgrp, session, tty, tpgid;
    char state;

    if (!fields || sscanf(fields, "%c %d %d %d %d %d %lu", &state, &ppid, &pgrp, &session, &tty,
                          &tpgid, &flags) != 7)
        return -1;
    p->comm = tdb_xstrndup(comm, comm_len);
    p->state = state;
    p->ppid = ppid;
    p->kernel_thread = (flags & PF_KTHREAD_FLAG) != 0;
    return 0;
}

static void parse_status(tdb_proc *p, const char *text)
{
    const char *v;
    unsigned a, b, c;
    int n;
    unsigned long long cap;
    if ((v = tdb_status_value(text, "Tgid")) && sscanf(v, "%d", &n) == 1)
        p->tgid = n;
    if ((v = tdb_status_value(text, "TracerPid")) && sscanf(v, "%d", &n) == 1)
        p->tracer_pid = n;
    if ((v = tdb_status_value(text, "Uid")) && sscanf(v, "%u %u %u", &a, &b, &c) == 3) {
        p->uid = a;
        p->euid = b;
        p->suid = c;
    }
    if ((v = tdb_status_value(text, "Gid")) && sscanf(v, "%u %u %u", &a, &b, &c) == 3) {
        p->gid = a;
        p->egid = b;
        p->sgid = c;
    }
    if ((v = tdb_status_value(text, "CapPrm")) && sscanf(v, "%llx", &cap) == 1)
        p->cap_prm = cap;
}

static void read_cmdline(tdb_proc *p, const char *root)
{
    size_t len = 0;
    char *text = read_proc_file(root, p->pid, "cmdline", &len);
    size_t n = 0;

    if (text)
        for (size_t i = 0; i < len; i++)
            if (text[i] == '\0' || i == len - 1)
                n++;
    p->argv = tdb_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0, start = 0; text && i < len; i++) {
        if (text[i] == '\0' || i == len - 1) {
            size_t end = text[i] == '\0' ? i : i + 1;
            p->argv[p->argc++] = tdb_xstrndup(text + start, end - start);
            start = i + 1;
        }
    }
    free(text);
}

/* What the mappings say: libpython (a program embedding Python), CPython
 * extension modules, torch._C, debugpy's pydevd. */
typedef struct maps_facts {
    int libpython, extension, torch, pydevd;
} maps_facts;

static void scan_maps(const char *text, maps_facts *f)
{
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *path = memchr(line, '/', len);
        if (path) {
            char *file = tdb_xstrndup(path, len - (size_t)(path - line));
            const char *base = tdb_base_name(file);
            /* torch/_C.cpython-311-x86_64-linux-gnu.so: a file named _C.*
             * directly in a directory called torch. */
            size_t dlen = (size_t)(base - file);
            if (starts_with(base, "_C.") && dlen >= 7 && !memcmp(base - 7, "/torch/", 7))
                f->torch = 1;
            if (starts_with(base, "libpython3") || starts_with(base, "libpython2"))
                f->libpython = 1;
            if (strstr(base, ".cpython-") || strstr(file, "/lib-dynload/"))
                f->extension = 1;
            /* debugpy's pydevd loads its Cython speedups and its attach
             * helper when it starts tracing; 'import debugpy' alone does not. */
            if (starts_with(base, "pydevd_") || strstr(file, "/pydevd_attach_to_process/") ||
                strstr(file, "/_pydevd_bundle/") || strstr(file, "/_pydevd_frame_eval/"))
                f->pydevd = 1;
            free(file);
        }
        line = nl ? nl + 1 : NULL;
    }
}

/* Read one process; NULL when it does not exist (any more). */
static tdb_proc *proc_read(read_ctx *ctx, pid_t pid)
{
    tdb_proc *p = tdb_xcalloc(1, sizeof(*p));
    char *stat_text = NULL, *status_text = NULL, *maps = NULL, *exe_path = NULL;
    int interpreter = TDB_UNKNOWN; /* the executable itself is CPython */

    p->pid = pid;
    p->tgid = pid;
    p->python = p->torch = p->pydevd = p->dumpable = TDB_UNKNOWN;
    stat_text = read_proc_file(ctx->root, pid, "stat", NULL);
    status_text = read_proc_file(ctx->root, pid, "status", NULL);
    if (!stat_text || !status_text || parse_stat(p, stat_text) < 0) {
        proc_free(p);
        p = NULL;
        goto cleanup;
    }
    parse_status(p, status_text);
    p->user = tdb_xstrdup(user_name(&ctx->users, p->uid));
    read_cmdline(p, ctx->root);

    if (ctx->live) {
        /* The owner of /proc/PID/status, not of /proc/PID: the directory
         * keeps the owner it had when first looked up, the files follow
         * the dumpable flag.  A recorded tree cannot carry owners. */
        struct stat st;
        char *path = proc_path(ctx->root, pid, "status");
        if (stat(path, &st) == 0)
            p->dumpable = (st.st_uid == 0 && p->euid != 0) ? TDB_NO : TDB_YES;
        free(path);
    }

    if (p->kernel_thread) {
        p->python = p->torch = p->pydevd = TDB_NO;
        goto cleanup;
    }

    exe_path = proc_path(ctx->root, pid, "exe");
    p->exe = read_link(exe_path);
    p->exe_errno = p->exe ? 0 : errno;
    if (p->exe) {
        static const char deleted[] = " (deleted)";
        size_t n = strlen(p->exe), k = sizeof(deleted) - 1;
        if (n > k && !strcmp(p->exe + n - k, deleted))
            p->exe[n - k] = '\0';
        interpreter = tdb_is_python_name(tdb_base_name(p->exe)) ? TDB_YES : TDB_UNKNOWN;
    }

    maps = read_proc_file(ctx->root, pid, "maps", NULL);
    if (maps) {
        maps_facts f = {0};
        scan_maps(maps, &f);
        p->maps_readable = 1;
        p->torch = f.torch;
        p->pydevd = f.pydevd;
        /* gdb embeds libpython for its own scripting: never the program
         * to debug. */
        int debugger = p->exe && (starts_with(tdb_base_name(p->exe), "gdb") ||
                                  starts_with(tdb_base_name(p->exe), "lldb"));
        if (interpreter == TDB_YES || ((f.libpython || f.extension) && !debugger))
            p->python = TDB_YES;
        else if (debugger)
            p->python = TDB_NO;
    }
    if (p->python != TDB_YES && p->exe) {
        interpreter = exe_is_cpython(&ctx->elves, ctx->root, pid);
        if (interpreter == TDB_YES)
            p->python = TDB_YES;
        else if (p->maps_readable || interpreter == TDB_NO)
            p->python = TDB_NO;
    }
    if (p->python == TDB_UNKNOWN) {
        /* exe and maps hidden (another user's process) or gone (zombie):
         * judge by the names, which everyone may read. */
        if ((p->argc && tdb_is_python_name(tdb_base_name(p->argv[0]))) || tdb_is_python_name(p->comm))
            p->python = TDB_YES;
        else if (p->state == 'Z' || p->argc == 0)
            p->python = TDB_NO;
    }

cleanup:
    free(stat_text);
    free(status_text);
    free(maps);
    free(exe_path);
    return p;
}

/* --- the table */

static int cmp_proc(const void *a, const void *b)
{
    const tdb_proc *x = *(tdb_proc *const *)a, *y = *(tdb_proc *const *)b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

static tdb_proc *table_find(const tdb_proc_table *t, pid_t pid)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->procs[mid]->pid == pid)
            return t->procs[mid];
        if (t->procs[mid]->pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void table_insert(tdb_proc_table *t, tdb_proc *p)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 256;
        t->procs = tdb_xrealloc(t->procs, t->cap * sizeof(*t->procs));
    }
    size_t i = t->n;
    while (i > 0 && t->procs[i - 1]->pid > p->pid) {
        t->procs[i] = t->procs[i - 1];
        i--;
    }
    t->procs[i] = p;
    t->n++;
}

static void name_tracer(tdb_proc_table *t, tdb_proc *p)
{
    if (!p->tracer_pid || p->tracer_comm)
        return;
    tdb_proc *tr = table_find(t, p->tracer_pid);
    if (tr) {
        p->tracer_comm = tdb_xstrdup(tr->comm);
        return;
    }
    /* A tracer thread that is not its process's leader is not listed. */
    size_t len;
    char *comm = read_proc_file(t->root, p->tracer_pid, "comm", &len);
    if (comm) {
        while (len && comm[len - 1] == '\n')
            comm[--len] = '\0';
        p->tracer_comm = comm;
    }
}

static void ctx_init(read_ctx *ctx, const char *root)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->root = root;
    ctx->live = !strcmp(root, "/proc");
}

static void ctx_release(read_ctx *ctx)
{
    user_cache_release(&ctx->users);
    elf_cache_release(&ctx->elves);
}

tdb_proc_table *tdb_proc_table_new(const char *root)
{
    tdb_proc_table *t = tdb_xcalloc(1, sizeof(*t));
    t->root = tdb_xstrdup(root ? root : "/proc");
    return t;
}

tdb_proc_table *tdb_proc_table_read(const char *root, tdb_error *err)
{
    if (!root)
        root = "/proc";
    DIR *d = opendir(root);
    if (!d) {
        tdb_error_errno(err, "cannot list processes in '%s'", root);
        return NULL;
    }
    tdb_proc_table *t = tdb_proc_table_new(root);
    read_ctx ctx;
    struct dirent *de;

    ctx_init(&ctx, t->root);
    while ((de = readdir(d))) {
        long pid;
        if (tdb_parse_long(de->d_name, 1, 0x7fffffff, &pid) < 0)
            continue;
        tdb_proc *p = proc_read(&ctx, (pid_t)pid);
        if (!p)
            continue;
        if (t->n == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 256;
            t->procs = tdb_xrealloc(t->procs, t->cap * sizeof(*t->procs));
        }
        t->procs[t->n++] = p;
    }
    closedir(d);
    ctx_release(&ctx);
    qsort(t->procs, t->n, sizeof(*t->procs), cmp_proc);
    for (size_t i = 0; i < t->n; i++) {
        tdb_proc_assign_role(t->procs[i]);
        name_tracer(t, t->procs[i]);
    }
    return t;
}

void tdb_proc_table_free(tdb_proc_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        proc_free(t->procs[i]);
    free(t->procs);
    free(t->root);
    free(t);
}

tdb_proc *tdb_proc_table_lookup(tdb_proc_table *t, pid_t pid, tdb_error *err)
{
    tdb_proc *p = pid > 0 ? table_find(t, pid) : NULL;
    if (p)
        return p;
    if (pid > 0) {
        read_ctx ctx;
        ctx_init(&ctx, t->root);
        p = proc_read(&ctx, pid);
        ctx_release(&ctx);
    }
    if (!p) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, ESRCH, "no process has pid %d", (int)pid);
        return NULL;
    }
    table_insert(t, p);
    tdb_proc_assign_role(p);
    name_tracer(t, p);
    return p;
}

tdb_proc **tdb_proc_children(const tdb_proc_table *t, pid_t pid, size_t *out_n)
{
    tdb_proc **kids = NULL;
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const tdb_proc *p = t->procs[i];
        /* Threads are not listed; only processes whose leader is PID's child. */
        if (p->ppid == pid && p->pid != pid && p->tgid == p->pid) {
            kids = tdb_xrealloc(kids, (n + 1) * sizeof(*kids));
            kids[n++] = t->procs[i];
        }
    }
    *out_n = n;
    return kids;
}

int tdb_proc_descends_from(const tdb_proc_table *t, pid_t pid, pid_t ancestor)
{
    /* Bounded: a table read while processes come and go may hold a cycle
     * of reused pids. */
    for (size_t steps = 0; pid > 0 && steps <= t->n; steps++) {
        if (pid == ancestor)
            return 1;
        const tdb_proc *p = table_find(t, pid);
        if (!p)
            return 0;
        pid = p->ppid;
    }
    return 0;
}

int tdb_python_child(pid_t parent, pid_t child, int settle_ms, char **out_cmdline)
{
    char link[64], exe[PATH_MAX] = "", parent_exe[PATH_MAX] = "";
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)parent);
    ssize_t n = readlink(link, parent_exe, sizeof(parent_exe) - 1);
    parent_exe[n > 0 ? n : 0] = '\0';
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)child);
    char *parent_cmd = tdb_proc_cmdline(parent, SIZE_MAX), *cmd = NULL;
    for (int waited = 0; waited <= settle_ms; waited += 5) {
        free(cmd);
        cmd = NULL;
        n = readlink(link, exe, sizeof(exe) - 1);
        if (n <= 0)
            break; /* gone already */
        exe[n] = '\0';
        cmd = tdb_proc_cmdline(child, SIZE_MAX);
        /* Another program, or the same with other arguments.  Right after
         * an exec the new command line may read empty (NULL) for a moment. */
        if (cmd && (strcmp(exe, parent_exe) != 0 || !parent_cmd || strcmp(cmd, parent_cmd)))
            break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    free(parent_cmd);
    int python = n <= 0 ? -1 : tdb_is_python_name(tdb_base_name(exe)) ? 1 : 0;
    if (python == 1 && out_cmdline)
        *out_cmdline = cmd ? cmd : tdb_xstrdup("");
    else
        free(cmd);
    return python;
}
