/*
 * cmd/options.h: the command-line options 'tdebug run', 'tdebug attach'
 * and 'tdebug tour' share (--stop-at-import, --break, --catch-throw,
 * --symbols, --all-symbols, --batch, --json, --verbose, ...), read with
 * getopt in one place.  Their values are checked by the session core's
 * one validator (tdb_session_options_add(), session/session.h), which the
 * DAP uses too; this file only says them as usage errors.
 */
#ifndef TDB_CMD_OPTIONS_H
#define TDB_CMD_OPTIONS_H

#include "cli/cli.h"
#include "session/session.h"

#include <getopt.h>

/* getopt_long values of the shared long options (short ones: 'b', 'v', 'x'). */
enum {
    TDB_OPT_STOP = 256,
    TDB_OPT_STOP_LOAD,
    TDB_OPT_SYMBOLS,
    TDB_OPT_ALL_SYMBOLS,
    TDB_OPT_BATCH,
    TDB_OPT_JSON,
    TDB_OPT_RAW,
    TDB_OPT_CPYTHON_SYMBOLS,
    TDB_OPT_CATCH_THROW,
    TDB_OPT_CATCH_RAISE,
    TDB_OPT_STEP_INTO,
    TDB_OPT_MY_CODE,
    TDB_OPT_FIRST_FREE /* commands number their own options from here */
};

/* The shared entries, for a command's own struct option table. */
#define TDB_SESSION_LONGOPTS                                              \
    {"stop-at-import", required_argument, NULL, TDB_OPT_STOP},            \
    {"stop-at-load", required_argument, NULL, TDB_OPT_STOP_LOAD},         \
    {"break", required_argument, NULL, 'b'},                              \
    {"catch-throw", optional_argument, NULL, TDB_OPT_CATCH_THROW},        \
    {"catch-raise", optional_argument, NULL, TDB_OPT_CATCH_RAISE},        \
    {"symbols", required_argument, NULL, TDB_OPT_SYMBOLS},                \
    {"all-symbols", no_argument, NULL, TDB_OPT_ALL_SYMBOLS},              \
    {"batch", no_argument, NULL, TDB_OPT_BATCH},                          \
    {"json", no_argument, NULL, TDB_OPT_JSON},                            \
    {"raw", no_argument, NULL, TDB_OPT_RAW},                              \
    {"cpython-symbols", no_argument, NULL, TDB_OPT_CPYTHON_SYMBOLS},      \
    {"step-into", required_argument, NULL, TDB_OPT_STEP_INTO},            \
    {"my-code", required_argument, NULL, TDB_OPT_MY_CODE},                \
    {"verbose", no_argument, NULL, 'v'},                                  \
    {"commands", required_argument, NULL, 'x'}

/* Apply option C (with ARG) to the session core's OPTS.  Returns 1 when C
 * was one of the core's options, 0 when it is not (--batch, --json, -x and
 * the command's own are the caller's), or TDB_EXIT_USAGE (negated: -2)
 * after printing a usage error for CMD. */
int tdb_session_option(const char *cmd, int c, char *arg, tdb_session_options *opts);

/* getopt_long() for a command with the shared options: applies them to
 * OPTS (the core's and the terminal front-end's) and handles -h/--help, a
 * missing value and an unknown option for command CMD.  Returns the next
 * option that is the command's own (with optarg set), -1 after the last
 * option, or TDB_GETOPT_DONE after --help or a usage error was printed,
 * with *STATUS the exit status to return.  OPTSTRING starts with "+:" and
 * has 'h'; call with optind = 1 first. */
int tdb_session_getopt(const char *cmd, int argc, char **argv, const char *optstring,
                       const struct option *longopts, tdb_cli_options *opts, int *status);
#define TDB_GETOPT_DONE (-2)

#endif
