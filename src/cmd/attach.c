/*
 * cmd/attach.c: 'tdebug attach PID': attach gdb to a running Python
 * process, fast, and detach safely; 'tdebug attach --wait': wait for a
 * process the preloaded library paused at torch._C to announce itself,
 * then stop it in PyInit__C.  Parses and checks the command line, refuses
 * early what cannot work (with the reason and what to do), and leaves the
 * session to src/cli/cli.c and src/session/ (src/process/paused.c waits for --wait).
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "cli/cli.h"
#include "process/paused.h"
#include "process/pidns.h"
#include "process/preload.h"
#include "targets/ptrace_check.h"
#include "targets/ranks.h"
#include "cmd/options.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_attach_usage[] =
    "usage: tdebug attach [options] PID\n"
    "       tdebug attach [options] --rank N [--job ID]\n"
    "       tdebug attach --wait [--timeout SECONDS] [options] [PID]\n"
    "\n"
    "Attach gdb to a running Python process, reading only the symbols that\n"
    "matter, and detach safely: quitting or Ctrl-C detaches, the process goes\n"
    "on as before (one that was stopped stays stopped), and it is never killed.\n"
    "PID may be a debugpy adapter or launcher: tdebug attaches to the process\n"
    "that runs the user's code and says so.  What cannot work (another user's\n"
    "process, one already traced, ptrace_scope, no CAP_SYS_PTRACE, not Python)\n"
    "is refused before gdb starts, with the reason and what to do.\n"
    "\n"
    "With --wait, wait for a process paused by the preloaded library: started\n"
    "from a shell where 'eval \"$(tdebug env)\"' was run, a program pauses when\n"
    "it loads torch._C, before its init runs, and announces itself.  tdebug\n"
    "attaches to the first one that does (or to PID), places the stops, lets it\n"
    "go and stops in PyInit__C:\n"
    "\n"
    "    tdebug attach --wait                 # here, first\n"
    "    eval \"$(tdebug env)\"; python3 train.py   # elsewhere, or VS Code, torchrun...\n"
    "\n"
    "  --rank N                 the process that is rank N of the distributed job\n"
    "                           running here (its RANK, as 'tdebug ps' shows it)\n"
    "  --job ID                 with --rank: of the job ID, when several run here\n"
    "                           (its id as 'tdebug ps' shows it, or its launcher's\n"
    "                           pid); to stop rank N as it starts, start the job\n"
    "                           under 'eval \"$(tdebug env --rank N)\"' and use --wait\n"
    "  -w, --wait               wait for a paused process to announce itself on\n"
    "                           the socket of 'tdebug env' (TDEBUG_ANNOUNCE or\n"
    "                           /tmp/tdebug-UID/announce); with PID, for that one\n"
    "  -t, --timeout SECONDS    give up waiting after this long (default: never)\n"
    "  --stop-at-import MODULE  stop in MODULE's PyInit_<name> when the process\n"
    "                           imports it (said at once if it already has);\n"
    "                           with --wait the default is the module the\n"
    "                           process paused at (torch._C)\n"
    "  --stop-at-load MODULE    stop when the process maps MODULE's file\n"
    "  -b, --break LOCATION     a breakpoint, as with 'tdebug run': gdb's FUNCTION,\n"
    "                           FILE:LINE, *ADDRESS, or Python's FILE.py:LINE,\n"
    "                           FILE.py:FUNCTION; 'LOCATION if COND' too\n"
    "  --catch-throw[=TYPE]     stop where C++ throws (a TYPE or a class derived\n"
    "                           from it), showing the exception's message\n"
    "  --catch-raise[=TYPE]     stop where Python raises an exception: in your\n"
    "                           code, or a TYPE (or a class derived from it)\n"
    "                           anywhere, showing its message\n"
    "  --step-into WHERE        where 'step' from Python stops: mine, operator or\n"
    "                           binding, as with 'tdebug run'\n"
    "  --my-code DIR            your own code is also under DIR (repeatable)\n"
    "  --symbols REGEX          also read libraries matching REGEX (basic regex)\n"
    "  --all-symbols            let gdb read every library (its slow default)\n"
    "  --batch                  print stops and backtraces; with no stops asked\n"
    "                           for, print every thread's stack and detach\n"
    "  --json                   the same as JSON lines on stdout\n"
    "  (default)                a (tdebug) prompt, stopped where it was; its\n"
    "                           commands are those of 'tdebug run' (args,\n"
    "                           tensor, py-locals, py-print, ...)\n"
    "  --raw                    keep CPython's plumbing frames in stacks\n"
    "  --cpython-symbols        let gdb read CPython's debug info too (slower)\n"
    "  -x, --commands FILE      at each stop run the next line of FILE as if typed\n"
    "                           at the prompt; when FILE is done, go on as --batch\n"
    "  -v, --verbose            show gdb's own messages\n"
    "  -h, --help               this text\n"
    "\n"
    "Exit status: 0 once detached (after 'quit', the end of piped commands, or\n"
    "--batch); 1 when the process is refused (the reason is printed), a\n"
    "requested stop cannot happen, or --timeout passed.  A paused process tdebug\n"
    "cannot attach to goes on by itself after its own timeout (tdebug env -t).\n"
    "\n"
    "Examples:\n"
    "  tdebug attach --batch 1234\n"
    "  tdebug attach --rank 3\n"
    "  tdebug attach --wait --batch --timeout 600\n";

/* gdb was refused after all (the process changed, or a check could not
 * see it coming): say why, from what the system shows now. */
