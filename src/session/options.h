/*
 * session/options.h: the options 'tdebug run' and 'tdebug attach' share
 * (--stop-at-import, --break, --catch-throw, --symbols, --all-symbols, --batch, --json,
 * --verbose), parsed and checked in one place.
 */
#ifndef TDB_SESSION_OPTS_H
#define TDB_SESSION_OPTS_H

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
    TDB_OPT_FIRST_FREE /* commands number their own options from here */
};

/* The shared entries, for a command's own struct option table. */
#define TDB_SESSION_LONGOPTS                                              \
    {"stop-at-import", required_argument, NULL, TDB_OPT_STOP},            \
    {"stop-at-load", required_argument, NULL, TDB_OPT_STOP_LOAD},         \
    {"break", required_argument, NULL, 'b'},                              \
    {"catch-throw", optional_argument, NULL, TDB_OPT_CATCH_THROW},        \
    {"symbols", required_argument, NULL, TDB_OPT_SYMBOLS},                \
    {"all-symbols", no_argument, NULL, TDB_OPT_ALL_SYMBOLS},              \
    {"batch", no_argument, NULL, TDB_OPT_BATCH},                          \
    {"json", no_argument, NULL, TDB_OPT_JSON},                            \
    {"raw", no_argument, NULL, TDB_OPT_RAW},                              \
    {"cpython-symbols", no_argument, NULL, TDB_OPT_CPYTHON_SYMBOLS},      \
    {"verbose", no_argument, NULL, 'v'},                                  \
    {"commands", required_argument, NULL, 'x'}

/* Apply option C (with ARG) to OPTS.  Returns 1 when C was one of the
 * shared options, 0 when it is not (the command handles it), or
 * TDB_EXIT_USAGE (negated: -2) after printing a usage error for CMD. */
int tdb_session_option(const char *cmd, int c, char *arg, tdb_session_options *opts);

/* getopt_long() for a command with the shared options: applies them to
 * OPTS and handles -h/--help, a missing value and an unknown option for
 * command CMD.  Returns the next option that is the command's own (with
 * optarg set), -1 after the last option, or TDB_GETOPT_DONE after --help
 * or a usage error was printed, with *STATUS the exit status to return.
 * OPTSTRING starts with "+:" and has 'h'; call with optind = 1 first. */
int tdb_session_getopt(const char *cmd, int argc, char **argv, const char *optstring,
                       const struct option *longopts, tdb_session_options *opts, int *status);
#define TDB_GETOPT_DONE (-2)

/* Free the lists tdb_session_option() built (not the strings). */
void tdb_session_options_release(tdb_session_options *opts);

#endif
