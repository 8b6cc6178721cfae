/*
 * targets/proc.c: reading processes from /proc (or a recorded tree of it) and
 * telling what part each plays in a debugpy session.
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
#include "targets/proc.h"
#include "native/elf.h"
#include "process/tcp.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PF_KTHREAD_FLAG 0x00200000UL /* include/linux/sched.h */

/* --- roles */

static const struct {
    const char *name;
    const char *phrase;
} role_info[] = {
    [TDB_ROLE_NONE] = {"", "not a Python process"},
    [TDB_ROLE_PLAIN] = {"plain", "a Python process"},
    [TDB_ROLE_ADAPTER] = {"adapter", "the debugpy adapter"},
    [TDB_ROLE_LAUNCHER] = {"launcher", "the debugpy launcher"},
    [TDB_ROLE_DEBUGGEE] = {"debuggee", "a debugpy debuggee"},
    [TDB_ROLE_SERVER] = {"server", "a debugpy server"},
    [TDB_ROLE_EMBEDDED] = {"embedded", "a program running debugpy"},
    [TDB_ROLE_INJECTOR] = {"injector", "debugpy injecting itself into a process"},
};

const char *tdb_role_name(tdb_role role)
{
    return (unsigned)role < sizeof(role_info) / sizeof(role_info[0]) ? role_info[role].name : "";
}

const char *tdb_role_describe(tdb_role role)
{
    return (unsigned)role < sizeof(role_info) / sizeof(role_info[0]) ? role_info[role].phrase
                                                                     : "a process";
}

int tdb_role_runs_user_code(tdb_role role)
{
    return role == TDB_ROLE_DEBUGGEE || role == TDB_ROLE_SERVER || role == TDB_ROLE_EMBEDDED ||
           role == TDB_ROLE_PLAIN;
}

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

/* PATH with "." and ".." folded away lexically ("a/launcher/../../debugpy"
 * -> "debugpy"'s parent chain), as a new string. */
static char *normalize_path(const char *path)
{
    size_t len = strlen(path);
    char *copy = tdb_xstrdup(path);
    const char **parts = tdb_xcalloc(len + 1, sizeof(*parts));
    size_t n = 0;
    int absolute = path[0] == '/';
    char *save = NULL;

    for (char *tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (!strcmp(tok, "."))
            continue;
        if (!strcmp(tok, "..") && n > 0 && strcmp(parts[n - 1], "..") != 0) {
            n--;
            continue;
        }
        if (!strcmp(tok, "..") && absolute)
            continue;
        parts[n++] = tok;
    }
    tdb_buf b = TDB_BUF_INIT;
    if (absolute)
        tdb_buf_addc(&b, '/');
    for (size_t i = 0; i < n; i++) {
        if (i)
            tdb_buf_addc(&b, '/');
        tdb_buf_adds(&b, parts[i]);
    }
    free(parts);
    free(copy);
    return tdb_buf_detach(&b);
}

/* Nonzero when normalized PATH is SUFFIX or ends in "/SUFFIX", optionally
 * followed by "/__main__.py" (python runs a directory's __main__.py). */
