/*
 * untraced_trap.c: a debugger's breakpoint that outlives the debugger is
 * never fatal (contract: untraced_trap.h).
 *
 * gdb inserts a breakpoint by writing int3 (0xcc) over the first byte of
 * an instruction, and takes it out when the process stops or when it
 * detaches.  A gdb killed (SIGKILL, the OOM killer) while the program runs
 * leaves its int3s in place; the kernel detaches the program, and the next
 * thread to reach one gets a SIGTRAP nobody catches: the program dies
 * (status -5), though nothing was wrong with it.  The libraries tdebug puts
 * into a program install this handler.  Traced, it never runs: the tracer
 * takes every SIGTRAP first, and gdb does not pass its own breakpoints'
 * on.  Untraced, an int3 at an address whose byte in the mapped file is not
 * 0xcc is a breakpoint left behind: the handler writes the file's byte back
 * (through /proc/self/mem, as a debugger does: the text is read-only), puts
 * the thread back on that instruction, tells its owner (the hook disarms)
 * and returns, so the program runs on as if the breakpoint never was.  A
 * single-step trap left armed (the trace flag) is cleared the same way.
 * Every other SIGTRAP (a program's own int3, raise(SIGTRAP)) gets the
 * default action, as it would have without us.
 *
 * Everything the handler calls is async-signal-safe: open, read, pread,
 * pwrite, close, getpid, sigaction, raise; /proc/self/maps is parsed from a
 * buffer on the stack.
 */
#include "untraced_trap.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)

static void (*g_on_rescue)(void);
static int g_raising; /* tdb_untraced_trap_raise() is raising: ignore it */

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* A hex number at *P, which is moved past it. */
static uintptr_t parse_hex(const char **p, const char *end)
{
    uintptr_t v = 0;
    int d;
    while (*p < end && (d = hex_digit(**p)) >= 0) {
        v = v * 16 + (uintptr_t)d;
        (*p)++;
    }
    return v;
}

/* One line of /proc/self/maps ("start-end perms offset dev inode  path"):
 * when it maps ADDR from a file, that file's path (in PATH) and ADDR's
 * offset in it.  1 found, 0 not this line, -1 this line but no file. */
static int maps_line(const char *l, const char *end, uintptr_t addr, char *path, size_t pathmax,
                     off_t *out_off)
{
    const char *p = l;
    uintptr_t start = parse_hex(&p, end);
    if (p >= end || *p++ != '-')
        return 0;
    uintptr_t stop = parse_hex(&p, end);
    if (addr < start || addr >= stop)
        return 0;
    while (p < end && *p == ' ')
        p++;
    while (p < end && *p != ' ') /* perms */
        p++;
    while (p < end && *p == ' ')
        p++;
    uintptr_t off = parse_hex(&p, end);
    for (int field = 0; field < 2; field++) { /* dev, inode */
        while (p < end && *p == ' ')
            p++;
        while (p < end && *p != ' ')
            p++;
    }
    while (p < end && *p == ' ')
        p++;
    size_t n = (size_t)(end - p);
    if (n == 0 || *p != '/' || n >= pathmax)
        return -1;
    if (n > 10 && memcmp(end - 10, " (deleted)", 10) == 0)
        return -1; /* the file on disk is not the one mapped */
    memcpy(path, p, n);
    path[n] = 0;
    *out_off = (off_t)(off + (addr - start));
    return 1;
}

/* The file and offset ADDR is mapped from: 0, or -1 (anonymous, not mapped). */
static int mapped_from(uintptr_t addr, char *path, size_t pathmax, off_t *out_off)
{
    char buf[4096];
    size_t have = 0;
    int found = -1;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof(buf) - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', (size_t)(buf + have - line)))) {
            int r = maps_line(line, nl, addr, path, pathmax, out_off);
            if (r != 0) {
                found = r > 0 ? 0 : -1;
                goto done;
            }
            line = nl + 1;
        }
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof(buf))
            have = 0; /* a line longer than the buffer: not one we can use */
    }
done:
    close(fd);
    return found;
}

/* Take out a breakpoint at AT, if it is one a debugger left there: 1 the
 * byte is the file's again (now or by another thread just before), 0 no. */
static int take_out(uintptr_t at)
{
    char path[1024];
    off_t off;
    unsigned char orig, now = *(volatile unsigned char *)at;
    if (mapped_from(at, path, sizeof(path), &off) < 0)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = pread(fd, &orig, 1, off);
    close(fd);
    if (n != 1 || orig == 0xcc)
        return 0; /* the program's own int3 */
    if (now == orig)
        return 1;
    if (now != 0xcc)
        return 0;
    fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = pwrite(fd, &orig, 1, (off_t)at);
    close(fd);
    return n == 1;
}

static void on_sigtrap(int sig, siginfo_t *si, void *ucp)
{
    ucontext_t *uc = ucp;
    greg_t *pc = &uc->uc_mcontext.gregs[REG_RIP];
    int saved = errno;
    int handled = 0;

    if (si->si_code == SI_TKILL && si->si_pid == getpid() &&
        __atomic_load_n(&g_raising, __ATOMIC_SEQ_CST)) {
        handled = 1; /* our own raise, its debugger gone */
    } else if (si->si_code == SI_KERNEL && take_out((uintptr_t)*pc - 1)) {
        *pc -= 1; /* run the instruction the int3 stood for */
        handled = 1;
    } else if (si->si_code == TRAP_TRACE && (uc->uc_mcontext.gregs[REG_EFL] & 0x100)) {
        uc->uc_mcontext.gregs[REG_EFL] &= ~0x100; /* a step left armed */
        handled = 1;
    }
    if (handled) {
        if (g_on_rescue)
            g_on_rescue();
        errno = saved;
        return;
    }
    /* Not a debugger's: what SIGTRAP did before us (blocked while we run,
     * it is delivered as we return). */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

/* Is FN this code in the other library of tdebug's (the preloaded one
 * installs it first; the hook's copy also knows how to disarm the hook)? */
static int tdebugs(void (*fn)(int, siginfo_t *, void *))
{
    Dl_info info;
    const char *base;
    if (!fn || !dladdr((void *)fn, &info) || !info.dli_fname)
        return 0;
    base = strrchr(info.dli_fname, '/');
    return strncmp(base ? base + 1 : info.dli_fname, "libtdebug-", 10) == 0;
}

int tdb_untraced_trap_install(void (*on_rescue)(void))
{
    struct sigaction sa, old;

    g_on_rescue = on_rescue;
    if (sigaction(SIGTRAP, NULL, &old) < 0)
        return 0;
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_sigtrap)
        return 1;
    if ((old.sa_flags & SA_SIGINFO) ? !tdebugs(old.sa_sigaction)
                                     : old.sa_handler != SIG_DFL)
        return 0; /* the program's own */
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigtrap;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTRAP, &sa, NULL) < 0)
        return 0;
    return 1;
}

int tdb_untraced_trap_raise(void)
{
    __atomic_add_fetch(&g_raising, 1, __ATOMIC_SEQ_CST);
    int r = raise(SIGTRAP);
    __atomic_sub_fetch(&g_raising, 1, __ATOMIC_SEQ_CST);
    return r;
}

#else /* not x86-64: nothing installed, a raise is a raise */

#include <signal.h>

int tdb_untraced_trap_install(void (*on_rescue)(void))
{
    (void)on_rescue;
    return 0;
}

int tdb_untraced_trap_raise(void)
{
    return raise(SIGTRAP);
}

#endif
