/*
 * preload.c: libtdebug-preload.so, the library the dynamic loader brings in
 * from the environment to pause a process the moment torch._C is loaded,
 * before its init runs, and hand it to a debugger.  The contract (symbols,
 * states, announcement format, socket path, release commands) is in
 * tdebug_preload.h.
 *
 * == Why rtld-audit (LD_AUDIT) and not an LD_PRELOAD dlopen wrapper
 *
 * glibc resolves a bare-name dlopen("libfoo.so") through the RUNPATH (and
 * $ORIGIN) of the object that called it, found from the return address.
 * Behind a dlopen wrapper the caller is the wrapper, so a library that
 * dlopens a sibling through its own RUNPATH (CUDA, plugin loaders) fails:
 * measured here with a three-file program (tests/e2e/test_preload.py keeps
 * that program and shows it works with this library).  The audit interface
 * changes nothing in how the loader searches, binds or runs constructors:
 * la_objopen() sees each object right after it is mapped (before relocation
 * and constructors), and la_activity(LA_ACT_CONSISTENT) comes once the
 * whole load (the object and all its dependencies) is mapped and the
 * debugger's r_debug list is consistent, still before relocation, before
 * any constructor and before Python calls PyInit__C.  That is where we
 * pause.  la_objopen returns 0, so the loader audits no symbol bindings and
 * PLT calls stay as fast as without us.
 *
 * == Can gdb see us?  (measured: gdb 13.1, glibc 2.36, Debian 12)
 *
 * An audit library lives in its own link namespace (with its own copy of
 * libc).  gdb 13 follows glibc's r_debug_extended chain: after 'gdb -p PID',
 * 'info sharedlibrary' lists libtdebug-preload.so and the second libc, and
 * 'print tdebug_preload_state' / 'set var tdebug_preload_release = 1' work
 * with the library's debug info, also after 'set auto-solib-add off' plus
 * 'sharedlibrary libtdebug-preload'.  So the release is a plain variable
 * here, no LD_PRELOAD twin needed; the announcement also carries the
 * variable's address, which a debugger can write with no symbols at all.
 *
 * == Why poll a variable and not SIGSTOP
 *
 * A process that stops itself with SIGSTOP makes gdb's first 'continue'
 * report the SIGSTOP, and after 'detach' it sits in a job-control stop until
 * someone sends SIGCONT.  Polling every 10 ms has neither problem, costs
 * nothing measurable, and lets the timeout run: a forgotten variable delays a
 * job by TDEBUG_TIMEOUT at most, never forever.
 *
 * == Rules kept
 *
 * Never abort or exit the host; print nothing unless a TDEBUG_* variable
 * asks or an object matched (warnings start "tdebug-preload:"); export only
 * la_* and the handshake variables (-fvisibility=hidden, preload.map).
 * Threads: the loader calls la_objopen and la_activity with its load lock
 * held, so the pending-match state below is only touched by one thread at a
 * time; the handshake variables are read with atomic loads.  While one
 * thread waits, another that calls dlopen waits for the lock too, which is
 * what pausing the load means; nothing else in the process is held.  fork: a child
 * inherits the settings and keeps watching (a forked DataLoader worker maps
 * nothing new that matches); multiprocessing workers started by spawn or
 * forkserver, which import torch again, are skipped unless
 * TDEBUG_WORKERS=watch.  exec: the environment carries LD_AUDIT over and the
 * new program starts fresh.  Every fd we open is close-on-exec and closed
 * before we return; writes never raise SIGPIPE in the host.
 */
#include "preload_announce.h"
#include "preload_config.h"
#include "preload_elf.h"
#include "tdebug_preload.h"
#include "untraced_trap.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* The handshake (tdebug_preload.h).  Debug info makes 'set var' work. */
EXPORT volatile int tdebug_preload_release = TDEBUG_RELEASE_NONE;
EXPORT volatile int tdebug_preload_state = TDEBUG_STATE_IDLE;
EXPORT char tdebug_preload_module[256];
EXPORT char tdebug_preload_path[PATH_MAX];