static int path_names(const char *path, const char *suffix)
{
    char *norm = normalize_path(path);
    size_t n = strlen(norm), m = strlen(suffix);
    static const char main_py[] = "/__main__.py";
    size_t k = sizeof(main_py) - 1;
    int hit = 0;

    if (n >= k && !strcmp(norm + n - k, main_py))
        norm[n -= k] = '\0';
    if (n >= m && !strcmp(norm + n - m, suffix) && (n == m || norm[n - m - 1] == '/'))
        hit = 1;
    free(norm);
    return hit;
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

/* "pid (comm) S ppid pgrp session tty tpgid flags ...": comm may hold
 * spaces and parentheses, so the fields start after the last ')'. */
static int parse_stat(tdb_proc *p, const char *text)
{
    const char *open = strchr(text, '(');
    const char *close = strrchr(text, ')');
    unsigned long flags = 0;
    int ppid = 0, pgrp, session, tty, tpgid;
    char state;

    if (!open || !close || close < open)
        return -1;
    if (sscanf(close + 1, " %c %d %d %d %d %d %lu", &state, &ppid, &pgrp, &session, &tty,
               &tpgid, &flags) != 7)
        return -1;
    p->comm = tdb_xstrndup(open + 1, (size_t)(close - open - 1));
    p->state = state;
    p->ppid = ppid;
    p->kernel_thread = (flags & PF_KTHREAD_FLAG) != 0;
    return 0;
}

static void parse_status(tdb_proc *p, const char *text)
{
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        unsigned a, b, c;
        int v;
        unsigned long long cap;
        if (sscanf(line, "Tgid: %d", &v) == 1)
            p->tgid = v;
        else if (sscanf(line, "TracerPid: %d", &v) == 1)
            p->tracer_pid = v;
        else if (sscanf(line, "Uid: %u %u %u", &a, &b, &c) == 3) {
            p->uid = a;
            p->euid = b;
            p->suid = c;
        } else if (sscanf(line, "Gid: %u %u %u", &a, &b, &c) == 3) {
            p->gid = a;
            p->egid = b;
            p->sgid = c;
        } else if (sscanf(line, "CapPrm: %llx", &cap) == 1)
            p->cap_prm = cap;
        line = nl ? nl + 1 : NULL;
    }
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

/* --- roles from the command line */

/* Where CPython's own options end in ARGV: the -m module, the script, or
 * neither (-c, -, interactive).  *OUT_NEXT gets the index of the first
 * argument for the program. */
typedef struct py_target {
    const char *module;
    const char *script;
    const char *code; /* -c CODE */
    size_t start;     /* index of the program: the script, or the -m/-c word */
    size_t next;
} py_target;

static void parse_python_argv(char **argv, size_t argc, py_target *t)
{
    memset(t, 0, sizeof(*t));
    for (size_t i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            if (i + 1 < argc)
                t->script = argv[i + 1];
            t->start = i + 1;
            t->next = i + 2;
            return;
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (strcmp(a, "-") != 0)
                t->script = a;
            t->start = i;
            t->next = i + 1;
            return;
        }
        if (a[1] == '-') { /* --check-hash-based-pycs MODE and friends */
            if (!strcmp(a, "--check-hash-based-pycs"))
                i++;
            continue;
        }
        /* A cluster of one-letter options: "-BX" "frozen_modules=off",
         * "-um" "mod", "-cprint(1)". */
        for (const char *c = a + 1; *c; c++) {
            if (*c == 'm' || *c == 'c') {
                t->start = i;
                const char *val = c[1] ? c + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (*c == 'm')
                    t->module = val;
                else
                    t->code = val;
                t->next = i + 1;
                return;
            }
            if (*c == 'X' || *c == 'W') {
                if (!c[1])
                    i++;
                break;
            }
        }
    }
    t->start = t->next = argc;
}

/* debugpy's own command line (debugpy/server/cli.py): switches from index
 * I up to the target (a file, -m, -c or --pid), whose index it returns
 * (argc when there is none).  With P, sets P's role and endpoint. */
static size_t debugpy_cli_target(char **argv, size_t argc, size_t i, tdb_proc *p)
{
    if (p)
        p->role = TDB_ROLE_PLAIN;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--listen") || !strcmp(a, "--connect")) {
            if (p) {
                p->role = a[2] == 'l' ? TDB_ROLE_SERVER : TDB_ROLE_DEBUGGEE;
                free(p->endpoint);
                p->endpoint = val ? tdb_xstrdup(val) : NULL;
            }
            i++;
        } else if (!strcmp(a, "--pid")) {
            long pid;
            if (p && val && tdb_parse_long(val, 1, 0x7fffffff, &pid) == 0) {
                p->role = TDB_ROLE_INJECTOR;
                p->role_pid = (pid_t)pid;
            }
            return i;
        } else if (!strcmp(a, "--log-to") || !strcmp(a, "--adapter-access-token") ||
                   starts_with(a, "--configure-")) {
            i++;
        } else if (a[0] != '-' || !strcmp(a, "-m") || !strcmp(a, "-c")) {
            return i; /* the target: what follows is the program's */
        }
    }
    return argc;
}

