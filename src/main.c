/*
 * main.c: main() and the command table.  Everything a command does lives
 * in src/cmd/NAME.c; this file only dispatches and prints the overview.
 */
#include "cmd/cmd.h"
#include "base/common.h"

#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TDB_VERSION
#define TDB_VERSION "0.0"
#endif

/* The one table: 'tdebug --help' is printed from it, in this order. */
static const tdb_command commands[] = {
    {"run", cmd_run, "run a Python program under gdb and stop in its native code", cmd_run_usage,
     1},
    {"attach", cmd_attach, "attach gdb to a running Python process, fast, and detach safely",
     cmd_attach_usage, 1},
    {"ps", cmd_ps, "list Python processes: debugpy roles, torch, tracer; --check PID", cmd_ps_usage,
     1},
    {"env", cmd_env, "print the environment that pauses programs at torch._C", cmd_env_usage, 1},
    {"tour", cmd_tour, "a guided tour from 'import torch' down into its C++ core", cmd_tour_usage,
     1},
    {"vscode", cmd_vscode, "write .vscode/launch.json for mixed Python/C++ debugging",
     cmd_vscode_usage, 0},
    {"dap", cmd_dap, "a debug adapter (DAP) for VS Code: one debugger for Python and C++",
     cmd_dap_usage, 0},
    {"wait-port", cmd_wait_port, "wait until a TCP port listens, without connecting",
     cmd_wait_port_usage, 1},
    {"doctor", cmd_doctor, "check gdb, ptrace, CPython debug info, debugpy, torch, preloading",
     cmd_doctor_usage, 1},
    {"inspect", cmd_inspect, "what gdb will find in an object: symbols, debug files, DWARF, -O",
     cmd_inspect_usage, 1},
    {"profile", cmd_profile, "environment for a debuggable torch/extension build; --check one",
     cmd_profile_usage, 1},
    {"stacks", cmd_stacks, "merged Python and native stacks of running processes",
     cmd_stacks_usage, 1},
    {NULL, NULL, NULL, NULL, 0},
};

static const char overview_head[] =
    "usage: tdebug [--version] [--help] [--check-usage] COMMAND [ARGS...]\n"
    "\n"
    "Follow a Python program down into PyTorch's C/C++ core (torch._C, ATen,\n"
    "c10) under gdb, and back.\n"
    "\n"
    "Commands:\n";

static const char overview_tail[] =
    "\n"
    "'tdebug COMMAND --help' (or 'tdebug help COMMAND') shows a command's options.\n"
    "'tdebug --check-usage COMMAND ARGS...' only checks ARGS as COMMAND would: exit\n"
    "0 when they are valid, 2 with the reason when not; nothing is run.\n";

/* The one table of exit statuses: 'tdebug --help' and every command's
 * --help end with it, tdebug(1) has it under EXIT STATUS, and
 * tests/e2e/test_cli.py holds all of them to the same rows. */
const char tdb_exit_status_help[] =
    "Exit status (every command):\n"
    "  0    success; 'run' passes the program's own status through (128+N when\n"
    "       the program was killed by signal N)\n"
    "  1    failed: refused, not found, a requested stop never happened, a check\n"
    "       failed\n"
    "  2    usage error: an unknown option or a bad value\n"
    "  125  gdb, or another tool tdebug needs, is missing, failed or died\n"
    "  126  the program cannot be executed\n"
    "  127  the program does not exist\n"
    "  129  hung up (SIGHUP): tdebug was told to stop\n"
    "  130  interrupted (Ctrl-C, SIGINT): tdebug was told to stop\n"
    "  143  terminated (SIGTERM): tdebug was told to stop\n"
    "Told to stop, tdebug kills a program it started and detaches from one it\n"
    "attached to, which goes on running.  In a 'run' or 'attach' session, 'quit'\n"
    "(or the end of commands piped in) exits 0 the same way: a program tdebug\n"
    "started is killed, an attached one is detached and left running.\n";

int tdb_check_usage_only;

const tdb_command *tdb_find_command(const char *name)
{
    for (const tdb_command *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

int tdb_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "tdebug %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nsee 'tdebug %s --help'\n", cmd);
    return TDB_EXIT_USAGE;
}

int tdb_print_usage(const char *cmd)
{
    const tdb_command *c = tdb_find_command(cmd);
    if (c)
        printf("%s\n%s", c->usage, tdb_exit_status_help);
    return TDB_EXIT_OK;
}

void tdb_print_json(json_t *doc)
{
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s)
        puts(s);
    free(s);
    json_decref(doc);
}

void tdb_print_errors(json_t *errors)
{
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e)
        tdb_fail("%s", json_string_value(json_object_get(e, "error")));
}

static void print_overview(FILE *out)
{
    fputs(overview_head, out);
    for (const tdb_command *c = commands; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fputs(overview_tail, out);
    fprintf(out, "\n%s\nSee tdebug(1) for the whole manual.\n", tdb_exit_status_help);
}

int main(int argc, char **argv)
{
    /* A write to a gdb that died must be an error, not a silent death of
     * tdebug; children get the default disposition back before exec. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        print_overview(stderr);
        return TDB_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        print_overview(stdout);
        return TDB_EXIT_OK;
    }
    if (!strcmp(name, "--version")) {
        printf("tdebug %s\n", TDB_VERSION);
        return TDB_EXIT_OK;
    }
    if (!strcmp(name, "help")) {
        if (argc < 3) {
            print_overview(stdout);
            return TDB_EXIT_OK;
        }
        if (!tdb_find_command(argv[2])) {
            tdb_fail("'%s' is not a tdebug command; see 'tdebug --help'", argv[2]);
            return TDB_EXIT_USAGE;
        }
        return tdb_print_usage(argv[2]);
    }
    if (!strcmp(name, "--check-usage")) {
        if (argc < 3) {
            tdb_fail("--check-usage needs a command: tdebug --check-usage COMMAND [ARGS...]");
            return TDB_EXIT_USAGE;
        }
        tdb_check_usage_only = 1;
        argc--;
        argv++;
        name = argv[1];
    }
    const tdb_command *c = tdb_find_command(name);
    if (!c) {
        tdb_fail("'%s' is not a tdebug command; see 'tdebug --help'", name);
        return TDB_EXIT_USAGE;
    }
    if (tdb_check_usage_only && !c->checks_usage) {
        tdb_fail("--check-usage cannot check the arguments of 'tdebug %s' yet", name);
        return TDB_EXIT_FAIL;
    }
    return c->fn(argc - 1, argv + 1);
}
