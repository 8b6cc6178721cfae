/*
 * cmd_attach.c: 'tdebug attach PID': attach gdb to a running Python
 * process, fast, and detach safely.  Parses and checks the command line,
 * refuses early what cannot work (with the reason and what to do), and
 * leaves the session to src/debugger.c.
 */
#include "cmd.h"
#include "common.h"
#include "debugger.h"
#include "ptrace_check.h"
#include "session_opts.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_attach_usage[] =
    "usage: tdebug attach [options] PID\n"
    "\n"
    "Attach gdb to a running Python process, reading only the symbols that\n"
    "matter, and detach safely: quitting or Ctrl-C detaches, the process goes\n"
    "on as before (one that was stopped stays stopped), and it is never killed.\n"
    "PID may be a debugpy adapter or launcher: tdebug attaches to the process\n"
    "that runs the user's code and says so.  What cannot work (another user's\n"
    "process, one already traced, ptrace_scope, no CAP_SYS_PTRACE, not Python)\n"
    "is refused before gdb starts, with the reason and what to do.\n"
    "\n"
    "  --stop-at-import MODULE  stop in MODULE's PyInit_<name> when the process\n"
    "                           imports it (said at once if it already has)\n"
    "  --stop-at-load MODULE    stop when the process maps MODULE's file\n"
    "  -b, --break LOCATION     a gdb breakpoint: FUNCTION, FILE:LINE, *ADDRESS\n"
    "  --symbols REGEX          also read libraries matching REGEX (basic regex)\n"
    "  --all-symbols            let gdb read every library (its slow default)\n"
    "  --batch                  print stops and backtraces; with no stops asked\n"
    "                           for, print every thread's stack and detach\n"
    "  --json                   the same as JSON lines on stdout\n"
    "  (default)                a (tdebug) prompt, stopped where it was\n"
    "  -v, --verbose            show gdb's own messages\n"
    "  -h, --help               this text\n"
    "\n"
    "Exit status: 0 done and detached; 1 refused (the reason is printed) or a\n"
    "requested stop cannot happen; 2 usage; 125 gdb failed; 130 interrupted.\n"
    "\n"
    "Example:\n"
    "  tdebug attach --batch 1234\n";

int cmd_attach(int argc, char **argv)
{
    static const struct option longopts[] = {
        TDB_SESSION_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tdb_session_options opts = {.output = TDB_OUTPUT_INTERACTIVE};
    tdb_session *s = NULL;
    tdb_error err = {0};
    tdb_resolution target = {0};
    int status = TDB_EXIT_USAGE, c;
    long pid;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+:b:vh", longopts, NULL)) != -1) {
        int used = tdb_session_option("attach", c, optarg, &opts);
        if (used < 0) {
            status = -used;
            goto cleanup;
        }
        if (used)
            continue;
        switch (c) {
        case 'h':
            status = tdb_print_usage("attach");
            goto cleanup;
        case ':':
            status = tdb_usage_error("attach", "option '%s' needs a value", argv[optind - 1]);
            goto cleanup;
        default:
            status = tdb_usage_error("attach", "unknown option '%s'", argv[optind - 1]);
            goto cleanup;
        }
    }
    if (optind != argc - 1) {
        status = tdb_usage_error("attach", optind >= argc ? "which process? give its PID ('tdebug ps' "
                                                            "lists Python processes)"
                                                          : "one PID only");
        goto cleanup;
    }
    if (tdb_parse_long(argv[optind], 1, 4194304, &pid) < 0) {
        status = tdb_usage_error("attach", "'%s' is not a process id", argv[optind]);
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

    s = tdb_session_new(&opts, &err);
    if (!s) {
        status = tdb_error_exit(&err);
        goto cleanup;
    }
    status = tdb_session_attach(s, target.pid, &err);
    if (err.set && (err.code == EPERM || err.code == ESRCH)) {
        /* gdb was refused after all (the process changed, or a check could
         * not see it coming): say why, from what the system shows now. */
        tdb_error why = {0};
        tdb_ptrace_explain(target.pid, NULL, err.code, &why);
        if (why.set)
            err = why;
    }
    if (err.set)
        tdb_print_error(&err);
cleanup:
    tdb_resolution_release(&target);
    tdb_session_free(s);
    tdb_session_options_release(&opts);
    return status;
}