static struct tdp_config cfg;
static int disarmed; /* a debugger wrote TDEBUG_RELEASE_DISARM */

/* The first object matched since the last consistent point. */
static struct {
    int active;
    const char *symbol; /* points into cfg, or NULL for a file match */
    char path[PATH_MAX];
} pending;

/* ---- output: never stdio, never SIGPIPE ---- */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[PATH_MAX + 512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line))
        n = sizeof(line) - 1, line[n - 1] = '\n';
    tdp_write_all(2, line, (size_t)n);
}

static void warn_line(const char *name, const char *value, const char *why, const char *dflt)
{
    char line[512];

    tdp_format_warning(line, sizeof(line), name, value, why, dflt);
    tdp_write_all(2, line, strlen(line));
}

/* Copy SRC into DST of SIZE bytes, cut short if need be. */
static void copy(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- small facts about this process ---- */

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A multiprocessing child started by spawn or forkserver: it imports
 * torch again, and pausing each of them is rarely what anyone wants. */
static int multiprocessing_worker(void)
{
    char cmdline[8192];
    ssize_t n = tdp_read_small("/proc/self/cmdline", cmdline, sizeof(cmdline));

    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(cmdline + i) + 1)
        if (!strcmp(cmdline + i, "--multiprocessing-fork") ||
            !strncmp(cmdline + i, "from multiprocessing.", 21))
            return 1;
    return 0;
}

/*
 * The Python module an extension's PATH implements: the file name up to
 * its first dot, prefixed by each enclosing directory that is a package
 * (has __init__.py).  ".../torch/_C.cpython-311-x86_64-linux-gnu.so" gives
 * "torch._C".  A file name that is no identifier is kept whole.
 */
static void module_name(const char *path, char *out, size_t size)
{
    char dir[PATH_MAX], probe[PATH_MAX + 16];
    const char *base = strrchr(path, '/');
    size_t len;

    base = base ? base + 1 : path;
    len = strcspn(base, ".");
    int identifier = len > 0 && !(base[0] >= '0' && base[0] <= '9');
    for (size_t i = 0; i < len && identifier; i++)
        identifier = base[i] == '_' || (base[i] >= 'a' && base[i] <= 'z') ||
                     (base[i] >= 'A' && base[i] <= 'Z') || (base[i] >= '0' && base[i] <= '9');
    if (!identifier) {
        copy(out, size, base);
        return;
    }
    snprintf(out, size, "%.*s", (int)len, base);
    if (base == path || (size_t)(base - path) > sizeof(dir))
        return;
    memcpy(dir, path, (size_t)(base - path) - 1);
    dir[base - path - 1] = '\0';
    for (int depth = 0; depth < 32 && dir[0]; depth++) {
        char *slash = strrchr(dir, '/');
        char joined[512];

        snprintf(probe, sizeof(probe), "%s/__init__.py", dir);
        if (access(probe, F_OK) != 0 || !slash)
            break;
        if (snprintf(joined, sizeof(joined), "%s.%s", slash + 1, out) >= (int)sizeof(joined) ||
            strlen(joined) >= size)
            break;
        strcpy(out, joined);
        *slash = '\0';
    }
}

/* ---- the announcement line (format in tdebug_preload.h) ---- */

/* RELEASABLE: the process will wait for tdebug_preload_release. */
static void build_announcement(struct tdp_line *l, const char *event, const char *action,
                               int releasable)
{
    tdp_line_start(l, event);
    tdp_line_str(l, "module", tdebug_preload_module);
    tdp_line_str(l, "path", tdebug_preload_path);
    tdp_line_str(l, "symbol", pending.symbol);
    tdp_line_str(l, "action", action);
    if (cfg.timeout < 0)
        tdp_line_add(l, ",\"timeout\":null");
    else
        tdp_line_add(l, ",\"timeout\":%g", cfg.timeout);
    if (releasable) {
        tdp_line_str(l, "release_symbol", TDEBUG_PRELOAD_SYM_RELEASE);
        tdp_line_add(l, ",\"release_addr\":\"%#lx\"",
                     (unsigned long)(uintptr_t)&tdebug_preload_release);
    }
    tdp_line_end(l);
}