static void explain_refusal(pid_t pid, tdb_error *err)
{
    if (err->set && (err->code == EPERM || err->code == ESRCH)) {
        tdb_error why = {0};
        tdb_ptrace_explain(pid, NULL, err->code, &why);
        if (why.set)
            *err = why;
    }
}

/* --wait: the process that announces itself, refused before gdb starts if
 * it cannot work, as a PID is; a refused one is left to its own timeout. */
static int attach_announced(tdb_cli_options *opts, const json_t *announcement)
{
    pid_t pid = (pid_t)json_integer_value(json_object_get(announcement, "pid"));
    tdb_resolution target = {0};
    tdb_error err = {0};
    int status;

    if (tdb_attach_prepare(pid, NULL, &target, NULL, &err) != 0) {
        status = err.exit_code ? err.exit_code : TDB_EXIT_FAIL;
    } else {
        status = tdb_cli_attach_paused(opts, announcement, &err);
        explain_refusal(pid, &err);
    }
    if (err.set && status == TDB_EXIT_FAIL && tdb_pid_running(pid))
        tdb_announce_note_unreleased(announcement, &err);
    if (err.set)
        tdb_print_error(&err);
    tdb_resolution_release(&target);
    return status;
}

/* Wait for a waiting process's announcement: PID's when PID > 0.  Returns
 * 0 with *OUT (new reference), or an exit status after saying why there is
 * none. */
