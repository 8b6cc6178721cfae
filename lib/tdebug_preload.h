/*
 * tdebug_preload.h: the contract between libtdebug-preload.so (lib/), the
 * tdebug command (src/process/preload.c) and the _tdebug Python extension.
 *
 * Put the library in a program's environment with
 *
 *     LD_AUDIT=/path/to/libtdebug-preload.so
 *
 * ('tdebug env' prints the lines to export).  Each process then watches the
 * objects the dynamic loader maps; when one matches (by default: any object
 * exporting PyInit__C, i.e. torch._C, functorch._C, ...), it acts at the next
 * point where the loader's list of objects is consistent: every object of
 * that load is mapped, none is relocated, no constructor has run and
 * PyInit__C has not been called.
 *
 * == The release handshake (action "wait")
 *
 * The waiting thread polls TDEBUG_PRELOAD_SYM_RELEASE every 10 ms.  A
 * debugger releases the process by writing a nonzero TDEBUG_RELEASE_* value
 * there and letting the process run.  gdb 13 lists the audit library (it
 * lives in its own link namespace) among the shared libraries of an attached
 * process and reads its debug info, so by hand:
 *
 *     gdb -p PID
 *     (gdb) break PyInit__C                        # optional: stop in init
 *     (gdb) set var tdebug_preload_release = 1     # 2: also stop watching
 *     (gdb) continue                               # or 'detach'
 *
 * With 'set auto-solib-add off' (fast symbol loading) either load the
 * library's symbols first ('sharedlibrary libtdebug-preload') or write the
 * address announced in "release_addr", which needs no symbols at all:
 *
 *     set var *(int *)0x7f0123456789 = 1
 *
 * If gdb answers "'tdebug_preload_release' has unknown type" (gdb 13 does
 * when the process is stopped in a libc without debug info: install
 * libc6-dbg), the cast form needs no type: set var *(int *)&tdebug_preload_release = 1
 *
 * tdb_preload_release_commands() in src/process/preload.h builds these lines.
 * TDEBUG_PRELOAD_SYM_STATE tells what the process is doing (TDEBUG_STATE_*),
 * TDEBUG_PRELOAD_SYM_MODULE and _PATH what it stopped on.  While a debugger
 * is attached (TracerPid is nonzero) the timeout does not run, so a user at
 * the gdb prompt is never overtaken by it.  Under Yama's ptrace_scope 1 a
 * waiting process allows any ptracer (PR_SET_PTRACER_ANY) until its wait
 * ends, so a debugger that is not its ancestor may attach.
 *
 * == Announcements
 *
 * One JSON object on one line (UTF-8, '\n'-terminated, at most
 * TDEBUG_ANNOUNCE_MAX bytes), for example:
 *
 *   {"tdebug":1,"event":"waiting","pid":1234,"ppid":1200,"uid":1000,
 *    "module":"torch._C","path":"/usr/lib/.../torch/_C.cpython-311-x86_64-linux-gnu.so",
 *    "symbol":"PyInit__C","action":"wait","timeout":60,
 *    "release_symbol":"tdebug_preload_release","release_addr":"0x7f0123456789",
 *    "exe":"/usr/bin/python3.11","time":1763767425.123}
 *
 * "tdebug" is TDEBUG_PRELOAD_ABI.  "event" is "waiting" (the process waits
 * for a release) or "loaded" (action notify: it only tells).  "symbol" is
 * the watched symbol the object exports, or null when a file pattern
 * matched.  "time" is seconds since the epoch.  "timeout" is in seconds,
 * null when the process waits without limit.  "release_symbol" and
 * "release_addr" are present when writing that variable releases the
 * process (action wait, or notify with an ack); an announcement without
 * them either does not wait (notify) or, from tdebug.wait_for_debugger() in
 * Python (module and path null), is released by attaching a debugger and
 * letting the process run.  Readers ignore keys they do not know.
 *
 * A waiting process sends its announcement as a datagram to the rendezvous
 * socket (tdebug_announce_path() below) when it starts waiting and again
 * every second while it waits, so a listener that starts late still learns
 * about it within a second; a listener de-duplicates by pid.  Nobody
 * listening is normal: the datagram is dropped and the process waits anyway.
 * Action notify writes the same line (event "loaded") to TDEBUG_NOTIFY and,
 * with TDEBUG_NOTIFY_ACK=1, waits for any line back (or EOF, or a release,
 * or the timeout).
 *
 * == Action trap: for a debugger that traces the process
 *
 * 'tdebug run' traces the program with a gdb that reads no library and so
 * never stops at the loader's events (src/session/light.c): the library
 * tells it instead.  At a consistent point after a match the thread that
 * loads sets tdebug_preload_state to TDEBUG_STATE_TRAPPED and sends itself
 * SIGTRAP, which the tracer sees as a signal stop (gdb does not pass
 * SIGTRAP on), then sets it back to TDEBUG_STATE_IDLE.  A match before any
 * tracer has attached (gdb starts while the program does) waits for one,
 * up to TDEBUG_TIMEOUT, with TDEBUG_TRAP_WAIT=load (the default); with
 * TDEBUG_TRAP_WAIT=init it goes on untraced, and only the init of a
 * matched extension module waits: Python's lookup of its PyInit_<name>
 * (seen by la_symbind64(), for those modules alone) does not return before
 * a debugger has attached, which then finds the module mapped.
 * With TDEBUG_TRAP_STARTUP=1 it also traps once at
 * the first consistent point (the program's own libraries are mapped,
 * none of their code has run), waiting for a debugger there first.  Only a process whose pid
 * TDEBUG_TRAP_PID names (when it is set) ever traps: SIGTRAP would kill a
 * process nobody traces.  Writing TDEBUG_RELEASE_DISARM to
 * tdebug_preload_release stops the traps.  Nothing is announced.
 *
 * == One rank of a distributed job (TDEBUG_RANK)
 *
 * With TDEBUG_RANK=N, a process acts only when its own environment has
 * RANK=N (as torchrun, srun-style launchers and torch.multiprocessing
 * callers give each rank): every other process, the launcher and the other
 * ranks, behaves as with TDEBUG_ACTION=off from its start and runs at full
 * speed, untraced.  Rank N's own multiprocessing workers (spawn,
 * forkserver: DataLoader workers) have RANK=N too and are told apart by
 * their parent, which has it as well: they are skipped unless
 * TDEBUG_WORKERS=watch.  A rank started as a multiprocessing child itself
 * (its parent has no RANK=N) does act.
 */
