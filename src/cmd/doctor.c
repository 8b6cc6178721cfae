/*
 * cmd/doctor.c: 'tdebug doctor': a checklist of what mixed Python/C++
 * debugging needs on this machine, each line with its remedy.
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "checks/doctor.h"
#include "targets/proc.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_doctor_usage[] =
    "usage: tdebug doctor [--json] [--pid PID] [--python PYTHON]\n"
    "\n"
    "Check what mixed Python/C++ debugging needs, trying each thing for real:\n"
    "gdb (version 10+, with Python), ptrace (Yama's ptrace_scope, CAP_SYS_PTRACE,\n"
    "then PTRACE_TRACEME and PTRACE_SEIZE on processes it forks), tdebug's\n"
    "reading of the interpreter's Python frames (on a process it starts),\n"
    "CPython's debug info and gdb's py-bt (optional: only gdb's own py-*\n"
    "commands need them), debugpy, torch and the debug state of its libraries,\n"
    "and the preloaded library under the loader.\n"
    "Each line is ok, warning or failure, with what to do.\n"
    "\n"
    "Options:\n"
    "  --json             one JSON document (format in tdebug(1)) instead of text\n"
    "  --pid PID          also check that PID may be attached to (without\n"
    "                     attaching), and inspect the torch libraries it mapped\n"
    "  --python PYTHON    the interpreter your program runs under (default:\n"
    "                     with --pid, the process's executable when it is a\n"
    "                     python; else $TDEBUG_PYTHON, else " TDB_PYTHON ")\n"
    "  -h, --help         show this help\n"
    "\n"
    "Environment: TDEBUG_GDB (the gdb to check), TDEBUG_PYTHON.\n"
    "\n"
    "Exit status: 0 nothing blocks mixed debugging (warnings allowed); 1 at\n"
    "least one failure.\n";

static const struct option options[] = {
    {"json", no_argument, NULL, 'j'},
    {"pid", required_argument, NULL, 'P'},
    {"python", required_argument, NULL, 'p'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* With --pid and no --python: the process's own interpreter, when it is
 * one and we may read its link. */
static char *python_of_pid(long pid)
{
    char link[64], exe[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/%ld/exe", pid);
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    const char *base = tdb_base_name(exe);
    if (!tdb_is_python_name(base) || access(exe, X_OK) != 0)
        return NULL;
    return tdb_xstrdup(exe);
}

int cmd_doctor(int argc, char **argv)
{
    tdb_doctor_options opt = {0};
    const char *python = NULL;
    int json = 0, c;
    long pid = 0;
    char *pid_python = NULL;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'p': python = optarg; break;
        case 'P':
            if (tdb_parse_long(optarg, 1, 0x7fffffff, &pid) < 0)
                return tdb_usage_error("doctor", "--pid wants a process id, not '%s'", optarg);
            break;
        case 'h': return tdb_print_usage("doctor");
        default: return tdb_usage_error("doctor", "unknown option");
        }
    }
    if (optind < argc)
        return tdb_usage_error("doctor", "unexpected argument '%s'", argv[optind]);
    if (tdb_check_usage_only)
        return TDB_EXIT_OK;
    if (!python && pid > 0)
        python = pid_python = python_of_pid(pid);
    opt.python = tdb_target_python(python);
    opt.pid = (pid_t)pid;
    opt.root = "";

    tdb_doctor d;
    tdb_doctor_run(&opt, &d);
    size_t warnings, failures;
    tdb_doctor_counts(&d, &warnings, &failures);
    if (json) {
        json_t *doc = tdb_doctor_json(&d);
        tdb_print_json(doc);
    } else {
        for (size_t i = 0; i < d.n; i++) {
            const tdb_check *k = &d.checks[i];
            printf("%-8s %-17s %s\n", tdb_check_status_name(k->status), k->id, k->summary);
            if (k->remedy)
                printf("%-8s %-17s %s %s\n", "", "", k->status == TDB_CHECK_OK ? "note:" : "fix:",
                       k->remedy);
        }
        printf("\n%zu failure%s, %zu warning%s: %s\n", failures, failures == 1 ? "" : "s",
               warnings, warnings == 1 ? "" : "s",
               failures ? "mixed debugging is blocked (see the failures above)"
               : warnings ? "mixed debugging works, with the limits above"
                          : "everything mixed debugging needs is here");
    }
    tdb_doctor_free(&d);
    free(pid_python);
    return failures ? TDB_EXIT_FAIL : TDB_EXIT_OK;
}