/* What the Python program is: debugpy's adapter, its launcher, its CLI
 * (--listen/--connect/--pid), or the user's own. */
typedef enum py_program { PROGRAM_USER, PROGRAM_ADAPTER, PROGRAM_LAUNCHER, PROGRAM_DEBUGPY_CLI } py_program;

static py_program python_program(const py_target *t)
{
    const char *m = t->module, *s = t->script;
    if ((m && !strcmp(m, "debugpy.adapter")) || (s && path_names(s, "debugpy/adapter")))
        return PROGRAM_ADAPTER;
    if ((m && !strcmp(m, "debugpy.launcher")) || (s && path_names(s, "debugpy/launcher")))
        return PROGRAM_LAUNCHER;
    if ((m && (!strcmp(m, "debugpy") || !strcmp(m, "debugpy.__main__"))) ||
        (s && path_names(s, "debugpy")))
        return PROGRAM_DEBUGPY_CLI;
    return PROGRAM_USER;
}

/* The value of option NAME ("--port") in ARGV from index I on, written as
 * "--port N" or "--port=N" (argparse takes both); the last one wins. */
static const char *option_value(char **argv, size_t argc, size_t i, const char *name)
{
    const char *val = NULL;
    size_t n = strlen(name);
    for (; i < argc; i++) {
        if (!strcmp(argv[i], name) && i + 1 < argc)
            val = argv[++i];
        else if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
            val = argv[i] + n + 1;
    }
    return val;
}

/* The address an adapter takes DAP clients on: its --host (default
 * 127.0.0.1, as debugpy/adapter/__main__.py has it) and --port.  Without
 * --port it speaks DAP on stdio (VS Code's own adapter).  Returns 0 with
 * *OUT_HOST (borrowed) and *OUT_PORT (0: the kernel picked one), -1 when
 * there is none. */
static int adapter_address(const tdb_proc *p, const char **out_host, long *out_port)
{
    const char *port = option_value(p->argv, p->argc, 1, "--port");
    const char *host = option_value(p->argv, p->argc, 1, "--host");
    long n;
    if (!port || tdb_parse_long(port, 0, 65535, &n) < 0)
        return -1;
    *out_host = host && *host ? host : "127.0.0.1";
    *out_port = n;
    return 0;
}

static void assign_role(tdb_proc *p)
{
    py_target t;

    p->role = TDB_ROLE_NONE;
    if (p->python != TDB_YES)
        return;
    p->role = TDB_ROLE_PLAIN;
    if (p->argc >= 1) {
        parse_python_argv(p->argv, p->argc, &t);
        py_program prog = python_program(&t);
        if (prog == PROGRAM_ADAPTER) {
            const char *host;
            long port;
            p->role = TDB_ROLE_ADAPTER;
            if (adapter_address(p, &host, &port) == 0)
                p->endpoint = tdb_xasprintf(strchr(host, ':') ? "[%s]:%ld" : "%s:%ld", host, port);
        } else if (prog == PROGRAM_LAUNCHER)
            p->role = TDB_ROLE_LAUNCHER;
        else if (prog == PROGRAM_DEBUGPY_CLI)
            debugpy_cli_target(p->argv, p->argc, t.next, p);
        else if (t.code && strstr(t.code, "import pydevd") && strstr(t.code, "pydevd.settrace("))
            /* A subprocess of a debuggee: debugpy rewrites its command line
             * to "-c 'import sys; sys.path.insert(0, .../pydevd); import
             * pydevd; ...; pydevd.settrace(host=..., port=...)'" so it
             * connects to the same adapter. */
            p->role = TDB_ROLE_DEBUGGEE;
    }
    if (p->role == TDB_ROLE_PLAIN && p->pydevd == TDB_YES)
        p->role = TDB_ROLE_EMBEDDED;
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
        assign_role(t->procs[i]);
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
    assign_role(p);
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
        if (a->role != TDB_ROLE_ADAPTER || adapter_address(a, &a_host, &a_port) < 0)
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

/* --- display */

static int is_token_option(const char *a)
{
    return !strcmp(a, "--adapter-access-token") || !strcmp(a, "--server-access-token") ||
           !strcmp(a, "--access-token") || !strcmp(a, "--client-access-token");
}

/* A line of a table must stay one line: 'python -c' code has newlines. */
static void add_printable(tdb_buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n')
            tdb_buf_adds(b, "\\n");
        else if (c == '\t')
            tdb_buf_adds(b, "\\t");
        else if (c < 0x20 || c == 0x7f)
            tdb_buf_addf(b, "\\x%02x", c);
        else
            tdb_buf_addc(b, (char)c);
    }
}