#ifndef TDEBUG_PRELOAD_H
#define TDEBUG_PRELOAD_H

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define TDEBUG_PRELOAD_ABI 1
#define TDEBUG_PRELOAD_LIBNAME "libtdebug-preload.so"

/* Symbols the library exports for debuggers (all 'volatile int' except the
 * two strings). */
#define TDEBUG_PRELOAD_SYM_RELEASE "tdebug_preload_release" /* written by the debugger */
#define TDEBUG_PRELOAD_SYM_STATE "tdebug_preload_state"     /* TDEBUG_STATE_* */
#define TDEBUG_PRELOAD_SYM_MODULE "tdebug_preload_module"   /* char[]: "torch._C" */
#define TDEBUG_PRELOAD_SYM_PATH "tdebug_preload_path"       /* char[]: the object's path */

/* Values a debugger writes to tdebug_preload_release. */
enum {
    TDEBUG_RELEASE_NONE = 0,
    TDEBUG_RELEASE_CONTINUE = 1, /* go on; pause again at the next match */
    TDEBUG_RELEASE_DISARM = 2    /* go on and never pause again in this process */
};

/* Values of tdebug_preload_state. */
enum {
    TDEBUG_STATE_IDLE = 0,     /* watching, not waiting */
    TDEBUG_STATE_WAITING = 1,  /* paused: waiting for a release */
    TDEBUG_STATE_RELEASED = 2, /* the last wait ended by a release */
    TDEBUG_STATE_TIMED_OUT = 3, /* the last wait ended by the timeout */
    TDEBUG_STATE_TRAPPED = 4    /* action trap: stopped by its SIGTRAP right now */
};

/* The environment the library reads.  Garbage in any of them gives one
 * warning line ("tdebug-preload: ...") and the default. */
#define TDEBUG_ENV_WATCH "TDEBUG_WATCH"             /* symbols, comma-separated */
#define TDEBUG_ENV_WATCH_FILES "TDEBUG_WATCH_FILES" /* fnmatch patterns, comma-separated */
#define TDEBUG_ENV_ACTION "TDEBUG_ACTION"           /* wait | notify | log | off */
#define TDEBUG_ENV_TIMEOUT "TDEBUG_TIMEOUT"         /* seconds, or "never" */
#define TDEBUG_ENV_VERBOSE "TDEBUG_VERBOSE"         /* 0 | 1 | 2 */
#define TDEBUG_ENV_NOTIFY "TDEBUG_NOTIFY"           /* fd:N | unix:PATH */
#define TDEBUG_ENV_NOTIFY_ACK "TDEBUG_NOTIFY_ACK"   /* 0 | 1 */
#define TDEBUG_ENV_ANNOUNCE "TDEBUG_ANNOUNCE"       /* socket path, or "off" */
#define TDEBUG_ENV_WORKERS "TDEBUG_WORKERS"         /* skip | watch */
#define TDEBUG_ENV_TRAP_PID "TDEBUG_TRAP_PID"       /* action trap: the one pid that traps */
#define TDEBUG_ENV_TRAP_STARTUP "TDEBUG_TRAP_STARTUP" /* action trap: 0 | 1, also trap once the
                                                       * program's own libraries are mapped */
#define TDEBUG_ENV_TRAP_WAIT "TDEBUG_TRAP_WAIT"     /* action trap: load | init, what waits
                                                     * for a debugger not attached yet */
#define TDEBUG_ENV_RANK "TDEBUG_RANK"               /* N: only the process whose RANK is N acts */

#define TDEBUG_DEFAULT_WATCH "PyInit__C"
#define TDEBUG_DEFAULT_TIMEOUT 60 /* seconds */
#define TDEBUG_ANNOUNCE_MAX 8192  /* bytes in one announcement line */

/*
 * The rendezvous socket: $TDEBUG_ANNOUNCE when set (ENV_VALUE; "off" or ""
 * disables it), else /tmp/tdebug-UID/announce with UID the real user id of
 * the process.  Not $XDG_RUNTIME_DIR: the program is often started by a
 * tool (VS Code's server, cron, sudo, a container entry point) whose
 * environment has another one or none, and both ends must find the same
 * path without talking to each other.  The directory is created mode 0700
 * by the listener; senders use it only when it is a directory owned by UID.
 *
 * Writes the path to BUF and returns 1; returns 0 when announcing is off or
 * the path does not fit.
 */
static inline int tdebug_announce_path(char *buf, size_t size, const char *env_value,
                                       unsigned long uid)
{
    int n;

    if (env_value)
        n = (*env_value && strcmp(env_value, "off") != 0)
                ? snprintf(buf, size, "%s", env_value) : -1;
    else
        n = snprintf(buf, size, "/tmp/tdebug-%lu/announce", uid);
    return n > 0 && (size_t)n < size;
}

#endif