static void announce_rendezvous(const struct tdp_line *l)
{
    if (cfg.announce)
        tdp_announce_send(cfg.announce_path, l);
}

/* ---- waiting ---- */

/* What the debugger wrote: nonzero once released. */
static int released(void)
{
    int r = __atomic_load_n(&tdebug_preload_release, __ATOMIC_SEQ_CST);

    if (r == TDEBUG_RELEASE_DISARM)
        disarmed = 1;
    return r != TDEBUG_RELEASE_NONE;
}

/*
 * Wait until a debugger writes tdebug_preload_release, ACK_FD (when >= 0)
 * gives a line or EOF, or the timeout passes.  Re-announces every second
 * when ANNOUNCE.  Returns 1 when released (by the variable or an ack), 0
 * on timeout.
 *
 * The timeout counts only time spent waiting on our own: not while a
 * debugger is attached (TracerPid), and not while the process was stopped
 * (a gap between two polls much longer than the poll, as when gdb held it
 * and detached), so a user at the gdb prompt is never overtaken by it.
 * The variable is read again after every sleep, before the timeout is
 * considered: gdb may write it and detach while we sleep.
 */
static int wait_for_release(int ack_fd, const struct tdp_line *announce)
{
    double last = now_mono(), deadline = last + cfg.timeout;
    double next_check = last + 0.2, next_announce = last + 1.0;
    char buf[256];

    __atomic_store_n(&tdebug_preload_release, TDEBUG_RELEASE_NONE, __ATOMIC_SEQ_CST);
    __atomic_store_n(&tdebug_preload_state, TDEBUG_STATE_WAITING, __ATOMIC_SEQ_CST);
    while (!released()) {
        if (ack_fd >= 0) {
            struct pollfd pfd = {.fd = ack_fd, .events = POLLIN};
            if (poll(&pfd, 1, 10) > 0) {
                ssize_t n = read(ack_fd, buf, sizeof(buf));
                if (n <= 0 || memchr(buf, '\n', (size_t)n))
                    break;
            }
        } else {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (released())
            break;
        double now = now_mono();
        if (now - last > 0.5)
            deadline += now - last;
        last = now;
        if (now >= next_check) {
            if (cfg.timeout >= 0 && tdp_tracer_pid())
                deadline = now + cfg.timeout;
            next_check = now + 0.2;
        }
        if (announce && now >= next_announce) {
            announce_rendezvous(announce);
            next_announce = now + 1.0;
        }
        if (cfg.timeout >= 0 && now >= deadline) {
            __atomic_store_n(&tdebug_preload_state, TDEBUG_STATE_TIMED_OUT, __ATOMIC_SEQ_CST);
            return 0;
        }
    }
    __atomic_store_n(&tdebug_preload_state, TDEBUG_STATE_RELEASED, __ATOMIC_SEQ_CST);
    return 1;
}

/*
 * Under Yama's ptrace_scope 1 (Ubuntu's default) only a process's ancestors
 * may attach to it, and the debugger it waits for ('tdebug attach --wait'
 * in another terminal) is none.  While it waits, the process lets any
 * debugger attach (PR_SET_PTRACER_ANY: Yama's ancestry rule only; the
 * same-user and capability checks still apply, as with scope 0) and takes
 * that back when the wait ends.  Returns 1 when it did.  (A program that
 * named a ptracer itself, like a crash reporter, loses that name.)
 */
static int let_debuggers_attach(void)
{
    char scope[8];

    if (tdp_read_small("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof(scope)) <= 0 ||
        scope[0] != '1')
        return 0;
    return prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0;
}

static void act_wait(void)
{
    static struct tdp_line l; /* under the loader lock; too big for the stack */
    long pid = (long)getpid();
    int any_ptracer = let_debuggers_attach();

    say("tdebug: pid %ld loaded %s (%s); waiting for a debugger: tdebug attach %ld\n", pid,
        tdebug_preload_module, tdebug_preload_path, pid);
    build_announcement(&l, "waiting", "wait", 1);
    announce_rendezvous(&l);
    int released_by_debugger = wait_for_release(-1, &l);
    if (any_ptracer)
        prctl(PR_SET_PTRACER, 0, 0, 0, 0);
    if (released_by_debugger) {
        if (cfg.verbose)
            say("tdebug-preload: pid %ld released by a debugger\n", pid);
    } else {
        say("tdebug: pid %ld: no debugger released it within %g s; continuing\n", pid,
            cfg.timeout);
    }
}

/* Connect to the notify socket: a stream socket (which can ack), or a
 * datagram one.  Returns the fd or -1 with errno set. */
static int connect_notify(int *out_stream)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    static const int types[] = {SOCK_STREAM, SOCK_DGRAM};

    memcpy(addr.sun_path, cfg.notify_path, strlen(cfg.notify_path));
    for (size_t i = 0; i < 2; i++) {
        int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
            *out_stream = types[i] == SOCK_STREAM;
            return fd;
        }
        int saved = errno;
        close(fd);
        errno = saved;
        if (errno != EPROTOTYPE)
            return -1;
    }
    return -1;
}