static int wait_announcement(pid_t pid, double timeout, json_t **out)
{
    tdb_announce_listener *l = NULL;
    tdb_error err = {0};
    int64_t deadline = timeout >= 0 ? tdb_now_ms() + (int64_t)(timeout * 1000) : -1;
    int cancel = tdb_signals_install(0, &err), status = TDB_EXIT_FAIL;
    json_t *a = NULL;

    if (cancel < 0)
        return tdb_error_exit(&err);
    if (!(l = tdb_announce_listen(NULL, &err))) {
        tdb_print_error(&err);
        return TDB_EXIT_FAIL;
    }
    if (pid > 0)
        fprintf(stderr, "tdebug: waiting for pid %d to pause and announce itself on %s",
                (int)pid, tdb_announce_listener_path(l));
    else
        fprintf(stderr, "tdebug: waiting for a process to pause at torch._C and announce itself "
                        "on %s", tdb_announce_listener_path(l));
    if (timeout >= 0)
        fprintf(stderr, " for up to %g s", timeout);
    fprintf(stderr, " (Ctrl-C to stop)\n"
                    "tdebug: programs pause there when started from a shell where "
                    "'eval \"$(tdebug env)\"' was run\n");
    for (;;) {
        int64_t left = deadline < 0 ? -1 : deadline - tdb_now_ms();
        /* With a PID, look every second whether it still exists. */
        int wait = pid > 0 && (left < 0 || left > 1000) ? 1000 : (int)(left < 0 ? -1 : left);
        int rc = tdb_announce_next(l, wait, cancel, &a, &err);

        if (rc < 0 && err.code == ECANCELED) {
            int sig = tdb_signals_take();
            if (sig == SIGINT || !sig)
                fprintf(stderr, "tdebug: stopped waiting (interrupted); nothing was attached\n");
            else
                fprintf(stderr, "tdebug: stopped waiting (SIG%s); nothing was attached\n",
                        sigabbrev_np(sig));
            status = 128 + (sig ? sig : SIGINT);
            break;
        }
        if (rc < 0) {
            status = tdb_error_exit(&err);
            break;
        }
        if (rc == 1 && tdb_announce_is_waiting(a, pid, 0)) {
            *out = a;
            status = 0;
            break;
        }
        json_decref(a);
        a = NULL;
        if (pid > 0 && !tdb_pid_running(pid)) {
            tdb_fail("pid %d ended before it announced itself", (int)pid);
            break;
        }
        if (deadline >= 0 && tdb_now_ms() >= deadline) {
            if (pid > 0)
                tdb_fail("pid %d did not announce itself within %g s (it does when it loads "
                         "torch._C with 'tdebug env''s LD_AUDIT and the same TDEBUG_ANNOUNCE)",
                         (int)pid, timeout);
            else
                tdb_fail("no process announced itself on %s within %g s (start the program "
                         "from a shell where 'eval \"$(tdebug env)\"' was run)",
                         tdb_announce_listener_path(l), timeout);
            break;
        }
    }
    /* The socket goes now: the next 'attach --wait' can take the next one. */
    tdb_announce_listener_free(l);
    return status;
}

/* --rank N [--job ID]: the pid of that rank of the job running here, in
 * *PID.  Returns TDB_EXIT_OK, or an exit status after saying why. */
static int rank_pid(const char *rank_arg, const char *job_arg, int wait, const char *extra,
                    long *pid)
{
    long rank;
    tdb_error err = {0};
    if (!rank_arg)
        return tdb_usage_error("attach", "--job goes with --rank N (which rank of it?)");
    if (tdb_parse_long(rank_arg, 0, 1L << 30, &rank) < 0)
        return tdb_usage_error("attach", "--rank '%s' is not a rank (0, 1, 2, ...)", rank_arg);
    if (wait)
        return tdb_usage_error("attach", "--rank finds a running rank; to stop rank %ld as it "
                               "starts, start the job under 'eval \"$(tdebug env --rank %ld)\"' "
                               "and use --wait alone", rank, rank);
    if (extra)
        return tdb_usage_error("attach", "give --rank or a PID, not both ('%s')", extra);
    if (tdb_check_usage_only)
        return TDB_EXIT_OK;
    pid_t p;
    char *job = NULL;
    if (tdb_rank_pid(rank, job_arg, &p, &job, &err) < 0)
        return tdb_error_exit(&err);
    fprintf(stderr, "tdebug: rank %ld of job '%s' is pid %d\n", rank, job, (int)p);
    *pid = p;
    free(job);
    return TDB_EXIT_OK;
}

