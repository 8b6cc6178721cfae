/*
 * tdebug.c: main() and the command table.  Everything a command does lives
 * in src/cmd_NAME.c; this file only dispatches and prints the overview.
 */
#include "cmd.h"
#include "common.h"

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
    {"run", cmd_run, "run a Python program under gdb and stop in its native code", cmd_run_usage},
    {"attach", cmd_attach, "attach gdb to a running Python process, fast, and detach safely",
     cmd_attach_usage},
    {"ps", cmd_ps, "list Python processes: debugpy roles, torch, tracer; --check PID", cmd_ps_usage},
    {"env", cmd_env, "print the environment that pauses programs at torch._C", cmd_env_usage},
    {"tour", cmd_tour, "a guided tour from 'import torch' down into its C++ core", cmd_tour_usage},
    {"vscode", cmd_vscode, "write .vscode/launch.json for mixed Python/C++ debugging", cmd_vscode_usage},
    {"dap", cmd_dap, "a debug adapter (DAP) for VS Code: one debugger for Python and C++",
     cmd_dap_usage},
    {"wait-port", cmd_wait_port, "wait until a TCP port listens, without connecting", cmd_wait_port_usage},
    {"doctor", cmd_doctor, "check gdb, ptrace, CPython debug info, debugpy, torch, preloading",
     cmd_doctor_usage},
    {"inspect", cmd_inspect, "what gdb will find in an object: symbols, debug files, DWARF, -O",
     cmd_inspect_usage},
    {"profile", cmd_profile, "environment for a debuggable torch/extension build; --check one",
     cmd_profile_usage},
    {"stacks", cmd_stacks, "merged Python and native stacks of running processes", cmd_stacks_usage},
    {NULL, NULL, NULL, NULL},
};

static const char overview_head[] =
    "usage: tdebug [--version] [--help] COMMAND [ARGS...]\n"
    "\n"
    "Follow a Python program down into PyTorch's C/C++ core (torch._C, ATen,\n"
    "c10) under gdb, and back.\n"
    "\n"
    "Commands:\n";

static const char overview_tail[] =
    "\n"
    "'tdebug COMMAND --help' (or 'tdebug help COMMAND') shows a command's options.\n"
    "\n"
    "Exit status:\n"
    "  0    success ('run' passes the program's own status through; killed by\n"
    "       signal N gives 128+N)\n"
    "  1    the command ran and found a problem (a check failed, a process was\n"
    "       refused, a breakpoint never bound)\n"
    "  2    usage error: an unknown option or a bad value\n"
    "  125  tdebug itself failed (gdb missing or crashed, ...)\n"
    "  126  the program exists but cannot be executed\n"
    "  127  the program or script does not exist\n"
    "\n"
    "See tdebug(1) for the whole manual.\n";

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
        fputs(c->usage, stdout);
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
    const tdb_command *c = tdb_find_command(name);
    if (!c) {
        tdb_fail("'%s' is not a tdebug command; see 'tdebug --help'", name);
        return TDB_EXIT_USAGE;
    }
    return c->fn(argc - 1, argv + 1);
}