static void act_notify(void)
{
    static struct tdp_line l;
    int fd, stream = 1;

    build_announcement(&l, "loaded", "notify", cfg.notify_ack);
    if (cfg.notify_kind == TDP_NOTIFY_FD) {
        fd = cfg.notify_fd;
    } else if ((fd = connect_notify(&stream)) < 0) {
        say("tdebug-preload: cannot notify 'unix:%s': %s; continuing\n", cfg.notify_path,
            strerror(errno));
        return;
    }
    if (tdp_write_all(fd, l.s, l.len) < 0) {
        if (cfg.notify_kind == TDP_NOTIFY_FD)
            say("tdebug-preload: cannot notify 'fd:%d': %s; continuing\n", fd, strerror(errno));
        else
            say("tdebug-preload: cannot notify 'unix:%s': %s; continuing\n", cfg.notify_path,
                strerror(errno));
    } else if (cfg.notify_ack && stream) {
        if (!wait_for_release(fd, NULL))
            say("tdebug: pid %ld: no acknowledgement within %g s; continuing\n",
                (long)getpid(), cfg.timeout);
    }
    if (cfg.notify_kind == TDP_NOTIFY_UNIX)
        close(fd);
}

/* Action trap (tdebug_preload.h).  Is this thread traced?  Its own
 * status, not the process's: a debugger attaches thread by thread, and a
 * thread it has attached stops at once (its SIGSTOP is pending). */
static int thread_traced(void)
{
    char status[4096];
    const char *p;

    if (tdp_read_small("/proc/thread-self/status", status, sizeof(status)) < 0)
        return tdp_tracer_pid() != 0;
    p = strstr(status, "\nTracerPid:");
    return p && strtol(p + 11, NULL, 10) != 0;
}

/* Wait for a debugger to attach, up to the timeout, polling every
 * millisecond.  Returns nonzero once traced. */
static int wait_for_tracer(void)
{
    double deadline = now_mono() + cfg.timeout;
    struct timespec ms = {0, 1000 * 1000};

    while (!thread_traced()) {
        if (cfg.timeout >= 0 && now_mono() >= deadline) {
            say("tdebug: pid %ld: no debugger attached within %g s; continuing\n",
                (long)getpid(), cfg.timeout);
            return 0;
        }
        nanosleep(&ms, NULL);
    }
    return 1;
}