/* How a word of a command line may be shortened to fit a table. */
typedef enum word_part {
    WORD_INTERPRETER,  /* argv[0]: its directory may go (".../python3.11") */
    WORD_PY_OPTION,    /* the interpreter's options: may become "..." */
    WORD_PROGRAM,      /* the script, -m MODULE, -c: kept (a path keeps its name) */
    WORD_CODE,         /* -c's CODE: may be cut */
    WORD_TOOL_OPTION,  /* debugpy's options before the user's program: may become "..." */
    WORD_USER_PROGRAM, /* the program debugpy runs: kept, as WORD_PROGRAM */
    WORD_ARGUMENT      /* the program's arguments: dropped from the end */
} word_part;

/* One display word of P's argv[I]: debugpy's installation path as
 * '.../debugpy', an access token as '...', control characters escaped. */
static char *display_word(const tdb_proc *p, size_t i)
{
    const char *a = p->argv[i];
    tdb_buf b = TDB_BUF_INIT;
    if (i > 0 && is_token_option(p->argv[i - 1]))
        return tdb_xstrdup("...");
    /* /usr/lib/python3/dist-packages/debugpy/launcher/../../debugpy
     * -> .../debugpy */
    const char *at = a[0] == '/' ? strstr(a, "/debugpy") : NULL;
    if (at && (at[8] == '\0' || at[8] == '/')) {
        char *norm = normalize_path(a);
        const char *n = strstr(norm, "/debugpy");
        if (n && (n[8] == '\0' || n[8] == '/')) {
            tdb_buf_addf(&b, "...%s", n);
            free(norm);
            return tdb_buf_detach(&b);
        }
        free(norm);
    }
    add_printable(&b, a);
    return tdb_buf_detach(&b);
}

/* Which part of the command line each word of P is. */
static void classify_words(const tdb_proc *p, word_part *part)
{
    py_target t;
    parse_python_argv(p->argv, p->argc, &t);
    size_t user = t.next, user_end = t.next;
    py_program prog = python_program(&t);
    if (prog == PROGRAM_DEBUGPY_CLI) {
        user = debugpy_cli_target(p->argv, p->argc, t.next, NULL);
        user_end = user < p->argc && (!strcmp(p->argv[user], "-m") ||
                                      !strcmp(p->argv[user], "-c"))
                       ? user + 2 : user + 1;
    } else if (prog == PROGRAM_LAUNCHER) {
        for (user = t.next; user < p->argc && strcmp(p->argv[user], "--"); user++)
            ;
        user_end = ++user + 1;
    }
    for (size_t i = 0; i < p->argc; i++) {
        if (i == 0)
            part[i] = WORD_INTERPRETER;
        else if (i < t.start)
            part[i] = WORD_PY_OPTION;
        else if (i < t.next)
            part[i] = t.code && i == t.next - 1 && strcmp(p->argv[i], "-c") ? WORD_CODE
                                                                            : WORD_PROGRAM;
        else if (i < user)
            part[i] = WORD_TOOL_OPTION;
        else if (i < user_end)
            part[i] = WORD_USER_PROGRAM;
        else
            part[i] = WORD_ARGUMENT;
    }
}