int cmd_attach(int argc, char **argv)
{
    enum { OPT_WAIT = TDB_OPT_FIRST_FREE, OPT_TIMEOUT, OPT_RANK, OPT_JOB };
    static const struct option longopts[] = {
        TDB_SESSION_LONGOPTS,
        {"wait", no_argument, NULL, OPT_WAIT},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"rank", required_argument, NULL, OPT_RANK},
        {"job", required_argument, NULL, OPT_JOB},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tdb_cli_options opts = {.output = TDB_OUTPUT_INTERACTIVE};
    tdb_cli *s = NULL;
    tdb_error err = {0};
    tdb_resolution target = {0};
    int status = TDB_EXIT_USAGE, c, wait = 0;
    const char *timeout_arg = NULL, *rank_arg = NULL, *job_arg = NULL;
    double timeout = -1;
    json_t *announcement = NULL;
    long pid = 0;

    optind = 1;
    while ((c = tdb_session_getopt("attach", argc, argv, "+:b:x:vhwt:", longopts, &opts, &status)) !=
           -1) {
        if (c == TDB_GETOPT_DONE)
            goto cleanup;
        if (c == 'w' || c == OPT_WAIT)
            wait = 1;
        else if (c == 't' || c == OPT_TIMEOUT)
            timeout_arg = optarg;
        else if (c == OPT_RANK)
            rank_arg = optarg;
        else if (c == OPT_JOB)
            job_arg = optarg;
    }
    if (rank_arg || job_arg) {
        status = rank_pid(rank_arg, job_arg, wait, optind < argc ? argv[optind] : NULL, &pid);
        if (status != TDB_EXIT_OK)
            goto cleanup;
        status = TDB_EXIT_USAGE;
    }
    if (timeout_arg && !wait) {
        status = tdb_usage_error("attach", "--timeout goes with --wait");
        goto cleanup;
    }
    if (timeout_arg && tdb_parse_seconds(timeout_arg, &timeout) < 0) {
        status = tdb_usage_error("attach", "--timeout '%s' is not a number of seconds",
                                 timeout_arg);
        goto cleanup;
    }
    if (!rank_arg && optind != argc - 1 && !(wait && optind == argc)) {
        status = tdb_usage_error("attach", optind >= argc ? "which process? give its PID ('tdebug ps' "
                                                            "lists Python processes), or --wait"
                                                          : "one PID only");
        goto cleanup;
    }
    if (!rank_arg && optind < argc && tdb_parse_long(argv[optind], 1, 4194304, &pid) < 0) {
        status = tdb_usage_error("attach", "'%s' is not a process id", argv[optind]);
        goto cleanup;
    }
    if (tdb_check_usage_only) {
        status = TDB_EXIT_OK;
        goto cleanup;
    }
    if (wait) {
        /* A given PID is checked once it has paused (it may change till
         * then); only one that cannot pause at all is refused now. */
        if (pid && !tdb_pid_running((pid_t)pid)) {
            tdb_fail("cannot wait for pid %ld: no such process (see 'tdebug ps')", pid);
            status = TDB_EXIT_FAIL;
            goto cleanup;
        }
        if ((status = wait_announcement((pid_t)pid, timeout, &announcement)) == 0)
            status = attach_announced(&opts, announcement);
        goto cleanup;
    }
    /* Resolve a debugpy adapter or launcher to the process running user
     * code, and refuse what cannot work before gdb is even started. */
    int rc = tdb_attach_prepare((pid_t)pid, NULL, &target, NULL, &err);
    if (rc != 0) {
        tdb_print_error(&err);
        status = err.exit_code ? err.exit_code : TDB_EXIT_FAIL;
        goto cleanup;
    }
    if (target.note)
        fprintf(stderr, "tdebug: %s\n", target.note);
    pid_t inner = tdb_pidns_inner_pid(NULL, target.pid);
    if (inner > 0 && inner != target.pid)
        fprintf(stderr, "tdebug: pid %d is pid %d in its PID namespace (a container)\n",
                (int)target.pid, (int)inner);

    s = tdb_cli_new(&opts, &err);
    if (!s) {
        status = tdb_error_exit(&err);
        goto cleanup;
    }
    status = tdb_cli_attach(s, target.pid, NULL, &err);
    explain_refusal(target.pid, &err);
    if (err.set)
        tdb_print_error(&err);
cleanup:
    tdb_resolution_release(&target);
    tdb_cli_free(s);
    json_decref(announcement);
    tdb_session_options_release(&opts.session);
    return status;
}