/* Is this the process the trap is for (TDEBUG_TRAP_PID)? */
static int trap_here(void)
{
    return cfg.action == TDP_TRAP && !disarmed && (!cfg.trap_pid || cfg.trap_pid == (long)getpid());
}

/* Stop for the debugger that traces this process.  Untraced, WAIT says
 * whether to wait for it first (a match may come before the debugger,
 * which starts while the program does, has attached).  A blocked SIGTRAP
 * would stay pending and surprise the tracer later: it is unblocked for
 * the moment. */
static void act_trap(int wait)
{
    sigset_t trap, old;

    if (!trap_here() || (!thread_traced() && (!wait || !wait_for_tracer())))
        return;
    sigemptyset(&trap);
    sigaddset(&trap, SIGTRAP);
    sigprocmask(SIG_UNBLOCK, &trap, &old);
    __atomic_store_n(&tdebug_preload_state, TDEBUG_STATE_TRAPPED, __ATOMIC_SEQ_CST);
    tdb_untraced_trap_raise(); /* a debugger that died since the check is no death */
    __atomic_store_n(&tdebug_preload_state, TDEBUG_STATE_IDLE, __ATOMIC_SEQ_CST);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* TDEBUG_RANK: does the parent have our RANK too (we are one of the
 * rank's workers, not the rank)?  Its environment is the one it started
 * with, like ours. */
static int parent_same_rank(void)
{
    static char env[256 * 1024]; /* under the loader lock: one caller at a time */
    char path[64];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%ld/environ", (long)getppid());
    n = tdp_read_small(path, env, sizeof(env));
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(env + i) + 1)
        if (!strncmp(env + i, "RANK=", 5))
            return env[i + 5] && strtol(env + i + 5, NULL, 10) == cfg.rank;
    return 0;
}

static void act(void)
{
    if (cfg.skip_workers && multiprocessing_worker() &&
        (cfg.only_rank < 0 || parent_same_rank())) {
        if (cfg.verbose)
            say("tdebug-preload: pid %ld loaded %s, a multiprocessing worker: not pausing "
                "(TDEBUG_WORKERS=watch to pause workers too)\n", (long)getpid(), pending.path);
        return;
    }
    copy(tdebug_preload_path, sizeof(tdebug_preload_path), pending.path);
    module_name(pending.path, tdebug_preload_module, sizeof(tdebug_preload_module));
    switch (cfg.action) {
    case TDP_WAIT:
        act_wait();
        break;
    case TDP_NOTIFY:
        act_notify();
        break;
    case TDP_LOG:
        say("tdebug: pid %ld loaded %s (%s)\n", (long)getpid(), tdebug_preload_module,
            tdebug_preload_path);
        break;
    case TDP_TRAP:
        act_trap(cfg.trap_wait_load);
        break;
    case TDP_OFF:
        break;
    }
}

/* ---- matching ---- */

static const char *matched_symbol(const struct link_map *map)
{
    for (size_t i = 0; i < cfg.n_syms; i++)
        if (tdp_exports(map->l_addr, map->l_ld, cfg.syms[i]))
            return cfg.syms[i];
    return NULL;
}

static int matched_file(const char *path)
{
    const char *base = strrchr(path, '/');

    base = base ? base + 1 : path;
    for (size_t i = 0; i < cfg.n_files; i++)
        if (fnmatch(cfg.files[i], strchr(cfg.files[i], '/') ? path : base, 0) == 0)
            return 1;
    return 0;
}

static void remember(const char *name, const char *symbol)
{
    char cwd[PATH_MAX];
    size_t n;

    pending.active = 1;
    pending.symbol = symbol;
    copy(pending.path, sizeof(pending.path), name);
    if (name[0] != '/' && getcwd(cwd, sizeof(cwd)) &&
        (n = strlen(cwd)) + 1 + strlen(name) < sizeof(pending.path)) {
        memcpy(pending.path, cwd, n);
        pending.path[n] = '/';
        strcpy(pending.path + n + 1, name);
    }
}

/* ---- the rtld-audit entry points ---- */

EXPORT unsigned int la_version(unsigned int version)
{
    tdp_config_load(&cfg, (tdp_getenv_fn)getenv, warn_line, (unsigned long)getuid());
    if (cfg.verbose && cfg.other_rank) {
        if (cfg.rank < 0)
            say("tdebug-preload: pid %ld has no RANK, TDEBUG_RANK is %ld: not watching\n",
                (long)getpid(), cfg.only_rank);
        else
            say("tdebug-preload: pid %ld is rank %ld, TDEBUG_RANK is %ld: not watching\n",
                (long)getpid(), cfg.rank, cfg.only_rank);
    } else if (cfg.verbose) {
        static const char *const actions[] = {"wait", "notify", "log", "off", "trap"};
        say("tdebug-preload: pid %ld: watching %zu symbol(s) (first: %s), %zu file "
            "pattern(s); action %s\n", (long)getpid(), cfg.n_syms,
            cfg.n_syms ? cfg.syms[0] : "none", cfg.n_files, actions[cfg.action]);
    }
    if (trap_here())
        tdb_untraced_trap_install(NULL); /* breakpoints of a gdb that dies are not fatal */
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/* Action trap: the init function an extension module PATH would export
 * ("PyInit__C" for .../_C.cpython-311-x86_64-linux-gnu.so) into OUT. */
static void init_name(const char *path, char *out, size_t size)
{
    const char *base = strrchr(path, '/');

    base = base ? base + 1 : path;
    snprintf(out, size, "PyInit_%.*s", (int)strcspn(base, "."), base);
}

EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
    const char *name = map->l_name;
    const char *symbol;
    unsigned int flags = 0;

    if (__atomic_load_n(&tdebug_preload_release, __ATOMIC_SEQ_CST) == TDEBUG_RELEASE_DISARM)
        disarmed = 1; /* written while we were not waiting (action trap) */
    if (cfg.action == TDP_OFF || disarmed || !name || !name[0])
        return 0;
    if (cfg.verbose >= 2)
        say("tdebug-preload: pid %ld: mapped %s (namespace %ld)\n", (long)getpid(), name,
            (long)lmid);
    symbol = matched_symbol(map);
    if (!symbol && !matched_file(name))
        return 0;
    if (trap_here()) {
        /* An extension module's init must not run before the debugger is
         * there: its lookup (dlsym) comes to la_symbind64() below. */
        char init[256];
        init_name(name, init, sizeof(init));
        if (tdp_exports(map->l_addr, map->l_ld, init))
            flags = LA_FLG_BINDTO;
    }
    if (!pending.active)
        remember(name, symbol);
    return flags;
}

/* Only for the modules la_objopen() flagged (action trap): Python looks up
 * PyInit_<name> right before it runs it.  A debugger that attached since
 * the module was mapped has placed its stop there; one that has not
 * attached yet is waited for. */
EXPORT uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook,
                              uintptr_t *defcook, unsigned int *flags, const char *symname)
{
    (void)ndx, (void)refcook, (void)defcook, (void)flags;
    if (trap_here() && symname && strncmp(symname, "PyInit_", 7) == 0 && !thread_traced())
        wait_for_tracer();
    return sym->st_value;
}

EXPORT void la_activity(uintptr_t *cookie, unsigned int flag)
{
    static int started; /* the program's own libraries were mapped */

    if (flag != LA_ACT_CONSISTENT)
        return;
    if (!started) {
        started = 1;
        if (cfg.action == TDP_TRAP && cfg.trap_startup && !pending.active && !disarmed) {
            act_trap(1); /* a breakpoint may be in them: the debugger comes first */
            return;
        }
    }
    if (!pending.active)
        return;
    pending.active = 0;
    if (!disarmed)
        act();
}