/* ".../NAME" for a path with a directory; WORD itself otherwise. */
static void add_without_dir(tdb_buf *b, const char *word)
{
    const char *slash = strrchr(word, '/');
    if (slash && slash[1] && strncmp(word, ".../", 4))
        tdb_buf_addf(b, ".../%s", slash + 1);
    else
        tdb_buf_adds(b, word);
}

/* The words shown shortened to LEVEL (see tdb_proc_short_command), with
 * the first KEEP_ARGS arguments.  CODE_MAX > 0 cuts -c's CODE. */
static char *render_words(char **word, const word_part *part, size_t n, int level,
                          size_t keep_args, size_t code_max)
{
    tdb_buf b = TDB_BUF_INIT;
    size_t args = 0;
    for (size_t i = 0; i < n; i++) {
        word_part w = part[i];
        int collapse = (w == WORD_PY_OPTION && level >= 2) || (w == WORD_TOOL_OPTION && level >= 3);
        if (collapse && i > 0 && part[i - 1] == w)
            continue; /* one "..." for the run */
        if (w == WORD_ARGUMENT && args++ >= keep_args) {
            tdb_buf_adds(&b, " ...");
            break;
        }
        if (b.len)
            tdb_buf_addc(&b, ' ');
        if (collapse)
            tdb_buf_adds(&b, "...");
        else if ((w == WORD_INTERPRETER && level >= 1) ||
                 ((w == WORD_PROGRAM || w == WORD_USER_PROGRAM) && level >= 5))
            add_without_dir(&b, word[i]);
        else if (w == WORD_CODE && code_max && strlen(word[i]) > code_max + 3)
            tdb_buf_addf(&b, "%.*s...", (int)code_max, word[i]);
        else
            tdb_buf_adds(&b, word[i]);
    }
    return tdb_buf_detach(&b);
}

char *tdb_proc_short_command(const tdb_proc *p, size_t max_len)
{
    if (p->argc == 0)
        return tdb_xasprintf("[%s]", p->comm ? p->comm : "?");
    char **word = tdb_xcalloc(p->argc, sizeof(*word));
    word_part *part = tdb_xcalloc(p->argc, sizeof(*part));
    size_t n_args = 0;
    for (size_t i = 0; i < p->argc; i++)
        word[i] = display_word(p, i);
    classify_words(p, part);
    for (size_t i = 0; i < p->argc; i++)
        n_args += part[i] == WORD_ARGUMENT;

    /* Shorten step by step until it fits: the interpreter's directory, its
     * options, debugpy's options, the program's arguments from the end,
     * the program's directory, -c's code.  The program's name stays: past
     * that the line is longer than MAX_LEN. */
    char *s = render_words(word, part, p->argc, 0, n_args, 0);
    for (int level = 1; max_len && strlen(s) > max_len && level <= 6; level++) {
        size_t keep = n_args;
        while (level >= 4 && keep > 0) { /* as many arguments as fit */
            char *t = render_words(word, part, p->argc, level, keep, 0);
            int fits = strlen(t) <= max_len;
            free(t);
            if (fits)
                break;
            keep--;
        }
        free(s);
        s = render_words(word, part, p->argc, level, keep, 0);
        size_t over = strlen(s) > max_len ? strlen(s) - max_len : 0;
        for (size_t i = 0; level == 6 && over && i < p->argc; i++) {
            size_t len = strlen(word[i]);
            size_t cut = len > over + 3 + 8 ? len - over - 3 : 8; /* 8 chars at least */
            if (part[i] != WORD_CODE || len <= cut + 3)
                continue;
            while (cut > 0 && ((unsigned char)word[i][cut] & 0xc0) == 0x80)
                cut--; /* not inside a UTF-8 sequence */
            free(s);
            s = render_words(word, part, p->argc, level, keep, cut);
        }
    }
    for (size_t i = 0; i < p->argc; i++)
        free(word[i]);
    free(word);
    free(part);
    return s;
}
